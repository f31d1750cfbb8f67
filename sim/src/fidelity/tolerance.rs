//! How far apart two figures may be: a share of the live run's figure with a floor (ok calls, latency), or a fixed
//! amount (error rate in share points, onset and recovery in seconds). The live run is the reference: the simulator
//! is what is being judged.

use serde::Serialize;

use crate::scenario::FidelitySpec;

/// Rounding slack: a difference that equals its tolerance passes even when the floats land a hair above it.
const SLACK: f64 = 1e-9;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Tolerance {
    /// `|sim - live| <= max(share × |live|, floor)`.
    Relative { share: f64, floor: f64 },
    /// `|sim - live| <= amount`.
    Absolute { amount: f64 },
}

impl Tolerance {
    /// The largest difference from `live` that passes.
    pub fn allowed(self, live: f64) -> f64 {
        match self {
            Tolerance::Relative { share, floor } => (share * live.abs()).max(floor),
            Tolerance::Absolute { amount } => amount,
        }
    }

    /// Whether `sim` is close enough to `live`.
    pub fn admits(self, sim: f64, live: f64) -> bool {
        let difference = (sim - live).abs();
        difference.is_finite() && difference <= self.allowed(live) + SLACK
    }
}

/// The tolerance of each judged row, from a scenario's `[fidelity]` table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerances {
    pub ok_calls: Tolerance,
    pub error_rate: Tolerance,
    pub latency: Tolerance,
    pub onset: Tolerance,
    pub recovery: Tolerance,
}

impl Tolerances {
    pub fn of(spec: &FidelitySpec) -> Tolerances {
        let seconds = |d: crate::scenario::Dur| Tolerance::Absolute { amount: d.0.as_secs_f64() };
        Tolerances {
            ok_calls: Tolerance::Relative { share: spec.ok_calls, floor: 0.0 },
            error_rate: Tolerance::Absolute { amount: spec.error_rate },
            latency: Tolerance::Relative { share: spec.latency, floor: spec.latency_floor.0.as_secs_f64() * 1000.0 },
            onset: seconds(spec.onset),
            recovery: seconds(spec.recovery),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relative_tolerance_has_a_floor_for_small_figures() {
        let latency = Tolerance::Relative { share: 0.1, floor: 5.0 };
        // 10% of 200 ms is 20 ms; 10% of 2 ms is under the 5 ms floor.
        assert!(latency.admits(219.0, 200.0) && !latency.admits(221.0, 200.0));
        assert!(latency.admits(7.0, 2.0) && !latency.admits(7.5, 2.0));
        let ok = Tolerance::Relative { share: 0.05, floor: 0.0 };
        assert!(ok.admits(1050.0, 1000.0) && !ok.admits(1051.0, 1000.0));
        assert!(ok.admits(0.0, 0.0) && !ok.admits(1.0, 0.0), "nothing live: only nothing matches");
    }

    #[test]
    fn an_absolute_tolerance_is_symmetric_and_refuses_what_is_not_a_number() {
        let rate = Tolerance::Absolute { amount: 0.01 };
        assert!(rate.admits(0.02, 0.03) && rate.admits(0.04, 0.03) && !rate.admits(0.045, 0.03));
        assert!(!rate.admits(f64::NAN, 0.0) && !rate.admits(f64::INFINITY, 0.0));
    }

    #[test]
    fn the_defaults_are_the_issues_targets() {
        let t = Tolerances::of(&FidelitySpec::default());
        assert_eq!(t.ok_calls, Tolerance::Relative { share: 0.05, floor: 0.0 });
        assert_eq!(t.error_rate, Tolerance::Absolute { amount: 0.01 });
        assert_eq!(t.latency, Tolerance::Relative { share: 0.1, floor: 5.0 });
        assert_eq!((t.onset, t.recovery), (Tolerance::Absolute { amount: 1.0 }, Tolerance::Absolute { amount: 1.0 }));
    }
}
