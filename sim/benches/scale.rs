//! `just bench-sim`: what the simulator costs, against a raw turmoil program of the same topology.
//!
//! For each case it runs:
//! - **mcpstorm**: the scenario through `world::run` (the real core on turmoil, the fake servers, the recorder), with
//!   its faults, checks and contrast removed, so both sides carry the same healthy load;
//! - **raw**: a plain turmoil program built from the same scenario: the same hosts (the scenario's placement of server
//!   replicas on hosts, the same load hosts), tick, network latency, seed, Poisson arrival rate, tool mix and latency distributions, speaking
//!   newline-delimited JSON-RPC with no gateway, no sessions and no recorder. Each load host keeps one connection per
//!   replica and a table of pending ids; each server answers every request after its drawn latency.
//!
//! Three curves follow, wall time per simulated second on both engines: against the number of hosts (`latency_spike`'s
//! one server with 5 to 60 replicas at 1,000 calls/s, each replica on a host of its own and then sharing one;
//! turmoil's cost grows steeply with hosts), the wide topology (`sim/benches/wide.toml`: 20 servers × 3 replicas, 4
//! load hosts, 1,000 calls/s for 2 minutes) both ways, and against the call rate (`retry_storm`'s 5 hosts at 500 to
//! 6,000 calls/s).
//!
//! Each run is a child process (this binary re-executed with `--child`), so the peak RSS it reports is its own. The
//! table gives CPU seconds, peak RSS and the mcpstorm ÷ raw ratios, each the median of five alternating runs; the CPU
//! ratio is per call (the engines' call counts differ by a few hundred), and is also given for each engine's fastest
//! run, since interference from the rest of the machine only ever adds CPU time.
//! Figures are printed, never asserted.
//!
//! Environment: `MCPSTORM_BENCH_QUICK=1` runs shorter cases. Run without `--bench` (as `cargo test --benches`
//! does), it makes one short smoke case only.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use hdrhistogram::Histogram;
use mcpstorm_fake::LatencyDist;
use mcpstorm_sim::scenario::{Dur, LoadMode, Placement, Scenario, load_file};
use mcpstorm_sim::world::EPOCH_SECS;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use turmoil::net::{TcpListener, TcpStream};

#[path = "common/proc_stats.rs"]
mod proc_stats;

/// The allocator the `mcpstorm` binary runs with (sim/src/main.rs), for both engines.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const PORT: u16 = 9000;
/// Time after the load ends for the last calls to be answered.
const DRAIN: Duration = Duration::from_secs(10);

/// One measured case: a scenario file, the duration to run it for and further `--set` overrides.
struct Case {
    label: String,
    file: &'static str,
    duration_s: u64,
    sets: Vec<String>,
}

impl Case {
    fn new(file: &'static str, duration_s: u64) -> Case {
        let name = Path::new(file).file_stem().and_then(|s| s.to_str()).unwrap_or(file);
        Case { label: format!("{name}, {duration_s} s, no fault"), file, duration_s, sets: Vec::new() }
    }

    /// `retry_storm` (5 hosts: its replicas share their servers' hosts) at `rate` calls/s: the curve against the
    /// call rate.
    fn rate(rate: u32, duration_s: u64) -> Case {
        Case {
            label: format!("{rate} calls/s"),
            file: "scenarios/retry_storm.toml",
            duration_s,
            sets: vec![format!("load.rate={rate}")],
        }
    }

    /// `latency_spike`'s one server with `replicas` replicas behind `load_hosts` load hosts at 1,000 calls/s: the
    /// host-count curve (turmoil's cost grows steeply with hosts). `per_replica` gives each replica a host.
    fn hosts(replicas: usize, load_hosts: usize, per_replica: bool, duration_s: u64) -> Case {
        let servers = if per_replica { replicas } else { 1 };
        Case {
            label: format!("{} hosts: {replicas} replicas on {servers} + {load_hosts} load", servers + load_hosts),
            file: "scenarios/latency_spike.toml",
            duration_s,
            sets: vec![
                format!("servers[0].replicas={replicas}"),
                format!("load.hosts={load_hosts}"),
                "load.rate=1000".to_owned(),
                placement(per_replica),
            ],
        }
    }

