//! The one-screen summary printed after a run.

use std::fmt::Write as _;
use std::path::Path;

use super::num::{finite, grouped, ms, pct, short};
use super::plot;
use super::summary::{
    actual, clean_totals, convergence, degraded_by_reason, during_fault, errors_by_class, healthy_ms, outcomes,
    possible_duplicates, recovery, times, timing, verdict,
};
use crate::run::{RunData, WallClock};
use crate::scenario::CallsMode;

/// Totals, checks, where the report went, how fast the simulation ran, and the command that reproduces the run.
pub fn console_summary(run: &RunData, wall: &WallClock, dir: &Path, calls: CallsMode) -> String {
    let t = clean_totals(&run.totals);
    let mut s = String::new();
    // `write!` into a String cannot fail; the results are ignored on purpose.
    let (command, scenario, seed) = (run.mode.command(), &run.scenario, run.seed);
    let _ = writeln!(s, "mcpstorm {command}: {scenario} (seed {seed}) {}", verdict(run.passed()));
    let _ = writeln!(
        s,
        "  calls      offered {}  ok {}  errors {} ({}{})  lost {}",
        grouped(t.offered),
        grouped(t.ok),
        grouped(t.errors),
        pct(t.error_rate),
        if t.errors > 0 { format!(": {}", errors_by_class(&t)) } else { String::new() },
        grouped(t.lost)
    );
    if t.errors > 0 {
        let _ = writeln!(s, "  outcomes   {}", outcomes(&t));
    }
    if run.attempts_recorded {
        let _ = writeln!(
            s,
            "  attempts   {}  retries {}  amplification {}x  goodput {} ok/s  possible duplicates {}",
            grouped(t.attempts),
            grouped(t.retries),
            short(t.amplification, 3),
            short(t.ok_per_s, 2),
            possible_duplicates(&t)
        );
    } else {
        let _ = writeln!(
            s,
            "  attempts   not recorded: the gateway processes made them (their /metrics count them)  goodput {} ok/s",
            short(t.ok_per_s, 2)
        );
    }
    let _ = writeln!(
        s,
        "  latency    P50 {}  P95 {}  P99 {}  P99.9 {}  max {}",
        ms(t.p50_ms),
        ms(t.p95_ms),
        ms(t.p99_ms),
        ms(t.p999_ms),
        ms(t.max_ms)
    );
    // Only for runs where sessions, auth or schemas did something: the line is noise for the others.
    let touched = [t.stale_sends, t.schema_refusals, t.session_errors, t.auth_errors, t.rehandshakes, t.renewals];
    if run.profile != "default" || touched.iter().any(|n| *n > 0) {
        let _ = writeln!(
            s,
            "  sessions   profile {}  stale sends {} (of {} refused)  error window {} s  session errors {}  auth errors {}  \
             re-handshakes {}  renewals {}",
            run.profile,
            grouped(t.stale_sends),
            grouped(t.schema_refusals),
            grouped(t.error_window_s),
            grouped(t.session_errors),
            grouped(t.auth_errors),
            grouped(t.rehandshakes),
            grouped(t.renewals)
        );
    }
    if let Some(tokens) = &t.tokens {
        let _ = writeln!(s, "  tokens     {}", token_traffic(tokens));
    }
    // Only for runs with fault windows or a gateway that protected something.
    if !t.convergence.is_empty() {
        let _ = writeln!(s, "  gateways   breaker convergence across gateways: {}", convergence(&t));
    }
    if t.amplification_during_fault.is_some() || t.breaker_opens > 0 || !t.degraded.is_empty() {
        let _ = writeln!(
            s,
            "  resilience during faults: amplification {}, {}  {}  recovery {}  breaker opens {}  degraded {}",
            times(t.amplification_during_fault),
            during_fault(&t),
            healthy_p99(&t),
            recovery(t.recovery),
            grouped(t.breaker_opens),
            degraded_by_reason(&t)
        );
    }
    let _ =
        writeln!(s, "  routing    formula {}  misroutes {}  {}", run.formula, grouped(t.misroutes), replica_share(&t));
    if run.checks.is_empty() {
        let _ = writeln!(s, "  checks     none configured");
    }
    for (i, c) in run.checks.iter().enumerate() {
        let lead = if i == 0 { "  checks   " } else { "           " };
        let _ =
            writeln!(s, "{lead} {}  {}: actual {}, limit {}", verdict(c.passed), c.name, actual(c), short(c.limit, 4));
    }
    for (i, f) in run.faults.iter().enumerate() {
        let lead = if i == 0 { "  faults   " } else { "           " };
        let _ = writeln!(s, "{lead} {} {}-{} s", f.label, short(finite(f.start_s), 3), short(finite(f.end_s), 3));
    }
    let _ = writeln!(s, "  time       {}", timing(wall, run.mode));
    let _ = writeln!(s, "  report     {}  ({})", dir.display(), super::calls::kept(calls));
    let _ = writeln!(s, "  plot       {}", dir.join(format!("{}.png", plot::REPORT)).display());
    let _ = writeln!(s, "reproduce: {}", run.reproduce);
    s
}

