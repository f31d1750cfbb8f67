//! The gateway's resilience layers as the scenario file configures them (`[gateway.breaker]`, `[gateway.retry]`,
//! `[gateway.budget]`, `[gateway.throttle]`, `[gateway.bulkhead]`, `[gateway.limiter]`, `[gateway.fallbacks]`), and their translation into the core's
//! [`ResilienceConfig`].
//!
//! The profile decides first: `naive` switches every layer off whatever the tables say (so `--set
//! gateway.profile=naive` on any scenario gives the unprotected gateway), `default` switches every layer on with the
//! core's defaults, each table overriding some of them. A table with `enabled = false` switches one layer off.
//!
//! Defaults here are the core's (each `Default` impl documents its choice); the tables only rename fields to the
//! scenario format's vocabulary (durations with units, `window = "10s"` rather than buckets × width).

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use mcpstorm_core::ResilienceConfig;
use mcpstorm_core::resilience::{
    AimdConfig, Backoff, BreakerConfig, BudgetConfig, BulkheadConfig, BulkheadScope, Fallbacks, Gradient2Config,
    LimiterKind, RetryPolicy, ThrottleConfig, WindowConfig,
};
use mcpstorm_core::session::GatewayProfile;

use super::ranges;
use super::units::Dur;

/// Buckets a time window is cut into (the breaker's and the budget's): a tenth of the window per bucket, so the
/// window forgets in steps of 10%.
const WINDOW_BUCKETS: u32 = 10;

/// `[gateway.breaker]`: a circuit breaker per (replica, tool).
///
/// | key                  | default | meaning                                                          |
/// |----------------------|---------|------------------------------------------------------------------|
/// | `enabled`            | true    | false: no breakers                                               |
/// | `window`             | `"10s"` | the rates are computed over this much time (ten buckets)         |
/// | `window_calls`       | none    | instead: over the last this many calls                           |
/// | `failure_rate`       | 0.5     | open when failures / calls ≥ this                                |
/// | `slow_call_rate`     | 0.6     | open when slow calls / calls ≥ this                              |
/// | `slow_call`          | `"2s"`  | a call taking at least this long is slow                         |
/// | `minimum_calls`      | 10      | no verdict before this many calls are in the window              |
/// | `open`               | `"5s"`  | the first open period                                            |
/// | `open_growth`        | 2.0     | each re-open without a close in between multiplies it            |
/// | `open_max`           | `"60s"` | the open period's cap                                            |
/// | `open_jitter`        | 0.2     | the open period is scaled by a uniform factor in 1 ± this        |
/// | `half_open_probes`   | 3       | probes at once in half-open, and successes that close it         |
/// | `half_open_max_wait` | `"10s"` | half-open that has not decided by then re-opens                  |
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BreakerSpec {
    /// false: no breakers.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// The time the failure and slow-call rates are computed over (ten buckets).
    #[serde(default = "default_breaker_window")]
    pub window: Dur,
    /// Count-based instead: the rates are over the last this many calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = ranges::MAX_WINDOW_CALLS))]
    pub window_calls: Option<u32>,
    /// Open when failures / calls reach this (inclusive), in (0, 1].
    #[serde(default = "default_failure_rate")]
    pub failure_rate: f64,
    /// Open when slow calls / calls reach this (inclusive), in (0, 1].
    #[serde(default = "default_slow_call_rate")]
    pub slow_call_rate: f64,
    /// A call taking at least this long is slow.
    #[serde(default = "default_slow_call")]
    pub slow_call: Dur,
    /// No verdict before this many calls are in the window.
    #[serde(default = "default_minimum_calls")]
    #[schemars(range(min = 1, max = ranges::MAX_WINDOW_CALLS))]
    pub minimum_calls: u32,
    /// The first open period.
    #[serde(default = "default_open")]
    pub open: Dur,
    /// Each re-open without a close in between multiplies the open period by this (≥ 1).
    #[serde(default = "default_open_growth")]
    pub open_growth: f64,
    /// The open period's cap (≥ `open`).
    #[serde(default = "default_open_max")]
    pub open_max: Dur,
    /// The open period is scaled by a uniform factor in 1 ± this, in [0, 1): breakers of many gateways do not probe
    /// in lockstep.
    #[serde(default = "default_open_jitter")]
    pub open_jitter: f64,
    /// Probes admitted at once in half-open, and consecutive successes that close it.
    #[serde(default = "default_probes")]
    #[schemars(range(min = 1, max = ranges::MAX_THRESHOLD))]
    pub half_open_probes: u32,
    /// Half-open that has not decided by then re-opens (a probe that never reports cannot wedge it).
    #[serde(default = "default_half_open_max_wait")]
    pub half_open_max_wait: Dur,
}

