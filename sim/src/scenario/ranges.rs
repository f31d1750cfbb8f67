//! Every duration and count of the scenario format has a range, checked when the scenario loads. The ranges keep the
//! simulator's arithmetic far from overflow (`Instant + Duration`, `Duration × n`, sums of windows), whatever
//! `--allow-large` says: that flag lifts only the run-cost limits of [`cost`](super::cost).
//!
//! | keys                                              | range                                   | why |
//! |---------------------------------------------------|-----------------------------------------|-----|
//! | every duration                                    | at most [`MAX_DURATION`] (7 days)        | 7 d is 6·10¹⁴ ns, u64 nanoseconds hold 1.8·10¹⁹: a sum or small multiple of such durations, or an instant plus one, cannot overflow |
//! | `tick`                                            | [`MIN_TICK`] (1 µs) to [`MAX_TICK`] (1 s) | finer ticks only burn wall time; coarser ones blur the per-second rows |
//! | `network.latency`, `network.max_latency`, `load.think_time` | at most the run's `duration`  | a message or a pause longer than the run never ends inside it |
//! | `faults[].start` + `duration`, `servers[].join_at`, `leave_at` | inside the run (their own rules) | |
//! | `faults[].offset`, `faults[].jump`                | magnitude at most 7 days                 | a clock further off expires every session just the same |
//! | `servers[].replicas`, `load.hosts`                | 1 to [`MAX_HOSTS`] (1,000)               | a listener (and, with `network.hosts = "per_replica"` or a crash or partition, a turmoil host) each; the cost limit (200 hosts in all) is lower |
//! | `load.sessions`                                   | 1 to [`MAX_SESSIONS`] (10,000,000)       | one task each |
//! | `load.rate`                                       | up to [`MAX_RATE`] (10,000,000 calls/s)  | |
//! | `load.calls`                                      | 1 to [`MAX_CALLS`] (10¹²)                | |
//! | `load.mix[].weight`                               | up to [`MAX_WEIGHT`] (10⁹)               | the weights' sum stays finite |
//! | `servers[].workers`, `page_size`, `max_concurrent_requests`, `max_in_flight_per_connection`, `client.max_in_flight`, `client.per_connection`, `client.http_connections`, `client.http_queue`, `gateway.bulkhead.max_concurrent`, `per_server.*`, `gateway.limiter.initial`, `min`, `max`, `long_window`, `warmup` | up to [`MAX_CONCURRENCY`] (1,000,000) | permits of a semaphore (tokio panics above 2⁶¹) and counters: a million calls at once per host is beyond any run |
//! | `gateway.breaker.window_calls`, `minimum_calls`   | up to [`MAX_WINDOW_CALLS`] (100,000)     | a count window allocates one slot per call, per (replica, tool) and gateway |
//! | `gateway.breaker.half_open_probes`, `gateway.router.failure_threshold` | up to [`MAX_THRESHOLD`] (10,000) | |
//! | `gateway.retry.max_attempts`, `agent.max_retries` | up to [`MAX_ATTEMPTS`] (100)             | beyond it a run is all retries |
//! | `faults[].multiplier`                             | 1 to [`MAX_MULTIPLIER`] (1,000)          | a latency × it stays a duration |
//! | `servers[].latency_p95_ms`, `servers[].cache_ttl_ms` | up to 7 days in ms                    | durations written as milliseconds |
//! | `servers[].tools[].progress_ms`, `latency.*_ms`, `latency.default_steps` | up to one day in ms ([`MAX_LATENCY`](mcpstorm_fake::MAX_LATENCY)), 1,000,000 steps | the fake server clamps every latency there (checked by the fake server's own validation) |
//! | `swarm.max_faults`, `swarm.max_at_once`          | up to [`MAX_SWARM_FAULTS`] (20)          | each fault is a window to shrink; `swarm.error_slack_calls` up to [`MAX_CALLS`] |
//! | `sweep.values`                                    | 1 to [`MAX_SWEEP_VALUES`] (100) values   | one run each |
//!
//! [`durations`] and [`counts`] list every such key of a scenario with its value and bound: validation checks them,
//! and the tests check that the list covers every duration and integer key of the format's JSON Schema.

use std::time::Duration;

use super::model::Scenario;

