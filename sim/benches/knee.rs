//! `just bench`: the concurrent-client design's experiment, live. One 200 ms tool on a fake MCP server, one client
//! connection, closed loop at rising concurrency, over tokio TCP on loopback. Prints a markdown table (paste it into
//! the README) beside the design's measured table, and the targets marked PASS/MISS. Targets are printed,
//! never asserted: a loaded machine must not fail a build.
//!
//! The server is a separate process (`mcpstorm serve-fake`), so the RSS read from `/proc/self/status` is the
//! client's alone.
//!
//! Environment:
//! - `MCPSTORM_BENCH_CALLS=N`: calls per row (at least the row's concurrency). Default `max(100, 10 × concurrency)`.
//! - `MCPSTORM_BENCH_QUICK=1`: fewer calls per row, for smoke checks (a few seconds).
//! - `MCPSTORM_BENCH_ONLY=transports`: the transport table alone (for profiling one transport's path).
//!
//! A second table runs the same calls at concurrency 200 and 1,000 over each transport the core speaks: the
//! newline-delimited connection above and MCP Streamable HTTP (`serve-fake --transport http`; HTTP/1.1 carries one
//! exchange per connection at a time, so the client's pool may open one connection per call in flight), with the
//! client's CPU per call; and a 0 ms echo at 50 in flight, where the client's CPU per call is its pure overhead.
//!
//! Run without `--bench` (as `cargo test --benches` does), it makes a two-row smoke run only.
//!
//! Timing uses `tokio::time::Instant` (real time here: the runtime's clock is not paused), as the workspace's
//! clippy configuration asks; the bench is outside the simulated core either way.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use hdrhistogram::Histogram;
use mcpstorm_core::resilience::InFlightLimit;
use mcpstorm_core::{CallOptions, ClientConfig, HttpEndpoint, McpClient, TcpDialer};
use serde_json::json;
use tokio::process::Child;
use tokio::time::Instant;

#[path = "common/proc_stats.rs"]
mod proc_stats;
#[path = "common/runtime.rs"]
mod runtime;
#[path = "common/spawn.rs"]
mod spawn;

use spawn::spawn_server_with;

/// The tool's latency: the concurrent-client design's "one 200 ms tool".
const TOOL_MS: u64 = 200;
const FULL_ROWS: &[usize] = &[1, 10, 50, 100, 200, 500, 1000];
const QUICK_ROWS: &[usize] = &[1, 10, 100, 200, 500, 1000];
const SMOKE_ROWS: &[usize] = &[1, 10];
/// Calls in an echo row: enough for the CPU per call to settle.
const ECHO_CALLS: usize = 20_000;

/// What a row calls.
#[derive(Debug, Clone, Copy)]
struct Tool {
    name: &'static str,
    /// The label in the transport table.
    label: &'static str,
}

impl Tool {
    const SLEEP: Tool = Tool { name: "sleep_ms", label: "200 ms tool" };
    const ECHO: Tool = Tool { name: "echo", label: "0 ms echo" };

    fn arguments(self) -> serde_json::Value {
        if self.name == Self::SLEEP.name { json!({"ms": TOOL_MS}) } else { json!({"message": "x"}) }
    }
}

/// How often the RSS sampler reads `/proc/self/status`.
const RSS_PERIOD: Duration = Duration::from_millis(10);

/// The concurrent-client design's measured table: (concurrency, QPS, P99 ms, client MB).
const DESIGN: &[(usize, f64, f64, f64)] = &[
    (1, 5.0, 202.0, 82.0),
    (10, 48.0, 342.0, 86.0),
    (50, 208.0, 481.0, 101.0),
    (100, 333.0, 793.0, 118.0),
    (200, 417.0, 1420.0, 152.0),
    (500, 312.0, 3548.0, 223.0),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Full,
    Quick,
    Smoke,
}