/// `[gateway.retry]`: the gateway's own retries of idempotent tools, on another replica, under one deadline.
///
/// | key            | default         | meaning                                                       |
/// |----------------|-----------------|---------------------------------------------------------------|
/// | `enabled`      | true            | false: one attempt per call, the agent decides                |
/// | `max_attempts` | 3               | attempts in all, the first included                           |
/// | `backoff`      | `"full_jitter"` | `"full_jitter"`: uniform in [0, min(cap, base × 2ⁿ)]; `"seed"`: base × 2ⁿ capped, ± `jitter` |
/// | `base`         | `"100ms"`       | (`"1s"` for `seed`)                                           |
/// | `cap`          | `"10s"`         | the longest wait                                              |
/// | `jitter`       | 0.2             | `seed` only: ± this fraction                                  |
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetrySpec {
    /// false: one attempt per call.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Attempts in all, the first included (≥ 1).
    #[serde(default = "default_max_attempts")]
    #[schemars(range(min = 1, max = ranges::MAX_ATTEMPTS))]
    pub max_attempts: u32,
    /// `"full_jitter"` or `"seed"` (the measured client's 1, 2, 4, 8, 10 s ± 20%).
    #[serde(default)]
    pub backoff: BackoffKind,
    /// The first wait's ceiling (full jitter) or the first wait (seed); default 100 ms (full jitter), 1 s (seed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<Dur>,
    /// The longest wait.
    #[serde(default = "default_backoff_cap")]
    pub cap: Dur,
    /// `seed` backoff only: each wait is scaled by a uniform factor in 1 ± this, in [0, 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum BackoffKind {
    #[default]
    FullJitter,
    // Written "seed" in scenario files: the measured client's schedule.
    #[serde(rename = "seed")]
    Proportional,
}

/// `[gateway.budget]`: retries per server ≤ `ratio` × requests + `min_per_second` × `ttl`, over the last `ttl`.
///
/// | key              | default | meaning                                               |
/// |------------------|---------|-------------------------------------------------------|
/// | `enabled`        | true    | false: retries limited by `max_attempts` alone         |
/// | `ratio`          | 0.2     | retries allowed per request                            |
/// | `min_per_second` | 10      | a floor, so a quiet server can still be retried        |
/// | `ttl`            | `"10s"` | how long a request's deposit counts                    |
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BudgetSpec {
    /// false: no budget.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Retries allowed per request (≥ 0).
    #[serde(default = "default_ratio")]
    pub ratio: f64,
    /// Retries allowed per second whatever the traffic (≥ 0).
    #[serde(default = "default_min_per_second")]
    pub min_per_second: f64,
    /// How long a request's deposit counts.
    #[serde(default = "default_ttl")]
    pub ttl: Dur,
}

/// `[gateway.throttle]`: Google SRE client-side adaptive throttling per replica: shed with probability
/// max(0, (requests − k × accepts) / (requests + 1)).
///
/// | key       | default  | meaning                                       |
/// |-----------|----------|-----------------------------------------------|
/// | `enabled` | true     | false: no shedding                            |
/// | `k`       | 2.0      | how many requests per accept before shedding  |
/// | `window`  | `"2m"`   | the requests and accepts counted              |
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ThrottleSpec {
    /// false: no throttling.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Requests per accept tolerated before shedding (≥ 1; the SRE book's 2).
    #[serde(default = "default_k")]
    pub k: f64,
    /// The requests and accepts counted (24 buckets).
    #[serde(default = "default_throttle_window")]
    pub window: Dur,
}