    /// The wide topology: 20 servers × 3 replicas and 4 load hosts at 1,000 calls/s.
    fn wide(per_replica: bool, duration_s: u64) -> Case {
        let servers = if per_replica { 60 } else { 20 };
        Case {
            label: format!("20 servers × 3 replicas on {servers} hosts + 4 load, {duration_s} s"),
            file: "sim/benches/wide.toml",
            duration_s,
            sets: vec![placement(per_replica)],
        }
    }
}

fn placement(per_replica: bool) -> String {
    format!("network.hosts={}", if per_replica { "per_replica" } else { "shared" })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        let (Some(engine), Some(file), Some(secs)) = (args.get(i + 1), args.get(i + 2), args.get(i + 3)) else {
            eprintln!("usage: scale --child mcpstorm|raw FILE SECONDS [SET...]");
            std::process::exit(2);
        };
        match child(engine, Path::new(file), secs, &args[i + 4..]) {
            Ok(calls) => println!(
                "calls={calls} cpu_s={:.3} rss_kb={}",
                proc_stats::cpu_secs("self"),
                proc_stats::status_kb("VmHWM")
            ),
            Err(e) => {
                eprintln!("scale: {e}");
                std::process::exit(1);
            }
        }
        return;
    }
    let benching = args.iter().any(|a| a == "--bench");
    let quick = std::env::var_os("MCPSTORM_BENCH_QUICK").is_some();
    // Each topology twice: every replica on a host of its own, then the replicas sharing their server's host.
    let hosts = |list: &[(usize, usize)], secs| {
        [true, false]
            .into_iter()
            .flat_map(|own| list.iter().map(move |&(r, l)| Case::hosts(r, l, own, secs)))
            .collect::<Vec<_>>()
    };
    let wide = |secs| vec![Case::wide(true, secs), Case::wide(false, secs)];
    let rates = |list: &[u32], secs| list.iter().map(|&r| Case::rate(r, secs)).collect::<Vec<_>>();
    let (cases, by_hosts, wide, by_rate) = if !benching {
        (vec![Case::new("scenarios/smoke.toml", 1)], hosts(&[(2, 1)], 1), wide(1), rates(&[200], 1))
    } else if quick {
        (
            vec![Case::new("scenarios/smoke.toml", 5), Case::new("scenarios/retry_storm.toml", 15)],
            hosts(&[(5, 1), (20, 1)], 5),
            wide(10),
            rates(&[500, 3000], 5),
        )
    } else {
        (
            vec![
                Case::new("scenarios/smoke.toml", 5),
                Case::new("scenarios/retry_storm.toml", 15),
                Case::new("scenarios/retry_storm.toml", 30),
                Case::new("scenarios/retry_storm.toml", 60),
            ],
            hosts(&[(5, 1), (10, 1), (20, 2), (40, 4), (60, 4)], 20),
            wide(120),
            rates(&[500, 1500, 3000, 6000], 20),
        )
    };
    let result = compare(&cases)
        .and_then(|()| curve("topology (1,000 calls/s, no fault)", &by_hosts))
        .and_then(|()| curve("wide topology (1,000 calls/s, no fault)", &wide))
        .and_then(|()| curve("retry_storm's 5 hosts, no fault", &by_rate));
    if let Err(e) = result {
        eprintln!("scale: {e}");
        std::process::exit(1);
    }
}

fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs of each engine per case in the CPU table, alternating, of which the median is printed: a short child's CPU
/// time moves with the rest of the machine's load by as much as the differences this table is read for, and the
/// median of alternating runs spreads that over both engines alike (docs/benchmarks.md).
const REPEATS: usize = 5;

