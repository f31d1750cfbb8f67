//! `summary.json` (for machines: deterministic, no wall clock) and `summary.md` (for people: the only file that
//! also carries the wall-clock time, which differs from run to run).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::drain::Drain;
use super::num::{finite, grouped, md_cell, ms, pct, short};
use super::plot;
use crate::run::{
    CheckResult, FailureClass, FaultWindow, NOT_JUDGED, NOT_RECOVERED, Recovery, RunData, RunMode, Totals, WallClock,
};
use crate::scenario::CallsMode;

pub(crate) const SUMMARY_JSON: &str = "summary.json";
pub(crate) const SUMMARY_MD: &str = "summary.md";

/// The shape of `summary.json`. Field order is declaration order, so the bytes are stable.
#[derive(Serialize)]
struct SummaryJson<'a> {
    scenario: &'a str,
    /// `sim` or `live`.
    mode: RunMode,
    /// Written only when false (a live run through gateway nodes): its attempt figures are zero, not measured.
    #[serde(skip_serializing_if = "is_true")]
    attempts_recorded: bool,
    description: &'a str,
    seed: u64,
    formula: &'a str,
    sim_seconds: f64,
    passed: bool,
    reproduce: &'a str,
    totals: Totals,
    checks: Vec<CheckResult>,
    faults: Vec<FaultWindow>,
    /// Logical calls by the server they were for: what "per server, against the naive profile" compares.
    servers: BTreeMap<&'a str, ServerJson>,
}

/// One server's logical calls in `summary.json`.
#[derive(Serialize)]
struct ServerJson {
    calls: u64,
    ok: u64,
    failed: u64,
    /// Ok calls sent inside a fault window on their replica and answered after it ended: served because the fault
    /// happened to end while they waited (the swarm's `ok_calls` invariant does not credit naive with them).
    waited_out: u64,
    p99_ms: f64,
}

/// A copy of `t` with every float finite (serde_json would write NaN and inf as `null`, which here means only "n/a":
/// a figure with nothing to judge is `None`).
pub(crate) fn clean_totals(t: &Totals) -> Totals {
    let known = |x: Option<f64>| x.map(finite);
    Totals {
        amplification: finite(t.amplification),
        error_rate: finite(t.error_rate),
        p50_ms: finite(t.p50_ms),
        p95_ms: finite(t.p95_ms),
        p99_ms: finite(t.p99_ms),
        p999_ms: finite(t.p999_ms),
        max_ms: finite(t.max_ms),
        ok_per_s: finite(t.ok_per_s),
        amplification_during_fault: known(t.amplification_during_fault),
        error_rate_during_fault: known(t.error_rate_during_fault),
        p99_during_fault_ms: known(t.p99_during_fault_ms),
        healthy_p99_before_ms: known(t.healthy_p99_before_ms),
        healthy_p99_during_ms: known(t.healthy_p99_during_ms),
        healthy_p99_ratio: known(t.healthy_p99_ratio),
        recovery: match t.recovery {
            Recovery::After(s) => Recovery::After(finite(s)),
            r => r,
        },
        ..t.clone()
    }
}

pub(crate) fn json(run: &RunData) -> Result<Vec<u8>, serde_json::Error> {
    let doc = SummaryJson {
        scenario: &run.scenario,
        mode: run.mode,
        attempts_recorded: run.attempts_recorded,
        description: &run.description,
        seed: run.seed,
        formula: &run.formula,
        sim_seconds: finite(run.sim_seconds),
        passed: run.passed(),
        reproduce: &run.reproduce,
        totals: clean_totals(&run.totals),
        checks: run
            .checks
            .iter()
            .map(|c| CheckResult { limit: finite(c.limit), actual: c.actual.map(finite), ..c.clone() })
            .collect(),
        faults: run
            .faults
            .iter()
            .map(|f| FaultWindow { start_s: finite(f.start_s), end_s: finite(f.end_s), ..f.clone() })
            .collect(),
        servers: run
            .audit
            .servers
            .iter()
            .map(|(name, s)| {
                let json = ServerJson {
                    calls: s.calls,
                    ok: s.ok(),
                    failed: s.failed,
                    waited_out: s.waited_out,
                    p99_ms: finite(s.p99_ms),
                };
                (name.as_str(), json)
            })
            .collect(),
    };
    let mut bytes = serde_json::to_vec_pretty(&doc)?;
    bytes.push(b'\n');
    Ok(bytes)
}

