//! `mcpstorm live`: a scenario run in real time on this machine, the simulator's twin.
//!
//! Everything but the network and the clock is the simulator's own: the fake servers (each replica serving on a
//! loopback port of its own, NDJSON or Streamable HTTP as the scenario says), the load hosts' gateways and agents
//! ([`run_host`]), the recorder, the fault timeline and the report. What differs:
//!
//! - sockets are real (tokio TCP on loopback), and each gateway reaches each replica through a [`relay`] that adds
//!   the scenario's latency and carries its partitions (`[network] partition = "drop"` as turmoil does, or `"hold"`
//!   as TCP does); a crash stops the replica and, by its `mode`, refuses, holds or resets the connects that follow
//!   ([`endpoint`]);
//! - with `[gateway.sync]`, Redis is the simulator's Redis double on a loopback port, behind a relay per gateway;
//! - with `[gateway] nodes`, each node is an `mcpstorm gateway` process of this binary ([`node`]), which the load
//!   hosts' agents reach over Streamable HTTP through relays of their own (so a node can crash, or be cut off);
//! - time is tokio's real clock since the start of the run ([`RunTime::Live`]); wall clocks still start at the
//!   simulator's pinned epoch, so skews and session expiry behave as they do there;
//! - a step loop applies the fault timeline every [`STEP`] of wall time, and samples the in-flight gauge each second.
//!
//! **Keeps up or stops.** The run is only worth its plot if this machine keeps real time: when the step loop wakes,
//! or an open-loop arrival is sent, more than [`MAX_LAG`] after it was due, the run stops with
//! [`LiveError::CannotKeepUp`] instead of writing a report. The bound is a quarter of the one-second windows the
//! report is drawn in: a lag that size would move calls into the wrong second.
//!
//! **A middle** ([`middle`], `--middle NAME`): the gateway nodes are another program's processes (or this binary's
//! gateway, measured alike), every replica serves Streamable HTTP, and the run also reports what the middle cost
//! (CPU, peak memory) and the `tools/call` requests that reached the fake servers through it ([`MiddleRun`]).
//!
//! Refused with [`LiveError::Unsupported`], naming the key: `network.fail_rate`, and a `clock_skew` on a gateway
//! node. A gateway node's attempts happen in its process, out of the recorder's sight: a run through nodes reports
//! the agents' calls, and no per-replica attempts.

pub mod endpoint;
pub mod host_load;
pub mod middle;
pub mod node;
pub mod relay;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcpstorm_core::{Dialer, TcpDialer};
use mcpstorm_fake::{FakeServer, RedisConfig, RedisDouble, Transport};
use tokio::time::{Instant, sleep_until};

use crate::run::{CallSink, CallSinkError, RunData, RunMode, WallClock};
use crate::scenario::{
    FaultKind, GATEWAY, IDP_HOST, IDP_PORT, Placement, RedisHost, ReplicaSpec, Scenario, UpstreamSpec, cost, load_host,
    node_host, server_host,
};
use crate::seed::Seed;
use crate::world::{
    Ended, Handles, Links, LoadPlan, NODE_PORT, NetAction, NodePaths, Recorder, RunTime, SimClock, Timeline, apply_due,
    conclude, port, recorder_for, run_host, sample_until, upstreams,
};
use endpoint::{Endpoint, InProcess};
pub use middle::measure::MiddleRun;
use node::NodeProcess;
use relay::{Delay, Relay};

/// How often the step loop applies due faults: a fault starts at most this late.
pub const STEP: Duration = Duration::from_millis(5);

/// How far behind real time the step loop or an arrival may fall before the run stops (see the module's docs).
pub const MAX_LAG: Duration = Duration::from_millis(250);

/// Test machinery (the `testing` feature, never in a release build): with `MCPSTORM_TEST_LIVE_STALL_MS` set, the
/// step loop blocks its thread that long once, a second into the run, as a machine that cannot keep up would. The
/// test of the refusal then does not depend on how fast the machine is.
#[cfg(feature = "testing")]
fn stall_once(now: Duration) {
    static STALLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let ms = std::env::var("MCPSTORM_TEST_LIVE_STALL_MS").ok().and_then(|v| v.parse::<u64>().ok());
    if let Some(ms) = ms
        && now >= Duration::from_secs(1)
        && !STALLED.swap(true, std::sync::atomic::Ordering::Relaxed)
    {
        std::thread::sleep(Duration::from_millis(ms));
    }
}