/// Runs every case on both engines ([`REPEATS`] times each, alternating) and prints the table of medians, with the
/// CPU ratio per call of the medians and of the fastest runs.
fn compare(cases: &[Case]) -> Result<(), String> {
    println!("CPU and peak RSS: the median of {REPEATS} alternating runs of each engine; CPU ratios per call.");
    println!();
    println!(
        "| case | calls (mcpstorm / raw) | mcpstorm CPU | raw CPU | CPU per call ratio | fastest runs' ratio | mcpstorm \
         peak RSS | raw peak RSS | RSS ratio |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for case in cases {
        let (mut ours, mut raw) = (Vec::new(), Vec::new());
        for _ in 0..REPEATS {
            ours.push(measure("mcpstorm", case)?);
            raw.push(measure("raw", case)?);
        }
        // Sorted by CPU time: the fastest run first, the median in the middle (its RSS and calls come with it).
        for runs in [&mut ours, &mut raw] {
            runs.sort_by(|a, b| a.cpu_s.total_cmp(&b.cpu_s));
        }
        let fastest = per_call_ratio(&ours[0], &raw[0]);
        let (ours, raw) = (&ours[REPEATS / 2], &raw[REPEATS / 2]);
        println!(
            "| {} | {} / {} | {:.2} s | {:.2} s | {:.2}x | {:.2}x | {} MB | {} MB | {:.1}x |",
            case.label,
            ours.calls,
            raw.calls,
            ours.cpu_s,
            raw.cpu_s,
            per_call_ratio(ours, raw),
            fastest,
            ours.rss_kb / 1024,
            raw.rss_kb / 1024,
            ours.rss_kb as f64 / raw.rss_kb.max(1) as f64,
        );
    }
    Ok(())
}

/// mcpstorm's CPU per call over raw's.
fn per_call_ratio(ours: &Measured, raw: &Measured) -> f64 {
    let per_call = |m: &Measured| m.cpu_s.max(0.01) / m.calls.max(1) as f64;
    per_call(ours) / per_call(raw)
}

/// Wall time per simulated second for each case (a curve against hosts or rate), on both engines.
fn curve(title: &str, cases: &[Case]) -> Result<(), String> {
    println!();
    println!(
        "| {title} | mcpstorm wall per simulated s | raw wall per simulated s | mcpstorm speed-up over real time |"
    );
    println!("|---|---:|---:|---:|");
    for case in cases {
        let ours = measure("mcpstorm", case)?;
        let raw = measure("raw", case)?;
        let per = |m: &Measured| m.wall_s / case.duration_s as f64;
        println!("| {} | {:.3} s | {:.3} s | {:.1}x |", case.label, per(&ours), per(&raw), 1.0 / per(&ours).max(1e-9));
    }
    Ok(())
}

struct Measured {
    calls: u64,
    /// The child process's wall time, start to exit (parsing the scenario included).
    wall_s: f64,
    cpu_s: f64,
    rss_kb: u64,
}

/// Re-executes this binary as a child for one engine and parses its closing line.
fn measure(engine: &str, case: &Case) -> Result<Measured, String> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let file = root().join(case.file);
    // Real time: the bench is outside the simulated world (tokio's Instant is std's when no runtime pauses it).
    let started = tokio::time::Instant::now();
    let out = Command::new(exe)
        .args(["--child", engine, &file.display().to_string(), &case.duration_s.to_string()])
        .args(&case.sets)
        .output()
        .map_err(|e| format!("spawning the {engine} child: {e}"))?;
    let wall_s = started.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!("{engine} child failed: {}{}", stdout, String::from_utf8_lossy(&out.stderr)));
    }
    let line = stdout.lines().last().unwrap_or_default();
    let field = |key: &str| {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
            .ok_or_else(|| format!("{engine} child printed no {key}: {line:?}"))
    };
    let parse_err = |e: std::num::ParseIntError| e.to_string();
    Ok(Measured {
        wall_s,
        calls: field("calls")?.parse().map_err(parse_err)?,
        cpu_s: field("cpu_s")?.parse().map_err(|e: std::num::ParseFloatError| e.to_string())?,
        rss_kb: field("rss_kb")?.parse().map_err(parse_err)?,
    })
}

/// The child: loads the scenario without its faults, checks and contrast, and runs it on one engine. Returns the
/// number of calls that completed.
fn child(engine: &str, file: &Path, secs: &str, extra: &[String]) -> Result<u64, String> {
    let mut sets = vec![format!("duration={secs}s"), "faults=[]".to_owned(), "checks={}".to_owned()];
    sets.extend(extra.iter().cloned());
    let mut scenario = load_file(file, &sets).map_err(|e| e.to_string())?;
    scenario.report.contrast = None;
    match engine {
        "mcpstorm" => {
            // No call sink, as `compare` runs: no calls.csv, and no record is built.
            let (data, _) =
                mcpstorm_sim::world::run(&scenario, String::new(), None, &mut |_, _| {}).map_err(|e| e.to_string())?;
            Ok(data.totals.completed)
        }
        "raw" => raw(&scenario),
        other => Err(format!("unknown engine {other:?}")),
    }
}