fn is_true(b: &bool) -> bool {
    *b
}

pub(crate) fn verdict(passed: bool) -> &'static str {
    if passed { "PASS" } else { "FAIL" }
}

/// `60 s simulated in 0.21 s wall (285x real time)`; a live run's, `60 s live`.
pub(crate) fn timing(wall: &WallClock, mode: RunMode) -> String {
    if mode == RunMode::Live {
        return format!("{} s live", short(wall.sim.as_secs_f64(), 3));
    }
    format!(
        "{} s simulated in {} s wall ({}x real time)",
        short(wall.sim.as_secs_f64(), 3),
        short(wall.wall.as_secs_f64(), 3),
        short(finite(wall.speedup()), 1)
    )
}

pub(crate) fn markdown(run: &RunData, wall: &WallClock, calls: CallsMode) -> String {
    let mut s = String::new();
    // `write!` into a String cannot fail; the results are ignored on purpose.
    let _ = writeln!(s, "# {} — {}\n", md_cell(&run.scenario), verdict(run.passed()));
    if !run.description.trim().is_empty() {
        for line in run.description.trim().lines() {
            let _ = writeln!(s, "> {line}");
        }
        s.push('\n');
    }
    let _ = writeln!(s, "- seed: `{}`", run.seed);
    let _ = writeln!(s, "- time: {}", timing(wall, run.mode));
    let _ = writeln!(s, "- reproduce:\n\n```sh\n{}\n```\n", run.reproduce);

    s.push_str("## Totals\n\n| metric | value |\n|---|---:|\n");
    for (name, value) in total_rows(run) {
        let _ = writeln!(s, "| {name} | {value} |");
    }

    s.push_str("\n## Checks\n\n");
    if run.checks.is_empty() {
        s.push_str("No checks configured.\n");
    } else {
        s.push_str("| check | limit | actual | result |\n|---|---:|---:|:---:|\n");
        for c in &run.checks {
            let mark = if c.passed { "PASS" } else { "**FAIL**" };
            let _ = writeln!(s, "| {} | {} | {} | {mark} |", md_cell(&c.name), short(c.limit, 4), actual(c));
        }
    }

    s.push_str("\n## Faults\n\n");
    if run.faults.is_empty() {
        s.push_str("No faults injected.\n");
    } else {
        s.push_str("| fault | start | end | duration |\n|---|---:|---:|---:|\n");
        for f in &run.faults {
            let (start, end) = (finite(f.start_s), finite(f.end_s));
            let _ = writeln!(
                s,
                "| {} | {} s | {} s | {} s |",
                md_cell(&f.label),
                short(start, 3),
                short(end, 3),
                short(end - start, 3)
            );
        }
    }

    s.push_str("\n## Plots\n\n");
    let over = if run.mode == RunMode::Live { "time, live" } else { "simulated time" };
    let _ = writeln!(s, "![QPS, latency and errors over {over}]({}.png)\n", plot::REPORT);
    for (name, what) in [
        (plot::QPS, "QPS: offered, attempts, completed, ok"),
        (plot::P99, "latency P50/P95/P99"),
        (plot::ERRORS, "errors by class and error rate"),
        (plot::REPORT, "all three panels"),
    ] {
        let _ = writeln!(s, "- {what}: [{name}.svg]({name}.svg), [{name}.png]({name}.png)");
    }
    s.push_str("\nShaded bands are fault windows. Data: [timeseries.csv](timeseries.csv) (one row per simulated ");
    let _ = writeln!(
        s,
        "second), [events.csv](events.csv) ({} events), [summary.json](summary.json); {}.",
        grouped(run.events.len() as u64),
        super::calls::kept(calls)
    );
    s.push_str(
        "\nA row's `offered` counts the calls started in that second and `completed` those that ended in it, so a \
         second can complete more than it offered: calls started earlier finishing.",
    );
    match Drain::of(&run.seconds) {
        Some(d) => {
            let _ = writeln!(
                s,
                " From {} s on, the load had stopped: those seconds are the drain, {} calls in flight finishing, and \
                 the plots shade them rather than draw them as a rate.",
                d.from,
                grouped(d.completed)
            );
        }
        None => s.push('\n'),
    }
    s
}