/// How far out of order calls' ends may reach the recorder: the runtime's threads record concurrently, so a second's
/// percentiles are taken only this long after it ends.
const LATENESS: Duration = MAX_LAG;

#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The scenario uses something live runs cannot do: the key.
    #[error("live runs do not support {0}")]
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
    /// The middle did not start, or died while it should have served: what it last said.
    #[error("{0}")]
    Middle(String),
}

/// Whether `scenario` can run live: the first key it uses that live runs do not support.
pub fn unsupported(scenario: &Scenario) -> Option<&'static str> {
    if scenario.network.fail_rate > 0.0 {
        return Some("network.fail_rate (dropped messages; the relays drop only during a partition)");
    }
    let on_node = |target: &str| target == GATEWAY || target.starts_with("gateway-");
    if scenario.nodes.count > 0 && scenario.faults.iter().any(|f| f.kind == FaultKind::ClockSkew && on_node(&f.target))
    {
        return Some("clock_skew on a gateway node (a node is a process on this machine's clock)");
    }
    if scenario.identity_provider.is_some() && scenario.nodes.count > 0 {
        // A node is a gateway process: its file would need `[servers.oauth]` with a secret in its environment.
        return Some("identity_provider with gateway nodes (the nodes' files carry no OAuth client yet)");
    }
    None
}

/// The `mcpstorm` binary a live run from the command line starts its gateway nodes with: the one running.
pub fn this_binary() -> Option<std::path::PathBuf> {
    std::env::current_exe().ok()
}

/// Runs one scenario (no sweep) in real time and returns what happened, as [`world::run`](crate::world::run) does:
/// `reproduce` is the command line that reproduces it, `calls` receives the call history, and `progress(now, end)`
/// is called once per second. `gateway_exe` is the `mcpstorm` binary whose `gateway` command runs the nodes of a
/// scenario with `[gateway] nodes`. Builds and owns its tokio runtime (two workers): call it outside any runtime.
pub fn run(
    scenario: &Scenario,
    gateway_exe: Option<&Path>,
    reproduce: String,
    calls: Option<Box<dyn CallSink>>,
    progress: &mut dyn FnMut(Duration, Duration),
) -> Result<(RunData, WallClock), LiveError> {
    run_through(scenario, gateway_exe, None, reproduce, calls, progress).map(|(run, wall, _)| (run, wall))
}

/// [`run`] through `middle` (see [`middle`]): the scenario as [`middle::scenario_for`] makes it, and what the
/// middle cost and sent to the servers.
pub fn run_through(
    scenario: &Scenario,
    gateway_exe: Option<&Path>,
    middle: Option<&middle::Middle>,
    reproduce: String,
    calls: Option<Box<dyn CallSink>>,
    progress: &mut dyn FnMut(Duration, Duration),
) -> Result<(RunData, WallClock, Option<MiddleRun>), LiveError> {
    let adjusted;
    let scenario = match middle {
        Some(_) => {
            adjusted = middle::scenario_for(scenario);
            &adjusted
        }
        None => scenario,
    };
    if let Some(key) = unsupported(scenario) {
        return Err(LiveError::Unsupported(key));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| LiveError::Setup(format!("the runtime: {e}")))?;
    let result = runtime.block_on(run_in_runtime(scenario, (gateway_exe, middle), reproduce, calls, progress));
    // Whatever is still running (calls past the drain, relays) is dropped with the runtime.
    runtime.shutdown_timeout(Duration::from_secs(1));
    result
}

/// Timer samples [`timer_overshoot`] takes, and the most it believes.
const OVERSHOOT_SAMPLES: u32 = 21;
const MAX_OVERSHOOT: Duration = Duration::from_millis(2);

/// How late this runtime's timers fire, the median of a few 1 ms sleeps (bounded by [`MAX_OVERSHOOT`]). Every
/// delay a live run makes with a timer (the relays' latency, the fakes' tool latency, arrivals, think time and
/// retry backoff) aims this much early ([`RunTime::aim`]). Unaimed, every hop of a live call is late by the
/// overshoot while the simulator's is not, so a live call takes longer than its simulated twin by about a
/// millisecond per timer on its path (docs/fidelity.md, "What differed, and what was done").
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