impl Mode {
    fn detect() -> Self {
        if !std::env::args().any(|a| a == "--bench") {
            Mode::Smoke
        } else if std::env::var("MCPSTORM_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0") {
            Mode::Quick
        } else {
            Mode::Full
        }
    }

    fn rows(self) -> &'static [usize] {
        match self {
            Mode::Full => FULL_ROWS,
            Mode::Quick => QUICK_ROWS,
            Mode::Smoke => SMOKE_ROWS,
        }
    }

    fn calls(self, concurrency: usize, fixed: Option<usize>) -> usize {
        if let Some(n) = fixed {
            return n.max(concurrency);
        }
        match self {
            Mode::Full => (10 * concurrency).max(100),
            Mode::Quick => (2 * concurrency).max(10),
            Mode::Smoke => (2 * concurrency).max(5),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Full => "full",
            Mode::Quick => "quick (MCPSTORM_BENCH_QUICK)",
            Mode::Smoke => "smoke (run without --bench)",
        }
    }
}

struct Row {
    concurrency: usize,
    calls: usize,
    elapsed: Duration,
    errors: usize,
    first_error: Option<String>,
    hist: Histogram<u64>,
    rss_peak_kb: u64,
    client_cpu: f64,
    server_cpu: f64,
}

impl Row {
    fn qps(&self) -> f64 {
        self.calls as f64 / self.elapsed.as_secs_f64()
    }

    fn ms(&self, quantile: f64) -> f64 {
        self.hist.value_at_quantile(quantile) as f64 / 1000.0
    }

    fn max_ms(&self) -> f64 {
        self.hist.max() as f64 / 1000.0
    }

    fn rss_mb(&self) -> f64 {
        self.rss_peak_kb as f64 / 1024.0
    }
}

fn main() {
    runtime::run_or_exit("knee", run());
}

