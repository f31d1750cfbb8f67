//! The run's verdict: the `[checks]` thresholds against a run's totals, and the error window those checks read.
//!
//! Kept apart from `world`: judging a run is not simulating it, and the contrast checks need two runs, which `world`
//! never sees (the CLI calls [`evaluate_contrast_checks`] once both are done).

use crate::run::{CheckResult, RunData, SecondRow, Totals};
use crate::scenario::Scenario;

/// Every threshold `[checks]` sets, in a fixed order (the order `summary.json` lists them in), against `totals`.
pub(crate) fn evaluate_checks(scenario: &Scenario, totals: &Totals) -> Vec<CheckResult> {
    let c = &scenario.checks;
    let mut out = Vec::new();
    let mut check = |name: &str, limit: Option<f64>, actual: f64| {
        if let Some(limit) = limit {
            out.push(CheckResult { name: name.to_owned(), limit, actual, passed: actual <= limit });
        }
    };
    check("p99_ms", c.p99_ms, totals.p99_ms);
    check("error_rate", c.error_rate, totals.error_rate);
    check("lost", c.lost.map(|l| l as f64), totals.lost as f64);
    check("stale_sends", c.stale_sends.map(|l| l as f64), totals.stale_sends as f64);
    check("error_window_s", c.error_window_s.map(|l| l as f64), totals.error_window_s as f64);
    check("session_errors", c.session_errors.map(|l| l as f64), totals.session_errors as f64);
    check("auth_errors", c.auth_errors.map(|l| l as f64), totals.auth_errors as f64);
    check("amplification_during_fault", c.amplification_during_fault, totals.amplification_during_fault);
    check("healthy_p99_ratio", c.healthy_p99_ratio, totals.healthy_p99_ratio);
    check("recovery_s", c.recovery_s, totals.recovery_s);
    check("misroutes", c.misroutes.map(|l| l as f64), totals.misroutes as f64);
    check(
        "degraded",
        c.degraded.map(|l| l as f64),
        totals.degraded.values().fold(0u64, |n, d| n.saturating_add(*d)) as f64,
    );
    out
}

/// The checks that compare a run with the same scenario and seed under the other gateway profile
/// (`[report] contrast`): appended to `run`'s checks once both runs are done.
pub fn evaluate_contrast_checks(scenario: &Scenario, run: &mut RunData, other: &RunData) {
    let c = &scenario.checks;
    let (mine, theirs) = (&run.totals, &other.totals);
    if let Some(limit) = c.contrast_p99_ratio {
        let actual = if theirs.p99_ms > 0.0 { mine.p99_ms / theirs.p99_ms } else { f64::from(mine.p99_ms > 0.0) };
        run.checks.push(CheckResult { name: "contrast_p99_ratio".into(), limit, actual, passed: actual <= limit });
    }
    if let Some(limit) = c.contrast_extra_errors {
        let actual = mine.errors as f64 - theirs.errors as f64;
        let limit = limit as f64;
        run.checks.push(CheckResult { name: "contrast_extra_errors".into(), limit, actual, passed: actual <= limit });
    }
}

/// Share of failed logical calls above which a second counts towards the error window.
const ERROR_WINDOW_RATE: f64 = 0.01;

/// The seconds from the first fault's start on (from 0 without faults) in which more than 1% of the logical calls
/// that completed failed.
pub(crate) fn error_window(rows: &[SecondRow], scenario: &Scenario) -> u64 {
    let from = scenario.faults.iter().map(|f| f.start.0.as_secs()).min().unwrap_or(0);
    let bad = |r: &&SecondRow| r.completed > 0 && r.errors() as f64 > ERROR_WINDOW_RATE * r.completed as f64;
    rows.iter().filter(|r| r.t >= from).filter(bad).count() as u64
}
