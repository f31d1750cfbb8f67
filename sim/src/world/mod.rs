//! The simulated world: the real core and the fake servers on turmoil's network, driven by a scenario.
//!
//! Hosts are kept few (turmoil's cost grows steeply with hosts per tick): a host per server whose replicas share it
//! (a replica that a crash or partition names gets its own: see [`Placement`]) and a handful of
//! load-generator hosts that each multiplex hundreds of agent sessions (with `[gateway.sync]`, their gateways are
//! sync nodes of a Redis host: see [`redis`]). With `[nodes] count`, the gateways are hosts of their own instead
//! (`gateway-0` ...: see [`node`]), each the `mcpstorm gateway` process's node, and the load hosts' agents call them
//! over simulated Streamable HTTP ([`remote`]). The step loop applies the fault timeline
//! between steps, samples gauges once per simulated second, and after the load ends lets every started call reach
//! its outcome (bounded by a drain limit; anything left is reported as `lost`).
//!
//! Every host has its own wall clock (`SimClock`): each server replica's decides when its sessions expire, each load
//! host's is the gateway's, and `clock_skew` faults move them apart. Monotonic time stays turmoil's, shared by all.

mod agent;
mod audit;
mod call_log;
mod clock;
mod connector;
mod faults;
mod idp;
mod net;
mod node;
mod phases;
mod recorder;
mod redis;
mod remote;
mod replay;
mod routing;
mod traffic;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, UNIX_EPOCH};

pub use crate::scenario::{load_host, node_host, server_host};
pub(crate) use agent::fill_required;
pub use clock::{RunTime, SimClock};
pub(crate) use faults::{Handles, NetAction, Timeline};
pub(crate) use idp::identity_provider;
pub use net::{Links, NODE_PORT, NodePaths, SERVER_PORT, TurmoilDialer, TurmoilLinks, TurmoilListener, port};
pub use phases::{Phases, RECOVERED_SECONDS, RECOVERED_SHARE, baseline, below_baseline, recovery_after};
pub use recorder::{GatewayObserver, Outcome, Recorder, SimObserver};
pub(crate) use routing::upstreams;
pub(crate) use traffic::{LoadPlan, run_host};

use crate::check::{error_window, evaluate_checks};
use crate::run::{CallSink, CallSinkError, RunData, RunMode, TokenTraffic, WallClock};
use crate::scenario::{CrashMode, FaultKind, LoadMode, profile_name};
use crate::scenario::{Placement, RedisHost, Scenario};
use crate::seed::Seed;
use mcpstorm_core::router::FormulaSpec;
use mcpstorm_fake::FakeServer;

/// turmoil's simulated clock starts here: pinned so runs never depend on when they happen (2025-01-01T00:00:00Z).
pub const EPOCH_SECS: u64 = 1_735_689_600;

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("invalid server {server:?}: {message}")]
    Server { server: String, message: String },
    #[error("simulation failed: {0}")]
    Turmoil(String),
    /// The call history's sink failed (its message names the file).
    #[error("{0}")]
    Calls(CallSinkError),
}