/// The tool mix: (the server's replicas as (host, port), tool, cumulative weight).
type Mix = Vec<(Vec<(String, u16)>, String, f64)>;

/// One replica's tools: name → latency distribution.
type Tools = Arc<BTreeMap<String, LatencyDist>>;

/// The raw turmoil program (see the module doc).
fn raw(scenario: &Scenario) -> Result<u64, String> {
    let net = &scenario.network;
    let mut sim = turmoil::Builder::new()
        .rng_seed(scenario.seed)
        .epoch(UNIX_EPOCH + Duration::from_secs(EPOCH_SECS))
        .tick_duration(scenario.tick.0)
        .simulation_duration(scenario.duration.0 + DRAIN + Duration::from_secs(1))
        .min_message_latency(net.latency.0)
        .max_message_latency(net.max_latency.map_or(net.latency.0, |d: Dur| d.0))
        .tcp_capacity(1 << 16)
        .build();
    // Each server's replicas as (host, port), placed on hosts as the simulator places them.
    let mut replicas: BTreeMap<String, Vec<(String, u16)>> = BTreeMap::new();
    for (host, placed) in Placement::of(scenario).hosts() {
        let mut listeners = Vec::new();
        for (slot, p) in placed.iter().enumerate() {
            let spec = &scenario.servers[p.server];
            let tools: Tools = Arc::new(spec.tools.iter().map(|t| (t.name.clone(), t.latency.clone())).collect());
            let port = PORT + slot as u16;
            replicas.entry(spec.name.clone()).or_default().push((host.clone(), port));
            listeners.push((port, tools, scenario.seed ^ ((p.server as u64) << 32 | p.replica as u64)));
        }
        sim.host(host.as_str(), move || {
            let listeners = listeners.clone();
            async move {
                let mut serving = tokio::task::JoinSet::new();
                for (port, tools, seed) in listeners {
                    serving.spawn(async move { serve(port, tools, seed).await.is_ok() });
                }
                while serving.join_next().await.is_some() {}
                Ok(())
            }
        });
    }
    // The tool mix as (server's replica hosts, tool, cumulative weight).
    let mut mix = Vec::new();
    let mut total = 0.0;
    for entry in &scenario.load.mix {
        let server = match &entry.server {
            Some(s) => s.clone(),
            None => scenario
                .servers
                .iter()
                .find(|s| s.tools.iter().any(|t| t.name == entry.tool))
                .map(|s| s.name.clone())
                .ok_or_else(|| format!("no server has tool {}", entry.tool))?,
        };
        total += entry.weight;
        mix.push((replicas.get(&server).cloned().unwrap_or_default(), entry.tool.clone(), total));
    }
    let mix = Arc::new(mix);
    let rate = match scenario.load.mode {
        LoadMode::Open => scenario.load.rate.unwrap_or(100.0) / scenario.load.hosts as f64,
        // A closed loop's rate is what its sessions sustain; the raw side approximates it as one call per think
        // time per session.
        LoadMode::Closed => {
            let sessions = scenario.load.sessions.unwrap_or(1) as f64;
            sessions / scenario.load.think_time.0.as_secs_f64().max(0.001) / scenario.load.hosts as f64
        }
        // A replay's mean rate over the run.
        LoadMode::Replay => {
            let calls = scenario.load.replay.as_ref().map_or(0, |t| t.calls.len()) as f64;
            calls / scenario.duration.0.as_secs_f64().max(0.001) / scenario.load.hosts as f64
        }
    };
    let done = Arc::new(Mutex::new(Histogram::<u64>::new(3).map_err(|e| e.to_string())?));
    for h in 0..scenario.load.hosts {
        let (mix, done) = (mix.clone(), done.clone());
        let (seed, length) = (scenario.seed.wrapping_add(1000 + h as u64), scenario.duration.0);
        sim.client(format!("load-{h}"), async move {
            load(mix, total, rate, seed, length, done).await;
            Ok(())
        });
    }
    sim.run().map_err(|e| e.to_string())?;
    let calls = done.lock().map_err(|e| e.to_string())?.len();
    Ok(calls)
}

