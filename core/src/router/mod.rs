//! The router: which replica serves a tool call. Three stages, each pluggable:
//!
//! 1. **Discovery and candidates** ([`registry`](Registry), [`Requirement`]): servers come from a [`Registry`]
//!    (static configuration, a scenario file, join/leave events during a run). A replica is a candidate when its
//!    server offers the tool, meets every requirement of the request against the capability matrix (a `language`
//!    argument must be in `language_support`) and no failing health check has zeroed it. No candidate is a typed
//!    [`RouteError`] naming which requirement or check excluded whom — never a panic or a hang (a weighted choice
//!    that throws on an empty list leaves its workflow hanging silently).
//! 2. **Health** ([`run_health_checks`], [`CandidateStats`]): active checks every 15 s with the 3-strikes rule;
//!    passive statistics fed from the call path (windowed error rate and P95, in-flight, capacity, 24 h uptime,
//!    Peak-EWMA). Updates are O(1); folding windows into a snapshot happens on [`Router::refresh`], run by the
//!    background task, so a decision only reads cached numbers.
//! 3. **Formula and choice** ([`Formula`], [`FormulaSpec`]): the formula turns candidate statistics into weights
//!    (drawn by weighted random, after the drift penalty) or a direct pick. A retry passes the replicas already
//!    tried; they are left out while any untried candidate remains.
//!
//! A replica whose address refuses connections is **ejected** at once ([`Router::eject`], `ejection.rs`): it is
//! left out while a sibling is a candidate, and readmitted by the first background probe that it answers.
//!
//! The linear health score: `0.4·(1−error_rate) + 0.3·(1−latency_ratio) + 0.2·capacity + 0.1·uptime` with each input
//! clamped to [0, 1]; `latency_ratio` = windowed P95 / declared `latency_p95_ms`, `capacity` = (max_concurrent −
//! in_flight) / max_concurrent. Weights are proportional to it. (Shares such as 45% / 33% / 22% for scores 0.92 / 0.85
//! / 0.78 are no proportional rule's — about score^4.5; a custom formula such as `expr:score^4` reproduces that
//! sharpening if wanted.) See [`formula`](FormulaSpec) for every formula's arithmetic.
//!
//! **Cost.** A decision does no I/O, takes no lock of its own, reads no clock, and allocates nothing in the steady
//! state: candidate lists per tool are precomputed on membership changes, scratch buffers are reused. `core/benches/
//! route.rs` measures it per formula for 100 candidates.
//!
//! **Embedding.** One router per gateway, behind the embedder's mutex: the call path calls [`Router::route`],
//! [`Router::call_started`] and [`Router::call_finished`]; [`run_health_checks`] runs as a task on tokio time;
//! membership changes arrive through [`Router::sync`]. All time is passed in as `tokio::time::Instant`.

mod candidate_stats;
mod candidates;
mod config;
mod ejection;
mod ewma;
mod formula;
mod penalty;
mod probe;
mod registry;
mod replica;
mod score;
mod select;
mod stats;
mod window;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

pub use candidate_stats::CandidateStats;
pub use candidates::{Exclusion, ExclusionReason, Requirement, RouteError};
pub use config::RouterConfig;
pub use ejection::{FIRST_PROBE, MAX_PROBE_GAP};
pub use formula::{
    BestScore, Candidates, Choice, Custom, Expression, Formula, FormulaError, FormulaSpec, HealthWeighted,
    LeastOutstanding, P2cPeakEwma, RandomChoice, RoundRobin, STATISTICS,
};
pub use penalty::PENALTY_FACTOR;
pub use probe::{CheckFuture, HealthChecker, Probe, ProbeId, run_health_checks};
pub use registry::{
    HealthCheck, Registry, RegistryEvent, ScheduledRegistry, ServerEntry, StaticRegistry, matrix_from_meta,
};
pub use score::health_score;
pub use select::weighted_index;
use stats::LatencyMerge;

use crate::rt::SeededRng;
use replica::Replica;

/// A replica, by its slot in the router. Stable for the router's life: a replica that leaves and rejoins gets its
/// old id (and statistics) back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReplicaId(pub u32);

impl ReplicaId {
    fn index(self) -> usize {
        self.0 as usize
    }
}

/// The [`ProbeId::check`] of an ejected replica's readmission probe (a `ping`), apart from its configured checks.
pub const READMISSION_PROBE: usize = usize::MAX;

/// An ejected replica, for the admin API and metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ejected {
    pub server: String,
    pub replica: String,
    /// How long it has been out of rotation.
    pub for_: Duration,
    /// Readmission probes that failed so far.
    pub failed_probes: u32,
}

