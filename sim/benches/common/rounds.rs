//! The gateway bench's rounds: one mode's figures in one round, their medians over the rounds, and the tables that
//! print them, the targets last.

use serde_json::Value;

/// One workload.
pub struct Workload {
    /// What `MCPSTORM_BENCH_ONLY` and the targets name it by: `1`, `64` or `burst`.
    pub key: &'static str,
    pub label: &'static str,
    pub tool: &'static str,
    pub arguments: Value,
    /// Calls in flight; a burst sends all its calls at once.
    pub concurrency: usize,
    /// Calls in a round unless `MCPSTORM_BENCH_CALLS` says otherwise (not for a burst).
    pub calls: usize,
    pub burst: bool,
}

/// One mode's figures in one round.
pub struct Row {
    pub calls: usize,
    pub secs: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub errors: usize,
    pub first_error: Option<String>,
    /// The middle's CPU per call (user, system), µs; none on the direct path.
    pub middle_cpu_us: Option<(f64, f64)>,
    /// The fake server's CPU per call (user, system), µs.
    pub fake_cpu_us: (f64, f64),
}

impl Row {
    pub fn qps(&self) -> f64 {
        self.calls as f64 / self.secs
    }
}

/// One mode's medians over a workload's rounds.
pub struct Summary {
    pub mode: &'static str,
    pub calls: usize,
    pub qps: f64,
    /// QPS over the same round's direct QPS.
    pub share: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// P99 minus the same round's direct P99; none on the direct path.
    pub added_ms: Option<f64>,
    pub middle_cpu_us: Option<(f64, f64)>,
    pub fake_cpu_us: (f64, f64),
    /// Over all rounds.
    pub errors: usize,
}

/// The gateway's memory with idle sessions: RSS (kB) before and after, and how many sessions.
pub struct Memory {
    pub before_kb: u64,
    pub after_kb: u64,
    pub sessions: usize,
}

/// Each mode's medians over the rounds (`rows[round][mode]`, direct first).
pub fn summarise(modes: &[&'static str], rows: &[Vec<Row>]) -> Vec<Summary> {
    (0..modes.len())
        .map(|m| {
            let of = |f: &dyn Fn(&Row, &Row) -> f64| median(rows.iter().map(|r| f(&r[m], &r[0])).collect());
            let middle: Option<Vec<_>> = rows.iter().map(|r| r[m].middle_cpu_us).collect();
            Summary {
                mode: modes[m],
                calls: rows[0][m].calls,
                qps: of(&|row, _| row.qps()),
                share: of(&|row, direct| row.qps() / direct.qps()),
                p50_ms: of(&|row, _| row.p50_ms),
                p99_ms: of(&|row, _| row.p99_ms),
                added_ms: (m > 0).then(|| of(&|row, direct| row.p99_ms - direct.p99_ms)),
                middle_cpu_us: middle.map(split_median),
                fake_cpu_us: split_median(rows.iter().map(|r| r[m].fake_cpu_us).collect()),
                errors: rows.iter().map(|r| r[m].errors).sum(),
            }
        })
        .collect()
}

/// The median: the middle value, or the mean of the middle two.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        return f64::NAN;
    }
    (values[(n - 1) / 2] + values[n / 2]) / 2.0
}

/// The median CPU split: that of the round whose total is the median (the mean of the middle two), so that its
/// user and system times add up to the median total.
fn split_median(mut splits: Vec<(f64, f64)>) -> (f64, f64) {
    splits.sort_by(|a, b| (a.0 + a.1).total_cmp(&(b.0 + b.1)));
    let n = splits.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let (a, b) = (splits[(n - 1) / 2], splits[n / 2]);
    ((a.0 + b.0) / 2.0, (a.1 + b.1) / 2.0)
}

/// CPU per call as the table shows it: the total, then user + system.
fn split((user, system): (f64, f64)) -> String {
    format!("{:.0} ({user:.0} + {system:.0})", user + system)
}

pub fn print_medians(results: &[(&Workload, Vec<Summary>)], rounds: usize) {
    println!("\nMedians over the {rounds} rounds:\n");
    println!(
        "| Workload | In flight | Mode | Calls | QPS (share of direct) | P50 (ms) | P99 (ms) | Added P99 (ms) | Middle \
         CPU per call (µs: user + system) | Fake's CPU per call (µs: user + system) | Errors |"
    );
    println!("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (w, summaries) in results {
        for s in summaries {
            println!(
                "| {} | {} | {} | {} | {:.0} ({:.0}%) | {:.1} | {:.1} | {} | {} | {} | {} |",
                w.label,
                w.concurrency,
                s.mode,
                s.calls,
                s.qps,
                s.share * 100.0,
                s.p50_ms,
                s.p99_ms,
                s.added_ms.map_or("—".to_owned(), |a| format!("{a:.1}")),
                s.middle_cpu_us.map_or("—".to_owned(), split),
                split(s.fake_cpu_us),
                s.errors,
            );
        }
    }
}

/// One target's row: what it is, the measured value, what it is held against, their ratio (or difference), and
/// PASS, MISS or none (nothing to hold it against).
type Check = (String, String, String, String, Option<bool>);