async fn run() -> Result<(), String> {
    let rss_start = proc_stats::status_kb("VmRSS");
    let mode = Mode::detect();
    let fixed_calls = match std::env::var("MCPSTORM_BENCH_CALLS") {
        Ok(v) => Some(v.parse::<usize>().map_err(|e| format!("MCPSTORM_BENCH_CALLS={v:?}: {e}"))?),
        Err(_) => None,
    };
    match std::env::var("MCPSTORM_BENCH_ONLY").as_deref() {
        Ok("transports") => return transports(mode, fixed_calls).await,
        Ok(other) if !other.is_empty() => return Err(format!("MCPSTORM_BENCH_ONLY={other:?}: only \"transports\"")),
        _ => {}
    }
    let rows = mode.rows();
    let max_concurrency = rows.iter().copied().max().unwrap_or(1);

    let (mut server, addr) = spawn_server().await?;
    let server_pid = server.id();

    let mut config = ClientConfig::default();
    config.connection.max_in_flight = max_concurrency;
    let client = Arc::new(
        McpClient::new("fake", Arc::new(TcpDialer { addr: addr.clone() }), config, mcpstorm_core::SeededRng::new(0))
            .with_global_limit(InFlightLimit::new(max_concurrency)),
    );
    warm_up(&client).await?;
    let rss_warm = proc_stats::status_kb("VmRSS");

    let workers = tokio::runtime::Handle::current().metrics().num_workers();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("## mcpstorm knee: the concurrent-client design's experiment, live\n");
    println!(
        "One `sleep_ms` tool ({TOOL_MS} ms) on a fake MCP server in its own process (`mcpstorm serve-fake`, \
         {addr}), tokio TCP over loopback, one connection (one `McpClient`), closed loop: `concurrency` tasks each \
         calling back-to-back until the row's calls are done. Mode: {}; {cores} cores, {workers} client runtime \
         workers.\n",
        mode.name()
    );
    println!(
        "Limits raised for the bench: `connection.max_in_flight` = {max_concurrency} and a global in-flight limit of \
         {max_concurrency}. The design's default global limit ({}) would cap QPS at {} / {:.1} s = {:.0}.\n",
        InFlightLimit::DEFAULT,
        InFlightLimit::DEFAULT,
        TOOL_MS as f64 / 1000.0,
        InFlightLimit::DEFAULT as f64 * 1000.0 / TOOL_MS as f64
    );
    println!(
        "Client RSS (VmRSS): {:.1} MB at start, {:.1} MB after warm-up (handshake, tools/list, 20 calls). Per row: \
         peak sampled every {} ms. CPU: share of one core over the row (client = this process, server = the child).\n",
        rss_start as f64 / 1024.0,
        rss_warm as f64 / 1024.0,
        RSS_PERIOD.as_millis()
    );
    println!(
        "| Concurrency | Calls | Total (s) | QPS | Ideal QPS | P50 (ms) | P99 (ms) | Max (ms) | Errors | Client RSS (MB) \
         | Client CPU | Server CPU |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");

    let started = Instant::now();
    let mut results = Vec::new();
    for &concurrency in rows {
        let calls = mode.calls(concurrency, fixed_calls);
        let row = run_row(&client, Tool::SLEEP, concurrency, calls, server_pid).await?;
        println!(
            "| {} | {} | {:.2} | {:.0} | {:.0} | {:.1} | {:.1} | {:.1} | {} | {:.1} | {:.0}% | {:.0}% |",
            row.concurrency,
            row.calls,
            row.elapsed.as_secs_f64(),
            row.qps(),
            ideal_qps(concurrency),
            row.ms(0.5),
            row.ms(0.99),
            row.max_ms(),
            row.errors,
            row.rss_mb(),
            row.client_cpu * 100.0,
            row.server_cpu * 100.0,
        );
        if let Some(e) = &row.first_error {
            eprintln!("knee: concurrency {concurrency}: {} errors, the first: {e}", row.errors);
        }
        results.push(row);
    }
    let total = started.elapsed();

    print_comparison(&results);
    print_targets(&results);
    println!("\nRows took {:.1} s in all.", total.as_secs_f64());

    drop(client);
    let _ = server.kill().await;
    transports(mode, fixed_calls).await
}

/// The same closed loop over NDJSON and over Streamable HTTP, each against its own fresh server process.
async fn transports(mode: Mode, fixed_calls: Option<usize>) -> Result<(), String> {
    let rows: &[(Tool, usize)] = if mode == Mode::Smoke {
        &[(Tool::SLEEP, 10), (Tool::ECHO, 4)]
    } else {
        &[(Tool::SLEEP, 200), (Tool::SLEEP, 1000), (Tool::ECHO, 50)]
    };
    let max = rows.iter().map(|r| r.1).max().unwrap_or(1);
    println!("\n## The same calls over each transport\n");
    println!(
        "A fresh `serve-fake` per transport; HTTP: 2025-11-25 or 2026-07-28 as the client negotiates, SSE answers, a \
         keep-alive pool of up to {max} connections (one exchange each at a time). CPU per call: the client \
         process's CPU time over the row divided by its calls. The echo rows make {ECHO_CALLS} calls unless \
         `MCPSTORM_BENCH_CALLS` says otherwise.\n"
    );
    println!(
        "| Transport | Workload | Concurrency | Calls | QPS | P50 (ms) | P99 (ms) | Errors | Client CPU per call (µs) \
         | Client RSS (MB) |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for http in [false, true] {
        let (mut server, addr) = spawn_server_with(if http { &["--transport", "http"] } else { &[] }).await?;
        let mut config = ClientConfig::default();
        config.connection.max_in_flight = max;
        let rng = mcpstorm_core::SeededRng::new(0);
        let client = if http {
            let mut endpoint =
                HttpEndpoint::new(&format!("http://{addr}/mcp")).map_err(|e| format!("endpoint: {e}"))?;
            endpoint.pool.max_connections = max;
            endpoint.pool.max_waiting = max;
            McpClient::http("fake", endpoint, config, rng)
        } else {
            McpClient::new("fake", Arc::new(TcpDialer { addr: addr.clone() }), config, rng)
        };
        let client = Arc::new(client.with_global_limit(InFlightLimit::new(max)));
        warm_up(&client).await?;
        for &(tool, concurrency) in rows {
            let calls = match (tool.name, mode) {
                ("echo", Mode::Full | Mode::Quick) if fixed_calls.is_none() => ECHO_CALLS,
                _ => mode.calls(concurrency, fixed_calls),
            };
            let cpu_before = proc_stats::cpu_secs("self");
            let row = run_row(&client, tool, concurrency, calls, server.id()).await?;
            let cpu_us = (proc_stats::cpu_secs("self") - cpu_before) * 1e6 / calls as f64;
            println!(
                "| {} | {} | {} | {} | {:.0} | {:.1} | {:.1} | {} | {:.1} | {:.1} |",
                if http { "Streamable HTTP" } else { "NDJSON over TCP" },
                tool.label,
                concurrency,
                calls,
                row.qps(),
                row.ms(0.5),
                row.ms(0.99),
                row.errors,
                cpu_us,
                row.rss_mb(),
            );
            if let Some(e) = &row.first_error {
                eprintln!(
                    "knee: {} at {concurrency} over HTTP={http}: {} errors, the first: {e}",
                    tool.label, row.errors
                );
            }
        }
        drop(client);
        let _ = server.kill().await;
    }
    Ok(())
}