/// Runs one scenario (no sweep) and returns what happened. `reproduce` is the command line that reproduces it.
/// The call history (one record per attempt) goes to `calls` as attempts finish, as `[report] calls` says; without
/// a sink (`compare`, benchmarks) no record is built. `progress(now, end)` is called once per simulated second, for
/// a progress bar on long runs.
pub fn run(
    scenario: &Scenario,
    reproduce: String,
    calls: Option<Box<dyn CallSink>>,
    progress: &mut dyn FnMut(Duration, Duration),
) -> Result<(RunData, WallClock), SimError> {
    // The step loop lives outside the simulated world; only it reads real time, to report the speed-up.
    #[allow(clippy::disallowed_methods, clippy::disallowed_types)]
    let wall_start = std::time::Instant::now();
    let net = &scenario.network;
    // The load's duration plus the drain (see `cost::drain_limit`), saturating: validation bounds both, and a
    // scenario built in code that skipped it must not overflow here.
    let limit = crate::scenario::cost::time_limit(scenario);
    let mut sim = turmoil::Builder::new()
        .rng_seed(Seed::new(scenario.seed).fork("network").value())
        .epoch(UNIX_EPOCH + Duration::from_secs(EPOCH_SECS))
        .tick_duration(scenario.tick.0)
        .simulation_duration(limit.saturating_add(Duration::from_secs(1)))
        .min_message_latency(net.latency.0)
        .max_message_latency(net.max_latency.map_or(net.latency.0, |d| d.0))
        .fail_rate(net.fail_rate)
        .tcp_capacity(1 << 16)
        .build();

    let (recorder, phases) = recorder_for(scenario, calls);
    let mut handles = Handles::default();
    let placement = Arc::new(Placement::of(scenario));
    let mut states = HostStates::default();
    handles.idp = scenario.identity_provider.as_ref().map(|spec| idp::place(&mut sim, spec, scenario.seed));
    for (host, replicas) in placement.hosts() {
        let mut servers = Vec::with_capacity(replicas.len());
        for (slot, placed) in replicas.iter().enumerate() {
            let spec = &scenario.servers[placed.server];
            let config = spec.fake_config(placed.replica, scenario.seed);
            // Each replica's own wall clock: its sessions expire by it, and clock_skew faults move it.
            let clock = SimClock::default();
            let mut server = FakeServer::with_clock(config, Arc::new(clock.clone()))
                .map_err(|e| SimError::Server { server: spec.name.clone(), message: e.to_string() })?;
            if let Some(idp) = handles.idp.as_ref().filter(|_| spec.require_token) {
                server = server.with_tokens(idp.authority.clone());
            }
            handles.controls.insert(placed.name.clone(), server.control());
            handles.clocks.insert(placed.name.clone(), clock);
            servers.push((net::port(u16::try_from(slot).unwrap_or(u16::MAX)), server));
        }
        let state = states.0.entry(host.clone()).or_default().clone();
        sim.host(host.as_str(), move || serve_replicas(servers.clone(), state.clone()));
    }

    let load_hosts: Vec<String> = (0..scenario.load.hosts).map(load_host).collect();
    // With `[nodes] count`, the gateways are the nodes, hosts of their own; else one in each load host.
    let node_hosts: Vec<String> = (0..scenario.nodes.count).map(node_host).collect();
    recorder.set_gateways(if node_hosts.is_empty() { load_hosts.len() } else { node_hosts.len() });
    if let Some(host) = RedisHost::of(&scenario.gateway) {
        handles.redis = Some(redis::place(&mut sim, &host));
    }
    let load_clocks: Vec<SimClock> = load_hosts.iter().map(|_| SimClock::default()).collect();
    for (host, clock) in load_hosts.iter().zip(&load_clocks) {
        handles.clocks.insert(host.clone(), clock.clone());
    }
    if !node_hosts.is_empty() {
        let clocks: Vec<SimClock> = node_hosts.iter().map(|_| SimClock::default()).collect();
        for (host, clock) in node_hosts.iter().zip(&clocks) {
            handles.clocks.insert(host.clone(), clock.clone());
        }
        let plan = Arc::new(node::NodePlan {
            scenario: scenario.clone(),
            recorder: recorder.clone(),
            placement: placement.clone(),
            outstanding: clocks.iter().map(|_| Arc::default()).collect(),
            clocks,
        });
        for (i, host) in node_hosts.iter().enumerate() {
            let plan = plan.clone();
            let state = states.0.entry(host.clone()).or_default().clone();
            sim.host(host.as_str(), move || {
                let (plan, state) = (plan.clone(), state.clone());
                async move {
                    match host_state(&state) {
                        HostState::Serving => node::run_node(plan, i).await,
                        down => not_serving(down, &[NODE_PORT]).await,
                    }
                }
            });
        }
    }
    let plan = Arc::new(LoadPlan {
        scenario: scenario.clone(),
        recorder: recorder.clone(),
        claimed: AtomicU64::new(0),
        clocks: load_clocks,
        placement,
        links: Arc::new(TurmoilLinks),
        time: RunTime::Simulated,
        arrival_lag_us: AtomicU64::new(0),
    });
    for (i, host) in load_hosts.iter().enumerate() {
        let run = traffic::run_host(plan.clone(), i, host.clone());
        sim.client(host.clone(), async move { run.await.map_err(|e| -> Box<dyn std::error::Error> { e }) });
    }

    let mut timeline = Timeline::new(scenario);
    let mut next_sample = Duration::from_secs(1);
    let finished_at = loop {
        let now = sim.elapsed();
        apply_due(&mut timeline, &handles, &recorder, now, &mut |action| {
            apply_net(&mut sim, (&load_hosts, &node_hosts), &states, &recorder, now, action);
        });
        sample_until(&recorder, &mut next_sample, now, &mut |at| progress(at, scenario.duration.0));
        if now >= limit {
            break now;
        }
        match sim.step() {
            Ok(true) => break sim.elapsed(),
            Ok(false) => {}
            Err(e) => return Err(SimError::Turmoil(e.to_string())),
        }
    };

    let ended = Ended { recorder: &recorder, phases: &phases, handles: &handles, timeline: &timeline, finished_at };
    let run = conclude(scenario, ended, reproduce, RunMode::Sim).map_err(SimError::Calls)?;
    #[allow(clippy::disallowed_methods, clippy::disallowed_types)]
    let wall = wall_start.elapsed();
    Ok((run, WallClock { wall, sim: finished_at }))
}