/// The endpoints of each host, by host name (crash and partition faults name hosts): a server host's replicas, the
/// Redis host's double, a gateway node's process.
type Hosts = BTreeMap<String, Vec<Endpoint>>;

/// How long before the run's time begins its gateway nodes are started: the run starts once they all serve, and a
/// node that needs longer fails the run (see [`node::READY_WITHIN`] for one that never serves).
pub const NODES_START: Duration = Duration::from_secs(3);

/// [`run_through`] in its runtime; `processes` are the `mcpstorm` binary and the middle, if any.
async fn run_in_runtime(
    scenario: &Scenario,
    (gateway_exe, middle): (Option<&Path>, Option<&middle::Middle>),
    reproduce: String,
    calls: Option<Box<dyn CallSink>>,
    progress: &mut dyn FnMut(Duration, Duration),
) -> Result<(RunData, WallClock, Option<MiddleRun>), LiveError> {
    let lead = timer_overshoot().await;
    let node_hosts: Vec<String> = (0..scenario.nodes.count).map(node_host).collect();
    // With gateway nodes, the run's time begins once they serve: everything before it reads as its first instant.
    let ready = middle.map_or(NODES_START, |m| m.ready_within().max(NODES_START));
    let start = Instant::now() + if node_hosts.is_empty() { Duration::ZERO } else { ready };
    let usage = middle.map(|_| middle::usage::Usage::start());
    let time = RunTime::Live { start, lead };
    let (recorder, phases) = recorder_for(scenario, calls);
    recorder.set_tick(LATENESS);
    let load_hosts: Vec<String> = (0..scenario.load.hosts).map(load_host).collect();
    recorder.set_gateways(if node_hosts.is_empty() { load_hosts.len() } else { node_hosts.len() });
    // Who dials the replicas and Redis: the gateways, in the nodes or in-process in the load hosts.
    let gateways = if node_hosts.is_empty() { &load_hosts } else { &node_hosts };
    let placement = Arc::new(Placement::of(scenario));
    let mut handles = Handles::default();
    let mut net =
        Net { hosts: Hosts::new(), links: LiveLinks::default(), seed: Seed::new(scenario.seed).fork("relays") };
    if let Some(middle::Middle::Process(m)) = middle {
        let names: Vec<String> = scenario.servers.iter().map(|s| s.name.clone()).collect();
        net.links.2 = true;
        net.links.1 = match m.paths(&names).map_err(|e| LiveError::Middle(e.to_string()))? {
            Some(paths) => NodePaths::PerServer(paths.into_iter().collect()),
            None => NodePaths::Federated(m.federated_path()),
        };
    }
    net.start_idp(scenario, gateways, time, &mut handles)?;
    net.start_servers(scenario, &placement, gateways, time, &mut handles)?;
    net.start_redis(scenario, gateways, time, &mut handles)?;
    if !node_hosts.is_empty() {
        let exe = gateway_exe.ok_or(LiveError::Unsupported("[gateway] nodes (no mcpstorm binary to run them)"))?;
        match middle {
            Some(middle::Middle::Process(m)) => {
                let usage = usage.clone().unwrap_or_default();
                net.start_middles(scenario, &placement, (m, exe, &usage), &load_hosts, time).await?;
            }
            _ => net.start_nodes(scenario, &placement, (exe, usage.clone()), &load_hosts, time).await?,
        }
        if Instant::now() > start {
            return Err(LiveError::Setup(format!(
                "the gateway nodes took more than {:.1} s to serve",
                ready.as_secs_f64()
            )));
        }
        sleep_until(start).await;
    }
    if let Some(usage) = &usage {
        usage.begin();
    }
    let Net { mut hosts, links, .. } = net;
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
    // `tools/call` requests the servers had received by the end of each second (with a middle).
    let mut received = Vec::new();
    let finished_at = loop {
        let now = start.elapsed();
        apply_due(&mut timeline, &handles, &recorder, now, &mut |action| {
            if let Err(e) = apply_net(&mut hosts, &recorder, now, action) {
                failure.get_or_insert(e);
            }
        });
        if let Some(e) = failure.take() {
            return Err(e);
        }
        sample_until(&recorder, &mut next_sample, now, &mut |at| {
            if middle.is_some() {
                received.push(server_attempts(&handles));
                if let Some(died) = hosts.values_mut().flatten().find_map(Endpoint::died) {
                    failure.get_or_insert(LiveError::Middle(died));
                }
            }
            progress(at, scenario.duration.0);
        });
        if let Some(e) = failure.take() {
            return Err(e);
        }
        if now >= limit || tasks.iter().all(|t| t.is_finished()) {
            break now;
        }
        let late = Duration::from_micros(plan.arrival_lag_us.load(Ordering::Relaxed));
        if late > MAX_LAG {
            return Err(LiveError::CannotKeepUp { what: "an open-loop arrival", late, at: now });
        }
        due += STEP;
        #[cfg(feature = "testing")]
        stall_once(now);
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
    let mut run = conclude(scenario, ended, reproduce, RunMode::Live).map_err(LiveError::Calls)?;
    let measured = middle.zip(usage).map(|(m, usage)| {
        let total = server_attempts(&handles);
        received.push(total);
        let per_second = std::iter::once(0).chain(received.iter().copied()).collect::<Vec<_>>();
        MiddleRun {
            name: m.name().to_owned(),
            instances: node_hosts.len(),
            cost: usage.finish(),
            server_attempts: total,
            server_attempts_per_second: per_second.windows(2).map(|w| w[1].saturating_sub(w[0])).collect(),
            skipped_checks: Vec::new(),
        }
    });
    let measured =
        measured.map(|m| middle::measure::judge(&mut run, m, middle.is_some_and(middle::Middle::is_mcpstorm)));
    drop(hosts);
    Ok((run, WallClock { wall: start.elapsed(), sim: finished_at }, measured))
}

/// `tools/call` requests every fake server has received so far.
fn server_attempts(handles: &Handles) -> u64 {
    handles.controls.values().map(|c| c.stats().received).fold(0, u64::saturating_add)
}

/// The run's network as it is built: every host's endpoints, and where each caller dials each of them.
struct Net {
    hosts: Hosts,
    links: LiveLinks,
    /// The relays' jitter streams, forked per (endpoint, caller).
    seed: Seed,
}

fn setup(what: &str, e: std::io::Error) -> LiveError {
    LiveError::Setup(format!("{what}: {e}"))
}

impl Net {
    /// Puts `endpoint` (serving at `addr`, named `name`) on `host`'s `port`, behind a relay for each of `callers`.
    fn place(
        &mut self,
        scenario: &Scenario,
        (host, port, name): (&str, u16, &str),
        (mut endpoint, addr): (Endpoint, SocketAddr),
        callers: &[String],
        time: RunTime,
    ) -> Result<(), LiveError> {
        let net = &scenario.network;
        let delay =
            Delay { min: net.latency.0, max: net.max_latency.map_or(net.latency.0, |d| d.0), lead: time.lead() };
        for caller in callers {
            let seed = self.seed.fork(name).fork(caller).value();
            let relay = Relay::start(addr, net.partition, delay, seed).map_err(|e| setup(name, e))?;
            self.links.0.insert((caller.clone(), host.to_owned(), port), relay.addr());
            endpoint.relays.push((caller.clone(), relay));
        }
        self.hosts.entry(host.to_owned()).or_default().push(endpoint);
        Ok(())
    }

    /// Starts every replica (each its own port), each behind a relay per gateway; their controls and clocks go into
    /// `handles`.
    fn start_servers(
        &mut self,
        scenario: &Scenario,
        placement: &Placement,
        gateways: &[String],
        time: RunTime,
        handles: &mut Handles,
    ) -> Result<(), LiveError> {
        for (host, placed) in placement.hosts() {
            for (slot, p) in placed.iter().enumerate() {
                let spec = &scenario.servers[p.server];
                let config = spec.fake_config(p.replica, scenario.seed);
                // The replica's own wall clock: its sessions expire by it, and clock_skew faults move it.
                let clock = SimClock::on(time);
                let server = FakeServer::with_clock(config, Arc::new(clock.clone()))
                    .map_err(|e| LiveError::Server { server: spec.name.clone(), message: e.to_string() })?
                    .with_timer_lead(time.lead());
                let server = match handles.idp.as_ref().filter(|_| spec.require_token) {
                    Some(idp) => server.with_tokens(idp.authority.clone()),
                    None => server,
                };
                handles.controls.insert(p.name.clone(), server.control());
                handles.clocks.insert(p.name.clone(), clock);
                let started = Endpoint::start(Box::new(InProcess::fake(server))).map_err(|e| setup(&p.name, e))?;
                let port = port(u16::try_from(slot).unwrap_or(u16::MAX));
                self.place(scenario, (host, port, &p.name), started, gateways, time)?;
            }
        }
        Ok(())
    }

    /// With `[identity_provider]`: the simulator's identity provider double on a loopback port, behind a relay per
    /// gateway (its handle goes into `handles`, for the token faults).
    fn start_idp(
        &mut self,
        scenario: &Scenario,
        gateways: &[String],
        time: RunTime,
        handles: &mut Handles,
    ) -> Result<(), LiveError> {
        let Some(spec) = &scenario.identity_provider else { return Ok(()) };
        let (idp, handle) = crate::world::identity_provider(spec, scenario.seed, SimClock::on(time));
        handles.idp = Some(handle);
        let started = Endpoint::start(Box::new(InProcess::idp(idp))).map_err(|e| setup(IDP_HOST, e))?;
        self.place(scenario, (IDP_HOST, IDP_PORT, IDP_HOST), started, gateways, time)
    }

    /// With `[gateway.sync]`: the simulator's Redis double on a loopback port, behind a relay per gateway (its
    /// control goes into `handles`, for latency and hang faults).
    fn start_redis(
        &mut self,
        scenario: &Scenario,
        gateways: &[String],
        time: RunTime,
        handles: &mut Handles,
    ) -> Result<(), LiveError> {
        let Some(redis) = RedisHost::of(&scenario.gateway) else { return Ok(()) };
        // Keys expire by the host's clock, true time as in the simulator (no fault skews it).
        let double = RedisDouble::with_clock(RedisConfig::default(), Arc::new(SimClock::on(time)));
        handles.redis = Some((redis.name.clone(), double.control()));
        let started = Endpoint::start(Box::new(InProcess::redis(double))).map_err(|e| setup(&redis.name, e))?;
        self.place(scenario, (&redis.name, redis.port, &redis.name), started, gateways, time)
    }

    /// Starts every gateway node's process (see [`node`]) and waits until each serves, each behind a relay per load
    /// host.
    async fn start_nodes(
        &mut self,
        scenario: &Scenario,
        placement: &Placement,
        (exe, usage): (&Path, Option<middle::usage::Usage>),
        load_hosts: &[String],
        time: RunTime,
    ) -> Result<(), LiveError> {
        let key = node::session_key(scenario.seed);
        let dir = std::env::temp_dir();
        let redis = RedisHost::of(&scenario.gateway);
        let mut launches = Vec::new();
        for i in 0..scenario.nodes.count {
            let name = node_host(i);
            let servers = self.upstreams_of(scenario, placement, &name);
            let redis = redis.as_ref().and_then(|r| self.links.0.get(&(name.clone(), r.name.clone(), r.port)).copied());
            let file = node::config(scenario, &name, servers, redis, SocketAddr::from(([127, 0, 0, 1], 0)));
            let (exe, dir, key, usage) = (exe.to_owned(), dir.clone(), key.clone(), usage.clone());
            // Started together: each waits for its servers' first listing.
            let launch =
                tokio::spawn(async move { NodeProcess::launch_measured(&exe, &dir, &name, file, key, usage).await });
            launches.push((launch, node_host(i)));
        }
        for (launch, name) in launches {
            let launched = launch.await.map_err(|e| LiveError::Setup(e.to_string()))?;
            let process = launched.map_err(|e| LiveError::Setup(e.to_string()))?;
            let addr = process.addr();
            self.place(
                scenario,
                (&name, NODE_PORT, &name),
                (Endpoint::serving(Box::new(process)), addr),
                load_hosts,
                time,
            )?;
        }
        Ok(())
    }

    /// Starts a process middle's instance for each gateway node (see [`middle`]) and waits until each listens,
    /// each behind a relay per load host.
    async fn start_middles(
        &mut self,
        scenario: &Scenario,
        placement: &Placement,
        (m, exe, usage): (&middle::ProcessMiddle, &Path, &middle::usage::Usage),
        load_hosts: &[String],
        time: RunTime,
    ) -> Result<(), LiveError> {
        let mut launches = Vec::new();
        for i in 0..scenario.nodes.count {
            let node = node_host(i);
            let servers = self
                .upstreams_of(scenario, placement, &node)
                .into_iter()
                .map(|s| middle::ServerAt {
                    replicas: s.replicas.iter().filter_map(|r| r.http.as_deref()).map(middle::address_of).collect(),
                    name: s.name,
                })
                .collect();
            let port = std::net::TcpListener::bind(("127.0.0.1", 0))
                .and_then(|l| l.local_addr())
                .map_err(|e| setup("a port for the middle", e))?
                .port();
            let scratch =
                std::env::temp_dir().join(format!("mcpstorm-middle-{}-{}-{node}", m.name, std::process::id()));
            let ctx = middle::Context { node: node.clone(), port, scratch, exe: exe.to_owned(), servers };
            let (m, usage) = (m.clone(), usage.clone());
            launches.push((
                tokio::spawn(async move { middle::process::MiddleProcess::launch(&m, &ctx, usage).await }),
                node,
            ));
        }
        for (launch, name) in launches {
            let launched = launch.await.map_err(|e| LiveError::Setup(e.to_string()))?;
            let process = launched.map_err(|e| LiveError::Middle(e.to_string()))?;
            let addr = process.addr();
            let endpoint = (Endpoint::serving(Box::new(process)), addr);
            self.place(scenario, (&name, NODE_PORT, &name), endpoint, load_hosts, time)?;
        }
        Ok(())
    }

    /// The scenario's servers as node `node` reaches them: each replica at its relay, over the server's transport.
    fn upstreams_of(&self, scenario: &Scenario, placement: &Placement, node: &str) -> Vec<UpstreamSpec> {
        let mut servers = upstreams(scenario, placement);
        for (spec, server) in scenario.servers.iter().zip(&mut servers) {
            for (r, replica) in server.replicas.iter_mut().enumerate() {
                let at = placement.address(&server_host(&spec.name, r));
                let Some(relay) = self.links.0.get(&(node.to_owned(), at.host.clone(), port(at.slot))) else {
                    continue;
                };
                *replica = match spec.transport {
                    Transport::Http => {
                        ReplicaSpec { http: Some(format!("http://{relay}/mcp")), ..ReplicaSpec::default() }
                    }
                    Transport::Ndjson => ReplicaSpec { tcp: Some(relay.to_string()), ..ReplicaSpec::default() },
                };
            }
        }
        servers
    }
}

/// A crash, restart, partition or heal, on the replicas of host `h`.
fn apply_net(hosts: &mut Hosts, recorder: &Recorder, now: Duration, action: NetAction) -> Result<(), LiveError> {
    let mut on = |h: &str, f: &mut dyn FnMut(&mut Endpoint) -> std::io::Result<()>| -> Result<(), LiveError> {
        for replica in hosts.get_mut(h).into_iter().flatten() {
            f(replica).map_err(|e| LiveError::Setup(format!("restarting {h}: {e}")))?;
        }
        Ok(())
    };
    match action {
        NetAction::Crash(h, mode) => {
            on(&h, &mut |r| {
                r.crash(mode);
                Ok(())
            })?;
            recorder.event(now, "host_crashed", &h, mode.to_string());
        }
        NetAction::Restart(h) => {
            on(&h, &mut Endpoint::restart)?;
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

/// Each (load host, replica host, port)'s relay: where that load host's gateway dials that replica; where the
/// gateway nodes serve the agents (a middle's paths); and whether they are a process middle's, which keeps no
/// deadline the agents can count on.
#[derive(Debug, Default)]
struct LiveLinks(BTreeMap<(String, String, u16), SocketAddr>, NodePaths, bool);

impl Links for LiveLinks {
    fn dialer(&self, caller: &str, host: &str, port: u16) -> Arc<dyn Dialer> {
        // An address with no relay (none is dialed in a supported scenario) names itself, and fails to resolve.
        let addr = self
            .0
            .get(&(caller.to_owned(), host.to_owned(), port))
            .map_or_else(|| format!("{host}:{port}"), ToString::to_string);
        Arc::new(TcpDialer { addr })
    }

    fn node_paths(&self) -> NodePaths {
        self.1.clone()
    }

    fn nodes_keep_the_deadline(&self) -> bool {
        // Only mcpstorm's gateway is known to answer by the scenario's deadline (see the trait's docs).
        !self.2
    }
}
