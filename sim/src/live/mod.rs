//! `mcpstorm live`: a scenario run in real time on this machine, the simulator's twin.
//!
//! Everything but the network and the clock is the simulator's own: the fake servers (each replica serving on a
//! loopback port of its own, NDJSON or Streamable HTTP as the scenario says), the load hosts' gateways and agents
//! ([`run_host`]), the recorder, the fault timeline and the report. What differs:
//!
//! - sockets are real (tokio TCP on loopback), and each load host reaches each replica through a [`relay`] that adds
//!   the scenario's latency and carries its partitions (`[network] partition = "drop"` as turmoil does, or `"hold"`
//!   as TCP does); a crash stops the replica's listener and drops its connections ([`replica`]);
//! - time is tokio's real clock since the start of the run ([`RunTime::Live`]); wall clocks still start at the
//!   simulator's pinned epoch, so skews and session expiry behave as they do there;
//! - a step loop applies the fault timeline every [`STEP`] of wall time, and samples the in-flight gauge each second.
//!
//! **Keeps up or stops.** The run is only worth its plot if this machine keeps real time: when the step loop wakes,
//! or an open-loop arrival is sent, more than [`MAX_LAG`] after it was due, the run stops with
//! [`LiveError::CannotKeepUp`] instead of writing a report. The bound is a quarter of the one-second windows the
//! report is drawn in: a lag that size would move calls into the wrong second.
//!
//! Out of scope for now (refused with [`LiveError::Unsupported`], naming the key): `[gateway] nodes`,
//! `[gateway.sync]` and `network.fail_rate`.

pub mod relay;
pub mod replica;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcpstorm_core::{Dialer, TcpDialer};
use mcpstorm_fake::FakeServer;
use tokio::time::{Instant, sleep_until};

use crate::run::{CallSink, CallSinkError, RunData, RunMode, WallClock};
use crate::scenario::{CrashMode, Placement, Scenario, cost, load_host};
use crate::seed::Seed;
use crate::world::{
    Ended, Handles, Links, LoadPlan, NetAction, Recorder, RunTime, SimClock, Timeline, apply_due, conclude, port,
    recorder_for, run_host, sample_until,
};
use relay::{Delay, Relay};
use replica::Replica;

/// How often the step loop applies due faults: a fault starts at most this late.
pub const STEP: Duration = Duration::from_millis(5);

/// How far behind real time the step loop or an arrival may fall before the run stops (see the module's docs).
pub const MAX_LAG: Duration = Duration::from_millis(250);

/// How far out of order calls' ends may reach the recorder: the runtime's threads record concurrently, so a second's
/// percentiles are taken only this long after it ends.
const LATENESS: Duration = MAX_LAG;

#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The scenario uses something live runs cannot do yet: the key.
    #[error("live runs do not support {0} yet")]
    Unsupported(&'static str),
    #[error("invalid server {server:?}: {message}")]
    Server { server: String, message: String },
    /// A socket or the runtime could not be set up.
    #[error("cannot set up the live run: {0}")]
    Setup(String),
    /// This machine fell behind real time: the figures would be wrong.
    #[error(
        "this machine cannot keep up with the scenario in real time: {what} fell {} ms behind at {:.1} s (the bound \
         is {} ms); lower the load, shorten the run or use a release build",
        late.as_millis(),
        at.as_secs_f64(),
        MAX_LAG.as_millis()
    )]
    CannotKeepUp { what: &'static str, late: Duration, at: Duration },
    /// A load host could not run (its gateway's configuration).
    #[error("load host failed: {0}")]
    Host(String),
    /// The call history's sink failed (its message names the file).
    #[error("{0}")]
    Calls(CallSinkError),
}

/// Whether `scenario` can run live: the first key it uses that live runs do not support yet.
pub fn unsupported(scenario: &Scenario) -> Option<&'static str> {
    if scenario.gateway.nodes > 0 {
        return Some("[gateway] nodes");
    }
    if scenario.gateway.sync.is_some() {
        return Some("[gateway.sync]");
    }
    if scenario.network.fail_rate > 0.0 {
        return Some("network.fail_rate (dropped messages; the relays drop only during a partition)");
    }
    None
}

/// Runs one scenario (no sweep) in real time and returns what happened, as [`world::run`](crate::world::run) does:
/// `reproduce` is the command line that reproduces it, `calls` receives the call history, and `progress(now, end)`
/// is called once per second. Builds and owns its tokio runtime (two workers): call it outside any runtime.
pub fn run(
    scenario: &Scenario,
    reproduce: String,
    calls: Option<Box<dyn CallSink>>,
    progress: &mut dyn FnMut(Duration, Duration),
) -> Result<(RunData, WallClock), LiveError> {
    if let Some(key) = unsupported(scenario) {
        return Err(LiveError::Unsupported(key));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| LiveError::Setup(format!("the runtime: {e}")))?;
    let result = runtime.block_on(run_in_runtime(scenario, reproduce, calls, progress));
    // Whatever is still running (calls past the drain, relays) is dropped with the runtime.
    runtime.shutdown_timeout(Duration::from_secs(1));
    result
}

