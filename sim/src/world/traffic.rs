//! Load-generator hosts: many agent sessions multiplexed on one turmoil host, calling through the real core.
//!
//! Closed loop: each session calls, waits for the outcome, thinks, and calls again. Open loop: Poisson arrivals,
//! each call's latency measured from its *intended* send time, so a stalled system cannot hide its stall by
//! slowing the arrivals down (coordinated omission, as wrk2 avoids it). Replay: the arrivals of a recorded trace
//! (`replay`), measured the same way.
//!
//! Every attempt goes into the recorder's call history (`calls.csv`): wall time from the host's `SimClock`, the
//! start offset from turmoil's global simulated time (tokio instants of different hosts' runtimes are not
//! comparable), and the arguments hashed once per mix entry rather than once per attempt (the hash is of the mix
//! entry's arguments, before an agent fills in parameters a drift added).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcpstorm_core::McpClient;
use mcpstorm_core::history::{CallKey, CallStart, ServerCallRecord};
use mcpstorm_core::router::Requirement;
use mcpstorm_core::schema::ContentHash;
use mcpstorm_core::sync::{BreakerSync, SyncConfig};
use mcpstorm_core::{Dialer, Gateway, Observer, ToolCall};
use mcpstorm_gateway::federation::Federation;
use mcpstorm_gateway::metrics::Metrics;
use mcpstorm_gateway::node::{self, Adjust, Node, Seams};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep_until};

use super::agent::{self, Next};
use super::clock::{HostTime, RunTime, SimClock};
use super::connector::SimConnector;
use super::net::{Links, NODE_PORT};

use super::recorder::{AttemptEnd, AttemptVerdict, GatewayObserver, Outcome, Recorder};
use super::remote;
use super::replay;
use super::routing::{Change, Needs, declarations, membership, pin, upstreams};
use crate::scenario::{LoadMode, Placement, RedisHost, Scenario, node_host, replica_host};
use crate::seed::Seed;

/// Everything a load host needs, shared by every incarnation of it.
#[derive(Debug)]
pub struct LoadPlan {
    pub scenario: Scenario,
    pub recorder: Recorder,
    /// Logical calls claimed so far across all load hosts (for `load.calls`).
    pub claimed: AtomicU64,
    /// Each load host's wall clock (the gateway's), by host index: `clock_skew` faults on `gateway` move them.
    pub clocks: Vec<SimClock>,
    /// Where each replica listens.
    pub placement: Arc<Placement>,
    /// How the load hosts reach the replicas (and Redis): turmoil's network, or a live run's relays.
    pub links: Arc<dyn Links>,
    /// Where the run's time comes from.
    pub time: RunTime,
    /// The longest any open-loop (or replayed) arrival woke after its intended time, in µs: a live run that cannot
    /// keep up with real time stops on it (in the simulator an arrival is never later than a tick).
    pub arrival_lag_us: AtomicU64,
}