fn ideal_qps(concurrency: usize) -> f64 {
    concurrency as f64 * 1000.0 / TOOL_MS as f64
}

/// Starts `mcpstorm serve-fake` on a free loopback port and reads the address it printed.
async fn spawn_server() -> Result<(Child, String), String> {
    spawn_server_with(&[]).await
}

/// Handshake, tools/list and a few calls, so the first row measures steady state, not connection setup.
async fn warm_up(client: &Arc<McpClient>) -> Result<(), String> {
    let tools = client.list_tools().await.map_err(|e| format!("warm-up tools/list: {e}"))?;
    if !tools.iter().any(|t| t.name == "sleep_ms") {
        return Err("the fake server does not list sleep_ms".into());
    }
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            client.call_tool("sleep_ms", json!({"ms": 1}), CallOptions::default()).await.map(|_| ())
        }));
    }
    for t in tasks {
        t.await.map_err(|e| format!("warm-up task: {e}"))?.map_err(|e| format!("warm-up call: {e}"))?;
    }
    Ok(())
}

async fn run_row(
    client: &Arc<McpClient>,
    tool: Tool,
    concurrency: usize,
    calls: usize,
    server_pid: Option<u32>,
) -> Result<Row, String> {
    let sampler = RssSampler::start();
    let cpu_before = (proc_stats::cpu_secs("self"), server_pid.map(|p| proc_stats::cpu_secs(&p.to_string())));
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        let client = client.clone();
        let next = next.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(calls / concurrency + 1);
            let mut errors = 0;
            let mut first_error = None;
            while next.fetch_add(1, Ordering::Relaxed) < calls {
                let t0 = Instant::now();
                let outcome = client.call_tool(tool.name, tool.arguments(), CallOptions::default()).await;
                latencies.push(t0.elapsed().as_micros() as u64);
                let failure = match outcome {
                    Ok(r) if r.is_error => Some(format!("tool error: {:?}", r.content)),
                    Ok(_) => None,
                    Err(e) => Some(e.to_string()),
                };
                if let Some(f) = failure {
                    errors += 1;
                    first_error.get_or_insert(f);
                }
            }
            (latencies, errors, first_error)
        }));
    }
    let mut hist = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).map_err(|e| e.to_string())?;
    let mut errors = 0;
    let mut first_error = None;
    let mut outcomes = Vec::with_capacity(concurrency);
    for t in tasks {
        outcomes.push(t.await.map_err(|e| format!("row task: {e}"))?);
    }
    let elapsed = started.elapsed();
    let rss_peak_kb = sampler.stop();
    let secs = elapsed.as_secs_f64();
    let client_cpu = (proc_stats::cpu_secs("self") - cpu_before.0) / secs;
    let server_cpu = match (server_pid, cpu_before.1) {
        (Some(p), Some(before)) => (proc_stats::cpu_secs(&p.to_string()) - before) / secs,
        _ => f64::NAN,
    };
    for (latencies, e, first) in outcomes {
        for l in latencies {
            hist.saturating_record(l.max(1));
        }
        errors += e;
        if first_error.is_none() {
            first_error = first;
        }
    }
    Ok(Row { concurrency, calls, elapsed, errors, first_error, hist, rss_peak_kb, client_cpu, server_cpu })
}