/// Timer samples [`timer_overshoot`] takes, and the most it believes.
const OVERSHOOT_SAMPLES: u32 = 21;
const MAX_OVERSHOOT: Duration = Duration::from_millis(2);

/// How late this runtime's timers fire, the median of a few 1 ms sleeps (bounded by [`MAX_OVERSHOOT`]). Every
/// delay a live run makes with a timer (the relays' latency, the fakes' tool latency, arrivals, think time and
/// retry backoff) aims this much early ([`RunTime::aim`]); unaimed, a call through a 1 ms network to a 10 ms tool
/// took 14.4 ms live against 11.5 ms simulated (2026-12-03, this 2-core machine).
async fn timer_overshoot() -> Duration {
    let step = Duration::from_millis(1);
    let mut late = Vec::with_capacity(OVERSHOOT_SAMPLES as usize);
    for _ in 0..OVERSHOOT_SAMPLES {
        let due = Instant::now() + step;
        sleep_until(due).await;
        late.push(Instant::now().saturating_duration_since(due));
    }
    late.sort();
    late[late.len() / 2].min(MAX_OVERSHOOT)
}

/// The replicas of each server host, by host name (crash and partition faults name hosts).
type Hosts = BTreeMap<String, Vec<Replica>>;

async fn run_in_runtime(
    scenario: &Scenario,
    reproduce: String,
    calls: Option<Box<dyn CallSink>>,
    progress: &mut dyn FnMut(Duration, Duration),
) -> Result<(RunData, WallClock), LiveError> {
    let lead = timer_overshoot().await;
    let start = Instant::now();
    let time = RunTime::Live { start, lead };
    let (recorder, phases) = recorder_for(scenario, calls);
    recorder.set_tick(LATENESS);
    let load_hosts: Vec<String> = (0..scenario.load.hosts).map(load_host).collect();
    recorder.set_gateways(load_hosts.len());
    let placement = Arc::new(Placement::of(scenario));
    let mut handles = Handles::default();
    let (hosts, links) = start_servers(scenario, &placement, &load_hosts, time, &mut handles)?;
    let mut hosts = hosts;
    let clocks: Vec<SimClock> = load_hosts.iter().map(|_| SimClock::on(time)).collect();
    for (host, clock) in load_hosts.iter().zip(&clocks) {
        handles.clocks.insert(host.clone(), clock.clone());
    }
    let plan = Arc::new(LoadPlan {
        scenario: scenario.clone(),
        recorder: recorder.clone(),
        claimed: AtomicU64::new(0),
        clocks,
        placement,
        links: Arc::new(links),
        time,
        arrival_lag_us: AtomicU64::new(0),
    });
    let tasks: Vec<_> = load_hosts
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let run = run_host(plan.clone(), i, host.clone());
            tokio::spawn(async move { run.await.map_err(|e| e.to_string()) })
        })
        .collect();

    let limit = cost::time_limit(scenario);
    let mut timeline = Timeline::new(scenario);
    let mut next_sample = Duration::from_secs(1);
    let mut due = start;
    let mut failure = None;
    let finished_at = loop {
        let now = start.elapsed();
        apply_due(&mut timeline, &handles, &recorder, now, &mut |action| {
            if let Err(e) = apply_net(&mut hosts, scenario.network.crash, &recorder, now, action) {
                failure.get_or_insert(e);
            }
        });
        if let Some(e) = failure.take() {
            return Err(e);
        }
        sample_until(&recorder, &mut next_sample, now, &mut |at| progress(at, scenario.duration.0));
        if now >= limit || tasks.iter().all(|t| t.is_finished()) {
            break now;
        }
        let late = Duration::from_micros(plan.arrival_lag_us.load(Ordering::Relaxed));
        if late > MAX_LAG {
            return Err(LiveError::CannotKeepUp { what: "an open-loop arrival", late, at: now });
        }
        due += STEP;
        sleep_until(due).await;
        let late = Instant::now().saturating_duration_since(due);
        if late > MAX_LAG {
            return Err(LiveError::CannotKeepUp { what: "the step loop", late, at: start.elapsed() });
        }
    };
    for task in tasks {
        if !task.is_finished() {
            // The drain limit passed: what it still had in flight is reported as lost.
            task.abort();
            continue;
        }
        match task.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(LiveError::Host(e)),
            Err(e) => return Err(LiveError::Host(e.to_string())),
        }
    }
    let ended = Ended { recorder: &recorder, phases: &phases, handles: &handles, timeline: &timeline, finished_at };
    let run = conclude(scenario, ended, reproduce, RunMode::Live).map_err(LiveError::Calls)?;
    drop(hosts);
    Ok((run, WallClock { wall: start.elapsed(), sim: finished_at }))
}