/// `healthy P99 7.99 ms -> 9.1 ms (1.139x)`: the servers no fault targets, before and during the faults; a phase
/// without calls to them is `n/a`, and a run without any says so.
fn healthy_p99(t: &crate::run::Totals) -> String {
    let (before, during) = (t.healthy_p99_before_ms, t.healthy_p99_during_ms);
    match (t.healthy_p99_ratio, before, during) {
        (Some(ratio), _, _) => {
            format!("healthy P99 {} -> {} ({}x)", healthy_ms(before), healthy_ms(during), short(ratio, 3))
        }
        (None, None, None) => "healthy P99 n/a (no call reached a server outside the faults)".to_owned(),
        (None, _, _) => format!("healthy P99 {} -> {}", healthy_ms(before), healthy_ms(during)),
    }
}

/// `replicas 10, busiest echo-3 12%, idlest echo-0 2%`: whether the load spread or a replica starved.
fn replica_share(t: &crate::run::Totals) -> String {
    let total: u64 = t.replica_calls.values().sum();
    let share = |n: u64| pct(if total == 0 { 0.0 } else { n as f64 / total as f64 });
    let busiest = t.replica_calls.iter().max_by_key(|(_, n)| **n);
    let idlest = t.replica_calls.iter().min_by_key(|(_, n)| **n);
    match (busiest, idlest) {
        (Some((b, nb)), Some((i, ni))) if t.replica_calls.len() > 1 => {
            format!("replicas {}, busiest {b} {}, idlest {i} {}", t.replica_calls.len(), share(*nb), share(*ni))
        }
        _ => format!("replicas {}", t.replica_calls.len()),
    }
}

