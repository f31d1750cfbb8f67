//! The `[swarm]` table: the bounds `mcpstorm swarm` draws each seed's fault timeline within, and the tolerances of
//! its invariants (see `crate::swarm`). Optional: a scenario without it swarms with the defaults below.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::faults::FaultKind;
use super::ranges::{self, MAX_CALLS, MAX_MULTIPLIER, MAX_SWARM_FAULTS, Ranges, Upper};
use super::units::Dur;

/// How `mcpstorm swarm` draws faults for this scenario and judges the runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SwarmSpec {
    /// Fault kinds to draw from (default: all that heal: `latency_spike`, `error_burst`, `hang`, `crash`,
    /// `partition`, `session_expiry`, and for HTTP servers `http_status`, `stream_reset`, `slow_headers`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<FaultKind>,
    /// Each seed draws 1 to this many faults.
    #[serde(default = "SwarmSpec::max_faults")]
    #[schemars(range(min = 1, max = ranges::MAX_SWARM_FAULTS))]
    pub max_faults: u32,
    /// At most this many fault windows overlap.
    #[serde(default = "SwarmSpec::max_at_once")]
    #[schemars(range(min = 1, max = ranges::MAX_SWARM_FAULTS))]
    pub max_at_once: u32,
    /// No fault starts earlier: the pre-fault goodput is measured here.
    #[serde(default = "SwarmSpec::warmup")]
    pub warmup: Dur,
    /// A fault's shortest length.
    #[serde(default = "SwarmSpec::min_fault")]
    pub min_fault: Dur,
    /// A fault's longest length.
    #[serde(default = "SwarmSpec::max_fault")]
    pub max_fault: Dur,
    /// An `error_burst`'s (and `stream_reset`'s, `http_status`'s) lowest rate.
    #[serde(default = "SwarmSpec::min_rate")]
    pub min_rate: f64,
    /// An `error_burst`'s (and `stream_reset`'s, `http_status`'s) highest rate.
    #[serde(default = "SwarmSpec::max_rate")]
    pub max_rate: f64,
    /// A `latency_spike`'s or `slow_headers`' added latency, at most.
    #[serde(default = "SwarmSpec::max_extra")]
    pub max_extra: Dur,
    /// A `latency_spike`'s multiplier, at most.
    #[serde(default = "SwarmSpec::max_multiplier")]
    #[schemars(range(min = 1, max = ranges::MAX_MULTIPLIER))]
    pub max_multiplier: f64,
    /// Liveness: goodput back to ≥ 95% of its pre-fault level (3 s in a row) within this after the last fault
    /// heals; draws leave this much room.
    #[serde(default = "SwarmSpec::recovery_within")]
    pub recovery_within: Dur,
    /// Differential: the default profile may fail this share of a server's calls (plus `error_slack_calls`) more
    /// than the naive one (the two runs' arrivals match, but retries and routing draw differently).
    #[serde(default = "SwarmSpec::error_slack")]
    pub error_slack: f64,
    /// Differential: failed calls the default profile may have beyond the naive one's, on top of `error_slack`.
    #[serde(default = "SwarmSpec::error_slack_calls")]
    #[schemars(range(max = ranges::MAX_CALLS))]
    pub error_slack_calls: u64,
    /// Differential: an untouched server's P99 may be at most this × naive's + `p99_slack`.
    #[serde(default = "SwarmSpec::p99_ratio")]
    pub p99_ratio: f64,
    /// Differential: the slack added to `p99_ratio` × naive's P99.
    #[serde(default = "SwarmSpec::p99_slack")]
    pub p99_slack: Dur,
}

impl SwarmSpec {
    fn max_faults() -> u32 {
        3
    }
    fn max_at_once() -> u32 {
        2
    }
    fn warmup() -> Dur {
        Dur(Duration::from_secs(3))
    }
    fn min_fault() -> Dur {
        Dur(Duration::from_secs(1))
    }
    fn max_fault() -> Dur {
        Dur(Duration::from_secs(8))
    }
    fn min_rate() -> f64 {
        0.3
    }
    fn max_rate() -> f64 {
        1.0
    }
    fn max_extra() -> Dur {
        Dur(Duration::from_millis(500))
    }
    fn max_multiplier() -> f64 {
        10.0
    }
    fn recovery_within() -> Dur {
        Dur(Duration::from_secs(30))
    }
    fn error_slack() -> f64 {
        0.02
    }
    fn error_slack_calls() -> u64 {
        5
    }
    fn p99_ratio() -> f64 {
        1.5
    }
    fn p99_slack() -> Dur {
        Dur(Duration::from_millis(20))
    }

