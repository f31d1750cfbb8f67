//! `just bench-gateway`: what `mcpstorm gateway` adds to a call, against what nginx adds, in the same run (issue 47).
//!
//! The agents (one core `McpClient`, one session, a keep-alive pool of one connection per call in flight) call a
//! fake MCP server (`mcpstorm serve-fake --transport http`) over Streamable HTTP on loopback, in four modes:
//! *direct*; through *nginx* as a plain reverse proxy (Debian's package, started with its own config on a free port;
//! skipped with a message when absent); through *gateway*, `mcpstorm gateway` with the default profile (every
//! protection layer on); and through *gateway, traced*, the same config with `[telemetry]` exporting every call's
//! spans (no sampling) to an OTLP sink in the bench's process that reads each request and answers 200. Each is a
//! process of its own.
//!
//! Workloads: a 0 ms echo with 1 call in flight and with 64, and one session's burst: 1,000 tasks on the one client
//! each making exactly one call to a 200 ms tool at once, every latency from the burst's start. Each workload runs
//! in rounds (three by default), and each round runs every mode once in turn, so that a slow spell of the shared
//! host hits all the modes alike. Each round's rows are printed, then each mode's median over the rounds of each
//! figure: QPS and its share of the same round's direct QPS, P50, P99, *added P99* (the mode's P99 minus the same
//! round's direct P99), and CPU per call of the middle and of the fake. CPU per call is a process's CPU time, user
//! and system (`/proc/<pid>/stat`, summed over the process and its children: nginx's master and its workers), over
//! the round divided by its calls; on loopback the system part is the TCP stack's. On the direct path the fake's
//! CPU per call is what one bare Streamable HTTP server costs per call on this machine.
//!
//! Then figures of the gateway alone: its RSS (`VmRSS`) with 10,000 idle sessions, each an `initialize` and its
//! `notifications/initialized`, opened at a fresh gateway process with the same config; its allocations per proxied
//! call, counted in this process (common/alloc_count.rs says how); and, where valgrind is installed, its
//! instructions per proxied call, counted by callgrind (common/instructions.rs). Last, issue 47's targets, as ratios
//! to nginx in the same run, each with the measured value, nginx's, the ratio, and PASS or MISS: printed, never
//! asserted. Issue 26's absolute targets (40 µs per call, an added P99 of 5 ms at 1,000 in flight) are retired by
//! issue 47, and their rows (200 and 1,000 calls in flight of a 200 ms tool, and the spread start) with them.
//!
//! Then the baseline (issue 41): the workloads of tests/tests/interop/baseline.rs (a burst in one session, 64
//! sessions on an echo, a replica killed, one answering 503, one slower, a 20 s tool) through nginx as a plain
//! reverse proxy and through the gateway process with its default config, the Python SDK's server and
//! server-everything behind them; each row's P99 both ways, their ratio, and the target (the gateway's P99 at most
//! nginx's + 10% + 5 ms), printed, not asserted. The test asserts their ok-call counts. It needs nginx, the Python
//! `mcp` SDK and server-everything (`just peers`); without nginx it says so and skips.
//!
//! Environment: `MCPSTORM_BENCH_ROUNDS=N` rounds (default 3); `MCPSTORM_BENCH_CALLS=N` calls per echo row (default
//! 2,000 with 1 in flight, about 3 s, and 20,000 with 64); `MCPSTORM_BENCH_ONLY=echo` (or `1`, `64`, `burst`)
//! keeps the workloads whose tool or key matches, for profiling one, and leaves out the rest; `sessions`,
//! `allocations` or `instructions` runs that figure alone, `baseline` the baseline alone;
//! `MCPSTORM_BENCH_GATEWAY_WORKERS=N` starts the gateway processes with `--workers N` (the runtime's threads). Run
//! without `--bench` (as `cargo test --benches` does) it makes small smoke rows, in two rounds, and no baseline.

use std::sync::Arc;
use std::time::Duration;

use hdrhistogram::Histogram;
use mcpstorm_core::resilience::InFlightLimit;
use mcpstorm_core::{CallOptions, ClientConfig, HttpEndpoint, McpClient, SeededRng};
use serde_json::{Value, json};
use tokio::time::Instant;