/// The longest duration any key may hold: a week.
pub const MAX_DURATION: Duration = Duration::from_secs(7 * 24 * 3600);
/// The finest tick.
pub const MIN_TICK: Duration = Duration::from_micros(1);
/// The coarsest tick.
pub const MAX_TICK: Duration = Duration::from_secs(1);
/// Most hosts of one kind: replicas of one server, load hosts.
pub const MAX_HOSTS: u64 = 1_000;
/// Most closed-loop sessions.
pub const MAX_SESSIONS: u64 = 10_000_000;
/// Most open-loop calls per second.
pub const MAX_RATE: f64 = 10_000_000.0;
/// Most logical calls a `load.calls` budget may name.
pub const MAX_CALLS: u64 = 1_000_000_000_000;
/// Largest mix weight.
pub const MAX_WEIGHT: f64 = 1e9;
/// Most permits of a pool or limit, and most workers.
pub const MAX_CONCURRENCY: u64 = 1_000_000;
/// Largest breaker count window.
pub const MAX_WINDOW_CALLS: u64 = 100_000;
/// Largest probe count and failure threshold.
pub const MAX_THRESHOLD: u64 = 10_000;
/// Most attempts (the gateway's) or retries (the agent's) per call.
pub const MAX_ATTEMPTS: u64 = 100;
/// Largest latency multiplier of a fault.
pub const MAX_MULTIPLIER: f64 = 1_000.0;
/// Most faults a swarm draws per seed.
pub const MAX_SWARM_FAULTS: u64 = 20;
/// Most sweep values.
pub const MAX_SWEEP_VALUES: u64 = 100;

/// [`MAX_DURATION`] in milliseconds, for keys written as milliseconds.
pub const MAX_DURATION_MS: u64 = 7 * 24 * 3600 * 1000;

/// The upper bound of a duration key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upper {
    /// [`MAX_DURATION`].
    Week,
    /// The run's `duration` (and so at most a week).
    Run,
    /// Inside the run, checked by the key's own rule with its own message (a fault's window, `join_at`,
    /// `leave_at`).
    RunByOwnRule,
    /// [`MAX_TICK`], or the run's `duration` when shorter.
    Tick,
}

impl Upper {
    /// The bound for scenario `s`.
    pub fn of(self, s: &Scenario) -> Duration {
        match self {
            Upper::Week => MAX_DURATION,
            // A zero-length run is reported once, at `duration`: keys bounded by it are then held to a week.
            Upper::Run | Upper::RunByOwnRule if s.duration.0.is_zero() => MAX_DURATION,
            Upper::Run | Upper::RunByOwnRule => s.duration.0.min(MAX_DURATION),
            Upper::Tick if s.duration.0.is_zero() => MAX_TICK,
            Upper::Tick => MAX_TICK.min(s.duration.0),
        }
    }

    /// How the bound reads in a message.
    pub fn describe(self, s: &Scenario) -> String {
        let d = super::units::format_duration(self.of(s));
        match self {
            Upper::Week => format!("{d} (a week)"),
            Upper::Run | Upper::RunByOwnRule => format!("the run's duration ({d})"),
            Upper::Tick if self.of(s) < MAX_TICK => format!("the run's duration ({d})"),
            Upper::Tick => d,
        }
    }
}

/// One duration key of a scenario: its path, value (a signed one's magnitude) and upper bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurationKey {
    pub path: String,
    pub value: Duration,
    pub upper: Upper,
}

/// One count (or number with a range) of a scenario: its path, value and largest allowed value. Values are `f64` so
/// that integers and rates share one list (every integer bound here is exact in `f64`).
#[derive(Debug, Clone, PartialEq)]
pub struct CountKey {
    pub path: String,
    pub value: f64,
    pub max: f64,
}

