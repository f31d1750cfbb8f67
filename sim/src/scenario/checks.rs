//! The `[checks]` table: the thresholds a run must meet (judged in `crate::check`).

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::faults::Fault;
use super::report::{Contrast, ReportSpec};
use super::rules::{Rules, fmt};

/// Thresholds whose failure makes the run exit 1. Absent = not checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Checks {
    /// Whole-run P99 of logical-call latency, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ms: Option<f64>,
    /// Whole-run share of logical calls that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_rate: Option<f64>,
    /// Whole-run count of logical calls that did not end ok (degraded results included): for a story whose few
    /// unavoidable failures a share would hide or exaggerate (the calls in flight on a replica when it died).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<u64>,
    /// Calls issued that never reached an outcome; the default check is 0.
    #[serde(default = "zero_lost")]
    pub lost: Option<u64>,
    /// Attempts a server refused for a stale schema, sent after that load host had already been refused so by that
    /// replica (since its last drift): sends the gateway could have known were stale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale_sends: Option<u64>,
    /// Seconds, from the first fault's start on, whose share of failed calls exceeds 1%.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_window_s: Option<u64>,
    /// Attempts that ended, as the agent sees them, with session-not-found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_errors: Option<u64>,
    /// Attempts that ended with an auth mismatch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_errors: Option<u64>,
    /// Attempts (the gateway's retries included) per logical call, over the seconds of the fault windows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amplification_during_fault: Option<f64>,
    /// P99 of logical calls to servers no fault targets, during the fault windows, over their P99 before the first
    /// fault: whether a sick server hurt the healthy ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healthy_p99_ratio: Option<f64>,
    /// Seconds after the last fault ends until goodput over 3 seconds is back to ≥ 95% of its pre-fault level (an
    /// open loop's: the share of offered calls served ok). A run that never gets back fails it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_s: Option<f64>,
    /// Attempts served by a replica whose server does not meet the call's needs (judged from the server tables:
    /// mix entry's server, tool, `<argument>_support` capabilities), independently of the router.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub misroutes: Option<u64>,
    /// Calls the gateway answered with a degraded result (any reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<u64>,
    /// With `[identity_provider]`: the token requests it received over the run (what a token storm costs it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_requests: Option<u64>,
    /// Retries that may have run a tool a second time: a retry (by the agent or the gateway) that reached a server,
    /// of a call to a tool not marked safe to repeat (no `readOnlyHint` or `idempotentHint` annotation), after an
    /// attempt that may have run there unseen (the deadline, a timeout, the connection closed or reset after sending).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub possible_duplicates: Option<u64>,
    /// With `[report] contrast`: this run's whole-run P99 over the contrast profile's on the same seed (1.0: no worse
    /// than the other profile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contrast_p99_ratio: Option<f64>,
    /// With `[report] contrast`: this run's failed calls minus the contrast profile's on the same seed (0: it fails
    /// no more calls than the other profile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contrast_extra_errors: Option<i64>,
}

fn zero_lost() -> Option<u64> {
    Some(0)
}

impl Default for Checks {
    fn default() -> Self {
        Checks {
            p99_ms: None,
            error_rate: None,
            errors: None,
            lost: zero_lost(),
            stale_sends: None,
            error_window_s: None,
            session_errors: None,
            auth_errors: None,
            amplification_during_fault: None,
            healthy_p99_ratio: None,
            recovery_s: None,
            misroutes: None,
            degraded: None,
            token_requests: None,
            possible_duplicates: None,
            contrast_p99_ratio: None,
            contrast_extra_errors: None,
        }
    }
}

impl Checks {
    /// The thresholds' rules. A check measured over fault windows needs a fault with a duration among `faults`; a
    /// contrast check needs the `[report]` contrast (`report`), and is not judged in a sweep (`sweeping`).
    pub(super) fn problems(&self, run: Duration, faults: &[Fault], report: &ReportSpec, sweeping: bool, c: &mut Rules) {
        if let Some(p99) = self.p99_ms
            && !(p99.is_finite() && p99 >= 0.0)
        {
            c.fail("checks.p99_ms", format!("must be a number of milliseconds >= 0, got {p99}"));
        }
        if let Some(rate) = self.error_rate {
            c.probability("checks.error_rate", rate);
        }
        if let Some(window) = self.error_window_s
            && window > run.as_secs()
        {
            let run = fmt(run);
            c.fail("checks.error_window_s", format!("{window} s is longer than the run ({run}): it could never fail"));
        }
        let ratios = [
            ("checks.amplification_during_fault", self.amplification_during_fault),
            ("checks.healthy_p99_ratio", self.healthy_p99_ratio),
            ("checks.recovery_s", self.recovery_s),
            ("checks.contrast_p99_ratio", self.contrast_p99_ratio),
        ];
        for (key, limit) in ratios {
            if let Some(v) = limit
                && !(v.is_finite() && v >= 0.0)
            {
                c.fail(key, format!("must be a finite number >= 0, got {v}"));
            }
        }
        let windowed = [
            ("checks.amplification_during_fault", self.amplification_during_fault.is_some()),
            ("checks.healthy_p99_ratio", self.healthy_p99_ratio.is_some()),
            ("checks.recovery_s", self.recovery_s.is_some()),
        ];
        for (key, set) in windowed {
            if set && !faults.iter().any(|f| !f.kind.instant()) {
                c.fail(key, "needs a fault with a duration: it is measured over the fault windows");
            }
        }
        let contrasted = [
            ("checks.contrast_p99_ratio", self.contrast_p99_ratio.is_some()),
            ("checks.contrast_extra_errors", self.contrast_extra_errors.is_some()),
        ];
        for (key, set) in contrasted {
            // Switched off (`contrast = "none"`): not judged, so nothing to refuse.
            if !set || report.contrast == Some(Contrast::Off) {
                continue;
            }
            if report.contrast.is_none() {
                c.fail(
                    key,
                    "needs `[report] contrast`: it compares this run with the other gateway profile's (with contrast = \
                     \"none\" it is not judged)",
                );
            } else if sweeping {
                c.fail(key, "is not evaluated in a sweep (its rows run without a contrast run)");
            }
        }
    }
}