/// One call to route.
#[derive(Debug, Clone, Copy)]
pub struct RouteRequest<'a> {
    pub tool: &'a str,
    pub requirements: &'a [Requirement],
    /// Replicas this call already tried (a retry): avoided while any other candidate remains.
    pub tried: &'a [ReplicaId],
}

impl<'a> RouteRequest<'a> {
    pub fn new(tool: &'a str) -> Self {
        RouteRequest { tool, requirements: &[], tried: &[] }
    }
}

/// The replicas offering one tool, and the tool's stable key for per-tool formula state.
#[derive(Debug, Clone, Default)]
struct ToolRoute {
    key: usize,
    replicas: Vec<ReplicaId>,
}

/// Buffers a decision reuses, so the steady state allocates nothing.
#[derive(Debug, Default)]
struct Scratch {
    ids: Vec<ReplicaId>,
    stats: Vec<CandidateStats>,
    weights: Vec<f64>,
}

/// The router of one gateway. See the module documentation.
#[derive(Debug)]
pub struct Router {
    config: RouterConfig,
    start: Instant,
    formula: Box<dyn Formula>,
    rng: SeededRng,
    replicas: Vec<Replica>,
    by_endpoint: BTreeMap<String, ReplicaId>,
    servers: BTreeMap<String, Arc<ServerEntry>>,
    tools: BTreeMap<String, ToolRoute>,
    /// Every tool ever routed keeps its key, so a tool that disappears and returns keeps its formula state.
    tool_keys: BTreeMap<String, usize>,
    scratch: Scratch,
    merged: LatencyMerge,
    events: Vec<RegistryEvent>,
}

impl Router {
    /// `start` is time zero for the windows; `rng` is this router's own stream (fork it from the run's).
    pub fn new(config: RouterConfig, formula: Box<dyn Formula>, rng: SeededRng, start: Instant) -> Self {
        Router {
            config,
            start,
            formula,
            rng,
            replicas: Vec::new(),
            by_endpoint: BTreeMap::new(),
            servers: BTreeMap::new(),
            tools: BTreeMap::new(),
            tool_keys: BTreeMap::new(),
            scratch: Scratch::default(),
            merged: LatencyMerge::default(),
            events: Vec::new(),
        }
    }

    pub fn config(&self) -> &RouterConfig {
        &self.config
    }

    pub fn formula_name(&self) -> &str {
        self.formula.name()
    }

