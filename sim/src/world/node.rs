//! Gateway nodes (`[nodes] count`): hosts `gateway-0` ... each running what `mcpstorm gateway` runs — the node of
//! [`gateway::node::start`](crate::gateway::node::start) over the scenario's servers, served to agents by the core's
//! [`Front`] (MCP Streamable HTTP at `/mcp`) on a turmoil listener. Only the seams are the simulator's: replicas are
//! reached as a load host's in-process gateway reaches them ([`SimConnector`]), the node's wall clock is its own
//! [`SimClock`], its core gateway's observer is the recorder's, Redis is the simulated host, and every attempt it
//! sends is recorded as a load host's are ([`NodeTap`]).
//!
//! A node is a host (not a client): it serves until the run ends, a `crash` fault stops it and the restart at the
//! fault's end runs it afresh, as a restarted process starts with no breaker or router state.

use crate::gateway::config::ReadyRule;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use mcpstorm_core::gateway::Routed;
use mcpstorm_core::history::{CallKey, CallStart, ServerCallRecord};
use mcpstorm_core::schema::ContentHash;
use mcpstorm_core::serve::{Front, FrontLimits, Keys, MIN_KEY_BYTES, SessionKey};
use mcpstorm_core::{Dialer, Observer};
use rand::RngCore;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::clock::{HostTime, RunTime, SimClock};
use super::connector::SimConnector;
use super::net::{Links, NODE_PORT, TurmoilLinks};
use super::recorder::{AttemptEnd, AttemptVerdict, GatewayObserver, Recorder};
use super::routing::upstreams;
use super::traffic::sync_node;
use crate::gateway::metrics::Metrics;
use crate::gateway::node::{self, Seams};
use crate::gateway::service::{GatewayService, tell_agents};
use crate::gateway::tap::AttemptTap;
use crate::scenario::{Placement, RedisHost, Scenario, node_host, replica_host};
use crate::seed::Seed;

/// The calls a node's front runs at once: a load host multiplexes all its agents over one session per node, and
/// what bounds them is the load host's own client, so the front never queues them.
const CALLS_IN_FLIGHT: usize = 1 << 20;

/// Everything a node needs, shared by every incarnation of it.
#[derive(Debug)]
pub struct NodePlan {
    pub scenario: Scenario,
    pub recorder: Recorder,
    pub placement: Arc<Placement>,
    /// Each node's wall clock, by node index: `clock_skew` faults on `gateway` move them.
    pub clocks: Vec<SimClock>,
    /// Each node's attempts sent and not yet ended, by node index: those of a crashed incarnation never end.
    pub outstanding: Vec<Arc<AtomicU64>>,
}

