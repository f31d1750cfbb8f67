//! `[gateway.bulkhead]` and `[gateway.limiter]`: a permit pool per replica (or server), and the adaptive limit
//! inside each pool's cap.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use mcpstorm_core::resilience::{AimdConfig, Gradient2Config, LimiterKind};
use mcpstorm_core::resilience::{BulkheadConfig, BulkheadScope};

use super::yes;
use crate::config::ranges::{self, MAX_CONCURRENCY, Ranges, Upper};
use crate::config::units::Dur;

/// `[gateway.bulkhead]`: a permit pool per replica, so a hung or slow replica holds at most its own permits and its
/// siblings take the calls it cannot.
///
/// | key              | default     | meaning                                                           |
/// |------------------|-------------|-------------------------------------------------------------------|
/// | `enabled`        | true        | false: no bulkheads                                               |
/// | `max_concurrent` | none        | a pool's cap when its server declares no `max_concurrent_requests`; none: the load host's in-flight cap (`client.max_in_flight`) |
/// | `per_server`     | none        | `{ db = 8 }`: caps that override the declaration                  |
/// | `queue_wait`     | `[client] queue_wait` | how long a call waits when no candidate replica has room, before a degraded `bulkhead_full` |
/// | `scope`          | `"replica"` | `"server"`: one pool per server shared by its replicas (a server-wide budget) |
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkheadSpec {
    /// false: no bulkheads.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// The cap of a pool whose server declares no `max_concurrent_requests` (≥ 1); absent: the load host's
    /// in-flight cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = ranges::MAX_CONCURRENCY))]
    pub max_concurrent: Option<usize>,
    /// Caps by server name, overriding what the server declares.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub per_server: BTreeMap<String, usize>,
    /// How long a call waits for a permit when no candidate replica has room (bounded by its deadline). Absent: as
    /// long as the client waits for an in-flight slot (`[client] queue_wait`), so that the bulkhead sheds no call the
    /// unprotected path would have queued and served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_wait: Option<Dur>,
    /// What one pool guards: `"replica"` (each replica endpoint) or `"server"` (all of a server's replicas).
    #[serde(default)]
    pub scope: ScopeName,
}

/// `[gateway.bulkhead] scope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum ScopeName {
    #[default]
    Replica,
    Server,
}

/// `[gateway.limiter]`: the adaptive limit inside each bulkhead pool's cap (it never exceeds the cap).
///
/// | key             | default   | meaning                                                                 |
/// |-----------------|-----------|-------------------------------------------------------------------------|
/// | `kind`          | `"aimd"`  | `"aimd"`, `"gradient2"` (Netflix concurrency-limits) or `"fixed"` (the cap) |
/// | `initial`, `min`, `max` | the cap, 1, the cap | the limit's start and bounds: by default it starts at the pool's cap and only drops lower on evidence |
/// | `backoff_ratio` | 0.9       | `aimd`: the limit's factor on a drop                                    |
/// | `timeout`       | `"5s"`    | `aimd`: a call slower than this counts as a drop                        |
/// | `smoothing`, `long_window`, `warmup`, `tolerance`, `queue_size` | 0.2, 600, 10, 1.5, 4 | `gradient2`'s parameters |
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct LimiterSpec {
    /// `"fixed"`, `"aimd"` or `"gradient2"`.
    #[serde(default)]
    pub kind: LimiterName,
    /// The limit a pool starts at (default: the pool's cap, so it only drops lower on evidence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = ranges::MAX_CONCURRENCY))]
    pub initial: Option<usize>,
    /// The lowest the limit may fall (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = ranges::MAX_CONCURRENCY))]
    pub min: Option<usize>,
    /// The highest the limit may rise (default, and at most: the pool's cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = ranges::MAX_CONCURRENCY))]
    pub max: Option<usize>,
    /// `aimd`: the limit is multiplied by this on a drop, in (0, 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_ratio: Option<f64>,
    /// `aimd`: a call slower than this counts as a drop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Dur>,
    /// `gradient2`: the weight of each new limit estimate, in (0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smoothing: Option<f64>,
    /// `gradient2`: samples in the long-term RTT average.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = ranges::MAX_CONCURRENCY))]
    pub long_window: Option<u32>,
    /// `gradient2`: samples before the limit moves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = ranges::MAX_CONCURRENCY))]
    pub warmup: Option<u32>,
    /// `gradient2`: how much slower than the long-term RTT is still fine (≥ 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<f64>,
    /// `gradient2`: the headroom added to the limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_size: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum LimiterName {
    Fixed,
    #[default]
    Aimd,
    Gradient2,
}

impl LimiterSpec {
    pub fn to_core(&self) -> LimiterKind {
        match self.kind {
            LimiterName::Fixed => LimiterKind::Fixed,
            LimiterName::Aimd => {
                let d = AimdConfig::from_ceiling();
                LimiterKind::Aimd(AimdConfig {
                    initial: self.initial.unwrap_or(d.initial),
                    min: self.min.unwrap_or(d.min),
                    max: self.max.unwrap_or(d.max),
                    backoff_ratio: self.backoff_ratio.unwrap_or(d.backoff_ratio),
                    timeout: self.timeout.map_or(d.timeout, |t| t.0),
                })
            }
            LimiterName::Gradient2 => {
                let d = Gradient2Config::default();
                LimiterKind::Gradient2(Gradient2Config {
                    // From the pool's cap, as AIMD: unset bounds are the cap (`LimiterKind::build` applies it).
                    initial: self.initial.unwrap_or(usize::MAX),
                    min: self.min.unwrap_or(d.min),
                    max: self.max.unwrap_or(usize::MAX),
                    smoothing: self.smoothing.unwrap_or(d.smoothing),
                    long_window: self.long_window.unwrap_or(d.long_window),
                    warmup: self.warmup.unwrap_or(d.warmup),
                    tolerance: self.tolerance.unwrap_or(d.tolerance),
                    queue_size: self.queue_size.unwrap_or(d.queue_size),
                })
            }
        }
    }

