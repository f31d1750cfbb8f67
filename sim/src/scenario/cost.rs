//! What a run will cost, estimated from the scenario before it starts, and the limits beyond which loading refuses
//! it (`validate`, `sim` and `compare` exit 2) unless `--allow-large` lifts them.
//!
//! A scenario can be valid key by key and still never finish: a 100-hour run, a 1 ns tick, a hundred thousand
//! hosts, a million sessions. turmoil executes every tick and costs about O(hosts³) per tick (about a hundred hosts
//! run at real time), and the simulator keeps per-second rows and every call in flight in memory. So the estimate
//! has five figures, each with a limit:
//!
//! | figure  | estimate                                                                  | default limit |
//! |---------|---------------------------------------------------------------------------|--------------:|
//! | calls   | open loop: `load.rate × duration`; closed loop: `load.sessions × duration / (round trip + tool latency + think_time)`; at most `load.calls` | 50,000,000 |
//! | hosts   | the server hosts (see `placement`), every load host, the Redis host       | 200 |
//! | ticks   | (`duration` + the drain after the load: 2 × `client.deadline` + `client.connect_timeout` + 10 s) / `tick` | 100,000,000 |
//! | work    | ticks × hosts³                                                            | 3.6·10¹² |
//! | memory  | the process, hosts and their connections, calls in flight, per-second rows | 2 GiB |
//!
//! The limits sit far above every shipped scenario (the largest, `retry_storm` and `latency_spike`, estimate about
//! 90,000 calls, 11 hosts, 200,000 ticks and 200 MiB) and far below what a machine survives: 50 million calls take
//! the order of an hour of wall time, and 3.6·10¹² work units are what an hour of 100 hosts at real time costs
//! (10⁶ per tick at about 1 ms a tick).
//!
//! The call history costs disk, not memory: `calls.csv` is streamed as attempts finish. Its size (every attempt
//! retried `agent.max_retries` times, so an upper bound; a hundredth with `[report] calls = "sample"`, none with
//! `"off"`) is printed with the estimate but has no limit.
//!
//! Estimates are `f64`: the ranges of [`ranges`](super::ranges) bound every input, and a float cannot overflow into
//! a panic anyway.

use std::fmt;
use std::time::Duration;

use super::ranges::number;
use super::{CALLS_SAMPLE_EVERY, CallsMode, LoadMode, RetryMode, Scenario};
use crate::run::memory::Seconds;
use mcpstorm_fake::LatencyDist;

/// The most a run may cost before loading refuses it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Logical calls.
    pub calls: f64,
    /// turmoil hosts.
    pub hosts: f64,
    /// Ticks, up to the end of the drain.
    pub ticks: f64,
    /// Ticks × hosts³.
    pub work: f64,
    /// Bytes.
    pub memory: f64,
}

impl Limits {
    /// The limits `validate`, `sim` and `compare` apply by default (see the module docs for the reasoning).
    pub const DEFAULT: Limits =
        Limits { calls: 50_000_000.0, hosts: 200.0, ticks: 100_000_000.0, work: 3.6e12, memory: 2.0 * GIB };

    /// No limits (`--allow-large`): only the ranges that keep the arithmetic safe apply.
    pub const NONE: Limits = Limits {
        calls: f64::INFINITY,
        hosts: f64::INFINITY,
        ticks: f64::INFINITY,
        work: f64::INFINITY,
        memory: f64::INFINITY,
    };