/// Issue 47's targets, as ratios to nginx in the same run (and tracing's to the untraced gateway): printed, never
/// asserted. A target whose workload did not run is left out; one whose nginx did not run says so.
pub fn print_targets(results: &[(&Workload, Vec<Summary>)], memory: Option<&Memory>, allocations: Option<f64>) {
    let get = |key: &str, mode: &str| {
        let (w, summaries) = results.iter().find(|(w, _)| w.key == key)?;
        Some((*w, summaries.iter().find(|s| s.mode == mode)?))
    };
    let total = |s: &Summary| s.middle_cpu_us.map_or(f64::NAN, |(u, s)| u + s);
    let no_nginx = |target: String, measured: String| (target, measured, "no nginx".to_owned(), "—".to_owned(), None);
    let mut checks: Vec<Check> = Vec::new();
    for (key, bound) in [("64", 1.3), ("1", 1.5)] {
        let Some((w, g)) = get(key, "gateway") else { continue };
        let target = format!("gateway CPU per call ≤ {bound}× nginx's ({}, {} in flight)", w.label, w.concurrency);
        let measured = format!("{:.0} µs", total(g));
        checks.push(match get(key, "nginx") {
            Some((_, n)) => {
                let ratio = total(g) / total(n);
                (target, measured, format!("{:.0} µs", total(n)), format!("{ratio:.2}×"), Some(ratio <= bound))
            }
            None => no_nginx(target, measured),
        });
    }
    if let Some((w, g)) = get("64", "gateway") {
        let target = format!("QPS share of direct ≥ 0.9× nginx's ({}, {} in flight)", w.label, w.concurrency);
        let measured = format!("{:.0}%", g.share * 100.0);
        checks.push(match get("64", "nginx") {
            Some((_, n)) => {
                let ratio = g.share / n.share;
                (target, measured, format!("{:.0}%", n.share * 100.0), format!("{ratio:.2}×"), Some(ratio >= 0.9))
            }
            None => no_nginx(target, measured),
        });
        let target = format!("added P99 ≤ nginx's + 1 ms ({}, {} in flight)", w.label, w.concurrency);
        let added = g.added_ms.unwrap_or(f64::NAN);
        let measured = format!("{added:.1} ms");
        checks.push(match get("64", "nginx").and_then(|(_, n)| n.added_ms) {
            Some(n) => {
                (target, measured, format!("{n:.1} ms"), format!("{:+.1} ms", added - n), Some(added <= n + 1.0))
            }
            None => no_nginx(target, measured),
        });
    }
    if let Some((w, g)) = get("burst", "gateway") {
        // "Added P99 ≤ nginx's + 10%": the burst's P99 through the gateway at most 10% above its P99 through nginx.
        let target = format!("P99 ≤ nginx's × 1.1 ({}, {} calls at once)", w.label, w.concurrency);
        let with_added = |s: &Summary| format!("{:.1} ms (added {:.1})", s.p99_ms, s.added_ms.unwrap_or(f64::NAN));
        checks.push(match get("burst", "nginx") {
            Some((_, n)) => {
                let ratio = g.p99_ms / n.p99_ms;
                (target, with_added(g), with_added(n), format!("{ratio:.2}×"), Some(ratio <= 1.1))
            }
            None => no_nginx(target, with_added(g)),
        });
    }
    for (w, summaries) in results {
        let find = |mode: &str| summaries.iter().find(|s| s.mode == mode);
        let (Some(g), Some(t)) = (find("gateway"), find("gateway, traced")) else { continue };
        let ratio = total(t) / total(g);
        checks.push((
            format!("tracing on ≤ 1.1× the untraced gateway's CPU per call ({}, {} in flight)", w.label, w.concurrency),
            format!("{:.0} µs", total(t)),
            format!("{:.0} µs untraced", total(g)),
            format!("{ratio:.2}×"),
            Some(ratio <= 1.1),
        ));
    }
    if let Some(m) = memory {
        let mb = m.after_kb as f64 / 1024.0;
        checks.push((
            format!("gateway RSS with {} idle sessions ≤ 100 MB", m.sessions),
            format!("{mb:.1} MB"),
            "100 MB".to_owned(),
            format!("{:.2}×", mb / 100.0),
            Some(mb <= 100.0),
        ));
    }
    if let Some(a) = allocations {
        let target = "gateway allocations per proxied call ≤ 40".to_owned();
        checks.push((target, format!("{a:.1}"), "40".to_owned(), format!("{:.2}×", a / 40.0), Some(a <= 40.0)));
    }
    println!("\nIssue 47's targets, against nginx in the same run (printed, not asserted):\n");
    println!("| Target | Measured | nginx (or as said) | Ratio | Result |");
    println!("|---|---:|---:|---:|---|");
    for (target, measured, against, ratio, pass) in checks {
        let result = pass.map_or("—", |ok| if ok { "PASS" } else { "MISS" });
        println!("| {target} | {measured} | {against} | {ratio} | {result} |");
    }
}