    /// The table's durations and counts with their bounds.
    pub fn ranges(&self, out: &mut Ranges) {
        if let Some(timeout) = self.timeout {
            out.duration("gateway.limiter.timeout", timeout.0, Upper::Week);
        }
        for (key, n) in [("initial", self.initial), ("min", self.min), ("max", self.max)] {
            if let Some(n) = n {
                out.count(format!("gateway.limiter.{key}"), n as f64, MAX_CONCURRENCY as f64);
            }
        }
        for (key, n) in [("long_window", self.long_window), ("warmup", self.warmup)] {
            if let Some(n) = n {
                out.count(format!("gateway.limiter.{key}"), f64::from(n), MAX_CONCURRENCY as f64);
            }
        }
    }

    /// Keys given that the chosen kind does not read, and values out of range.
    pub fn problems(&self, fail: &mut impl FnMut(&str, String)) {
        let aimd = [("backoff_ratio", self.backoff_ratio.is_some()), ("timeout", self.timeout.is_some())];
        let gradient2 = [
            ("smoothing", self.smoothing.is_some()),
            ("long_window", self.long_window.is_some()),
            ("warmup", self.warmup.is_some()),
            ("tolerance", self.tolerance.is_some()),
            ("queue_size", self.queue_size.is_some()),
        ];
        let bounds = [("initial", self.initial.is_some()), ("min", self.min.is_some()), ("max", self.max.is_some())];
        let (kind, foreign): (&str, Vec<(&str, bool)>) = match self.kind {
            LimiterName::Fixed => ("fixed", aimd.iter().chain(&gradient2).chain(&bounds).copied().collect()),
            LimiterName::Aimd => ("aimd", gradient2.to_vec()),
            LimiterName::Gradient2 => ("gradient2", aimd.to_vec()),
        };
        for (key, _) in foreign.into_iter().filter(|(_, set)| *set) {
            fail(&format!("limiter.{key}"), format!("does not apply to kind = \"{kind}\""));
        }
        let (min, max) = (self.min.unwrap_or(1), self.max.unwrap_or(usize::MAX));
        if min == 0 || min > max {
            fail("limiter.min", format!("must be at least 1 and at most max ({max})"));
        }
        if let Some(r) = self.backoff_ratio
            && !(r.is_finite() && r > 0.0 && r < 1.0)
        {
            fail("limiter.backoff_ratio", format!("must be in (0, 1), got {r}"));
        }
        if let Some(sm) = self.smoothing
            && !(sm.is_finite() && sm > 0.0 && sm <= 1.0)
        {
            fail("limiter.smoothing", format!("must be in (0, 1], got {sm}"));
        }
        if let Some(t) = self.tolerance
            && !(t.is_finite() && t >= 1.0)
        {
            fail("limiter.tolerance", format!("must be a finite number ≥ 1, got {t}"));
        }
        if let Some(q) = self.queue_size
            && !(q.is_finite() && q >= 0.0)
        {
            fail("limiter.queue_size", format!("must be a finite number ≥ 0, got {q}"));
        }
    }
}

impl BulkheadSpec {
    // The update is needed only when the core's `testing` feature adds its planted defect's field.
    #[allow(clippy::needless_update)]
    pub fn to_core(&self, limiter: Option<&LimiterSpec>) -> BulkheadConfig {
        BulkheadConfig {
            max_concurrent: self.max_concurrent,
            per_server: self.per_server.clone(),
            limiter: limiter.map_or_else(|| BulkheadConfig::default().limiter, LimiterSpec::to_core),
            queue_wait: self.queue_wait.map(|d| d.0),
            scope: match self.scope {
                ScopeName::Replica => BulkheadScope::Replica,
                ScopeName::Server => BulkheadScope::Server,
            },
            // The rest (the core's test-only planted defect, when its `testing` feature is on) at its default.
            ..BulkheadConfig::default()
        }
    }

    /// The table's durations and counts with their bounds.
    pub fn ranges(&self, out: &mut Ranges) {
        if let Some(wait) = self.queue_wait {
            out.duration("gateway.bulkhead.queue_wait", wait.0, Upper::Week);
        }
        if let Some(n) = self.max_concurrent {
            out.count("gateway.bulkhead.max_concurrent", n as f64, MAX_CONCURRENCY as f64);
        }
        for (server, n) in &self.per_server {
            out.count(format!("gateway.bulkhead.per_server.{server}"), *n as f64, MAX_CONCURRENCY as f64);
        }
    }

    /// Values out of range, at their keys (`bulkhead.max_concurrent`, ...).
    pub fn problems(&self, fail: &mut impl FnMut(&str, String)) {
        if self.max_concurrent == Some(0) {
            fail("bulkhead.max_concurrent", "must be at least 1".to_owned());
        }
        for (server, cap) in &self.per_server {
            if *cap == 0 {
                fail(&format!("bulkhead.per_server.{server}"), "must be at least 1".to_owned());
            }
        }
        if self.queue_wait.is_some_and(|d| d.0.is_zero()) {
            fail("bulkhead.queue_wait", "must be longer than 0".to_owned());
        }
    }
}
