//! `cargo bench -p mcpstorm-core --bench breaker`: the circuit breaker's overhead on the call path — one admission
//! plus one recorded outcome — in ns per operation, against a target of ≤ 100 ns
//! uncontended. Prints a markdown table with the target marked PASS/MISS; nothing is asserted (a loaded machine must
//! not fail a build).
//!
//! Rows: the pure state machine (no lock), the [`Gate`] (mutex + `Arc` permit) with both window kinds, and the gate
//! under two threads hammering one breaker (contended) or one breaker each (the per-(replica, tool) layout).
//!
//! `now` advances by 1 µs per operation from a fixed start, as a caller's clock would, so the time window really
//! rotates its buckets; reading the clock is the caller's cost, not the breaker's.
//!
//! The bench reads real time on purpose: it measures the breaker's wall-clock cost, it is not part of the core
//! library and never runs inside the simulator. It reads it through `tokio::time::Instant` (outside any paused
//! runtime that is the system's monotonic clock), as the workspace's clippy configuration asks; the breaker itself
//! only ever sees the `now` values the loop computes.
//!
//! Environment: `MCPSTORM_BENCH_OPS=N` operations per row (default 2,000,000), split into five runs whose median is
//! printed. Run without `--bench` (as
//! `cargo test --benches` does) it makes a 10,000-operation smoke run.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use mcpstorm_core::SeededRng;
use mcpstorm_core::resilience::{Breaker, BreakerConfig, Gate, HealthVerdict, WindowConfig};
use tokio::time::Instant;

const TARGET_NS: f64 = 100.0;
/// Each row is the median of this many runs: the machine is shared, and one preempted run should not set a row.
const REPEATS: u64 = 5;

fn median(run: impl Fn() -> f64) -> f64 {
    let mut xs: Vec<f64> = (0..REPEATS).map(|_| run()).collect();
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn config(window: WindowConfig) -> BreakerConfig {
    BreakerConfig { window, ..BreakerConfig::default() }
}

fn time_window() -> WindowConfig {
    WindowConfig::Time { buckets: 10, bucket_width: Duration::from_secs(1) }
}

fn count_window() -> WindowConfig {
    WindowConfig::Count { size: 100 }
}

fn new_breaker(window: WindowConfig, origin: Instant) -> Breaker {
    match Breaker::new(config(window), origin, SeededRng::new(1)) {
        Ok(b) => b,
        Err(e) => panic!("bench config: {e}"),
    }
}

/// Every 50th call fails: below the 50% threshold, so the breaker stays closed and every call is admitted.
fn verdict(i: u64) -> HealthVerdict {
    if i % 50 == 0 { HealthVerdict::Failure } else { HealthVerdict::Success }
}

/// ns per admission + record over `ops` operations.
fn pure(window: WindowConfig, ops: u64) -> f64 {
    let t0 = Instant::now();
    let mut b = new_breaker(window, t0);
    let start = Instant::now();
    for i in 0..ops {
        let now = t0 + Duration::from_micros(i);
        if let Ok(ticket) = b.try_acquire(now).decision {
            black_box(b.on_outcome(now, ticket, verdict(i), Duration::from_millis(3)));
        }
    }
    start.elapsed().as_nanos() as f64 / ops as f64
}

fn gate_loop(gate: &Arc<Gate>, t0: Instant, ops: u64) {
    for i in 0..ops {
        let now = t0 + Duration::from_micros(i);
        if let Ok(permit) = gate.try_acquire(now).decision {
            black_box(permit.record(now, verdict(i)));
        }
    }
}

fn gate(window: WindowConfig, ops: u64) -> f64 {
    let t0 = Instant::now();
    let g = Gate::new(new_breaker(window, t0));
    let start = Instant::now();
    gate_loop(&g, t0, ops);
    start.elapsed().as_nanos() as f64 / ops as f64
}

/// Two threads, `ops` operations each; `shared` puts both on one breaker. ns per operation per thread (wall time
/// over each thread's operations), the latency one call sees.
fn two_threads(shared: bool, ops: u64) -> f64 {
    let t0 = Instant::now();
    let a = Gate::new(new_breaker(time_window(), t0));
    let b = if shared { a.clone() } else { Gate::new(new_breaker(time_window(), t0)) };
    let start = Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| gate_loop(&a, t0, ops));
        s.spawn(|| gate_loop(&b, t0, ops));
    });
    start.elapsed().as_nanos() as f64 / ops as f64
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let ops = match std::env::var("MCPSTORM_BENCH_OPS").ok().and_then(|v| v.parse().ok()) {
        Some(n) if bench => n,
        _ if bench => 2_000_000,
        _ => 10_000,
    };
    let part = (ops / REPEATS).max(1);
    let rows: [(&str, f64, bool); 6] = [
        ("state machine, time window (no lock)", median(|| pure(time_window(), part)), false),
        ("state machine, count window (no lock)", median(|| pure(count_window(), part)), false),
        ("gate, time window, 1 thread", median(|| gate(time_window(), part)), true),
        ("gate, count window, 1 thread", median(|| gate(count_window(), part)), true),
        ("gate, 2 threads, one breaker (contended)", median(|| two_threads(true, part)), false),
        ("gate, 2 threads, one breaker each", median(|| two_threads(false, part)), false),
    ];
    println!("breaker overhead: admission + record, median of {REPEATS} runs of {part} operations per row\n");
    println!("| path | ns/op | target ≤ {TARGET_NS} ns (uncontended gate) |");
    println!("|---|---:|---|");
    for (name, ns, judged) in rows {
        let verdict = match (judged, ns <= TARGET_NS) {
            (false, _) => "",
            (true, true) => "PASS",
            (true, false) => "MISS",
        };
        println!("| {name} | {ns:.1} | {verdict} |");
    }
}