/// Starts every replica (each its own port) and one relay per (load host, replica); their controls and clocks go
/// into `handles`.
fn start_servers(
    scenario: &Scenario,
    placement: &Placement,
    load_hosts: &[String],
    time: RunTime,
    handles: &mut Handles,
) -> Result<(Hosts, LiveLinks), LiveError> {
    let net = &scenario.network;
    let lead = match time {
        RunTime::Live { lead, .. } => lead,
        RunTime::Simulated => Duration::ZERO,
    };
    let delay = Delay { min: net.latency.0, max: net.max_latency.map_or(net.latency.0, |d| d.0), lead };
    let seed = Seed::new(scenario.seed).fork("relays");
    let setup = |what: &str, e: std::io::Error| LiveError::Setup(format!("{what}: {e}"));
    let mut hosts = Hosts::new();
    let mut links = LiveLinks::default();
    for (host, placed) in placement.hosts() {
        for (slot, p) in placed.iter().enumerate() {
            let spec = &scenario.servers[p.server];
            let config = spec.fake_config(p.replica, scenario.seed);
            // The replica's own wall clock: its sessions expire by it, and clock_skew faults move it.
            let clock = SimClock::on(time);
            let server = FakeServer::with_clock(config, Arc::new(clock.clone()))
                .map_err(|e| LiveError::Server { server: spec.name.clone(), message: e.to_string() })?
                .with_timer_lead(lead);
            handles.controls.insert(p.name.clone(), server.control());
            handles.clocks.insert(p.name.clone(), clock);
            let (mut replica, addr) = Replica::start(server).map_err(|e| setup(&p.name, e))?;
            let port = port(u16::try_from(slot).unwrap_or(u16::MAX));
            for caller in load_hosts {
                let seed = seed.fork(&p.name).fork(caller).value();
                let relay = Relay::start(addr, net.partition, delay, seed).map_err(|e| setup(&p.name, e))?;
                links.0.insert((caller.clone(), host.clone(), port), relay.addr());
                replica.relays.push((caller.clone(), relay));
            }
            hosts.entry(host.clone()).or_default().push(replica);
        }
    }
    Ok((hosts, links))
}

/// A crash, restart, partition or heal, on the replicas of host `h`.
fn apply_net(
    hosts: &mut Hosts,
    crash: CrashMode,
    recorder: &Recorder,
    now: Duration,
    action: NetAction,
) -> Result<(), LiveError> {
    let mut on = |h: &str, f: &mut dyn FnMut(&mut Replica) -> std::io::Result<()>| -> Result<(), LiveError> {
        for replica in hosts.get_mut(h).into_iter().flatten() {
            f(replica).map_err(|e| LiveError::Setup(format!("restarting {h}: {e}")))?;
        }
        Ok(())
    };
    match action {
        NetAction::Crash(h) => {
            on(&h, &mut |r| {
                r.crash(crash);
                Ok(())
            })?;
            recorder.event(now, "host_crashed", &h, "");
        }
        NetAction::Restart(h) => {
            on(&h, &mut Replica::restart)?;
            recorder.event(now, "host_restarted", &h, "");
        }
        NetAction::Partition(h, from) => {
            on(&h, &mut |r| {
                r.partition(from.as_deref(), true);
                Ok(())
            })?;
            let cut: Vec<&str> = match &from {
                Some(one) => vec![one.as_str()],
                None => hosts
                    .get(&h)
                    .and_then(|r| r.first())
                    .map_or_else(Vec::new, |r| r.relays.iter().map(|(caller, _)| caller.as_str()).collect()),
            };
            recorder.event(now, "partitioned", &h, format!("from {}", cut.join(",")));
        }
        NetAction::Repair(h, from) => {
            on(&h, &mut |r| {
                r.partition(from.as_deref(), false);
                Ok(())
            })?;
            recorder.event(now, "repaired", &h, "");
        }
        NetAction::Log(h, kind, detail) => recorder.event(now, kind, &h, detail),
    }
    Ok(())
}

/// Each (load host, replica host, port)'s relay: where that load host's gateway dials that replica.
#[derive(Debug, Default)]
struct LiveLinks(BTreeMap<(String, String, u16), SocketAddr>);

impl Links for LiveLinks {
    fn dialer(&self, caller: &str, host: &str, port: u16) -> Arc<dyn Dialer> {
        // An address with no relay (none is dialed in a supported scenario) names itself, and fails to resolve.
        let addr = self
            .0
            .get(&(caller.to_owned(), host.to_owned(), port))
            .map_or_else(|| format!("{host}:{port}"), ToString::to_string);
        Arc::new(TcpDialer { addr })
    }
}