fn print_comparison(rows: &[Row]) {
    println!("\nBeside the design's table (the design: one 200 ms tool, 500 requests per row):\n");
    println!(
        "| Concurrency | Design QPS | Our QPS | Ideal QPS | Design P99 (ms) | Our P99 (ms) | Design client (MB) | Our \
         client (MB) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in rows {
        let design = DESIGN.iter().find(|s| s.0 == row.concurrency);
        let cell = |f: fn(&(usize, f64, f64, f64)) -> f64| design.map_or("—".to_owned(), |s| format!("{:.0}", f(s)));
        println!(
            "| {} | {} | {:.0} | {:.0} | {} | {:.1} | {} | {:.1} |",
            row.concurrency,
            cell(|s| s.1),
            row.qps(),
            ideal_qps(row.concurrency),
            cell(|s| s.2),
            row.ms(0.99),
            cell(|s| s.3),
            row.rss_mb(),
        );
    }
}

fn print_targets(rows: &[Row]) {
    let at = |c: usize| rows.iter().find(|r| r.concurrency == c);
    println!("\nThe issue's targets (printed, not asserted):\n");
    println!("| Target | Measured | Result |");
    println!("|---|---:|---|");
    let line = |target: &str, measured: Option<(String, bool)>| match measured {
        Some((value, ok)) => println!("| {target} | {value} | {} |", if ok { "PASS" } else { "MISS" }),
        None => println!("| {target} | — | not run |"),
    };
    line("concurrency 200: ≥ 950 QPS", at(200).map(|r| (format!("{:.0} QPS", r.qps()), r.qps() >= 950.0)));
    line("concurrency 200: P99 ≤ 230 ms", at(200).map(|r| (format!("{:.1} ms", r.ms(0.99)), r.ms(0.99) <= 230.0)));
    line("concurrency 1000: ≥ 4500 QPS", at(1000).map(|r| (format!("{:.0} QPS", r.qps()), r.qps() >= 4500.0)));
    line("client RSS at 500 in flight < 50 MB", at(500).map(|r| (format!("{:.1} MB", r.rss_mb()), r.rss_mb() < 50.0)));
}

/// Samples this process's VmRSS on its own thread (so a saturated runtime cannot starve it) and keeps the peak.
struct RssSampler {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RssSampler {
    fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicU64::new(proc_stats::status_kb("VmRSS")));
        let thread = {
            let (stop, peak) = (stop.clone(), peak.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    peak.fetch_max(proc_stats::status_kb("VmRSS"), Ordering::Relaxed);
                    std::thread::sleep(RSS_PERIOD);
                }
            })
        };
        RssSampler { stop, peak, thread: Some(thread) }
    }

    /// Stops sampling; the peak RSS in kB (including one last sample).
    fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.peak.fetch_max(proc_stats::status_kb("VmRSS"), Ordering::Relaxed);
        self.peak.load(Ordering::Relaxed)
    }
}