    /// Every duration of the table, by key.
    pub fn durations(&self) -> [(&'static str, Dur); 6] {
        [
            ("warmup", self.warmup),
            ("min_fault", self.min_fault),
            ("max_fault", self.max_fault),
            ("max_extra", self.max_extra),
            ("recovery_within", self.recovery_within),
            ("p99_slack", self.p99_slack),
        ]
    }

    /// The table's durations and counts with their bounds.
    pub(super) fn ranges(&self, out: &mut Ranges) {
        for (key, d) in self.durations() {
            out.duration(format!("swarm.{key}"), d.0, Upper::Week);
        }
        out.count("swarm.max_faults", f64::from(self.max_faults), MAX_SWARM_FAULTS as f64);
        out.count("swarm.max_at_once", f64::from(self.max_at_once), MAX_SWARM_FAULTS as f64);
        out.count("swarm.error_slack_calls", self.error_slack_calls as f64, MAX_CALLS as f64);
        out.count("swarm.max_multiplier", self.max_multiplier, MAX_MULTIPLIER);
    }

    /// The kinds a swarm draws (the table's, or every kind whose effect ends with its window).
    pub fn kinds(&self) -> Vec<FaultKind> {
        if self.kinds.is_empty() { HEALING.to_vec() } else { self.kinds.clone() }
    }

    /// The table's own rules, as (key, message) pairs: validation reports each at `swarm.<key>`.
    pub fn problems(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut fail = |key: &str, message: String| out.push((format!("swarm.{key}"), message));
        for (i, kind) in self.kinds.iter().enumerate() {
            if !HEALING.contains(kind) {
                fail(
                    &format!("kinds[{i}]"),
                    format!("{kind} is not drawn: its effect outlasts its window, so recovery could not be judged"),
                );
            }
        }
        if self.max_faults == 0 {
            fail("max_faults", "must be at least 1".into());
        }
        if self.max_at_once == 0 || self.max_at_once > self.max_faults {
            fail("max_at_once", format!("must be 1 to max_faults ({}), got {}", self.max_faults, self.max_at_once));
        }
        if self.min_fault.0.is_zero() {
            fail("min_fault", "must be longer than 0".into());
        }
        if self.max_fault.0 < self.min_fault.0 {
            fail("max_fault", "must be at least min_fault".into());
        }
        for (key, p) in [("min_rate", self.min_rate), ("max_rate", self.max_rate), ("error_slack", self.error_slack)] {
            if !(p.is_finite() && (0.0..=1.0).contains(&p)) {
                fail(key, format!("must be between 0 and 1, got {p}"));
            }
        }
        if self.max_rate < self.min_rate {
            fail("max_rate", "must be at least min_rate".into());
        }
        if self.max_multiplier.is_nan() || self.max_multiplier < 1.0 {
            fail("max_multiplier", format!("must be at least 1, got {}", self.max_multiplier));
        }
        if !(self.p99_ratio.is_finite() && self.p99_ratio >= 1.0) {
            fail("p99_ratio", format!("must be at least 1, got {}", self.p99_ratio));
        }
        out
    }
}

impl Default for SwarmSpec {
    fn default() -> Self {
        SwarmSpec {
            kinds: Vec::new(),
            max_faults: Self::max_faults(),
            max_at_once: Self::max_at_once(),
            warmup: Self::warmup(),
            min_fault: Self::min_fault(),
            max_fault: Self::max_fault(),
            min_rate: Self::min_rate(),
            max_rate: Self::max_rate(),
            max_extra: Self::max_extra(),
            max_multiplier: Self::max_multiplier(),
            recovery_within: Self::recovery_within(),
            error_slack: Self::error_slack(),
            error_slack_calls: Self::error_slack_calls(),
            p99_ratio: Self::p99_ratio(),
            p99_slack: Self::p99_slack(),
        }
    }
}

/// The kinds whose effect ends with their window (or, for `session_expiry`, is repaired by a re-handshake): a
/// drift, a rotation or a clock skew changes the world for good, and goodput after them is not "recovery".
pub const HEALING: [FaultKind; 9] = [
    FaultKind::LatencySpike,
    FaultKind::ErrorBurst,
    FaultKind::Hang,
    FaultKind::Crash,
    FaultKind::Partition,
    FaultKind::SessionExpiry,
    FaultKind::HttpStatus,
    FaultKind::StreamReset,
    FaultKind::SlowHeaders,
];