/// Every duration key the scenario holds, optional tables and array entries included when present.
pub fn durations(s: &Scenario) -> Vec<DurationKey> {
    let mut out = Vec::new();
    let mut add = |path: String, value: Duration, upper: Upper| out.push(DurationKey { path, value, upper });
    add("duration".into(), s.duration.0, Upper::Week);
    add("tick".into(), s.tick.0, Upper::Tick);
    add("network.latency".into(), s.network.latency.0, Upper::Run);
    if let Some(max) = s.network.max_latency {
        add("network.max_latency".into(), max.0, Upper::Run);
    }
    for (i, server) in s.servers.iter().enumerate() {
        let at = |key: &str| format!("servers[{i}].{key}");
        if let Some(ttl) = server.session_ttl {
            add(at("session_ttl"), ttl.0, Upper::Week);
        }
        if let Some(join) = server.join_at {
            add(at("join_at"), join.0, Upper::RunByOwnRule);
        }
        if let Some(leave) = server.leave_at {
            add(at("leave_at"), leave.0, Upper::RunByOwnRule);
        }
    }
    add("load.think_time".into(), s.load.think_time.0, Upper::Run);
    add("agent.backoff".into(), s.agent.backoff.0, Upper::Week);
    add("agent.backoff_cap".into(), s.agent.backoff_cap.0, Upper::Week);
    let c = &s.client;
    for (key, d) in [
        ("queue_wait", c.queue_wait),
        ("first_response", c.first_response),
        ("connect_timeout", c.connect_timeout),
        ("deadline", c.deadline),
    ] {
        add(format!("client.{key}"), d.0, Upper::Week);
    }
    for (k, f) in s.faults.iter().enumerate() {
        let at = |key: &str| format!("faults[{k}].{key}");
        add(at("start"), f.start.0, Upper::RunByOwnRule);
        add(at("duration"), f.duration.0, Upper::RunByOwnRule);
        for (key, d) in [("extra", f.extra), ("retry_after", f.retry_after)] {
            if let Some(d) = d {
                add(at(key), d.0, Upper::Week);
            }
        }
        for (key, signed) in [("offset", f.offset), ("jump", f.jump)] {
            if let Some(d) = signed {
                add(at(key), d.magnitude, Upper::Week);
            }
        }
    }
    gateway_durations(s, &mut add);
    if let Some(swarm) = &s.swarm {
        for (key, d) in swarm.durations() {
            add(format!("swarm.{key}"), d.0, Upper::Week);
        }
    }
    out
}

fn gateway_durations(s: &Scenario, add: &mut impl FnMut(String, Duration, Upper)) {
    let g = &s.gateway;
    let mut week = |key: &str, d: Duration| add(format!("gateway.{key}"), d, Upper::Week);
    for (key, d) in g.router.durations() {
        week(&format!("router.{key}"), d.0);
    }
    if let Some(b) = &g.breaker {
        for (key, d) in [
            ("window", b.window),
            ("slow_call", b.slow_call),
            ("open", b.open),
            ("open_max", b.open_max),
            ("half_open_max_wait", b.half_open_max_wait),
            ("probe_interval", b.probe_interval),
            ("hold", b.hold),
        ] {
            week(&format!("breaker.{key}"), d.0);
        }
    }
    if let Some(r) = &g.retry {
        if let Some(base) = r.base {
            week("retry.base", base.0);
        }
        week("retry.cap", r.cap.0);
    }
    if let Some(b) = &g.budget {
        week("budget.ttl", b.ttl.0);
    }
    if let Some(t) = &g.throttle {
        week("throttle.window", t.window.0);
    }
    if let Some(wait) = g.bulkhead.as_ref().and_then(|b| b.queue_wait) {
        week("bulkhead.queue_wait", wait.0);
    }
    if let Some(timeout) = g.limiter.as_ref().and_then(|l| l.timeout) {
        week("limiter.timeout", timeout.0);
    }
}