#[path = "common/agents.rs"]
mod agents;
#[path = "common/alloc_count.rs"]
mod alloc_count;
#[path = "common/instructions.rs"]
mod instructions;
#[path = "common/proc_stats.rs"]
mod proc_stats;
#[path = "common/rounds.rs"]
mod rounds;
#[path = "common/runtime.rs"]
mod runtime;
#[path = "common/sessions.rs"]
mod sessions;
#[path = "common/spawn.rs"]
mod spawn;
// The processes of the baseline rows (the Python SDK's server as replicas, server-everything, nginx) and nginx in
// the main rows, shared with the baseline test; its in-process gateway is the allocation count's.
#[allow(dead_code)]
#[path = "../../tests/tests/interop/baseline_middles.rs"]
mod baseline_middles;

// The traced mode's collector, shared with tests/tests/interop/traces.rs.
#[path = "../../tests/tests/interop/otlp_sink.rs"]
mod otlp_sink;

use baseline_middles::{Everything, Nginx, Replica};
use rounds::{Memory, Row, Workload};

/// One way from the agents to the fake.
struct Mode {
    name: &'static str,
    url: String,
    /// The middle's pid (nginx's master); none on the direct path.
    pid: Option<String>,
}

fn main() {
    match std::env::var(alloc_count::LOAD_ENV) {
        Ok(spec) => runtime::run_or_exit("bench-gateway (load child)", load_child(spec)),
        Err(_) => runtime::run_or_exit("bench-gateway", run()),
    }
}

/// The allocation count's load child: echo calls at the URL, then `errors N` on stdout.
async fn load_child(spec: String) -> Result<(), String> {
    let (url, calls, in_flight) = alloc_count::load_args(&spec)?;
    let client = agents::client(&url, in_flight, "echo").await?;
    let outcomes = agents::closed_loop(&client, "echo", &json!({"message": "x"}), in_flight, calls).await;
    client.close().await;
    if let Some(first) = outcomes.iter().find_map(|o| o.2.as_ref()) {
        eprintln!("bench-gateway (load child): the first error: {first}");
    }
    println!("errors {}", outcomes.iter().map(|o| o.1).sum::<usize>());
    Ok(())
}

/// The workloads: full, or the smoke run's small ones (the same keys).
fn workloads(full: bool) -> Vec<Workload> {
    let echo = |key, concurrency, calls| Workload {
        key,
        label: "0 ms echo",
        tool: "echo",
        arguments: json!({"message": "x"}),
        concurrency,
        calls,
        burst: false,
    };
    let burst = |calls, ms: u64| Workload {
        key: "burst",
        label: if full { "one session's burst, 200 ms tool" } else { "one session's burst, 20 ms tool" },
        tool: "sleep_ms",
        arguments: json!({"ms": ms}),
        concurrency: calls,
        calls,
        burst: true,
    };
    if full {
        // 2,000 calls with 1 in flight take about 3 s a mode; 20,000 with 64 are enough for the P99 and the CPU
        // per call to settle.
        vec![echo("1", 1, 2000), echo("64", 64, 20_000), burst(1000, 200)]
    } else {
        vec![echo("1", 1, 20), echo("64", 8, 40), burst(20, 20)]
    }
}

fn env_number(name: &str) -> Result<Option<usize>, String> {
    match std::env::var(name) {
        Ok(v) => v.parse::<usize>().map(Some).map_err(|e| format!("{name}={v:?}: {e}")),
        Err(_) => Ok(None),
    }
}