    /// [`Limits::NONE`] with `--allow-large`, else [`Limits::DEFAULT`].
    pub fn allowing_large(allow_large: bool) -> Limits {
        if allow_large { Limits::NONE } else { Limits::DEFAULT }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

const MIB: f64 = 1024.0 * 1024.0;
const GIB: f64 = 1024.0 * MIB;

// Each constant sits above what a run was measured to use (docs/benchmarks.md, "Figures behind constants in the
// code"): the estimate refuses runs that would not fit, so it errs high.

/// The process before any host: binaries, runtimes, the report's fonts and plots.
pub(crate) const PROCESS_BYTES: f64 = 48.0 * MIB;
/// One turmoil host: its runtime and listener.
const HOST_BYTES: f64 = 256.0 * KIB;
/// One load host's client of one replica: a connection with two 64 KiB TCP buffers, session, router statistics and
/// breakers.
const PAIR_BYTES: f64 = 512.0 * KIB;
/// One logical call in flight: its task, arguments, pending requests and the recorder's share.
pub(crate) const CALL_BYTES: f64 = 16.0 * KIB;
/// One row of `calls.csv` on disk (more with an output hash).
const ROW_BYTES: f64 = 190.0;
const KIB: f64 = 1024.0;

/// How long after the load ends the run waits for started calls to reach their outcome: two deadlines plus reconnect
/// time (retries after the load ends are few). Saturating: a scenario built in code may skip validation.
pub fn drain_limit(s: &Scenario) -> Duration {
    s.client.deadline.0.saturating_mul(2).saturating_add(s.client.connect_timeout.0).saturating_add(DRAIN_SLACK)
}

/// Slack added to the drain, for reconnects and the last in-flight replies.
const DRAIN_SLACK: Duration = Duration::from_secs(10);

/// The simulated time a run can last at most: the load's `duration` plus the drain.
pub fn time_limit(s: &Scenario) -> Duration {
    s.duration.0.saturating_add(drain_limit(s))
}

/// A run's estimated cost (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct Cost {
    pub calls: f64,
    pub hosts: f64,
    pub ticks: f64,
    pub work: f64,
    /// Peak bytes.
    pub memory: f64,
    /// Bytes of `calls.csv`, at most (on disk, not limited).
    pub disk: f64,
    /// The keys that drive each figure, most important first: [calls, hosts, ticks, memory].
    drivers: [Vec<String>; 4],
}

/// Estimates the cost of running `s` (one run: a sweep's rows are estimated one by one).
pub fn estimate(s: &Scenario) -> Cost {
    let duration = s.duration.0.as_secs_f64();
    let load = &s.load;
    let retries = f64::from(s.agent.max_retries);
    let (offered, mut calls_keys) = match load.mode {
        LoadMode::Open => (load.rate.unwrap_or(0.0) * duration, vec!["load.rate".to_owned(), "duration".to_owned()]),
        LoadMode::Closed => {
            let sessions = load.sessions.unwrap_or(1) as f64;
            let cycle = closed_cycle(s).as_secs_f64().max(s.tick.0.as_secs_f64()).max(f64::MIN_POSITIVE);
            let keys = ["load.sessions", "duration", "load.think_time"].map(str::to_owned).to_vec();
            (sessions * duration / cycle, keys)
        }
        LoadMode::Replay => {
            (replayed(s), vec!["load.trace".to_owned(), "load.speed".to_owned(), "duration".to_owned()])
        }
    };
    let calls = match load.calls {
        Some(max) if (max as f64) < offered => {
            calls_keys.insert(0, "load.calls".to_owned());
            max as f64
        }
        _ => offered,
    };

    let replicas: usize = s.servers.iter().map(|srv| srv.replicas).sum();
    let redis = usize::from(s.gateway.sync.is_some());
    let hosts = (super::Placement::of(s).hosts().len() + load.hosts + redis) as f64;
    let mut hosts_keys = vec!["load.hosts".to_owned()];
    let biggest = s.servers.iter().enumerate().max_by_key(|(i, srv)| (srv.replicas, std::cmp::Reverse(*i)));
    // Replicas count as hosts only where they have hosts of their own.
    if let Some((i, srv)) = biggest
        && srv.replicas > load.hosts
        && s.network.hosts == super::HostsMode::PerReplica
    {
        hosts_keys.insert(0, format!("servers[{i}].replicas"));
        hosts_keys.push("network.hosts".to_owned());
    }

    let limit = time_limit(s);
    let ticks = (limit.as_secs_f64() / s.tick.0.as_secs_f64().max(f64::MIN_POSITIVE)).ceil();
    let mut ticks_keys = vec!["duration".to_owned(), "tick".to_owned()];
    if drain_limit(s) > s.duration.0 {
        ticks_keys.extend(["client.deadline", "client.connect_timeout"].map(str::to_owned));
    }

    // Calls in flight: a closed loop's sessions, or an open loop's arrivals over the longest a call can take.
    let polite_wait = if s.agent.retry == RetryMode::Polite { s.agent.backoff_cap.0.as_secs_f64() } else { 0.0 };
    let longest_call = (1.0 + retries) * s.client.deadline.0.as_secs_f64() + retries * polite_wait;
    let (in_flight, in_flight_keys) = match load.mode {
        LoadMode::Closed => (load.sessions.unwrap_or(1) as f64, vec!["load.sessions"]),
        LoadMode::Open => (
            load.rate.unwrap_or(0.0) * longest_call.min(duration),
            vec!["load.rate", "client.deadline", "agent.max_retries"],
        ),
        // The trace's mean rate: a burst in it can hold more at once.
        LoadMode::Replay => (
            offered / duration.max(f64::MIN_POSITIVE) * longest_call.min(duration),
            vec!["load.trace", "client.deadline", "agent.max_retries"],
        ),
    };
    let seconds = limit.as_secs_f64().ceil() + 1.0;
    let seconds_keys = ticks_keys.iter().filter(|k| *k != "tick").cloned().collect();
    let parts = [
        (in_flight.min(calls.max(1.0)) * CALL_BYTES, in_flight_keys.into_iter().map(str::to_owned).collect()),
        (seconds * Seconds::bytes_per_second() as f64, seconds_keys),
        (hosts * HOST_BYTES + (load.hosts * replicas) as f64 * PAIR_BYTES, hosts_keys.clone()),
    ];
    let memory = PROCESS_BYTES + parts.iter().map(|(bytes, _)| bytes).sum::<f64>();
    let memory_keys: Vec<String> =
        parts.iter().max_by(|a, b| a.0.total_cmp(&b.0)).map(|(_, keys)| keys.clone()).unwrap_or_default();

    Cost {
        calls,
        hosts,
        ticks,
        work: ticks * hosts.powi(3),
        memory,
        disk: (calls * (1.0 + retries)) * ROW_BYTES / calls_share(s.report.calls.resolve(calls)),
        drivers: [calls_keys, hosts_keys, ticks_keys, memory_keys],
    }
}

/// The calls a replay sends: its trace's that start before the run ends, at its speed (none before the trace is read).
fn replayed(s: &Scenario) -> f64 {
    let Some(trace) = &s.load.replay else { return 0.0 };
    let (end, speed) = (s.duration.0.as_secs_f64(), s.load.speed());
    trace.calls.iter().filter(|c| c.offset.as_secs_f64() / speed < end).count() as f64
}

/// One logical call in how many `calls.csv` takes (infinite: none).
fn calls_share(mode: CallsMode) -> f64 {
    match mode {
        CallsMode::All | CallsMode::Auto => 1.0,
        CallsMode::Sample => CALLS_SAMPLE_EVERY as f64,
        CallsMode::Off => f64::INFINITY,
    }
}

/// How long one closed-loop session takes per call, about: a round trip, the mix's weighted typical tool latency,
/// and the think time.
fn closed_cycle(s: &Scenario) -> Duration {
    let (mut weighted, mut weights) = (0.0, 0.0);
    for entry in &s.load.mix {
        let typical = s
            .servers
            .iter()
            .filter(|srv| entry.server.as_ref().is_none_or(|name| name == &srv.name))
            .flat_map(|srv| srv.tools.iter().filter(|t| t.name == entry.tool))
            .map(|t| typical_ms(&t.latency))
            .fold(f64::INFINITY, f64::min);
        if typical.is_finite() && entry.weight.is_finite() {
            weighted += entry.weight * typical;
            weights += entry.weight;
        }
    }
    let tool_ms = if weights > 0.0 { weighted / weights } else { 0.0 };
    let tool = Duration::try_from_secs_f64(tool_ms / 1000.0).unwrap_or_default();
    s.network.latency.0.saturating_mul(2).saturating_add(tool).saturating_add(s.load.think_time.0)
}

/// A latency distribution's typical value in ms: its median or mean (what most calls take, not a bound).
fn typical_ms(latency: &LatencyDist) -> f64 {
    match latency {
        LatencyDist::Fixed { ms } => *ms,
        LatencyDist::Uniform { min_ms, max_ms } => (min_ms + max_ms) / 2.0,
        LatencyDist::Normal { mean_ms, .. } => *mean_ms,
        LatencyDist::Lognormal { p50_ms, .. } => *p50_ms,
        LatencyDist::Arg { default_ms, .. } => *default_ms,
        LatencyDist::Steps { default_steps, default_step_ms, .. } => *default_steps as f64 * default_step_ms,
        LatencyDist::Empirical { ms } => mcpstorm_fake::empirical_at(ms, 0.5),
    }
}

impl Cost {
    /// When some figure is over its limit: the key to report it at (the first driver of the first figure over) and
    /// the message, naming every figure over its limit, the keys that drive it, and the whole estimate.
    pub fn over(&self, limits: &Limits) -> Option<(String, String)> {
        let [calls, hosts, ticks, memory] = &self.drivers;
        let work: Vec<String> = hosts.iter().chain(ticks).cloned().collect();
        let figures = [
            ("calls", self.calls, limits.calls, approx(self.calls), approx(limits.calls), calls),
            ("hosts", self.hosts, limits.hosts, approx(self.hosts), approx(limits.hosts), hosts),
            ("ticks", self.ticks, limits.ticks, approx(self.ticks), approx(limits.ticks), ticks),
            ("work (ticks × hosts³)", self.work, limits.work, approx(self.work), approx(limits.work), &work),
            ("memory", self.memory, limits.memory, bytes(self.memory), bytes(limits.memory), memory),
        ];
        let over: Vec<_> = figures.iter().filter(|f| f.1 > f.2).collect();
        let first = over.first()?;
        let key = first.5.first().cloned().unwrap_or_else(|| "duration".to_owned());
        let list: Vec<String> =
            over.iter().map(|(name, _, _, v, l, keys)| format!("{name} {v} > {l} ({})", keys.join(", "))).collect();
        let message = format!(
            "this run would cost too much: {self}; over the limits: {}. Lower those keys, or pass --allow-large",
            list.join("; ")
        );
        Some((key, message))
    }
}

impl fmt::Display for Cost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "~{} calls over up to {} ticks with {} hosts (work {} ticks × hosts³), ~{} of memory",
            approx(self.calls),
            approx(self.ticks),
            approx(self.hosts),
            approx(self.work),
            bytes(self.memory)
        )?;
        if self.disk > 0.0 {
            write!(f, ", calls.csv up to ~{} on disk", bytes(self.disk))?;
        }
        Ok(())
    }
}

impl fmt::Display for Limits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} calls, {} ticks, {} hosts, work {}, {}",
            approx(self.calls),
            approx(self.ticks),
            approx(self.hosts),
            approx(self.work),
            bytes(self.memory)
        )
    }
}

/// An estimate as messages print it: whole and grouped below 10⁹ (`360,000,000`), then `3.6e9`.
fn approx(x: f64) -> String {
    if x.is_infinite() {
        "unlimited".to_owned()
    } else if x < 1e9 {
        number(x.round())
    } else {
        format!("{x:.1e}")
    }
}

/// Bytes in MiB, or GiB with one digit after the point from 1 GiB on.
fn bytes(x: f64) -> String {
    if x.is_infinite() {
        "unlimited memory".to_owned()
    } else if x < GIB {
        format!("{} MiB", number((x / MIB).round()))
    } else {
        format!("{:.1} GiB", x / GIB)
    }
}
