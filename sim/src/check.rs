//! The run's verdict: the `[checks]` thresholds against a run's totals, and the error window those checks read.
//!
//! Kept apart from `world`: judging a run is not simulating it, and the contrast checks need two runs, which `world`
//! never sees (the CLI calls [`evaluate_contrast_checks`] once both are done).

use crate::run::{CheckResult, Recovery, RunData, SecondRow, Totals};
use crate::scenario::Scenario;

/// Every threshold `[checks]` sets, in a fixed order (the order `summary.json` lists them in), against `totals`.
pub(crate) fn evaluate_checks(scenario: &Scenario, totals: &Totals) -> Vec<CheckResult> {
    let c = &scenario.checks;
    let mut out = Vec::new();
    // A figure with no value passes when there was nothing to judge (no healthy server, no fault window), and fails
    // when the run never reached it (a recovery that never came).
    let mut check = |name: &str, limit: Option<f64>, actual: Option<f64>, unreached: bool| {
        if let Some(limit) = limit {
            let passed = actual.map_or(!unreached, |a| a <= limit);
            out.push(CheckResult { name: name.to_owned(), limit, actual, passed });
        }
    };
    let count = |n: u64| Some(n as f64);
    let degraded = totals.degraded.values().fold(0u64, |n, d| n.saturating_add(*d));
    check("p99_ms", c.p99_ms, Some(totals.p99_ms), false);
    check("error_rate", c.error_rate, Some(totals.error_rate), false);
    check("errors", c.errors.map(|l| l as f64), count(totals.errors), false);
    check("lost", c.lost.map(|l| l as f64), count(totals.lost), false);
    check("stale_sends", c.stale_sends.map(|l| l as f64), count(totals.stale_sends), false);
    check("error_window_s", c.error_window_s.map(|l| l as f64), count(totals.error_window_s), false);
    check("session_errors", c.session_errors.map(|l| l as f64), count(totals.session_errors), false);
    check("auth_errors", c.auth_errors.map(|l| l as f64), count(totals.auth_errors), false);
    check("amplification_during_fault", c.amplification_during_fault, totals.amplification_during_fault, false);
    check("healthy_p99_ratio", c.healthy_p99_ratio, totals.healthy_p99_ratio, false);
    let never = totals.recovery == Recovery::Never;
    check("recovery_s", c.recovery_s, totals.recovery.seconds(), never);
    check("misroutes", c.misroutes.map(|l| l as f64), count(totals.misroutes), false);
    check("degraded", c.degraded.map(|l| l as f64), count(degraded), false);
    let tokens = totals.tokens.as_ref().map(|t| t.requests);
    check("token_requests", c.token_requests.map(|l| l as f64), tokens.and_then(count), false);
    check("possible_duplicates", c.possible_duplicates.map(|l| l as f64), count(totals.possible_duplicates), false);
    out
}

/// The checks that compare a run with the same scenario and seed under the other gateway profile
/// (`[report] contrast`): appended to `run`'s checks once both runs are done.
pub fn evaluate_contrast_checks(scenario: &Scenario, run: &mut RunData, other: &RunData) {
    let c = &scenario.checks;
    let (mine, theirs) = (&run.totals, &other.totals);
    if let Some(limit) = c.contrast_p99_ratio {
        let actual = if theirs.p99_ms > 0.0 { mine.p99_ms / theirs.p99_ms } else { f64::from(mine.p99_ms > 0.0) };
        let passed = actual <= limit;
        run.checks.push(CheckResult { name: "contrast_p99_ratio".into(), limit, actual: Some(actual), passed });
    }
    if let Some(limit) = c.contrast_extra_errors {
        let actual = mine.errors as f64 - theirs.errors as f64;
        let (limit, passed) = (limit as f64, actual <= limit as f64);
        run.checks.push(CheckResult { name: "contrast_extra_errors".into(), limit, actual: Some(actual), passed });
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

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(checks: &str) -> Scenario {
        let text = format!(
            "name = \"t\"\nduration = \"20s\"\n[[servers]]\nname = \"a\"\n[[servers.tools]]\nname = \"x\"\n[load]\n\
             mode = \"open\"\nrate = 10.0\n[[load.mix]]\nserver = \"a\"\ntool = \"x\"\n[[faults]]\n\
             kind = \"error_burst\"\ntarget = \"a\"\nstart = \"5s\"\nduration = \"2s\"\nrate = 1.0\n[checks]\n{checks}"
        );
        crate::scenario::load_str(&text, "t.toml", &[]).expect("valid")
    }

    fn judged(recovery: Recovery) -> CheckResult {
        let totals = Totals { recovery, ..Totals::default() };
        let checks = evaluate_checks(&scenario("recovery_s = 10\n"), &totals);
        checks.into_iter().find(|c| c.name == "recovery_s").expect("asked for")
    }

    #[test]
    fn a_recovery_that_never_came_fails_its_check_whatever_the_limit() {
        let never = judged(Recovery::Never);
        assert_eq!((never.name.as_str(), never.actual, never.passed), ("recovery_s", None, false));
        assert_eq!(never.missing_actual(), "not recovered within the run");
        assert_eq!((judged(Recovery::After(10.0)).passed, judged(Recovery::After(11.0)).passed), (true, false));
        // Nothing to judge: it passes, and says n/a.
        let na = judged(Recovery::NotJudged);
        assert_eq!((na.actual, na.passed, na.missing_actual()), (None, true, "n/a"));
    }

    #[test]
    fn possible_duplicates_is_a_maximum() {
        let s = scenario("possible_duplicates = 2\n");
        let judged = |n: u64| {
            let totals = Totals { possible_duplicates: n, ..Totals::default() };
            let found = evaluate_checks(&s, &totals).into_iter().find(|c| c.name == "possible_duplicates");
            found.map(|c| (c.limit, c.actual, c.passed))
        };
        assert_eq!(judged(2), Some((2.0, Some(2.0), true)));
        assert_eq!(judged(3), Some((2.0, Some(3.0), false)));
        let unset = evaluate_checks(&scenario(""), &Totals { possible_duplicates: 9, ..Totals::default() });
        assert!(unset.iter().all(|c| c.name != "possible_duplicates"), "not asked for, not judged");
    }

    #[test]
    fn a_figure_with_nothing_to_judge_passes_its_check() {
        let s = scenario("healthy_p99_ratio = 1.1\namplification_during_fault = 1.2\n");
        let judged = |totals: &Totals| {
            let checks = evaluate_checks(&s, totals).into_iter();
            checks.filter(|c| c.name != "lost").map(|c| (c.actual, c.passed)).collect::<Vec<_>>()
        };
        assert_eq!(judged(&Totals::default()), [(None, true), (None, true)]);
        let totals =
            Totals { healthy_p99_ratio: Some(1.2), amplification_during_fault: Some(1.2), ..Totals::default() };
        assert_eq!(judged(&totals), [(Some(1.2), true), (Some(1.2), false)]);
    }
}