/// Every count (and bounded number) the scenario holds, with its largest allowed value. Lower bounds (at least 1,
/// above 0) are checked by the rules of each key.
pub fn counts(s: &Scenario) -> Vec<CountKey> {
    let mut out = Vec::new();
    let mut add = |path: String, value: f64, max: f64| out.push(CountKey { path, value, max });
    let hosts = MAX_HOSTS as f64;
    let concurrency = MAX_CONCURRENCY as f64;
    for (i, server) in s.servers.iter().enumerate() {
        let at = |key: &str| format!("servers[{i}].{key}");
        add(at("replicas"), server.replicas as f64, hosts);
        for (key, n) in [("workers", server.workers), ("page_size", server.page_size)] {
            if let Some(n) = n {
                add(at(key), n as f64, concurrency);
            }
        }
        if let Some(n) = server.max_concurrent_requests {
            add(at("max_concurrent_requests"), f64::from(n), concurrency);
        }
        add(at("max_in_flight_per_connection"), server.max_in_flight_per_connection as f64, concurrency);
        if let Some(ms) = server.latency_p95_ms {
            add(at("latency_p95_ms"), ms, MAX_DURATION_MS as f64);
        }
        add(at("cache_ttl_ms"), server.cache_ttl_ms as f64, MAX_DURATION_MS as f64);
    }
    let load = &s.load;
    if let Some(n) = load.sessions {
        add("load.sessions".into(), n as f64, MAX_SESSIONS as f64);
    }
    if let Some(rate) = load.rate {
        add("load.rate".into(), rate, MAX_RATE);
    }
    if let Some(n) = load.calls {
        add("load.calls".into(), n as f64, MAX_CALLS as f64);
    }
    add("load.hosts".into(), load.hosts as f64, hosts);
    for (j, entry) in load.mix.iter().enumerate() {
        add(format!("load.mix[{j}].weight"), entry.weight, MAX_WEIGHT);
    }
    add("agent.max_retries".into(), f64::from(s.agent.max_retries), MAX_ATTEMPTS as f64);
    add("client.max_in_flight".into(), s.client.max_in_flight as f64, concurrency);
    add("client.per_connection".into(), s.client.per_connection as f64, concurrency);
    add("client.http_connections".into(), s.client.http_connections as f64, concurrency);
    add("client.http_queue".into(), s.client.http_queue as f64, concurrency);
    for (k, f) in s.faults.iter().enumerate() {
        if let Some(m) = f.multiplier {
            add(format!("faults[{k}].multiplier"), m, MAX_MULTIPLIER);
        }
        // Checked to be 400 to 599 by the fault's own rule; listed so that every integer key has a range.
        if let Some(status) = f.status {
            add(format!("faults[{k}].status"), f64::from(status), 599.0);
        }
    }
    gateway_counts(s, &mut add);
    if let Some(sweep) = &s.sweep {
        add("sweep.values".into(), sweep.values.len() as f64, MAX_SWEEP_VALUES as f64);
    }
    if let Some(swarm) = &s.swarm {
        add("swarm.max_faults".into(), f64::from(swarm.max_faults), MAX_SWARM_FAULTS as f64);
        add("swarm.max_at_once".into(), f64::from(swarm.max_at_once), MAX_SWARM_FAULTS as f64);
        add("swarm.error_slack_calls".into(), swarm.error_slack_calls as f64, MAX_CALLS as f64);
        add("swarm.max_multiplier".into(), swarm.max_multiplier, MAX_MULTIPLIER);
    }
    out
}

fn gateway_counts(s: &Scenario, add: &mut impl FnMut(String, f64, f64)) {
    let g = &s.gateway;
    let mut add = |key: &str, value: f64, max: u64| add(format!("gateway.{key}"), value, max as f64);
    add("router.failure_threshold", f64::from(g.router.failure_threshold), MAX_THRESHOLD);
    if let Some(b) = &g.breaker {
        if let Some(n) = b.window_calls {
            add("breaker.window_calls", f64::from(n), MAX_WINDOW_CALLS);
        }
        add("breaker.minimum_calls", f64::from(b.minimum_calls), MAX_WINDOW_CALLS);
        add("breaker.half_open_probes", f64::from(b.half_open_probes), MAX_THRESHOLD);
    }
    if let Some(r) = &g.retry {
        add("retry.max_attempts", f64::from(r.max_attempts), MAX_ATTEMPTS);
    }
    if let Some(b) = &g.bulkhead {
        if let Some(n) = b.max_concurrent {
            add("bulkhead.max_concurrent", n as f64, MAX_CONCURRENCY);
        }
        for (server, n) in &b.per_server {
            add(&format!("bulkhead.per_server.{server}"), *n as f64, MAX_CONCURRENCY);
        }
    }
    if let Some(l) = &g.limiter {
        for (key, n) in [("initial", l.initial), ("min", l.min), ("max", l.max)] {
            if let Some(n) = n {
                add(&format!("limiter.{key}"), n as f64, MAX_CONCURRENCY);
            }
        }
        for (key, n) in [("long_window", l.long_window), ("warmup", l.warmup)] {
            if let Some(n) = n {
                add(&format!("limiter.{key}"), f64::from(n), MAX_CONCURRENCY);
            }
        }
    }
}

/// A duration as a range message shows the value it refused: in the humantime units the file uses, or in seconds
/// from a year on (`18446744073709551615s` reads better as the number the user typed than as 584 billion years).
pub fn shown(d: Duration) -> String {
    const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);
    if d < YEAR || d.subsec_nanos() != 0 { super::units::format_duration(d) } else { format!("{}s", d.as_secs()) }
}

/// A number as messages print it: integers grouped by thousands (`1,000,000`), fractions as Rust prints them, and
/// anything from 10¹⁵ on (or not finite) in scientific notation, where every digit is no longer exact anyway.
pub fn number(x: f64) -> String {
    if x.is_nan() || x.abs() >= 1e15 {
        return format!("{x:e}");
    }
    if x.fract() != 0.0 {
        return format!("{x}");
    }
    let digits = format!("{}", x.abs() as u64);
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if x < 0.0 {
        out.push('-');
    }
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}