/// A run's recorder, set up as the scenario says (its phases, tick and call history), and the phases.
pub(crate) fn recorder_for(scenario: &Scenario, calls: Option<Box<dyn CallSink>>) -> (Recorder, Phases) {
    let recorder = Recorder::default();
    let phases = Phases::of(scenario);
    recorder.set_phases(phases.clone());
    recorder.set_tick(scenario.tick.0);
    recorder.set_calls(calls, scenario.report.calls);
    recorder.set_traces(scenario.report.traces, scenario.report.calls);
    (recorder, phases)
}

/// Applies the fault transitions due at `now`, in order: each is logged, its behaviour faults applied through the
/// replicas' controls and clocks, and its network actions handed to `net` before the next transition.
pub(crate) fn apply_due(
    timeline: &mut Timeline,
    handles: &Handles,
    recorder: &Recorder,
    now: Duration,
    net: &mut dyn FnMut(NetAction),
) {
    for t in timeline.due(now) {
        let kind = if t.start { "fault_start" } else { "fault_end" };
        let fault = timeline.fault(t.fault).kind;
        for host in timeline.targets(t.fault).to_vec() {
            recorder.event(now, kind, &host, format!("{fault} {}", timeline.detail(t.fault)).trim_end().to_owned());
        }
        if t.start && timeline.fault(t.fault).kind == FaultKind::SchemaDrift {
            for host in timeline.targets(t.fault) {
                recorder.drifted(host);
            }
        }
        for action in timeline.apply(t, handles, now) {
            net(action);
        }
    }
}

/// Samples the in-flight gauge at the end of every second up to `now` (`next` is the next one due), telling
/// `progress` each.
pub(crate) fn sample_until(
    recorder: &Recorder,
    next: &mut Duration,
    now: Duration,
    progress: &mut dyn FnMut(Duration),
) {
    while now >= *next {
        recorder.sample_in_flight(*next - Duration::from_nanos(1));
        progress(*next);
        *next += Duration::from_secs(1);
    }
}

/// What a finished run leaves for its report.
pub(crate) struct Ended<'a> {
    pub recorder: &'a Recorder,
    pub phases: &'a Phases,
    pub handles: &'a Handles,
    pub timeline: &'a Timeline,
    /// Time since the start of the run when it ended.
    pub finished_at: Duration,
}