/// The run's totals for people, one `(metric, value)` row each: `summary.md`'s table, and the HTML report's (where a
/// contrast run's column stands beside it).
pub(crate) fn total_rows(run: &RunData) -> [(&'static str, String); 43] {
    let t = clean_totals(&run.totals);
    [
        ("offered (logical calls)", grouped(t.offered)),
        ("completed", grouped(t.completed)),
        ("ok", grouped(t.ok)),
        ("errors", grouped(t.errors)),
        ("errors by class", errors_by_class(&t)),
        ("lost", grouped(t.lost)),
        ("ok", grouped(t.outcomes.ok)),
        ("answered degraded (\"do not retry\")", grouped(t.outcomes.degraded)),
        ("degraded: mean wait", ms(t.outcomes.degraded_mean_wait_ms)),
        ("failed after waiting", grouped(t.outcomes.failed)),
        ("failed: mean wait", ms(t.outcomes.failed_mean_wait_ms)),
        ("agents' time waiting on failed calls", agent_seconds(t.outcomes.failed_wait_s)),
        ("attempts", grouped(t.attempts)),
        ("retries", grouped(t.retries)),
        ("possible duplicates (retries that may have run a tool twice)", possible_duplicates(&t)),
        ("amplification (attempts per call)", format!("{}x", short(t.amplification, 3))),
        ("error rate", pct(t.error_rate)),
        ("P50", ms(t.p50_ms)),
        ("P95", ms(t.p95_ms)),
        ("P99", ms(t.p99_ms)),
        ("P99.9", ms(t.p999_ms)),
        ("max", ms(t.max_ms)),
        ("goodput", format!("{} ok/s", short(t.ok_per_s, 2))),
        (
            if run.mode == RunMode::Live { "time, live" } else { "simulated time" },
            format!("{} s", short(run.sim_seconds, 3)),
        ),
        ("gateway profile", run.profile.clone()),
        ("stale sends", grouped(t.stale_sends)),
        ("schema refusals (servers' count)", grouped(t.schema_refusals)),
        ("error window (s over 1% errors)", grouped(t.error_window_s)),
        ("session errors", grouped(t.session_errors)),
        ("auth errors", grouped(t.auth_errors)),
        ("re-handshakes", grouped(t.rehandshakes)),
        ("renewals", grouped(t.renewals)),
        ("amplification during faults", times(t.amplification_during_fault)),
        ("calls completed during faults", during_fault(&t)),
        ("healthy servers' P99 before faults", healthy_ms(t.healthy_p99_before_ms)),
        ("healthy servers' P99 during faults", healthy_ms(t.healthy_p99_during_ms)),
        (
            "healthy P99 ratio (during / before)",
            t.healthy_p99_ratio.map_or_else(|| NOT_JUDGED.to_owned(), |r| short(r, 3)),
        ),
        ("recovery after the last fault", recovery(t.recovery)),
        ("breaker openings", grouped(t.breaker_opens)),
        ("degraded results", degraded_by_reason(&t)),
        ("routing formula", run.formula.clone()),
        ("misroutes", grouped(t.misroutes)),
        ("breaker convergence across gateways", convergence(&t)),
    ]
}

/// `degraded 1,200, transport 34` in the error panel's order, or `-` without errors.
pub(crate) fn errors_by_class(t: &Totals) -> String {
    let parts: Vec<String> = FailureClass::ALL
        .iter()
        .filter_map(|c| {
            t.errors_by_class.get(c.label()).filter(|n| **n > 0).map(|n| format!("{} {}", c.label(), grouped(*n)))
        })
        .collect();
    if parts.is_empty() { "-".to_owned() } else { parts.join(", ") }
}

/// `ok 74,885  degraded 14,650 (mean wait 708 ms, do not retry)  failed 2 after waiting (mean 4,900 ms, agents
/// waited 9.8 s in all)`: the errors split as the agents lived them (see [`Outcomes`](crate::run::Outcomes)).
pub(crate) fn outcomes(t: &Totals) -> String {
    let o = &t.outcomes;
    format!(
        "ok {}  degraded {} (mean wait {}, do not retry)  failed {} after waiting (mean {}, agents waited {} in all)",
        grouped(o.ok),
        grouped(o.degraded),
        ms(finite(o.degraded_mean_wait_ms)),
        grouped(o.failed),
        ms(finite(o.failed_mean_wait_ms)),
        agent_seconds(o.failed_wait_s)
    )
}

/// `12 (agent 10, gateway 2)`, or `0`: retries that may have run a tool twice (see
/// [`Totals::possible_duplicates`]).
pub(crate) fn possible_duplicates(t: &Totals) -> String {
    if t.possible_duplicates == 0 {
        return "0".to_owned();
    }
    let parts: Vec<String> = t.possible_duplicates_by.iter().map(|(by, n)| format!("{by} {}", grouped(*n))).collect();
    format!("{} ({})", grouped(t.possible_duplicates), parts.join(", "))
}

/// Agents' waiting time summed over calls: `0 s`, `0.42 s`, `3,272 s`.
pub(crate) fn agent_seconds(s: f64) -> String {
    let s = finite(s);
    if s >= 100.0 { format!("{} s", grouped(s.round() as u64)) } else { format!("{} s", short(s, 2)) }
}

/// `ok 1,234, errors 5.1%, P99 812 ms` for the calls completed inside the fault windows, or `n/a`.
pub(crate) fn during_fault(t: &Totals) -> String {
    match (t.ok_during_fault, t.error_rate_during_fault, t.p99_during_fault_ms) {
        (Some(ok), Some(rate), Some(p99)) => format!("ok {}, errors {}, P99 {}", grouped(ok), pct(rate), ms(p99)),
        (Some(_), _, _) => "none".to_owned(),
        _ => NOT_JUDGED.to_owned(),
    }
}

/// A P99 of calls to healthy servers (those no fault targets), or `n/a` for a phase in which no call reached one:
/// every server was a fault target, or no call went to the others.
pub(crate) fn healthy_ms(p99_ms: Option<f64>) -> String {
    p99_ms.map_or_else(|| NOT_JUDGED.to_owned(), ms)
}

/// `1.2x`, or `n/a`.
pub(crate) fn times(x: Option<f64>) -> String {
    x.map_or_else(|| NOT_JUDGED.to_owned(), |x| format!("{}x", short(x, 3)))
}

/// `2 s`, `not recovered within the run`, or `n/a` (no fault window, or no ok call before the first fault).
pub(crate) fn recovery(r: Recovery) -> String {
    match r {
        Recovery::After(s) => format!("{} s", short(s, 3)),
        Recovery::Never => NOT_RECOVERED.to_owned(),
        Recovery::NotJudged => NOT_JUDGED.to_owned(),
    }
}

/// A check's actual figure: the number, or why it has none.
pub(crate) fn actual(c: &CheckResult) -> String {
    c.actual.map_or_else(|| c.missing_actual().to_owned(), |a| short(a, 4))
}

/// `12 (breaker_open 10, retry_budget_exhausted 2)`, or `0`.
pub(crate) fn degraded_by_reason(t: &Totals) -> String {
    let total: u64 = t.degraded.values().sum();
    if total == 0 {
        return "0".to_owned();
    }
    let parts: Vec<String> = t.degraded.iter().map(|(r, n)| format!("{r} {}", grouped(*n))).collect();
    format!("{} ({})", grouped(total), parts.join(", "))
}

/// `3 incidents, converged in 4 / 9 ms (median / max), 1 never`, or `-` without incidents.
pub(crate) fn convergence(t: &Totals) -> String {
    if t.convergence.is_empty() {
        return "-".to_owned();
    }
    let mut done: Vec<u64> = t.convergence.iter().filter_map(|c| c.converged_ms).collect();
    done.sort_unstable();
    let never = t.convergence.len() - done.len();
    let times = match (done.get(done.len() / 2), done.last()) {
        (Some(median), Some(max)) => format!(", converged in {median} / {max} ms (median / max)"),
        _ => String::new(),
    };
    format!("{} incidents{times}, {never} never", t.convergence.len())
}