/// A task that writes every line sent to it, in order, until the connection fails.
fn writer(mut write: turmoil::net::tcp::OwnedWriteHalf) -> mpsc::UnboundedSender<String> {
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        while let Some(line) = rx.recv().await {
            if write.write_all(line.as_bytes()).await.is_err() {
                break;
            }
        }
    });
    tx
}

/// A server replica: one task per connection reading requests, one task per request answering after its latency.
async fn serve(port: u16, tools: Tools, seed: u64) -> turmoil::Result {
    let listener = TcpListener::bind(("0.0.0.0", port)).await?;
    let mut rng = StdRng::seed_from_u64(seed);
    loop {
        let (stream, _) = listener.accept().await?;
        let (tools, conn_seed) = (tools.clone(), rng.random());
        tokio::spawn(async move {
            let (read, write) = stream.into_split();
            let tx = writer(write);
            let mut rng = StdRng::seed_from_u64(conn_seed);
            let mut lines = BufReader::new(read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(request) = serde_json::from_str::<Value>(&line) else { continue };
                let tool = request["params"]["name"].as_str().unwrap_or_default();
                let args = request["params"]["arguments"].as_object().cloned().unwrap_or_else(Map::new);
                let latency =
                    tools.get(tool).and_then(|d| d.sample(&mut rng, &args).ok()).map_or(Duration::ZERO, |d| d.latency);
                let response = json!({
                    "jsonrpc": "2.0",
                    "id": request["id"],
                    "result": { "content": [{ "type": "text", "text": "ok" }], "isError": false },
                });
                let tx = tx.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(latency).await;
                    let _ = tx.send(format!("{response}\n"));
                });
            }
        });
    }
}

/// A load host: Poisson arrivals at `rate`, one connection per replica, responses matched to their ids.
async fn load(mix: Arc<Mix>, total: f64, rate: f64, seed: u64, length: Duration, done: Arc<Mutex<Histogram<u64>>>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let Ok(gap) = Exp::new(rate.max(f64::MIN_POSITIVE)) else { return };
    let pending: Arc<Mutex<BTreeMap<u64, tokio::time::Instant>>> = Arc::default();
    let mut conns: BTreeMap<(String, u16), mpsc::UnboundedSender<String>> = BTreeMap::new();
    for host in mix.iter().flat_map(|(hosts, _, _)| hosts).collect::<std::collections::BTreeSet<_>>() {
        let Ok(stream) = TcpStream::connect((host.0.as_str(), host.1)).await else { continue };
        let (read, write) = stream.into_split();
        let tx = writer(write);
        let (pending, done) = (pending.clone(), done.clone());
        tokio::spawn(async move {
            let mut lines = BufReader::new(read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(response) = serde_json::from_str::<Value>(&line) else { continue };
                let Some(id) = response["id"].as_u64() else { continue };
                let started = pending.lock().ok().and_then(|mut p| p.remove(&id));
                if let (Some(started), Ok(mut done)) = (started, done.lock()) {
                    let _ = done.record(started.elapsed().as_micros() as u64);
                }
            }
        });
        conns.insert(host.clone(), tx);
    }
    let start = tokio::time::Instant::now();
    let mut next = Duration::ZERO;
    let mut id = 0u64;
    let mut turn = 0usize;
    loop {
        next += Duration::from_secs_f64(gap.sample(&mut rng));
        if next >= length {
            break;
        }
        tokio::time::sleep_until(start + next).await;
        let pick = rng.random::<f64>() * total;
        let Some((hosts, tool, _)) = mix.iter().find(|(_, _, upto)| pick < *upto) else { continue };
        if hosts.is_empty() {
            continue;
        }
        turn += 1;
        let Some(conn) = conns.get(&hosts[turn % hosts.len()]) else { continue };
        id += 1;
        if let Ok(mut p) = pending.lock() {
            p.insert(id, tokio::time::Instant::now());
        }
        let request = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "tools/call",
            "params": { "name": tool, "arguments": {} },
        });
        let _ = conn.send(format!("{request}\n"));
    }
    tokio::time::sleep(DRAIN).await;
}