    fn since_start(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.start)
    }

    // ---- discovery ----

    /// Applies the registry's membership changes due by `now`.
    pub fn sync(&mut self, registry: &mut dyn Registry, now: Instant) {
        let mut events = std::mem::take(&mut self.events);
        registry.poll(self.since_start(now), &mut events);
        for event in events.drain(..) {
            self.apply(event, now);
        }
        self.events = events;
    }

    /// Applies one membership change.
    pub fn apply(&mut self, event: RegistryEvent, now: Instant) {
        let at = self.since_start(now);
        match event {
            RegistryEvent::Join(spec) => {
                let spec = Arc::new(spec);
                if let Some(old) = self.servers.insert(spec.name.clone(), spec.clone()) {
                    self.deactivate(&old);
                }
                for endpoint in &spec.replicas {
                    match self.by_endpoint.get(endpoint) {
                        Some(id) => self.replicas[id.index()].declare(spec.clone(), &self.config, at),
                        None => {
                            let id = ReplicaId(self.replicas.len() as u32);
                            self.replicas.push(Replica::new(endpoint.clone(), spec.clone(), &self.config, at));
                            self.by_endpoint.insert(endpoint.clone(), id);
                        }
                    }
                }
            }
            RegistryEvent::Leave(name) => {
                if let Some(old) = self.servers.remove(&name) {
                    self.deactivate(&old);
                }
            }
        }
        self.rebuild_tools();
    }

    /// Deactivates the replicas `server` owns (one re-registered under another server since is not its to drop).
    fn deactivate(&mut self, server: &ServerEntry) {
        for endpoint in &server.replicas {
            if let Some(id) = self.by_endpoint.get(endpoint)
                && self.replicas[id.index()].server.name == server.name
            {
                self.replicas[id.index()].active = false;
            }
        }
    }

    /// Recomputes tool → replicas. Servers in name order, replicas in declared order: deterministic.
    fn rebuild_tools(&mut self) {
        self.tools.clear();
        for server in self.servers.values() {
            for endpoint in &server.replicas {
                let Some(&id) = self.by_endpoint.get(endpoint) else { continue };
                // A replica listed by two servers belongs to the last to register.
                if !self.replicas[id.index()].active || self.replicas[id.index()].server.name != server.name {
                    continue;
                }
                for tool in &server.tools {
                    let next_key = self.tool_keys.len();
                    let key = *self.tool_keys.entry(tool.clone()).or_insert(next_key);
                    let route =
                        self.tools.entry(tool.clone()).or_insert_with(|| ToolRoute { key, replicas: Vec::new() });
                    if !route.replicas.contains(&id) {
                        route.replicas.push(id);
                    }
                }
            }
        }
    }

    /// A replica's endpoint id.
    pub fn endpoint(&self, id: ReplicaId) -> Option<&str> {
        self.replicas.get(id.index()).map(|r| r.endpoint.as_str())
    }

    /// The server a replica belongs to.
    pub fn server_of(&self, id: ReplicaId) -> Option<&ServerEntry> {
        self.replicas.get(id.index()).map(|r| &*r.server)
    }

    pub fn replica_id(&self, endpoint: &str) -> Option<ReplicaId> {
        self.by_endpoint.get(endpoint).copied()
    }

    /// The replicas currently offering `tool`, eligible or not.
    pub fn replicas_for(&self, tool: &str) -> &[ReplicaId] {
        self.tools.get(tool).map_or(&[], |r| &r.replicas)
    }

    /// A replica's statistics as the next decision would see them.
    pub fn stats(&self, id: ReplicaId) -> Option<CandidateStats> {
        self.replicas.get(id.index()).map(Replica::live)
    }

    // ---- decision ----

    /// Chooses a replica for one call. No I/O, no clock, no allocation in the steady state.
    pub fn route(&mut self, request: &RouteRequest<'_>) -> Result<ReplicaId, RouteError> {
        let Some(route) = self.tools.get(request.tool) else {
            return Err(RouteError::UnknownTool { tool: request.tool.to_owned() });
        };
        let threshold = self.config.failure_threshold;
        let scratch = &mut self.scratch;
        scratch.ids.clear();
        let mut ejected = 0usize;
        for &id in &route.replicas {
            let replica = &self.replicas[id.index()];
            if replica.eligible(request.tool, request.requirements, threshold) {
                ejected += usize::from(replica.ejected.is_some());
                scratch.ids.push(id);
            }
        }
        if scratch.ids.is_empty() {
            return Err(self.explain(request));
        }
        // Ejected replicas only when nothing else is left (panic routing: see `ejection.rs`).
        if ejected > 0 && ejected < scratch.ids.len() {
            let replicas = &self.replicas;
            scratch.ids.retain(|id| replicas[id.index()].ejected.is_none());
        }
        let untried = scratch.ids.iter().filter(|id| !request.tried.contains(id)).count();
        if untried > 0 && untried < scratch.ids.len() {
            scratch.ids.retain(|id| !request.tried.contains(id));
        }
        scratch.stats.clear();
        scratch.stats.extend(scratch.ids.iter().map(|id| self.replicas[id.index()].live()));
        scratch.weights.clear();
        scratch.weights.resize(scratch.ids.len(), 0.0);
        let candidates = Candidates { key: route.key, stats: &scratch.stats };
        let n = scratch.ids.len();
        let pick = match self.formula.decide(&candidates, &self.rng, &mut scratch.weights) {
            Choice::Pick(i) if i < n => i,
            // A custom formula's out-of-range pick is its bug; a uniform pick keeps the call going.
            Choice::Pick(_) => self.rng.below(n as u64) as usize,
            Choice::Weighted => {
                for (w, s) in scratch.weights.iter_mut().zip(&scratch.stats) {
                    *w *= s.penalty;
                }
                // All weights zero (a custom formula said so for every candidate): they are all still eligible,
                // so choose uniformly rather than fail the call.
                weighted_index(&scratch.weights, self.rng.unit()).unwrap_or_else(|| self.rng.below(n as u64) as usize)
            }
        };
        Ok(scratch.ids[pick])
    }

    /// The slow path of an empty candidate set: who was excluded, and why.
    fn explain(&self, request: &RouteRequest<'_>) -> RouteError {
        let threshold = self.config.failure_threshold;
        let excluded = self
            .replicas_for(request.tool)
            .iter()
            .filter_map(|id| {
                let replica = &self.replicas[id.index()];
                replica.exclusion(request.tool, request.requirements, threshold).map(|reason| replica.excluded(reason))
            })
            .collect();
        RouteError::NoCandidate { tool: request.tool.to_owned(), excluded }
    }

    // ---- call path ----

    /// How many servers are registered now.
    pub fn server_count(&self) -> usize {
        self.servers.len()
    }

    /// Calls started and not yet finished or abandoned, over every replica: 0 when none is in flight.
    pub fn in_flight_total(&self) -> u64 {
        self.replicas.iter().map(|r| u64::from(r.passive.in_flight())).sum()
    }

    /// A call was sent to `id`.
    pub fn call_started(&mut self, id: ReplicaId) {
        if let Some(r) = self.replicas.get_mut(id.index()) {
            r.passive.started();
        }
    }

    /// A call to `id` ended without a verdict on the replica (the caller's fault, or cancelled): only the in-flight
    /// count changes.
    pub fn call_abandoned(&mut self, id: ReplicaId) {
        if let Some(r) = self.replicas.get_mut(id.index()) {
            r.passive.abandoned();
        }
    }

    /// A call to `id` finished at `now` after `latency`; `ok` is false for any error (transport, timeout, JSON-RPC
    /// error, or a tool result with `isError`).
    pub fn call_finished(&mut self, id: ReplicaId, ok: bool, latency: Duration, now: Instant) {
        let at = self.since_start(now);
        if let Some(r) = self.replicas.get_mut(id.index()) {
            r.finished(ok, latency, at);
        }
    }

    // ---- health ----

    /// Recomputes every active replica's snapshot (windows, uptime, Peak-EWMA decay, drift penalty).
    pub fn refresh(&mut self, now: Instant) {
        let at = self.since_start(now);
        let min = self.config.min_samples;
        for replica in self.replicas.iter_mut().filter(|r| r.active) {
            replica.refresh(at, min, &mut self.merged);
        }
    }

    /// Takes `id` out of rotation at `now` (its address refused a connection): `true` when it was in rotation.
    pub fn eject(&mut self, id: ReplicaId, now: Instant) -> bool {
        let at = self.since_start(now);
        match self.replicas.get_mut(id.index()) {
            Some(replica) if replica.ejected.is_none() => {
                replica.ejected = Some(ejection::Ejection::new(at));
                true
            }
            _ => false,
        }
    }

    /// The replicas out of rotation at `now`, in id order.
    pub fn ejected(&self, now: Instant) -> Vec<Ejected> {
        let at = self.since_start(now);
        let ejected = self.replicas.iter().filter(|r| r.active);
        ejected
            .filter_map(|r| {
                let e = r.ejected.as_ref()?;
                Some(Ejected {
                    server: r.server.name.clone(),
                    replica: r.endpoint.clone(),
                    for_: at.saturating_sub(e.since),
                    failed_probes: e.failed_probes,
                })
            })
            .collect()
    }

    /// When the next readmission probe is due, if any replica is ejected and not being probed.
    pub fn next_readmission_probe(&self) -> Option<Instant> {
        let due = self.replicas.iter().filter(|r| r.active).filter_map(|r| r.ejected.as_ref()?.next_due()).min()?;
        Some(self.start + due)
    }

    /// Appends the health checks due at `now` to `out` and schedules each one interval later, and the readmission
    /// probes of ejected replicas that are due.
    pub fn due_checks(&mut self, now: Instant, out: &mut Vec<Probe>) {
        let at = self.since_start(now);
        let interval = self.config.check_interval;
        for (index, replica) in self.replicas.iter_mut().enumerate().filter(|(_, r)| r.active) {
            if let Some(ejection) = replica.ejected.as_mut()
                && ejection.take_probe(at)
            {
                out.push(Probe {
                    id: ProbeId { replica: ReplicaId(index as u32), check: READMISSION_PROBE },
                    server: replica.server.name.clone(),
                    replica: replica.endpoint.clone(),
                    check: HealthCheck::ping(),
                });
            }
            for (check, state) in replica.checks.iter_mut().enumerate() {
                if state.take_if_due(at, interval) {
                    out.push(Probe {
                        id: ProbeId { replica: ReplicaId(index as u32), check },
                        server: replica.server.name.clone(),
                        replica: replica.endpoint.clone(),
                        check: state.spec.clone(),
                    });
                }
            }
        }
    }

    /// A health check's outcome. Results for checks that no longer exist are ignored. `true` when it readmitted an
    /// ejected replica.
    pub fn record_check(&mut self, probe: ProbeId, ok: bool, now: Instant) -> bool {
        let at = self.since_start(now);
        let Some(replica) = self.replicas.get_mut(probe.replica.index()) else { return false };
        if probe.check == READMISSION_PROBE {
            return match replica.ejected.as_mut() {
                Some(_) if ok => {
                    replica.ejected = None;
                    true
                }
                Some(ejection) => {
                    ejection.probe_failed(at);
                    false
                }
                None => false,
            };
        }
        if let Some(state) = replica.checks.get_mut(probe.check) {
            state.record(ok);
            replica.passive.checked(ok, at);
        }
        false
    }
}

#[cfg(test)]
mod properties;
#[cfg(test)]
mod tests;