async fn run() -> Result<(), String> {
    let full = std::env::args().any(|a| a == "--bench");
    let only = std::env::var("MCPSTORM_BENCH_ONLY").ok();
    if full && only.as_deref() == Some("baseline") {
        return baseline().await;
    }
    let fixed_calls = env_number("MCPSTORM_BENCH_CALLS")?;
    let round_count = env_number("MCPSTORM_BENCH_ROUNDS")?.unwrap_or(if full { 3 } else { 2 }).max(1);
    let all = workloads(full);
    // The gateway's limits come from the widest workload of all, so that a filtered run configures it alike.
    let max = all.iter().map(|w| w.concurrency).max().unwrap_or(1);
    let workloads: Vec<Workload> = match only.as_deref() {
        Some(only) => all.into_iter().filter(|w| w.key == only || w.tool == only).collect(),
        None => all,
    };
    let extra = |name: &str| only.as_deref().is_none_or(|o| o == name);

    let (fake, fake_addr) = spawn::spawn_server_with(&["--transport", "http"]).await?;
    let fake_url = format!("http://{fake_addr}/mcp");
    let fake_pid = fake.id().map(|p| p.to_string()).ok_or("serve-fake has no pid")?;
    let fake_port = fake_addr.rsplit(':').next().and_then(|p| p.parse::<u16>().ok()).ok_or("serve-fake's port")?;
    let dir = std::env::temp_dir().join(format!("mcpstorm-bench-gateway-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let config = dir.join("gateway.toml");
    let text = gateway_config(&fake_url, max);
    std::fs::write(&config, &text).map_err(|e| format!("{}: {e}", config.display()))?;
    let (gateway, gateway_url) = spawn::spawn_gateway(&config).await?;
    // The same gateway with `[telemetry]` exporting every call (no sampling) to a sink in this process that reads
    // each request and answers 200: what tracing costs the gateway, the collector's own work left out.
    let (sink, _) = otlp_sink::otlp_sink(false).await?;
    let traced_config = dir.join("gateway-traced.toml");
    let traced_text = format!(
        "{text}\n[telemetry]\notlp = \"http://{sink}\"\n\n[admin]\nlisten = \"127.0.0.1:0\"\ntoken_env = \"{TRACED_ADMIN_ENV}\"\n"
    );
    std::fs::write(&traced_config, traced_text).map_err(|e| format!("{}: {e}", traced_config.display()))?;
    let traced = spawn::spawn_gateway_with_admin(&traced_config, &[(TRACED_ADMIN_ENV, TRACED_ADMIN_TOKEN)]).await?;
    let nginx = match find_nginx() {
        Some(program) => Some(Nginx::start(&program, &[fake_port]).await),
        None => None,
    };
    let pid = |id: Option<u32>| id.map(|p| p.to_string());
    let mut modes = vec![Mode { name: "direct", url: fake_url.clone(), pid: None }];
    if let Some(nginx) = &nginx {
        modes.push(Mode { name: "nginx", url: nginx.url(), pid: pid(nginx.pid()) });
    }
    modes.push(Mode { name: "gateway", url: gateway_url, pid: pid(gateway.id()) });
    modes.push(Mode { name: "gateway, traced", url: traced.mcp.clone(), pid: pid(traced.child.id()) });

    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("## mcpstorm bench-gateway: direct, nginx and the gateway in the same run\n");
    println!(
        "Streamable HTTP on both sides over loopback; the fake (`serve-fake --transport http`), each middle and the \
         agents (one core `McpClient`, one session, a keep-alive pool of one connection per call in flight) are \
         processes of their own on {cores} cores. nginx: `worker_processes auto`, keep-alive upstream connections, \
         `proxy_buffering off`. The gateway runs the default profile: breaker, retry, budget, throttle and bulkhead \
         per replica. {round_count} rounds, each running every mode in turn; medians over the rounds. Mode: {}.\n",
        if full { "full" } else { "smoke (run without --bench)" }
    );
    if nginx.is_none() {
        println!("nginx: not found (apt-get install nginx, or set MCPSTORM_NGINX): its rows and ratios are skipped.\n");
    }
    if !workloads.is_empty() {
        println!("Each round's rows (CPU per call in µs, user + system):\n");
        println!(
            "| Workload | In flight | Round | Mode | QPS | P50 (ms) | P99 (ms) | Added P99 (ms) | Middle CPU | Fake \
             CPU | Errors |"
        );
        println!("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    }
    let mut results = Vec::new();
    for w in &workloads {
        let calls = if w.burst { w.calls } else { fixed_calls.unwrap_or(w.calls).max(w.concurrency) };
        if w.burst {
            // A burst is not warmed by its own rounds: one unmeasured burst per mode fills the middles' pools.
            for mode in &modes {
                measure(mode, w, calls, &fake_pid).await?;
            }
        }
        let mut rows: Vec<Vec<Row>> = Vec::with_capacity(round_count);
        for r in 1..=round_count {
            let mut round: Vec<Row> = Vec::with_capacity(modes.len());
            for mode in &modes {
                let row = measure(mode, w, calls, &fake_pid).await?;
                let added = round.first().map(|direct| row.p99_ms - direct.p99_ms);
                println!(
                    "| {} | {} | {r} | {} | {:.0} | {:.1} | {:.1} | {} | {} | {:.0} | {} |",
                    w.label,
                    w.concurrency,
                    mode.name,
                    row.qps(),
                    row.p50_ms,
                    row.p99_ms,
                    added.map_or("—".to_owned(), |a| format!("{a:.1}")),
                    row.middle_cpu_us.map_or("—".to_owned(), |(u, s)| format!("{:.0}", u + s)),
                    row.fake_cpu_us.0 + row.fake_cpu_us.1,
                    row.errors,
                );
                if let Some(e) = &row.first_error {
                    eprintln!(
                        "bench-gateway: {} at {} ({}, round {r}): {} errors, the first: {e}",
                        w.label, w.concurrency, mode.name, row.errors
                    );
                }
                round.push(row);
            }
            rows.push(round);
        }
        let names: Vec<&'static str> = modes.iter().map(|m| m.name).collect();
        results.push((w, rounds::summarise(&names, &rows)));
    }
    if !workloads.is_empty() {
        rounds::print_medians(&results, round_count);
        println!("\nThe traced gateway's span export: {}", trace_counts(&traced.admin).await);
    }

    let memory = if extra("sessions") {
        let sessions = if full { 10_000 } else { 100 };
        let memory = idle_sessions(&config, sessions).await?;
        let per_session = (memory.after_kb as f64 - memory.before_kb as f64) / sessions as f64;
        println!(
            "\nThe gateway's memory (a fresh process, the same config): RSS {} kB before any session, {} kB with \
             {sessions} idle sessions: {per_session:.2} kB per session.",
            memory.before_kb, memory.after_kb
        );
        Some(memory)
    } else {
        None
    };
    let allocations = if extra("allocations") {
        let (calls, in_flight) = if full { (20_000, 64) } else { (200, 8) };
        let (per_call, errors) = allocations_per_call(&text, calls, in_flight).await?;
        println!(
            "\nThe gateway's allocations per proxied call (in this process, {calls} echo calls, {in_flight} in \
             flight, {errors} errors): {per_call:.1}."
        );
        Some(per_call)
    } else {
        None
    };
    if extra("instructions") {
        match instructions::find_valgrind() {
            Some(valgrind) => {
                let (calls, in_flight) = if full { (2_000, 64) } else { (100, 8) };
                let (per_call, errors) = instructions::per_call(&valgrind, &config, &dir, calls, in_flight).await?;
                println!(
                    "\nThe gateway's instructions per proxied call (user space, counted by callgrind; {calls} echo \
                     calls, {in_flight} in flight, {errors} errors): {per_call:.0}."
                );
            }
            None => println!(
                "\nvalgrind: not found (apt-get install valgrind, or set MCPSTORM_VALGRIND): the gateway's \
                 instructions per call are skipped."
            ),
        }
    }
    rounds::print_targets(&results, memory.as_ref(), allocations);
    drop(nginx);
    let _ = std::fs::remove_dir_all(&dir);
    if full && only.is_none() {
        baseline().await?;
    }
    Ok(())
}

/// One round of workload `w` through `mode`: a fresh client (a new session), warmed to the workload's width unless
/// it is a burst, then `calls` calls.
async fn measure(mode: &Mode, w: &Workload, calls: usize, fake_pid: &str) -> Result<Row, String> {
    let client = agents::client(&mode.url, w.concurrency, w.tool).await?;
    if !w.burst {
        // Warm the pools (the agent's and the middle's) to the row's width before measuring.
        agents::closed_loop(&client, w.tool, &w.arguments, w.concurrency, w.concurrency).await;
    }
    let cpu_before = (proc_stats::cpu_split_tree(fake_pid), mode.pid.as_deref().map(proc_stats::cpu_split_tree));
    let started = Instant::now();
    let outcomes = if w.burst {
        agents::burst(&client, w.tool, &w.arguments, calls).await
    } else {
        agents::closed_loop(&client, w.tool, &w.arguments, w.concurrency, calls).await
    };
    let secs = started.elapsed().as_secs_f64();
    let per_call = |pid: &str, (user, system): (f64, f64)| {
        let (u, s) = proc_stats::cpu_split_tree(pid);
        ((u - user) * 1e6 / calls as f64, (s - system) * 1e6 / calls as f64)
    };
    let fake_cpu_us = per_call(fake_pid, cpu_before.0);
    let middle_cpu_us = mode.pid.as_deref().zip(cpu_before.1).map(|(p, b)| per_call(p, b));
    let mut hist = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).map_err(|e| e.to_string())?;
    let (mut errors, mut first_error) = (0, None);
    for (latencies, e, first) in outcomes {
        for l in latencies {
            hist.saturating_record(l.max(1));
        }
        errors += e;
        first_error = first_error.or(first);
    }
    client.close().await;
    let ms = |q: f64| hist.value_at_quantile(q) as f64 / 1000.0;
    Ok(Row { calls, secs, p50_ms: ms(0.5), p99_ms: ms(0.99), errors, first_error, middle_cpu_us, fake_cpu_us })
}

/// A fresh gateway process with the config at `config`, and its RSS before and after `sessions` idle sessions.
async fn idle_sessions(config: &std::path::Path, sessions: usize) -> Result<Memory, String> {
    let (child, url) = spawn::spawn_gateway(config).await?;
    let pid = child.id().ok_or("the gateway has no pid")?.to_string();
    let authority = url.strip_prefix("http://").and_then(|u| u.strip_suffix("/mcp")).ok_or(format!("{url}?"))?;
    // Let its start-up (the upstream's tool list) settle before reading its RSS.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before_kb = proc_stats::status_kb_of(&pid, "VmRSS");
    let open = sessions::open_idle(authority, sessions, 8).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after_kb = proc_stats::status_kb_of(&pid, "VmRSS");
    drop(open);
    drop(child);
    Ok(Memory { before_kb, after_kb, sessions })
}

/// The gateway's allocations per proxied call: a gateway with the config `text` in this process, driven by the
/// load child (common/alloc_count.rs), warmed by a first run. The allocations per call, and the errors.
async fn allocations_per_call(text: &str, calls: usize, in_flight: usize) -> Result<(f64, usize), String> {
    let gateway = baseline_middles::Gateway::start_with(text).await;
    alloc_count::run_load_child(&gateway.url, 10 * in_flight, in_flight).await?;
    let before = alloc_count::allocations();
    let errors = alloc_count::run_load_child(&gateway.url, calls, in_flight).await?;
    let after = alloc_count::allocations();
    drop(gateway);
    Ok((after.saturating_sub(before) as f64 / calls as f64, errors))
}

/// The traced gateway's admin token (its `/metrics` is on the admin listener).
const TRACED_ADMIN_ENV: &str = "MCPSTORM_BENCH_TRACED_ADMIN_TOKEN";
const TRACED_ADMIN_TOKEN: &str = "bench";

/// The traced gateway's exported and dropped span counters, from its admin listener's `/metrics`.
async fn trace_counts(authority: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let read = async {
        let mut stream = tokio::net::TcpStream::connect(authority).await.ok()?;
        let ask = format!(
            "GET /metrics HTTP/1.1\r\nhost: {authority}\r\nauthorization: Bearer {TRACED_ADMIN_TOKEN}\r\n\
             connection: close\r\n\r\n"
        );
        stream.write_all(ask.as_bytes()).await.ok()?;
        let mut text = String::new();
        stream.read_to_string(&mut text).await.ok()?;
        Some(text)
    };
    let Some(text) = read.await else { return "unknown (no /metrics)".to_owned() };
    let counts: Vec<&str> = text.lines().filter(|l| l.starts_with("mcpstorm_gateway_trace_spans_")).collect();
    counts.join(", ")
}

/// The gateway's config: one server (the fake), limits raised so that none of them is what the bench measures.
fn gateway_config(fake_url: &str, max: usize) -> String {
    format!(
        r#"[listen]
http = "127.0.0.1:0"
max_calls_in_flight = {calls}

[[servers]]
name = "fake"
max_concurrent_requests = {calls}
[[servers.replicas]]
http = "{fake_url}"

[client]
max_in_flight = {calls}
per_connection = {calls}
http_connections = {calls}
http_queue = {calls}
"#,
        calls = 2 * max
    )
}

/// How long one agent task of a baseline row calls.
#[derive(Clone, Copy)]
enum Bound {
    /// This many calls, back to back.
    Calls(usize),
    /// Back to back for this long; only the calls that end within it count.
    Time(Duration),
}

/// What a baseline row's calls came to through one middle.
struct Tally {
    ok_us: Vec<u64>,
    errors: usize,
}

impl Tally {
    fn p99_ms(&self) -> f64 {
        let mut sorted = self.ok_us.clone();
        sorted.sort_unstable();
        let rank = ((0.99 * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len().max(1));
        sorted.get(rank - 1).map_or(0.0, |us| *us as f64 / 1000.0)
    }
}

/// `sessions` agents (each a core `McpClient`, its own session) at `url`, each running `tasks` tasks that call
/// `tool` within `bound`.
async fn drive(url: &str, sessions: usize, tasks: usize, tool: &'static str, arguments: Value, bound: Bound) -> Tally {
    let mut handles = Vec::new();
    let started = Instant::now();
    for i in 0..sessions {
        let mut endpoint = HttpEndpoint::new(url).unwrap_or_else(|e| panic!("{url}: {e}"));
        endpoint.pool.max_connections = tasks;
        endpoint.pool.max_waiting = tasks;
        let mut config = ClientConfig::default();
        config.connection.max_in_flight = tasks;
        // The agent waits for a slow tool as long as the middles do: the 20 s row measures them, not the agent.
        config.connection.first_response = Duration::from_secs(60);
        let client = Arc::new(
            McpClient::http("agent", endpoint, config, SeededRng::new(i as u64))
                .with_global_limit(InFlightLimit::new(tasks)),
        );
        for _ in 0..tasks {
            let (client, arguments) = (client.clone(), arguments.clone());
            handles.push(tokio::spawn(async move {
                let mut tally = Tally { ok_us: Vec::new(), errors: 0 };
                for n in 0.. {
                    let t0 = Instant::now();
                    let call = client.call_tool(tool, arguments.clone(), CallOptions::default());
                    let outcome = match bound {
                        Bound::Calls(calls) if n >= calls => break,
                        Bound::Calls(_) => call.await,
                        Bound::Time(window) => {
                            let Some(left) = window.checked_sub(started.elapsed()) else { break };
                            match tokio::time::timeout(left, call).await {
                                Ok(outcome) => outcome,
                                Err(_) => break,
                            }
                        }
                    };
                    match outcome {
                        Ok(r) if !r.is_error => tally.ok_us.push(t0.elapsed().as_micros() as u64),
                        _ => tally.errors += 1,
                    }
                }
                tally
            }));
        }
    }
    let mut all = Tally { ok_us: Vec::new(), errors: 0 };
    for h in handles {
        let tally = h.await.unwrap_or(Tally { ok_us: Vec::new(), errors: 1 });
        all.ok_us.extend(tally.ok_us);
        all.errors += tally.errors;
    }
    all
}

/// The gateway process with the default config in front of `upstreams`: one `[[servers]]`, its http replicas.
async fn default_gateway(upstreams: &[String]) -> Result<(tokio::process::Child, String), String> {
    let dir = std::env::temp_dir().join(format!("mcpstorm-bench-baseline-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let config = dir.join("gateway.toml");
    let replicas: String = upstreams.iter().map(|u| format!("[[servers.replicas]]\nhttp = {u:?}\n")).collect();
    let text = format!("[listen]\nhttp = \"127.0.0.1:0\"\n\n[[servers]]\nname = \"py\"\n{replicas}");
    std::fs::write(&config, text).map_err(|e| format!("{}: {e}", config.display()))?;
    spawn::spawn_gateway(&config).await
}

/// nginx: `MCPSTORM_NGINX`, else `nginx` on the `PATH`, else Debian's `/usr/sbin/nginx`.
fn find_nginx() -> Option<std::path::PathBuf> {
    let candidates = match std::env::var_os("MCPSTORM_NGINX") {
        Some(path) => vec![path.into()],
        None => vec!["nginx".into(), "/usr/sbin/nginx".into()],
    };
    candidates.into_iter().find(|p: &std::path::PathBuf| {
        std::process::Command::new(p).arg("-v").output().is_ok_and(|o| o.status.success())
    })
}

/// The workloads of the baseline test (tests/tests/interop/baseline.rs, which asserts their ok-call counts) through
/// nginx and through the gateway process, timed: each row's P99 both ways, their ratio, and the issue's target (the
/// gateway's P99 at most nginx's + 10% + 5 ms), printed, never asserted. The agents are the core's client (rmcp is
/// the tests crate's); the servers the Python SDK's (`tests/peers/py_baseline_server.py`) and server-everything.
async fn baseline() -> Result<(), String> {
    let Some(nginx) = find_nginx() else {
        println!("\nbaseline rows skipped: no nginx (apt-get install nginx, or set MCPSTORM_NGINX)");
        return Ok(());
    };
    let python = std::env::var("MCPSTORM_PYTHON").unwrap_or_else(|_| "python3".into());
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let everything = root.join("tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let mut pair = [Replica::start(&python, &[]).await, Replica::start(&python, &[]).await];
    let slow = Replica::start(&python, &["--delay-ms", "1000"]).await;
    let quiet = Replica::start(&python, &["--json"]).await;
    let node = Everything::start(&everything).await;
    println!("\n## The baseline: nginx against the gateway, the same workloads\n");
    println!(
        "| Workload | nginx ok / errors | gateway ok / errors | nginx P99 (ms) | gateway P99 (ms) | ratio | gateway P99 \
         ≤ nginx's + 10% + 5 ms |"
    );
    println!("|---|---:|---:|---:|---:|---:|---|");
    let sleep = |ms: u64| json!({"ms": ms});
    for (label, kind) in [
        ("one session, 200 calls at once, 200 ms tool", 0),
        ("one session, 1000 calls at once, 200 ms tool", 1),
        ("64 sessions × 20 calls, 0 ms echo (server-everything)", 2),
        ("8 sessions × 150 calls, replica 2 of 2 killed at 1 s, restarted at 2 s, deposit", 3),
        ("8 sessions × 100 calls, replica 2 of 2 answers 503 for 5 s, 50 ms tool", 4),
        ("8 sessions for 5 s, replica 2 of 2 1 s slower, 50 ms tool", 5),
        ("one session, 2 calls of a 20 s tool, no progress, one JSON answer", 6),
    ] {
        let ports: Vec<u16> = match kind {
            0 | 1 => vec![pair[0].port],
            2 => vec![node.port],
            5 => vec![pair[0].port, slow.port],
            6 => vec![quiet.port],
            _ => vec![pair[0].port, pair[1].port],
        };
        let urls: Vec<String> = ports.iter().map(|p| format!("http://127.0.0.1:{p}/mcp")).collect();
        let mut tallies = Vec::new();
        for through_gateway in [false, true] {
            let (_nginx, _gateway, url) = if through_gateway {
                let (child, url) = default_gateway(&urls).await?;
                (None, Some(child), url)
            } else {
                let proxy = Nginx::start(&nginx, &ports).await;
                let url = proxy.url();
                (Some(proxy), None, url)
            };
            let tally = match kind {
                0 => drive(&url, 1, 200, "sleep_ms", sleep(200), Bound::Calls(1)).await,
                1 => drive(&url, 1, 1000, "sleep_ms", sleep(200), Bound::Calls(1)).await,
                2 => drive(&url, 64, 1, "echo", json!({"message": "x"}), Bound::Calls(20)).await,
                3 => {
                    let deposit = json!({"account": "a", "amount": 1});
                    let loop_ = drive(&url, 8, 1, "deposit", deposit, Bound::Calls(150));
                    let fault = async {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        pair[1].kill().await;
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        pair[1].restart().await;
                    };
                    tokio::join!(loop_, fault).0
                }
                4 => {
                    let fault = async {
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        pair[1].unavailable_for(5).await;
                    };
                    tokio::join!(drive(&url, 8, 1, "sleep_ms", sleep(50), Bound::Calls(100)), fault).0
                }
                5 => drive(&url, 8, 1, "sleep_ms", sleep(50), Bound::Time(Duration::from_secs(5))).await,
                _ => drive(&url, 1, 2, "sleep_ms", sleep(20_000), Bound::Calls(1)).await,
            };
            tallies.push(tally);
        }
        let (n, g) = (&tallies[0], &tallies[1]);
        let (np99, gp99) = (n.p99_ms(), g.p99_ms());
        let target = np99 * 1.1 + 5.0;
        println!(
            "| {label} | {} / {} | {} / {} | {np99:.1} | {gp99:.1} | {:.2} | {} ({target:.1} ms) |",
            n.ok_us.len(),
            n.errors,
            g.ok_us.len(),
            g.errors,
            gp99 / np99,
            if gp99 <= target { "PASS" } else { "MISS" }
        );
    }
    Ok(())
}