/// `[gateway.bulkhead]`: a permit pool per replica, so a hung or slow replica holds at most its own permits and its
/// siblings take the calls it cannot.
///
/// | key              | default     | meaning                                                           |
/// |------------------|-------------|-------------------------------------------------------------------|
/// | `enabled`        | true        | false: no bulkheads                                               |
/// | `max_concurrent` | none        | a pool's cap when its server declares no `max_concurrent_requests`; none: the load host's in-flight cap (`client.max_in_flight`) |
/// | `per_server`     | none        | `{ db = 8 }`: caps that override the declaration                  |
/// | `queue_wait`     | `"1s"`      | how long a call waits when no candidate replica has room, before a degraded `bulkhead_full` |
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
    /// How long a call waits for a permit when no candidate replica has room.
    #[serde(default = "default_queue_wait")]
    pub queue_wait: Dur,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = ranges::MAX_CONCURRENCY))]
    pub initial: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = ranges::MAX_CONCURRENCY))]
    pub min: Option<usize>,
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

fn default_queue_wait() -> Dur {
    Dur(BulkheadConfig::default().queue_wait)
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

    /// Keys given that the chosen kind does not read, and values out of range.
    fn problems(&self, fail: &mut impl FnMut(&str, String)) {
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
    pub fn to_core(&self, limiter: Option<&LimiterSpec>) -> BulkheadConfig {
        BulkheadConfig {
            default_max: self.max_concurrent,
            per_server: self.per_server.clone(),
            limiter: limiter.map_or_else(|| BulkheadConfig::default().limiter, LimiterSpec::to_core),
            queue_wait: self.queue_wait.0,
            scope: match self.scope {
                ScopeName::Replica => BulkheadScope::Replica,
                ScopeName::Server => BulkheadScope::Server,
            },
        }
    }
}

fn yes() -> bool {
    true
}

fn default_breaker_window() -> Dur {
    match BreakerConfig::default().window {
        WindowConfig::Time { buckets, bucket_width } => Dur(bucket_width * buckets),
        WindowConfig::Count { .. } => Dur(Duration::from_secs(10)),
    }
}
fn default_failure_rate() -> f64 {
    BreakerConfig::default().failure_rate_threshold
}
fn default_slow_call_rate() -> f64 {
    BreakerConfig::default().slow_call_rate_threshold
}
fn default_slow_call() -> Dur {
    Dur(BreakerConfig::default().slow_call_duration)
}
fn default_minimum_calls() -> u32 {
    BreakerConfig::default().minimum_calls
}
fn default_open() -> Dur {
    Dur(BreakerConfig::default().open_base)
}
fn default_open_growth() -> f64 {
    BreakerConfig::default().open_multiplier
}
fn default_open_max() -> Dur {
    Dur(BreakerConfig::default().open_max)
}
fn default_open_jitter() -> f64 {
    BreakerConfig::default().open_jitter
}
fn default_probes() -> u32 {
    BreakerConfig::default().half_open_probes
}
fn default_half_open_max_wait() -> Dur {
    Dur(BreakerConfig::default().half_open_max_wait)
}
fn default_max_attempts() -> u32 {
    RetryPolicy::default().max_attempts
}
fn default_backoff_cap() -> Dur {
    Dur(Duration::from_secs(10))
}
fn default_ratio() -> f64 {
    BudgetConfig::default().ratio
}
fn default_min_per_second() -> f64 {
    BudgetConfig::default().min_per_sec
}
fn default_ttl() -> Dur {
    Dur(BudgetConfig::default().ttl)
}
fn default_k() -> f64 {
    ThrottleConfig::default().k
}
fn default_throttle_window() -> Dur {
    Dur(ThrottleConfig::default().window)
}

/// An empty table: every key at its default.
macro_rules! defaults_from_empty_table {
    ($($t:ty),*) => {$(
        impl Default for $t {
            fn default() -> Self {
                match toml::from_str("") {
                    Ok(v) => v,
                    Err(_) => unreachable!("every key of the table has a default"),
                }
            }
        }
    )*};
}
defaults_from_empty_table!(BreakerSpec, RetrySpec, BudgetSpec, ThrottleSpec, BulkheadSpec);

impl BreakerSpec {
    pub fn to_core(&self) -> BreakerConfig {
        let window = match self.window_calls {
            Some(size) => WindowConfig::Count { size },
            None => WindowConfig::Time { buckets: WINDOW_BUCKETS, bucket_width: self.window.0 / WINDOW_BUCKETS },
        };
        BreakerConfig {
            window,
            failure_rate_threshold: self.failure_rate,
            slow_call_rate_threshold: self.slow_call_rate,
            slow_call_duration: self.slow_call.0,
            minimum_calls: self.minimum_calls,
            open_base: self.open.0,
            open_multiplier: self.open_growth,
            open_max: self.open_max.0,
            open_jitter: self.open_jitter,
            half_open_probes: self.half_open_probes,
            half_open_max_wait: self.half_open_max_wait.0,
            ..BreakerConfig::default()
        }
    }
}

impl RetrySpec {
    pub fn to_core(&self) -> RetryPolicy {
        let backoff = match self.backoff {
            BackoffKind::FullJitter => {
                Backoff::FullJitter { base: self.base.map_or(Duration::from_millis(100), |d| d.0), cap: self.cap.0 }
            }
            BackoffKind::Proportional => Backoff::Proportional {
                base: self.base.map_or(Backoff::RECONNECT_BASE, |d| d.0),
                cap: self.cap.0,
                jitter: self.jitter.unwrap_or(Backoff::RECONNECT_JITTER),
            },
        };
        RetryPolicy { max_attempts: self.max_attempts, backoff }
    }
}

impl BudgetSpec {
    pub fn to_core(&self) -> BudgetConfig {
        BudgetConfig { ratio: self.ratio, min_per_sec: self.min_per_second, ttl: self.ttl.0, buckets: WINDOW_BUCKETS }
    }
}

impl ThrottleSpec {
    pub fn to_core(&self) -> ThrottleConfig {
        ThrottleConfig { k: self.k, window: self.window.0, ..ThrottleConfig::default() }
    }
}

/// The layers of one gateway, as the `[gateway]` table holds them.
#[derive(Debug, Clone, Copy)]
pub struct LayerSpecs<'a> {
    pub profile: GatewayProfile,
    pub breaker: Option<&'a BreakerSpec>,
    pub retry: Option<&'a RetrySpec>,
    pub budget: Option<&'a BudgetSpec>,
    pub throttle: Option<&'a ThrottleSpec>,
    pub bulkhead: Option<&'a BulkheadSpec>,
    pub limiter: Option<&'a LimiterSpec>,
    pub fallbacks: &'a BTreeMap<String, String>,
}

