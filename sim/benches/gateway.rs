//! `just bench-gateway`: what `mcpstorm gateway` adds to a call. In one run, the same closed-loop load goes from
//! agents straight to a fake MCP server, and from agents through the gateway to the same server, everything over
//! Streamable HTTP on loopback, each process its own (the fake: `mcpstorm serve-fake --transport http`; the gateway:
//! `mcpstorm gateway` with the default profile, every protection layer on). Prints a markdown table and the issue's
//! targets marked PASS/MISS; targets are printed, never asserted.
//!
//! Workloads: the concurrent-client design's experiment (a 200 ms tool at 200 and 1,000 calls in flight) and a 0 ms
//! echo for the pure overhead. A closed loop whose tasks all start at once sends its calls in waves (1,000 requests
//! within a few milliseconds, every 200 ms), and the last of a wave waits for the gateway to handle the rest: that
//! row measures a burst. The 1,000 row runs again with the tasks' first calls spread evenly over one tool time, as
//! independent agents would make them, so the same 5,000 calls a second arrive evenly: that row measures the steady
//! load. Its QPS counts the 200 ms ramp at the start. *Added P99* is the P99 through the gateway minus the P99
//! direct; *gateway CPU per call* is the gateway process's CPU time (user + system, `/proc/<pid>/stat`) over the row
//! divided by its calls, shown split, since on loopback the system part is the TCP stack's. The fake's CPU per call
//! is measured the same way in every row: on the direct path it is what one bare Streamable HTTP server costs per
//! call on this machine, and the gateway has two HTTP sides (a server for the agents, a client of the fake).
//! Each workload runs a third time through a second gateway process, the same config with `[telemetry]` exporting
//! every call's spans (no sampling) to an OTLP sink in the bench's process that reads each request and answers 200:
//! *gateway, traced*, with the target of at most 10% more gateway CPU per call, and the spans it exported and dropped.
//!
//! Then the baseline (issue 41): the workloads of tests/tests/interop/baseline.rs (a burst in one session, 64
//! sessions on an echo, a replica killed, one answering 503, one slower, a 20 s tool) through nginx as a plain
//! reverse proxy and through the gateway process with its default config, the Python SDK's server and
//! server-everything behind them; each row's P99 both ways, their ratio, and the target (the gateway's P99 at most
//! nginx's + 10% + 5 ms), printed, not asserted. The test asserts their ok-call counts. It needs nginx, the Python
//! `mcp` SDK and server-everything (`just peers`); without nginx it says so and skips.
//!
//! Environment: `MCPSTORM_BENCH_CALLS=N` calls per row (default 10 × the row's concurrency, 20,000 for the echo);
//! `MCPSTORM_BENCH_ONLY=echo` (or `200`, `1000`) keeps the rows whose tool or concurrency matches, for profiling one
//! workload, and leaves out the baseline; `MCPSTORM_BENCH_ONLY=baseline` runs the baseline alone. Run without
//! `--bench` (as `cargo test --benches` does) it makes one small smoke row, and no baseline.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hdrhistogram::Histogram;
use mcpstorm_core::resilience::InFlightLimit;
use mcpstorm_core::{CallOptions, ClientConfig, HttpEndpoint, McpClient, SeededRng};
use serde_json::{Value, json};
use tokio::time::Instant;

#[path = "common/proc_stats.rs"]
mod proc_stats;
#[path = "common/runtime.rs"]
mod runtime;
#[path = "common/spawn.rs"]
mod spawn;
// The baseline rows' processes (the Python SDK's server as replicas, server-everything, nginx), shared with the
// baseline test; its in-process gateway is the test's, the bench runs the gateway process.
#[allow(dead_code)]
#[path = "../../tests/tests/interop/baseline_middles.rs"]
mod baseline_middles;

// The traced row's collector, shared with tests/tests/interop/traces.rs.
#[path = "../../tests/tests/interop/otlp_sink.rs"]
mod otlp_sink;

use baseline_middles::{Everything, Nginx, Replica};

/// One workload: the tool, its arguments, how many calls in flight.
struct Workload {
    label: &'static str,
    tool: &'static str,
    arguments: Value,
    concurrency: usize,
    /// Calls in the row unless `MCPSTORM_BENCH_CALLS` says otherwise.
    calls: usize,
    /// The tasks' first calls, spread evenly over this much time; zero starts them all at once.
    spread: Duration,
}