/// Runs gateway node `index` until the run ends.
pub async fn run_node(plan: Arc<NodePlan>, index: usize) -> turmoil::Result {
    let host = node_host(index);
    let scenario = &plan.scenario;
    let seed = Seed::new(scenario.seed).fork("gateway node").fork(&host);
    let clock = plan.clocks.get(index).cloned().unwrap_or_default();
    let outstanding = plan.outstanding.get(index).cloned().unwrap_or_default();
    // A restart after a crash: what the crashed incarnation had in flight is gone with it.
    plan.recorder.attempts_lost(outstanding.swap(0, Ordering::Relaxed));
    // Bound before the federation lists its servers: agents that connect meanwhile wait to be accepted.
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", NODE_PORT)).await?;
    let sync = sync_node(scenario, &host, seed, &clock)?.zip(RedisHost::of(&scenario.gateway)).map(|(sync, redis)| {
        let dialer: Arc<dyn Dialer> = TurmoilLinks.dialer(&host, &redis.name, redis.port);
        (sync, dialer)
    });
    let recorder = plan.recorder.clone();
    let observer: Arc<dyn Observer> = Arc::new(GatewayObserver {
        recorder: recorder.clone(),
        time: RunTime::Simulated,
        host: host.clone(),
        node: true,
    });
    let time = HostTime::new(RunTime::Simulated);
    // A replica's tool-list change re-lists its server and reaches the node's agents, as in the process.
    let (changed_tx, changed_rx) = mpsc::unbounded_channel::<String>();
    let tap = NodeTap { recorder, host: host.clone(), clock: clock.clone(), time, calls: 0.into(), outstanding };
    let seams = Seams {
        connector: Arc::new(
            SimConnector::new(
                scenario,
                &plan.recorder,
                &plan.placement,
                &host,
                &clock,
                seed.fork("clients"),
                Arc::new(TurmoilLinks),
            )
            .on_list_changed(changed_tx),
        ),
        clock: Arc::new(clock.clone()),
        observer,
        sync,
        list_changed: Some(changed_rx),
        tap: Some(Arc::new(tap)),
        metrics: Arc::new(Metrics::default()),
        // Validation keeps membership changes (and so late joiners) away from gateway nodes.
        withheld: Vec::new(),
        adjust: None,
        declared: Vec::new(),
        startup_listing: node::STARTUP_LISTING,
    };
    let servers = upstreams(scenario, &plan.placement);
    let node = node::start(servers, &scenario.gateway, &scenario.client, seams, &seed).await?;
    let current = Arc::new(RwLock::new(node.federation.clone()));
    let service =
        GatewayService { current: current.clone(), draining: Arc::new(AtomicBool::new(false)), ready: ReadyRule::All };
    // Session ids signed with a key drawn from the node's seed: nothing of a run comes from outside it.
    let mut key = [0u8; MIN_KEY_BYTES];
    seed.fork("session key").rng().fill_bytes(&mut key);
    let limits = FrontLimits { max_calls_in_flight: CALLS_IN_FLIGHT, ..FrontLimits::default() };
    let keys = Keys::new(SessionKey::from_bytes(&key)?);
    let front = Front::new(Arc::new(service), keys, limits, Arc::new(clock))?;
    tokio::spawn(tell_agents(current, front.clone(), node.stop.clone()));
    loop {
        let (stream, _) = listener.accept().await?;
        let front = front.clone();
        tokio::spawn(async move { front.serve_connection(stream).await });
    }
}

/// Records a node's attempts as a load host's in-process gateway records its own: the in-flight gauge and attempt
/// counts as each is sent, then per replica, what each says about sessions, auth and schemas, and the call history.
/// The node does not know the agent's logical call, so the history samples by the node's own call count, and a
/// misroute is not judged here (the federated name the agent called chose the server).
struct NodeTap {
    recorder: Recorder,
    host: String,
    clock: SimClock,
    time: HostTime,
    /// Calls this node has ended, for the call history's sampling.
    calls: AtomicU64,
    /// Attempts sent and not yet ended (see [`NodePlan::outstanding`]).
    outstanding: Arc<AtomicU64>,
}

impl AttemptTap for NodeTap {
    fn sending(&self, retry: bool) -> Duration {
        let now = self.time.now();
        self.outstanding.fetch_add(1, Ordering::Relaxed);
        self.recorder.attempt_started(now, retry);
        now
    }

    fn ended(&self, tool: &str, arguments: &serde_json::Value, routed: &Routed, sent: &[Duration]) {
        let (instant, now) = (Instant::now(), self.time.now());
        let call = self.calls.fetch_add(1, Ordering::Relaxed);
        self.outstanding.fetch_sub(sent.len() as u64, Ordering::Relaxed);
        for (i, a) in routed.attempts().enumerate() {
            let replica = replica_host(&a.endpoint);
            let at = sent.get(i).copied().unwrap_or(now);
            let start = CallStart::new(
                self.clock.wall_ms_at(at),
                at,
                instant.checked_sub(now.saturating_sub(at)).unwrap_or(instant),
            );
            let end = AttemptEnd {
                load_host: &self.host,
                replica: &replica,
                tool,
                by: crate::run::RetryBy::of(u32::try_from(i).unwrap_or(u32::MAX), i),
                outcome: a.outcome.as_ref(),
                sent: at,
                now,
                misroute: false,
                verdict: AttemptVerdict::of(a.outcome.as_ref()),
            };
            let retries = u32::try_from(i).unwrap_or(u32::MAX);
            self.recorder.attempt_ended(call, end, || {
                // Hashed only for a row that is written.
                let key = CallKey::with_hash(&*replica, tool, ContentHash::of(arguments));
                ServerCallRecord::new(start, key, a.outcome.as_ref(), retries)
            });
        }
    }
}