impl LayerSpecs<'_> {
    /// The core's configuration: all off for the naive profile; otherwise each layer on (its table's values, or the
    /// defaults when the table is absent) unless its table says `enabled = false`.
    pub fn to_core(&self) -> ResilienceConfig {
        if self.profile == GatewayProfile::Naive {
            return ResilienceConfig::default();
        }
        fn on<T: Default + Clone, C>(
            spec: Option<&T>,
            enabled: impl Fn(&T) -> bool,
            core: impl Fn(&T) -> C,
        ) -> Option<C> {
            let spec = spec.cloned().unwrap_or_default();
            enabled(&spec).then(|| core(&spec))
        }
        let fallbacks = self.fallbacks.iter().fold(Fallbacks::new(), |f, (tool, fallback)| f.with(tool, fallback));
        ResilienceConfig {
            breaker: on(self.breaker, |s| s.enabled, BreakerSpec::to_core),
            retry: on(self.retry, |s| s.enabled, RetrySpec::to_core),
            budget: on(self.budget, |s| s.enabled, BudgetSpec::to_core),
            throttle: on(self.throttle, |s| s.enabled, ThrottleSpec::to_core),
            bulkhead: on(self.bulkhead, |s| s.enabled, |s| s.to_core(self.limiter)),
            fallbacks,
        }
    }

    /// Problems with the tables' values, as (key path, message): every present table is checked, whatever the
    /// profile, so a file that is only wrong under `default` is still rejected under `naive`.
    pub fn problems(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut fail = |key: &str, message: String| out.push((format!("gateway.{key}"), message));
        if let Some(b) = self.breaker {
            if let Err(e) = b.to_core().validate() {
                let key = match e.field {
                    "failure_rate_threshold" => "failure_rate",
                    "slow_call_rate_threshold" => "slow_call_rate",
                    "open_base" => "open",
                    "open_multiplier" => "open_growth",
                    "window.size" => "window_calls",
                    "window.buckets" | "window.bucket_width" => "window",
                    other => other,
                };
                fail(&format!("breaker.{key}"), e.problem.to_owned());
            }
            if b.window_calls.is_none() && b.window.0 < Duration::from_millis(u64::from(WINDOW_BUCKETS)) {
                fail("breaker.window", format!("must be at least {WINDOW_BUCKETS}ms (ten buckets of 1ms)"));
            }
        }
        if let Some(r) = self.retry {
            if r.max_attempts == 0 {
                fail("retry.max_attempts", "must be at least 1 (the first attempt counts)".to_owned());
            }
            if r.jitter.is_some() && r.backoff != BackoffKind::Proportional {
                fail("retry.jitter", "applies only to backoff = \"seed\" (full jitter is all jitter)".to_owned());
            }
            if let Some(j) = r.jitter
                && !(j.is_finite() && (0.0..1.0).contains(&j))
            {
                fail("retry.jitter", format!("must be in [0, 1), got {j}"));
            }
            if r.base.is_some_and(|b| b.0 > r.cap.0) {
                fail("retry.base", "must not exceed cap".to_owned());
            }
        }
        if let Some(b) = self.budget {
            if let Err(e) = b.to_core().validate() {
                let key = if e.to_string().contains("min_per_sec") {
                    "min_per_second"
                } else if e.to_string().contains("ratio") {
                    "ratio"
                } else {
                    "ttl"
                };
                fail(&format!("budget.{key}"), e.to_string());
            }
        }
        if let Some(t) = self.throttle {
            if !(t.k.is_finite() && t.k >= 1.0) {
                fail("throttle.k", format!("must be a finite number ≥ 1, got {}", t.k));
            }
            if t.window.0 < Duration::from_millis(24) {
                fail("throttle.window", "must be at least 24ms (24 buckets of 1ms)".to_owned());
            }
        }
        if let Some(b) = self.bulkhead {
            if b.max_concurrent == Some(0) {
                fail("bulkhead.max_concurrent", "must be at least 1".to_owned());
            }
            for (server, cap) in &b.per_server {
                if *cap == 0 {
                    fail(&format!("bulkhead.per_server.{server}"), "must be at least 1".to_owned());
                }
            }
            if b.queue_wait.0.is_zero() {
                fail("bulkhead.queue_wait", "must be longer than 0".to_owned());
            }
        }
        if let Some(l) = self.limiter {
            l.problems(&mut fail);
        }
        for (tool, fallback) in self.fallbacks {
            if fallback.is_empty() || fallback == tool {
                fail(&format!("fallbacks.{tool}"), "must name another tool".to_owned());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs<'a>(profile: GatewayProfile, fallbacks: &'a BTreeMap<String, String>) -> LayerSpecs<'a> {
        LayerSpecs {
            profile,
            breaker: None,
            retry: None,
            budget: None,
            throttle: None,
            bulkhead: None,
            limiter: None,
            fallbacks,
        }
    }

    #[test]
    fn default_profile_turns_every_layer_on_with_the_core_defaults() {
        let none = BTreeMap::new();
        let c = specs(GatewayProfile::Default, &none).to_core();
        assert_eq!(c.breaker, Some(BreakerConfig::default()));
        assert_eq!(c.retry, Some(RetryPolicy::default()));
        assert_eq!(c.budget, Some(BudgetConfig::default()));
        assert_eq!(c.throttle, Some(ThrottleConfig::default()));
        assert_eq!(c.bulkhead, Some(BulkheadConfig::default()));
    }

    #[test]
    fn the_limiter_table_picks_a_strategy_inside_the_bulkhead_and_rejects_foreign_keys() {
        let none = BTreeMap::new();
        let limiter = LimiterSpec { kind: LimiterName::Aimd, initial: Some(8), ..LimiterSpec::default() };
        let c = LayerSpecs { limiter: Some(&limiter), ..specs(GatewayProfile::Default, &none) }.to_core();
        let Some(LimiterKind::Aimd(aimd)) = c.bulkhead.map(|b| b.limiter) else { panic!("aimd expected") };
        assert_eq!((aimd.initial, aimd.backoff_ratio), (8, AimdConfig::default().backoff_ratio));
        let bad = LimiterSpec { kind: LimiterName::Aimd, smoothing: Some(0.5), ..LimiterSpec::default() };
        let keys: Vec<String> = LayerSpecs { limiter: Some(&bad), ..specs(GatewayProfile::Default, &none) }
            .problems()
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(keys, ["gateway.limiter.smoothing"]);
    }

    #[test]
    fn naive_profile_switches_every_layer_off_whatever_the_tables_say() {
        let fallbacks = BTreeMap::from([("a".to_owned(), "b".to_owned())]);
        let breaker = BreakerSpec { failure_rate: 0.9, ..BreakerSpec::default() };
        let c = LayerSpecs { breaker: Some(&breaker), ..specs(GatewayProfile::Naive, &fallbacks) }.to_core();
        assert!(c.breaker.is_none() && c.retry.is_none() && c.budget.is_none() && c.throttle.is_none());
        assert_eq!(c.fallbacks.get("a"), None);
    }

    #[test]
    fn tables_override_and_disable_one_layer() {
        let fallbacks = BTreeMap::from([("inventory_lookup".to_owned(), "query_cached_inventory".to_owned())]);
        let breaker = BreakerSpec { window_calls: Some(20), open: Dur(Duration::from_secs(2)), ..Default::default() };
        let retry = RetrySpec { enabled: false, ..RetrySpec::default() };
        let c =
            LayerSpecs { breaker: Some(&breaker), retry: Some(&retry), ..specs(GatewayProfile::Default, &fallbacks) }
                .to_core();
        let b = c.breaker.unwrap_or_default();
        assert_eq!(b.window, WindowConfig::Count { size: 20 });
        assert_eq!(b.open_base, Duration::from_secs(2));
        assert!(c.retry.is_none());
        assert!(c.budget.is_some());
        assert_eq!(c.fallbacks.get("inventory_lookup"), Some("query_cached_inventory"));
    }

    #[test]
    fn bad_values_are_named_by_their_scenario_keys() {
        let none = BTreeMap::new();
        let breaker = BreakerSpec { failure_rate: 1.5, ..BreakerSpec::default() };
        let retry = RetrySpec { max_attempts: 0, jitter: Some(0.1), ..RetrySpec::default() };
        let budget = BudgetSpec { ratio: -1.0, ..BudgetSpec::default() };
        let throttle = ThrottleSpec { k: 0.5, ..ThrottleSpec::default() };
        let s = LayerSpecs {
            breaker: Some(&breaker),
            retry: Some(&retry),
            budget: Some(&budget),
            throttle: Some(&throttle),
            ..specs(GatewayProfile::Default, &none)
        };
        let keys: Vec<String> = s.problems().into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            keys,
            [
                "gateway.breaker.failure_rate",
                "gateway.retry.max_attempts",
                "gateway.retry.jitter",
                "gateway.budget.ratio",
                "gateway.throttle.k"
            ]
        );
    }
}