/// The run's figures, checks and audit, from what its recorder saw; the call history is flushed.
pub(crate) fn conclude(
    scenario: &Scenario,
    ended: Ended<'_>,
    reproduce: String,
    mode: RunMode,
) -> Result<RunData, CallSinkError> {
    let Ended { recorder, phases, handles, timeline, finished_at } = ended;
    let (seconds, events, mut totals) = recorder.finish(finished_at);
    totals.error_window_s = error_window(&seconds, scenario);
    // Sums of counters saturate, as every figure of a run does: nothing a scenario asks for may panic here.
    totals.schema_refusals =
        handles.controls.values().map(|c| c.stats().schema_rejections).fold(0, u64::saturating_add);
    totals.amplification_during_fault = phases.amplification_during(&seconds);
    totals.tokens = handles.idp.as_ref().map(|idp| token_traffic(&idp.control.stats()));
    // A replay's arrivals, like an open loop's, do not wait for outcomes.
    let open = scenario.load.mode != LoadMode::Closed;
    totals.recovery = phases.recovery(&seconds, open, scenario.duration.0.min(finished_at));
    recorder.finish_calls()?;
    let checks = evaluate_checks(scenario, &totals);
    let audit = recorder.audit(&seconds);
    let run = RunData {
        scenario: scenario.name.clone(),
        description: scenario.description.clone(),
        seed: scenario.seed,
        profile: profile_name(scenario.gateway.profile).to_owned(),
        formula: formula_name(&scenario.gateway.formula),
        sim_seconds: finished_at.as_secs_f64(),
        seconds,
        events,
        faults: timeline.windows(),
        totals,
        checks,
        reproduce,
        audit,
        traces: recorder.finish_traces(),
        mode,
        // A live run's gateway nodes are processes of their own, out of the recorder's sight.
        attempts_recorded: !(mode == RunMode::Live && scenario.nodes.count > 0),
    };
    Ok(run)
}

/// The identity provider's counters as the report shows them.
fn token_traffic(stats: &mcpstorm_fake::idp::IdpStats) -> TokenTraffic {
    TokenTraffic {
        requests: stats.requests,
        peak_per_s: stats.peak_per_second(),
        issued: stats.issued,
        shed: stats.shed,
        failed: stats.failed,
        dropped: stats.dropped,
    }
}

/// What the software of a replica's or a gateway node's host does when it (re)starts: serve, stay down with nothing
/// listening (the host is up, its process is not: a connect is refused), or reset each connection once its request
/// arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum HostState {
    Serving = 0,
    Down = 1,
    Resetting = 2,
}

/// The state of each replica's and gateway node's host, read by its software at every (re)start; a host turmoil
/// crashes (`hang`) keeps its own.
#[derive(Debug, Default)]
struct HostStates(BTreeMap<String, Arc<AtomicU8>>);

impl HostStates {
    /// Sets `host`'s state; false for a host it does not steer (Redis's, which only hangs).
    fn set(&self, host: &str, state: HostState) -> bool {
        self.0.get(host).map(|s| s.store(state as u8, Ordering::SeqCst)).is_some()
    }
}

fn host_state(cell: &AtomicU8) -> HostState {
    match cell.load(Ordering::SeqCst) {
        1 => HostState::Down,
        2 => HostState::Resetting,
        _ => HostState::Serving,
    }
}

/// One server host's software: each replica it runs listens on its own port. A restart (`bounce`) runs it again,
/// and each replica's `serve` starts with no sessions, as a restarted process would.
async fn serve_replicas(servers: Vec<(u16, FakeServer)>, state: Arc<AtomicU8>) -> turmoil::Result {
    let down = host_state(&state);
    if down != HostState::Serving {
        let ports: Vec<u16> = servers.iter().map(|(port, _)| *port).collect();
        return not_serving(down, &ports).await;
    }
    let mut listeners = Vec::with_capacity(servers.len());
    for (port, server) in servers {
        listeners.push((turmoil::net::TcpListener::bind(("0.0.0.0", port)).await?, server));
    }
    let mut serving = tokio::task::JoinSet::new();
    for (listener, server) in listeners {
        serving.spawn(async move { server.serve(TurmoilListener(listener)).await });
    }
    while serving.join_next().await.is_some() {}
    Ok(())
}