/// One measured row.
struct Row {
    calls: usize,
    secs: f64,
    errors: usize,
    first_error: Option<String>,
    hist: Histogram<u64>,
    /// The gateway's CPU per call (user, system), µs; none on the direct path.
    gateway_cpu_us: Option<(f64, f64)>,
    /// The fake server's CPU per call (user, system), µs: on the direct path, what one bare Streamable HTTP server
    /// costs per call on this machine, the floor under each of the gateway's two HTTP sides.
    fake_cpu_us: (f64, f64),
}

impl Row {
    fn ms(&self, q: f64) -> f64 {
        self.hist.value_at_quantile(q) as f64 / 1000.0
    }
}

fn main() {
    runtime::run_or_exit("bench-gateway", run());
}

async fn run() -> Result<(), String> {
    let full = std::env::args().any(|a| a == "--bench");
    let only = std::env::var("MCPSTORM_BENCH_ONLY").ok();
    if full && only.as_deref() == Some("baseline") {
        return baseline().await;
    }
    let fixed_calls = match std::env::var("MCPSTORM_BENCH_CALLS") {
        Ok(v) => Some(v.parse::<usize>().map_err(|e| format!("MCPSTORM_BENCH_CALLS={v:?}: {e}"))?),
        Err(_) => None,
    };
    let workloads = if full {
        vec![
            Workload {
                label: "200 ms tool",
                tool: "sleep_ms",
                arguments: json!({"ms": 200}),
                concurrency: 200,
                calls: 2000,
                spread: Duration::ZERO,
            },
            Workload {
                label: "200 ms tool",
                tool: "sleep_ms",
                arguments: json!({"ms": 200}),
                concurrency: 1000,
                calls: 10_000,
                spread: Duration::ZERO,
            },
            // The same load as independent agents make it: the first calls spread over one tool time, so that
            // the requests arrive at an even 5,000 a second instead of in waves of 1,000.
            Workload {
                label: "200 ms tool, spread",
                tool: "sleep_ms",
                arguments: json!({"ms": 200}),
                concurrency: 1000,
                calls: 10_000,
                spread: Duration::from_millis(200),
            },
            // Enough calls for the CPU per call and the P99 to settle (about 2 s each way).
            Workload {
                label: "0 ms echo",
                tool: "echo",
                arguments: json!({"message": "x"}),
                concurrency: 50,
                calls: 20_000,
                spread: Duration::ZERO,
            },
        ]
    } else {
        vec![Workload {
            label: "0 ms echo",
            tool: "echo",
            arguments: json!({"message": "x"}),
            concurrency: 4,
            calls: 40,
            spread: Duration::ZERO,
        }]
    };
    let workloads: Vec<Workload> = match std::env::var("MCPSTORM_BENCH_ONLY") {
        Ok(only) => workloads.into_iter().filter(|w| w.tool == only || w.concurrency.to_string() == only).collect(),
        Err(_) => workloads,
    };
    let max = workloads.iter().map(|w| w.concurrency).max().unwrap_or(1);
    let (fake, fake_addr) = spawn::spawn_server_with(&["--transport", "http"]).await?;
    let fake_url = format!("http://{fake_addr}/mcp");
    let dir = std::env::temp_dir().join(format!("mcpstorm-bench-gateway-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let config = dir.join("gateway.toml");
    std::fs::write(&config, gateway_config(&fake_url, max)).map_err(|e| format!("{}: {e}", config.display()))?;
    let (gateway, gateway_url) = spawn::spawn_gateway(&config).await?;
    let gateway_pid = gateway.id().map(|p| p.to_string());
    // The same gateway with `[telemetry]` exporting every call (no sampling) to a sink in this process that reads
    // each request and answers 200: what tracing costs the gateway, the collector's own work left out.
    let (sink, _) = otlp_sink::otlp_sink(false).await?;
    let traced_config = dir.join("gateway-traced.toml");
    let traced_text = format!(
        "{}\n[telemetry]\notlp = \"http://{sink}\"\n\n[admin]\nlisten = \"127.0.0.1:0\"\ntoken_env = \"{TRACED_ADMIN_ENV}\"\n",
        gateway_config(&fake_url, max)
    );
    std::fs::write(&traced_config, traced_text).map_err(|e| format!("{}: {e}", traced_config.display()))?;
    let traced = spawn::spawn_gateway_with_admin(&traced_config, &[(TRACED_ADMIN_ENV, TRACED_ADMIN_TOKEN)]).await?;
    let (traced_url, traced_pid) = (traced.mcp.clone(), traced.child.id().map(|p| p.to_string()));
    let fake_pid = fake.id().map(|p| p.to_string()).ok_or("serve-fake has no pid")?;

    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("## mcpstorm bench-gateway: agents → gateway → fake, against agents → fake\n");
    println!(
        "Streamable HTTP on both sides over loopback; the fake (`serve-fake --transport http`), the gateway and the \
         agents (one core `McpClient`, a keep-alive pool of one connection per call in flight) are three processes \
         on {cores} cores. The gateway runs the default profile: breaker, retry, budget, throttle and bulkhead per \
         replica. Mode: {}.\n",
        if full { "full" } else { "smoke (run without --bench)" }
    );
    println!(
        "| Workload | In flight | Path | Calls | QPS | P50 (ms) | P99 (ms) | Added P99 (ms) | Gateway CPU per call (µs: \
         user + system) | Fake's CPU per call (µs: user + system) | Errors |"
    );
    println!("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut targets = Vec::new();
    for w in &workloads {
        let calls = fixed_calls.unwrap_or(w.calls).max(w.concurrency);
        let direct = measure(&fake_url, w, calls, &fake_pid, None).await?;
        let through = measure(&gateway_url, w, calls, &fake_pid, gateway_pid.as_deref()).await?;
        let traced_row = measure(&traced_url, w, calls, &fake_pid, traced_pid.as_deref()).await?;
        let added = through.ms(0.99) - direct.ms(0.99);
        let added_traced = traced_row.ms(0.99) - direct.ms(0.99);
        let rows = [("direct", &direct, None), ("gateway", &through, Some(added))];
        for (path, row, added) in rows.into_iter().chain([("gateway, traced", &traced_row, Some(added_traced))]) {
            println!(
                "| {} | {} | {path} | {} | {:.0} | {:.1} | {:.1} | {} | {} | {} | {} |",
                w.label,
                w.concurrency,
                row.calls,
                row.calls as f64 / row.secs,
                row.ms(0.5),
                row.ms(0.99),
                added.map_or("—".to_owned(), |a| format!("{a:.1}")),
                row.gateway_cpu_us.map_or("—".to_owned(), split),
                split(row.fake_cpu_us),
                row.errors,
            );
            if let Some(e) = &row.first_error {
                eprintln!(
                    "bench-gateway: {} at {} ({path}): {} errors, the first: {e}",
                    w.label, w.concurrency, row.errors
                );
            }
        }
        let cpu = |row: &Row| row.gateway_cpu_us.map_or(f64::NAN, |(u, s)| u + s);
        targets.push((w, added, cpu(&through), cpu(&traced_row)));
    }
    println!("\nThe traced gateway's span export: {}", trace_counts(&traced.admin).await);
    println!("\nThe issue's targets (printed, not asserted):\n");
    println!("| Target | Measured | Result |");
    println!("|---|---:|---|");
    let verdict = |ok: bool| if ok { "PASS" } else { "MISS" };
    for (w, added, cpu, traced) in targets {
        if w.concurrency == 1000 {
            let starts = if w.spread.is_zero() { "all at once" } else { "first calls spread" };
            println!("| added P99 ≤ 5 ms at 1,000 in flight ({starts}) | {added:.1} ms | {} |", verdict(added <= 5.0));
        }
        println!(
            "| gateway CPU per call ≤ 40 µs ({}, {} in flight) | {cpu:.0} µs | {} |",
            w.label,
            w.concurrency,
            verdict(cpu <= 40.0)
        );
        println!(
            "| tracing on (every call) ≤ 10% more gateway CPU per call ({}, {} in flight) | {traced:.0} µs against \
             {cpu:.0} µs: {:+.1}% | {} |",
            w.label,
            w.concurrency,
            (traced / cpu - 1.0) * 100.0,
            verdict(traced <= cpu * 1.1)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    if full && only.is_none() {
        baseline().await?;
    }
    Ok(())
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

/// A closed loop of `w.concurrency` tasks making `calls` calls in all to the MCP endpoint at `url`.
async fn measure(
    url: &str,
    w: &Workload,
    calls: usize,
    fake_pid: &str,
    gateway_pid: Option<&str>,
) -> Result<Row, String> {
    let mut endpoint = HttpEndpoint::new(url).map_err(|e| format!("{url}: {e}"))?;
    endpoint.pool.max_connections = w.concurrency;
    endpoint.pool.max_waiting = w.concurrency;
    let mut config = ClientConfig::default();
    config.connection.max_in_flight = w.concurrency;
    let client = Arc::new(
        McpClient::http("agent", endpoint, config, SeededRng::new(0))
            .with_global_limit(InFlightLimit::new(w.concurrency)),
    );
    let tools = client.list_tools().await.map_err(|e| format!("tools/list at {url}: {e}"))?;
    // Through the gateway a lone server's names stay as the server wrote them.
    if !tools.iter().any(|t| t.name == w.tool) {
        return Err(format!("{url} does not list {}", w.tool));
    }
    // Warm the pools (the agent's and the gateway's) to the row's width before measuring.
    round(&client, w, w.concurrency, w.concurrency, Duration::ZERO).await;
    let cpu_before = (proc_stats::cpu_split(fake_pid), gateway_pid.map(proc_stats::cpu_split));
    let started = Instant::now();
    let outcomes = round(&client, w, w.concurrency, calls, w.spread).await;
    let secs = started.elapsed().as_secs_f64();
    let per_call = |pid: &str, (user, system): (f64, f64)| {
        let (u, s) = proc_stats::cpu_split(pid);
        ((u - user) * 1e6 / calls as f64, (s - system) * 1e6 / calls as f64)
    };
    let fake_cpu_us = per_call(fake_pid, cpu_before.0);
    let gateway_cpu_us = gateway_pid.zip(cpu_before.1).map(|(p, b)| per_call(p, b));
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
    Ok(Row { calls, secs, errors, first_error, hist, gateway_cpu_us, fake_cpu_us })
}

/// CPU per call as the table shows it: the total, then user + system.
fn split((user, system): (f64, f64)) -> String {
    format!("{:.0} ({user:.0} + {system:.0})", user + system)
}

type Outcome = (Vec<u64>, usize, Option<String>);

/// `tasks` tasks calling back to back until `calls` calls are made, task `i` starting `i / tasks` of the way through
/// `spread`; each task's latencies (µs) and errors.
async fn round(client: &Arc<McpClient>, w: &Workload, tasks: usize, calls: usize, spread: Duration) -> Vec<Outcome> {
    let next = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..tasks)
        .map(|i| {
            let (client, next, tool, arguments) = (client.clone(), next.clone(), w.tool, w.arguments.clone());
            let start = spread.mul_f64(i as f64 / tasks as f64);
            tokio::spawn(async move {
                if !start.is_zero() {
                    tokio::time::sleep(start).await;
                }
                let (mut latencies, mut errors, mut first) = (Vec::new(), 0, None);
                while next.fetch_add(1, Ordering::Relaxed) < calls {
                    let t0 = Instant::now();
                    let outcome = client.call_tool(tool, arguments.clone(), CallOptions::default()).await;
                    latencies.push(t0.elapsed().as_micros() as u64);
                    let failure = match outcome {
                        Ok(r) if r.is_error => Some(format!("tool error: {:?}", r.content)),
                        Ok(_) => None,
                        Err(e) => Some(e.to_string()),
                    };
                    if let Some(f) = failure {
                        errors += 1;
                        first.get_or_insert(f);
                    }
                }
                (latencies, errors, first)
            })
        })
        .collect();
    let mut outcomes = Vec::with_capacity(tasks);
    for h in handles {
        outcomes.push(h.await.unwrap_or_else(|e| (Vec::new(), 1, Some(format!("task: {e}")))));
    }
    outcomes
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
