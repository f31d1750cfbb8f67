//! The `[fidelity]` table: how far `mcpstorm fidelity` lets the simulator's run of a scenario differ from its live
//! run before the verdict is FAIL (judged in `crate::fidelity`). Every key has the default the issue set as the
//! target; a scenario loosens or tightens them where its story needs it. Absent, the defaults apply.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ranges::{Ranges, Upper};
use super::rules::Rules;
use super::units::Dur;

/// Tolerances of `mcpstorm fidelity`, each the largest difference between the simulator's figure and the live run's
/// that still passes. The live run is the reference: relative tolerances are shares of its figure.
///
/// | key             | default  | row it judges                                                            |
/// |-----------------|----------|--------------------------------------------------------------------------|
/// | `ok_calls`      | `0.05`   | whole-run ok calls, as a share of the live run's (5%)                    |
/// | `error_rate`    | `0.01`   | whole-run error rate, in share points (1 percentage point)               |
/// | `latency`       | `0.1`    | whole-run P50 and P99, as a share of the live run's (10%) ...            |
/// | `latency_floor` | `"5ms"`  | ... or this many milliseconds, when that is larger                       |
/// | `onset`         | `"1s"`   | each fault window: when its effect begins                                |
/// | `recovery`      | `"1s"`   | each fault window: when the run is back in its pre-fault band            |
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FidelitySpec {
    /// Whole-run ok calls: the largest difference, as a share of the live run's (0.05: within 5%).
    #[serde(default = "default_ok_calls")]
    pub ok_calls: f64,
    /// Whole-run error rate (failed / completed logical calls): the largest difference in share points (0.01:
    /// within 1 percentage point).
    #[serde(default = "default_error_rate")]
    pub error_rate: f64,
    /// Whole-run P50 and P99: the largest difference as a share of the live run's (0.1: within 10%), or
    /// `latency_floor` when that is larger.
    #[serde(default = "default_latency")]
    pub latency: f64,
    /// The smallest latency difference that may fail: small latencies are judged within this many milliseconds
    /// rather than within `latency` of themselves (a 10% band around 2 ms is scheduler noise).
    #[serde(default = "default_latency_floor")]
    pub latency_floor: Dur,
    /// Each fault window: how far apart the two runs may see its effect begin.
    #[serde(default = "default_second")]
    pub onset: Dur,
    /// Each fault window: how far apart the two runs may get back into their pre-fault band.
    #[serde(default = "default_second")]
    pub recovery: Dur,
}

fn default_ok_calls() -> f64 {
    0.05
}

fn default_error_rate() -> f64 {
    0.01
}

fn default_latency() -> f64 {
    0.1
}

fn default_latency_floor() -> Dur {
    Dur(Duration::from_millis(5))
}

fn default_second() -> Dur {
    Dur(Duration::from_secs(1))
}

impl Default for FidelitySpec {
    fn default() -> Self {
        FidelitySpec {
            ok_calls: default_ok_calls(),
            error_rate: default_error_rate(),
            latency: default_latency(),
            latency_floor: default_latency_floor(),
            onset: default_second(),
            recovery: default_second(),
        }
    }
}

impl FidelitySpec {
    /// Whether every key holds its default (the scenario copy a run writes then leaves the table out).
    pub(super) fn is_default(&self) -> bool {
        *self == FidelitySpec::default()
    }

    /// The shares' rules: finite and at least 0; an error rate's difference is at most 1.
    pub(super) fn problems(&self, c: &mut Rules) {
        for (key, share) in [("fidelity.ok_calls", self.ok_calls), ("fidelity.latency", self.latency)] {
            if !(share.is_finite() && share >= 0.0) {
                c.fail(key, format!("must be a share >= 0 (0.1 is 10%), got {share}"));
            }
        }
        c.probability("fidelity.error_rate", self.error_rate);
    }

    /// The table's durations with their bounds: any duration. A tolerance wider than the run only never fails
    /// its row; bounding it by the run's `duration` would refuse the defaults of a run under a second.
    pub(super) fn ranges(&self, out: &mut Ranges) {
        out.duration("fidelity.latency_floor", self.latency_floor.0, Upper::Week);
        out.duration("fidelity.onset", self.onset.0, Upper::Week);
        out.duration("fidelity.recovery", self.recovery.0, Upper::Week);
    }
}