/// What a host that is up but not serving does on `ports`: binds nothing while `Down`, so turmoil refuses each
/// connect at once; while `Resetting`, accepts and resets each connection once its first bytes (a request) arrive,
/// without reading them (turmoil answers a close with unread data by a reset, as a kernel does), so the caller
/// cannot tell whether it ran.
async fn not_serving(state: HostState, ports: &[u16]) -> turmoil::Result {
    if state != HostState::Resetting {
        return std::future::pending().await;
    }
    let mut listeners = Vec::new();
    for port in ports {
        listeners.push(turmoil::net::TcpListener::bind(("0.0.0.0", *port)).await?);
    }
    let mut accepting = tokio::task::JoinSet::new();
    for listener in listeners {
        accepting.spawn(async move {
            let mut open = tokio::task::JoinSet::new();
            while let Ok((mut stream, _)) = listener.accept().await {
                while open.try_join_next().is_some() {}
                open.spawn(async move {
                    let _ = stream.peek(&mut [0u8; 1]).await;
                    drop(stream);
                });
            }
        });
    }
    while accepting.join_next().await.is_some() {}
    Ok(())
}

/// The load hosts and the gateway nodes (none when the load hosts run their gateways in-process).
type Callers<'a> = (&'a [String], &'a [String]);

fn apply_net(
    sim: &mut turmoil::Sim<'_>,
    callers: Callers<'_>,
    states: &HostStates,
    recorder: &Recorder,
    now: Duration,
    action: NetAction,
) {
    match action {
        NetAction::Crash(h, mode) => {
            // A host that stays up runs its software again in the crash's state: the bounce ends every connection
            // it had, as the death of its process does.
            let state = match mode {
                CrashMode::Hang => None,
                CrashMode::Refuse => Some(HostState::Down),
                CrashMode::Reset => Some(HostState::Resetting),
            };
            match state {
                Some(state) if states.set(&h, state) => sim.bounce(h.as_str()),
                _ => sim.crash(h.as_str()),
            }
            recorder.event(now, "host_crashed", &h, mode.to_string());
        }
        NetAction::Restart(h) => {
            states.set(&h, HostState::Serving);
            sim.bounce(h.as_str());
            recorder.event(now, "host_restarted", &h, "");
        }
        NetAction::Partition(h, from) => {
            let cut = links(callers, &h, from.as_deref());
            for l in &cut {
                sim.partition(h.as_str(), *l);
            }
            recorder.event(now, "partitioned", &h, format!("from {}", cut.join(",")));
        }
        NetAction::Repair(h, from) => {
            for l in links(callers, &h, from.as_deref()) {
                sim.repair(h.as_str(), l);
            }
            recorder.event(now, "repaired", &h, "");
        }
        NetAction::Log(h, kind, detail) => recorder.event(now, kind, &h, detail),
    }
}

/// The hosts a partition cuts `target` off from: the one `from` names, or all of its callers — the gateway nodes
/// when there are some (and `target` is not one), else the load hosts.
fn links<'a>((load_hosts, nodes): Callers<'a>, target: &str, from: Option<&'a str>) -> Vec<&'a str> {
    let callers = if nodes.is_empty() || nodes.iter().any(|n| n == target) { load_hosts } else { nodes };
    match from {
        Some(one) => vec![one],
        None => callers.iter().map(String::as_str).collect(),
    }
}

/// The routing formula as reports name it: the core's canonical name, so a file that spells `health_weighted` by its
/// old name `seed_weighted` reports the new one. A name the core refuses (validation stops it first) is shown as
/// written.
fn formula_name(written: &str) -> String {
    written.parse::<FormulaSpec>().map_or_else(|_| written.trim().to_owned(), |f| f.name().to_owned())
}
