//! Allocations per proxied call (issue 47: at most 40), counted in the gateway bench's own process.
//!
//! The workspace forbids unsafe code, so the counting allocator is `stats_alloc`'s, over the system allocator: it
//! counts every thread's allocations, not only the gateway's. So the count runs a gateway in this process (the same
//! `Process` the binary runs, on a runtime of its own) and drives it from a child process, this bench again with
//! [`LOAD_ENV`] set: while the child runs, what this process allocates is the gateway's work (the bench's own
//! runtime only waits for the child). The fake server it calls is a process of its own too. The gateway binary
//! allocates with mimalloc; the allocator changes what an allocation costs, not how many a call makes.
//!
//! The counter is global to the binary, so the bench's agents pay its atomic adds on every allocation in the other
//! rows too: every mode alike, and the middles they measure are processes of their own.

use std::alloc::System;

use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// When set (`URL CALLS IN_FLIGHT`), the bench is the load child: echo calls at the MCP endpoint `URL`, then exit.
pub const LOAD_ENV: &str = "MCPSTORM_BENCH_LOAD";

/// Allocations in this process so far: `alloc`, `alloc_zeroed` and `realloc`, one each.
pub fn allocations() -> u64 {
    let stats = GLOBAL.stats();
    (stats.allocations + stats.reallocations) as u64
}

/// Runs this bench again as the load child: `calls` echo calls at `url`, `in_flight` at a time. Its errors.
pub async fn run_load_child(url: &str, calls: usize, in_flight: usize) -> Result<usize, String> {
    let exe = std::env::current_exe().map_err(|e| format!("the bench's own path: {e}"))?;
    let output = tokio::process::Command::new(exe)
        .env(LOAD_ENV, format!("{url} {calls} {in_flight}"))
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| format!("the load child: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(format!("the load child failed ({}): {text}", output.status));
    }
    text.trim().strip_prefix("errors ").and_then(|n| n.parse().ok()).ok_or(format!("the load child said {text:?}"))
}

/// The load child's arguments from [`LOAD_ENV`]: the URL, the calls and how many in flight.
pub fn load_args(spec: &str) -> Result<(String, usize, usize), String> {
    let bad = || format!("{LOAD_ENV}={spec:?}: expected URL CALLS IN_FLIGHT");
    let mut words = spec.split_whitespace();
    let url = words.next().ok_or_else(bad)?.to_owned();
    let mut number = || words.next().and_then(|n| n.parse::<usize>().ok()).ok_or_else(bad);
    Ok((url, number()?, number()?))
}