/// `requests 12 (peak 4/s)  issued 12  shed 0  failed 0  dropped 0`: the identity provider's side of a run.
pub(crate) fn token_traffic(t: &crate::run::TokenTraffic) -> String {
    format!(
        "requests {} (peak {}/s)  issued {}  shed {}  failed {}  dropped {}",
        grouped(t.requests),
        grouped(t.peak_per_s),
        grouped(t.issued),
        grouped(t.shed),
        grouped(t.failed),
        grouped(t.dropped)
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::report::summary::{json, markdown};
    use crate::run::{CheckResult, Recovery, Totals};

    fn run_with(totals: Totals) -> RunData {
        RunData {
            attempts_recorded: true,
            scenario: "s".into(),
            description: String::new(),
            seed: 1,
            profile: "default".into(),
            formula: "f".into(),
            sim_seconds: 10.0,
            seconds: Vec::new(),
            events: Vec::new(),
            faults: Vec::new(),
            totals: Totals { amplification_during_fault: Some(1.0), ..totals },
            checks: Vec::new(),
            reproduce: "mcpstorm sim s.toml".into(),
            audit: Default::default(),
            traces: Default::default(),
            mode: Default::default(),
        }
    }

    const WALL: WallClock = WallClock { wall: Duration::from_secs(1), sim: Duration::from_secs(10) };

    fn line(run: &RunData, lead: &str) -> String {
        let text = console_summary(run, &WALL, Path::new("out"), CallsMode::All);
        text.lines().find(|l| l.trim_start().starts_with(lead)).unwrap_or_default().to_owned()
    }

    fn resilience_line(totals: Totals) -> String {
        line(&run_with(totals), "resilience")
    }

    fn json_totals(run: &RunData) -> serde_json::Value {
        let doc: serde_json::Value = serde_json::from_slice(&json(run).expect("serializes")).expect("parses");
        doc["totals"].clone()
    }

    #[test]
    fn healthy_p99_is_not_made_up_when_no_call_reached_a_healthy_server() {
        let line = resilience_line(Totals::default());
        assert!(line.contains("healthy P99 n/a (no call reached a server outside the faults)"), "{line}");
        let before_only = Totals { healthy_p99_before_ms: Some(7.99), ..Totals::default() };
        assert!(resilience_line(before_only).contains("healthy P99 7.99 ms -> n/a  recovery"));
        let both = Totals {
            healthy_p99_before_ms: Some(8.0),
            healthy_p99_during_ms: Some(9.0),
            healthy_p99_ratio: Some(1.125),
            ..Totals::default()
        };
        assert!(resilience_line(both).contains("healthy P99 8.00 ms -> 9.00 ms (1.125x)"));
        // summary.json: n/a is null, not a 0 that reads as a measurement.
        let t = json_totals(&run_with(Totals { amplification_during_fault: None, ..Totals::default() }));
        for key in ["healthy_p99_before_ms", "healthy_p99_during_ms", "healthy_p99_ratio", "recovery_s", "recovered"] {
            assert!(t[key].is_null(), "{key}: {t}");
        }
        let mut no_window = run_with(Totals::default());
        no_window.totals.amplification_during_fault = None;
        assert!(json_totals(&no_window)["amplification_during_fault"].is_null());
    }

    #[test]
    fn a_recovery_that_never_came_is_a_phrase_and_null_not_a_number() {
        let mut never = run_with(Totals { recovery: Recovery::Never, ..Totals::default() });
        never.checks = vec![CheckResult { name: "recovery_s".into(), limit: 10.0, actual: None, passed: false }];
        assert!(resilience_line(never.totals.clone()).contains("recovery not recovered within the run  breaker"));
        let md = markdown(&never, &WALL, CallsMode::All);
        assert!(md.contains("| recovery after the last fault | not recovered within the run |"), "{md}");
        assert!(md.contains("| recovery_s | 10 | not recovered within the run | **FAIL** |"), "{md}");
        let check = line(&never, "checks");
        assert!(check.contains("FAIL  recovery_s: actual not recovered within the run, limit 10"), "{check}");
        let t = json_totals(&never);
        assert!(t["recovery_s"].is_null() && t["recovered"] == false, "{t}");
        // Nothing to judge: n/a, and null in both fields.
        let na = run_with(Totals::default());
        assert!(resilience_line(na.totals.clone()).contains("recovery n/a  breaker"));
        assert!(markdown(&na, &WALL, CallsMode::All).contains("| recovery after the last fault | n/a |"));
        // Recovered: the seconds.
        let back = run_with(Totals { recovery: Recovery::After(1.0), ..Totals::default() });
        assert!(resilience_line(back.totals.clone()).contains("recovery 1 s  breaker"));
        let t = json_totals(&back);
        assert!(t["recovery_s"] == 1.0 && t["recovered"] == true, "{t}");
    }
}
