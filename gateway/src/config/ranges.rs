//! Every duration and count of the scenario format has a range, checked when the scenario loads. The ranges keep the
//! simulator's arithmetic far from overflow (`Instant + Duration`, `Duration × n`, sums of windows), whatever
//! `--allow-large` says: that flag lifts only the run-cost limits of [`cost`](super::cost).
//!
//! | keys                                              | range                                   | why |
//! |---------------------------------------------------|-----------------------------------------|-----|
//! | every duration                                    | at most [`MAX_DURATION`] (7 days)        | 7 d is 6·10¹⁴ ns, u64 nanoseconds hold 1.8·10¹⁹: a sum or small multiple of such durations, or an instant plus one, cannot overflow |
//! | `tick`                                            | [`MIN_TICK`] (1 ms) to [`MAX_TICK`] (1 s)  | the hosts' timers count whole milliseconds; coarser ticks blur the per-second rows |
//! | `network.latency`, `network.max_latency`, `load.think_time` | at most the run's `duration` | a message or a pause longer than the run never ends inside it |
//! | `faults[].start` + `duration`, `servers[].join_at`, `leave_at` | inside the run (their own rules) | |
//! | `faults[].offset`, `faults[].jump`                | magnitude at most 7 days                 | a clock further off expires every session just the same |
//! | `servers[].replicas`, `load.hosts`                | 1 to [`MAX_HOSTS`] (1,000)               | a listener (and, with `network.hosts = "per_replica"` or a crash or partition, a turmoil host) each; the cost limit (200 hosts in all) is lower |
//! | `load.sessions`                                   | 1 to [`MAX_SESSIONS`] (10,000,000)       | one task each |
//! | `load.rate`                                       | up to [`MAX_RATE`] (10,000,000 calls/s)  | |
//! | `load.speed`                                      | up to [`MAX_SPEED`] (1,000,000)          | a replay's offsets divided by it stay durations |
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
//! Each table lists its own keys with their values and bounds into a [`Ranges`] (its `ranges` method), and
//! [`validate`](super::validate) walks the tables and checks them; the tests check that the list covers every
//! duration and integer key of the format's JSON Schema. This module holds only what the tables share: the bounds
//! and the list.

use std::time::Duration;

use super::rules::Rules;

/// The longest duration any key may hold: a week.
pub const MAX_DURATION: Duration = Duration::from_secs(7 * 24 * 3600);
/// The finest tick. The hosts' timers are tokio's, which count whole milliseconds: under a finer tick a sleep still
/// moves its host's clock a whole millisecond, so the hosts' clocks ran ahead of the simulation's (a 5 s run under
/// a 100 µs tick reported 0.5 s simulated, and its load and faults ran by the wrong clock).
pub const MIN_TICK: Duration = Duration::from_millis(1);
/// The coarsest tick.
pub const MAX_TICK: Duration = Duration::from_secs(1);
/// Most hosts of one kind: replicas of one server, load hosts.
pub const MAX_HOSTS: u64 = 1_000;
/// Most closed-loop sessions.
pub const MAX_SESSIONS: u64 = 10_000_000;
/// Most open-loop calls per second.
pub const MAX_RATE: f64 = 10_000_000.0;
/// Fastest replay (`load.speed`).
pub const MAX_SPEED: f64 = 1_000_000.0;
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
    /// The bound in a run of length `run` (the scenario's `duration`).
    pub fn of(self, run: Duration) -> Duration {
        match self {
            Upper::Week => MAX_DURATION,
            // A zero-length run is reported once, at `duration`: keys bounded by it are then held to a week.
            Upper::Run | Upper::RunByOwnRule if run.is_zero() => MAX_DURATION,
            Upper::Run | Upper::RunByOwnRule => run.min(MAX_DURATION),
            Upper::Tick if run.is_zero() => MAX_TICK,
            Upper::Tick => MAX_TICK.min(run),
        }
    }

    /// How the bound reads in a message.
    pub fn describe(self, run: Duration) -> String {
        let d = super::units::format_duration(self.of(run));
        match self {
            Upper::Week => format!("{d} (a week)"),
            Upper::Run | Upper::RunByOwnRule => format!("the run's duration ({d})"),
            Upper::Tick if self.of(run) < MAX_TICK => format!("the run's duration ({d})"),
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

/// The bounded keys of a scenario, as its tables list them (optional tables and array entries included when
/// present).
#[derive(Debug, Default)]
pub struct Ranges {
    pub durations: Vec<DurationKey>,
    pub counts: Vec<CountKey>,
}

impl Ranges {
    /// A duration key and its upper bound.
    pub fn duration(&mut self, path: impl Into<String>, value: Duration, upper: Upper) {
        self.durations.push(DurationKey { path: path.into(), value, upper });
    }

    /// A count (or bounded number) and its largest allowed value. Lower bounds (at least 1, above 0) are checked by
    /// the rules of each key.
    pub fn count(&mut self, path: impl Into<String>, value: f64, max: f64) {
        self.counts.push(CountKey { path: path.into(), value, max });
    }
}

impl Ranges {
    /// Fails every key above its bound, in a run of length `run`: what keeps the run's arithmetic far from
    /// overflow. The keys bounded by their own rule are left to it.
    pub fn check(self, run: Duration, rules: &mut Rules) {
        for key in self.durations {
            if key.upper != Upper::RunByOwnRule && key.value > key.upper.of(run) {
                let message = format!("must be at most {}, got {}", key.upper.describe(run), shown(key.value));
                rules.fail(key.path, message);
            }
        }
        for key in self.counts {
            if key.value > key.max {
                rules.fail(key.path, format!("must be at most {}, got {}", number(key.max), number(key.value)));
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