impl LoadPlan {
    /// An arrival due at `due` woke at `now`: keeps the longest lateness (see `arrival_lag_us`).
    fn woke(&self, due: Instant, now: Instant) {
        let late = now.saturating_duration_since(due).as_micros();
        self.arrival_lag_us.fetch_max(u64::try_from(late).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// Claims the right to start one more logical call at simulated time `now`, or says the load is over.
    fn claim_at(&self, now: Duration) -> bool {
        if now >= self.scenario.duration.0 {
            return false;
        }
        match self.scenario.load.calls {
            Some(max) => self.claimed.fetch_add(1, Ordering::Relaxed) < max,
            None => true,
        }
    }
}

/// One load host: its gateway, the gateway crate's node over every scenario server's replicas, which its agents call
/// in-process; or, with `[nodes] count`, its agents' client of each gateway node.
struct Host {
    /// The in-process gateway node; `None` with gateway nodes.
    node: Option<Node>,
    /// This host's clients of each gateway node (`[nodes] count`); empty without.
    nodes: Vec<remote::NodeClients>,
    /// This host's wall clock (the call history's timestamps, and the gateway's wall time).
    clock: SimClock,
    /// Simulated time on this host.
    time: HostTime,
    host: String,
    /// Judges misroutes from the scenario's tables, independently of the router.
    needs: Needs,
}

impl Host {
    async fn new(plan: &LoadPlan, host_index: usize, host: &str, seed: Seed) -> Result<Host, String> {
        let scenario = &plan.scenario;
        let clock = plan.clocks.get(host_index).cloned().unwrap_or_default();
        let mut load_host = Host {
            node: None,
            nodes: Vec::new(),
            clock: clock.clone(),
            time: HostTime::new(plan.time),
            host: host.to_owned(),
            needs: Needs::new(scenario),
        };
        if scenario.nodes.count > 0 {
            let paths = plan.links.node_paths();
            load_host.nodes = (0..scenario.nodes.count)
                .map(|i| {
                    let dialer = plan.links.dialer(host, &node_host(i), NODE_PORT);
                    let front = (&paths, plan.links.nodes_keep_the_deadline());
                    remote::node_clients(scenario, i, (&clock, seed), dialer, front)
                })
                .collect();
            return Ok(load_host);
        }
        // A replica's tool-list change re-lists its server, as in the process.
        let (changed_tx, changed_rx) = mpsc::unbounded_channel::<String>();
        let links = plan.links.clone();
        let connector =
            SimConnector::new(scenario, &plan.recorder, &plan.placement, host, &clock, seed.fork("client"), links)
                .on_list_changed(changed_tx);
        let observer: Arc<dyn Observer> = Arc::new(GatewayObserver {
            recorder: plan.recorder.clone(),
            time: plan.time,
            host: host.to_owned(),
            node: false,
        });
        let sync =
            sync_node(scenario, host, seed, &clock)?.zip(RedisHost::of(&scenario.gateway)).map(|(sync, redis)| {
                let dialer: Arc<dyn Dialer> = plan.links.dialer(host, &redis.name, redis.port);
                (sync, dialer)
            });
        let (withheld, _) = membership(scenario);
        let servers = upstreams(scenario, &plan.placement);
        let declared = declarations(scenario, &servers, &withheld);
        let seams = Seams {
            connector: Arc::new(connector),
            clock: Arc::new(clock),
            observer,
            sync,
            list_changed: Some(changed_rx),
            // The agents record their own attempts (they know the logical call each belongs to).
            tap: None,
            metrics: Arc::new(Metrics::default()),
            withheld,
            adjust: planted_defect(scenario),
            // The agents start with the run: the node routes from the first instant by what the scenario declares,
            // and its listings, made meanwhile, declare each server again as the process's do.
            declared,
            startup_listing: Duration::ZERO,
        };
        load_host.node = Some(node::start(servers, &scenario.gateway, &scenario.client, seams, &seed).await?);
        Ok(load_host)
    }

    /// The in-process gateway's core, where the agents' calls go.
    fn gateway(&self) -> Option<&Arc<Gateway>> {
        self.node.as_ref().map(|node| node.federation.gateway())
    }
}

/// The core's planted defect (a bulkhead permit leaked per replica failure) when the scenario plants it.
#[cfg(feature = "testing")]
fn planted_defect(scenario: &Scenario) -> Option<Adjust> {
    scenario.planted_leak.then(|| {
        Box::new(|config: &mut mcpstorm_core::GatewayConfig| {
            if let Some(bulkhead) = config.resilience.bulkhead.as_mut() {
                bulkhead.leak_permit_on_replica_failure = true;
            }
        }) as Adjust
    })
}

#[cfg(not(feature = "testing"))]
fn planted_defect(_: &Scenario) -> Option<Adjust> {
    None
}

/// Follows the scenario's membership on `federation`: each server admitted at its `join_at`, withdrawn at its
/// `leave_at`, by the host's run time.
async fn follow_membership(scenario: &Scenario, federation: Arc<Federation>, time: HostTime, run: RunTime) {
    for (at, change) in membership(scenario).1 {
        let wait = at.saturating_sub(time.now());
        sleep_until(run.aim(Instant::now() + wait)).await;
        match change {
            Change::Admit(server) => federation.admit(&server).await,
            Change::Withdraw(server) => federation.withdraw(&server),
        }
    }
}

/// The load host `host` as a node of `[gateway.sync]`: named by its host, its incarnation drawn from the host's seed
/// (so a run is the same every time), its wall clock the host's.
pub(super) fn sync_node(
    scenario: &Scenario,
    host: &str,
    seed: Seed,
    clock: &SimClock,
) -> Result<Option<BreakerSync>, String> {
    let Some(spec) = &scenario.gateway.sync else { return Ok(None) };
    let config = SyncConfig {
        url: spec.redis.clone(),
        password: None,
        node: host.to_owned(),
        key: spec.key.clone(),
        incarnation: seed.fork("sync incarnation").value(),
    };
    let sync = BreakerSync::new(config, Arc::new(clock.clone())).map_err(|e| format!("gateway.sync: {e}"))?;
    Ok(Some(sync))
}

/// What one logical call targets, resolved from the mix once.
#[derive(Debug)]
struct Target {
    /// Index into `load.mix`.
    entry: usize,
    tool: String,
    args: serde_json::Value,
    /// `server:<name>` when the mix entry names a server.
    requires: Vec<Requirement>,
    /// SHA-256 of `args`' canonical JSON.
    input: ContentHash,
}

fn targets(scenario: &Scenario) -> (Vec<Arc<Target>>, Vec<f64>) {
    let mut out = Vec::new();
    let mut weights = Vec::new();
    for (entry, m) in scenario.load.mix.iter().enumerate() {
        let input = ContentHash::of(&m.args);
        out.push(Arc::new(Target { entry, tool: m.tool.clone(), args: m.args.clone(), requires: pin(m), input }));
        weights.push(m.weight);
    }
    (out, weights)
}

fn pick_weighted(rng: &mut ChaCha8Rng, weights: &[f64]) -> usize {
    let total: f64 = weights.iter().sum();
    let mut x = rng.random::<f64>() * total;
    for (i, w) in weights.iter().enumerate() {
        if x < *w {
            return i;
        }
        x -= w;
    }
    weights.len().saturating_sub(1)
}

/// Why a load host could not run (its gateway's configuration, its sync node).
pub type HostError = Box<dyn std::error::Error + Send + Sync>;

/// Runs one load host to completion: the load ends at the scenario's duration (or call budget) and every started
/// call is then allowed to reach its outcome.
pub async fn run_host(plan: Arc<LoadPlan>, host_index: usize, host: String) -> Result<(), HostError> {
    plan.recorder.set_tools(&plan.scenario);
    let run = Seed::new(plan.scenario.seed);
    let seed = run.fork("load host").fork(&host);
    let load_host = Arc::new(Host::new(&plan, host_index, &host, seed).await?);
    // The node's background work (statistics, health checks, re-listing, breaker sync) runs until the load is done;
    // the scenario's membership changes follow the run's clock.
    let members = load_host.node.as_ref().map(|node| {
        let (scenario, federation) = (plan.scenario.clone(), node.federation.clone());
        let (time, run) = (load_host.time, plan.time);
        tokio::spawn(async move { follow_membership(&scenario, federation, time, run).await })
    });
    let (targets, weights) = targets(&plan.scenario);
    let targets = Arc::new(targets);
    let hosts = plan.scenario.load.hosts;
    // Every call holds a clone of `live`; `drained` ends once the last one is gone. A finished task frees itself at
    // once (nothing joins it), so memory follows what is in flight rather than what has happened, without the
    // bookkeeping (and locks) a JoinSet does per task.
    let (live, mut drained) = tokio::sync::mpsc::channel::<()>(1);
    match plan.scenario.load.mode {
        LoadMode::Closed => {
            let sessions = plan.scenario.load.sessions.unwrap_or(1);
            // Sessions are dealt to hosts round-robin: host h runs sessions h, h + hosts, ...
            for session in (host_index..sessions).step_by(hosts) {
                let rng = run.fork("session").fork(&session.to_string()).rng();
                let ctx = (plan.clone(), load_host.clone(), targets.clone(), weights.clone());
                // With gateway nodes, this host's i-th session calls node (host + i) mod N.
                let via = host_index + session / hosts;
                spawn_live(&live, move || closed_session(ctx, rng, via));
            }
        }
        LoadMode::Open => {
            // One task per arrival, as real agents are independent of each other. The number alive at once is bounded
            // by rate × the longest a logical call can take (every attempt's deadline plus queueing): about 16,000 at
            // retry_storm's peak, a few MB, since a stalled system must not slow the arrivals down.
            let rate = plan.scenario.load.rate.unwrap_or(1.0) / hosts as f64;
            let mut rng = seed.fork("arrivals").rng();
            let gap = Exp::new(rate).map_err(|e| format!("open-loop rate {rate}: {e}"))?;
            let start = Instant::now();
            let mut next = start;
            // One timer, moved to each arrival: cheaper than registering a new one per call.
            let arrival = sleep_until(next);
            tokio::pin!(arrival);
            // Nothing is awaited between a spawn and the next claim, so one reading of the time serves both.
            let mut now = load_host.time.now();
            // With gateway nodes, this host's arrivals go round-robin over them, starting at its own index.
            let mut via = host_index;
            while plan.claim_at(now) {
                // A gap no instant can hold (a rate so low that the next call would come after the end of time)
                // ends the arrivals: the load ends long before it.
                let gap = Duration::try_from_secs_f64(gap.sample(&mut rng)).ok();
                let Some(at) = gap.and_then(|gap| next.checked_add(gap)) else { break };
                next = at;
                arrival.as_mut().reset(plan.time.aim(next));
                arrival.as_mut().await;
                let instant = Instant::now();
                plan.woke(next, instant);
                now = load_host.time.at(instant);
                if now >= plan.scenario.duration.0 {
                    break;
                }
                let index = pick_weighted(&mut rng, &weights);
                let (plan, load_host, target) = (plan.clone(), load_host.clone(), targets[index].clone());
                // The intended send time is `next`, whether or not this host got to it on time.
                let intended = now.saturating_sub(instant.saturating_duration_since(next));
                via = via.wrapping_add(1);
                let node = via - 1;
                spawn_live(
                    &live,
                    move || async move { logical_call(&plan, &load_host, &target, intended, node).await },
                );
            }
        }
        LoadMode::Replay => {
            // The trace's calls dealt to this host, each sent at its (scaled) offset from the run's start: a call due
            // while the gateway was still listing its servers waits for it, late by that much.
            let schedule = replay::schedule(&plan.scenario.load, host_index)?;
            let now = Instant::now();
            let start = now.checked_sub(load_host.time.at(now)).unwrap_or(now);
            let origin = load_host.time.at(start);
            let mut via = host_index;
            for (at, entry) in schedule {
                let intended = origin.saturating_add(at);
                if intended >= plan.scenario.duration.0 {
                    break;
                }
                sleep_until(plan.time.aim(start + at)).await;
                plan.woke(start + at, Instant::now());
                if !plan.claim_at(intended) {
                    break;
                }
                let (plan, load_host, target) = (plan.clone(), load_host.clone(), targets[entry].clone());
                via = via.wrapping_add(1);
                let node = via - 1;
                spawn_live(
                    &live,
                    move || async move { logical_call(&plan, &load_host, &target, intended, node).await },
                );
            }
        }
    }
    drop(live);
    let _ = drained.recv().await;
    if let Some(members) = members {
        members.abort();
    }
    if let Some(node) = &load_host.node {
        node.stop.cancel("load over");
        let gateway = node.federation.gateway();
        plan.recorder.gateway_ended(host_index, gateway.in_flight_snapshot());
        gateway.close().await;
    }
    if !load_host.nodes.is_empty() {
        // With gateway nodes this host runs no gateway: what it must have let go after its drain is its agents'
        // clients of the nodes (requests still pending, in-flight slots still held). The nodes themselves serve on
        // past the load and are not audited.
        let (pending, client_slots) = load_host
            .nodes
            .iter()
            .flat_map(|n| n.all())
            .map(|c| c.in_flight_snapshot())
            .fold((0, 0), |(p, s), (cp, cs)| (p + cp, s.max(cs)));
        let snapshot = mcpstorm_core::gateway::InFlightSnapshot { pending, client_slots, ..Default::default() };
        plan.recorder.gateway_ended(host_index, snapshot);
    }
    for node in load_host.nodes.iter().flat_map(|n| n.all()) {
        node.close().await;
    }
    Ok(())
}

/// Spawns the future `work` makes, holding a clone of `live` until it ends (see `run_host`'s drain).
///
/// The future is made inside the task, not passed in made: an async block that awaits a future it captured keeps
/// room for it twice (the captured value and the awaited one), so wrapping a made call (about 5 KB) would double
/// every call's task. Boxed: a task stores its future inline, so spawning it unboxed copies all of it into the task
/// and again out of it when it ends.
fn spawn_live<F: Future<Output = ()> + Send + 'static>(
    live: &tokio::sync::mpsc::Sender<()>,
    work: impl FnOnce() -> F + Send + 'static,
) {
    let live = live.clone();
    tokio::spawn(Box::pin(async move {
        let _live = live;
        work().await;
    }));
}

type SessionCtx = (Arc<LoadPlan>, Arc<Host>, Arc<Vec<Arc<Target>>>, Vec<f64>);

async fn closed_session((plan, load_host, targets, weights): SessionCtx, mut rng: ChaCha8Rng, via: usize) {
    let think = plan.scenario.load.think_time.0;
    while plan.claim_at(load_host.time.now()) {
        let target = &targets[pick_weighted(&mut rng, &weights)];
        logical_call(&plan, &load_host, target, load_host.time.now(), via).await;
        if !think.is_zero() {
            sleep_until(plan.time.aim(Instant::now() + think)).await;
        }
    }
}

/// One logical call as an agent makes it: the first attempt, then retries as the agent model says
/// ([`agent::next`]). Each attempt goes through the host's gateway with the replicas already tried, so a retry prefers
/// another one; the agent fills the arguments from the schema of the replica the router chose.
async fn logical_call(plan: &LoadPlan, host: &Host, target: &Target, intended: Duration, via: usize) {
    let Some(gateway) = host.gateway() else {
        // Through a gateway node: agent `via`'s node.
        if let Some(node) = host.nodes.get(via % host.nodes.len().max(1)) {
            let agents = remote::Agents { scenario: &plan.scenario, recorder: &plan.recorder, time: &host.time };
            let call = remote::Target { entry: target.entry, tool: &target.tool, args: &target.args };
            remote::logical_call(agents, node, call, intended).await;
        }
        return;
    };
    let recorder = &plan.recorder;
    let logical = recorder.offered(intended);
    // The agent's own stream (the polite backoff's jitter): fixed by the call's intended time and the run's seed.
    let rng = agent::AgentRng::for_call(Seed::new(plan.scenario.seed), intended);
    // The arguments of the agent's retries, when it changes them; the mix entry's until then.
    let mut retry_args: Option<Value> = None;
    let mut outcome = Outcome::Error("local");
    let mut tried = Vec::new();
    let mut served_by = None;
    // The last attempt's replica and send time (the one that answered the call).
    let mut answered_by: Option<(Arc<str>, Duration)> = None;
    // Attempts sent so far for this logical call: the agent's and the gateway's own retries alike.
    let mut sent = 0u32;
    let mut finished = intended;
    for attempt in 0.. {
        let args = retry_args.as_ref().unwrap_or(&target.args);
        let call = ToolCall { tried: &tried, requires: &target.requires, ..ToolCall::borrowing(&target.tool, args) };
        // Each attempt's send time, taken when its arguments are ready on the chosen replica.
        let starts: Mutex<Vec<CallStart>> = Mutex::new(Vec::new());
        let prepare = |client: Arc<McpClient>, args: Value| {
            let starts = &starts;
            async move {
                let args = agent::agent_arguments(&client, &target.tool, args).await;
                let mut starts = starts.lock().unwrap_or_else(PoisonError::into_inner);
                let instant = Instant::now();
                let now = host.time.at(instant);
                recorder.attempt_started(now, sent > 0 || !starts.is_empty());
                starts.push(CallStart::new(host.clock.wall_ms_at(now), now, instant));
                args
            }
        };
        // The protected path (the naive profile: the same path with every layer off, one attempt).
        let routed = gateway.call_prepared(call, prepare).await;
        let now = host.time.now();
        finished = now;
        let starts = starts.into_inner().unwrap_or_else(PoisonError::into_inner);
        for (i, a) in routed.attempts().enumerate() {
            tried.push(a.replica);
            // The node names replicas `server#i`; the world, its judge and its report by their hosts.
            let replica: Arc<str> = Arc::from(&*replica_host(&a.endpoint));
            served_by = host.needs.server_of(&replica);
            let start = starts
                .get(i)
                .copied()
                .unwrap_or_else(|| CallStart::new(host.clock.wall_ms_at(now), now, Instant::now()));
            answered_by = Some((Arc::clone(&replica), start.offset));
            // The in-flight gauge counts a gateway retry's earlier attempts finished when the call returns.
            let end = AttemptEnd {
                load_host: &host.host,
                replica: &replica,
                tool: &target.tool,
                by: crate::run::RetryBy::of(sent, i),
                outcome: a.outcome.as_ref(),
                sent: start.offset,
                now,
                misroute: host.needs.misroute(target.entry, &replica),
                verdict: AttemptVerdict::of(a.outcome.as_ref()),
            };
            recorder.attempt_ended(logical, end, || {
                let key = CallKey::with_hash(&*replica, target.tool.as_str(), target.input);
                ServerCallRecord::new(start, key, a.outcome.as_ref(), sent)
            });
            sent += 1;
        }
        let result = routed.outcome();
        outcome = match result {
            Ok(r) if !r.is_error => Outcome::Ok,
            Ok(_) => Outcome::Tool,
            Err(e) => Outcome::Error(e.label()),
        };
        match agent::next(&plan.scenario.agent, attempt, result, args, &rng) {
            Next::Stop => break,
            Next::Retry { after, args: next } => {
                retry_args = Some(next);
                if !after.is_zero() {
                    sleep_until(plan.time.aim(Instant::now() + after)).await;
                }
            }
        }
    }
    // Nothing awaited since the last attempt returned, so that is the call's end.
    let now = finished;
    let audited = plan.scenario.load.mix[target.entry].server.as_deref().or(served_by);
    let answered_by = answered_by.as_ref().map(|(replica, sent)| (&**replica, *sent));
    recorder.logical_done(now, now.saturating_sub(intended), outcome, served_by, audited, answered_by);
}
