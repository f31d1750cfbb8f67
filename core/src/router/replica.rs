//! One routable endpoint: its server's declaration, passive statistics, drift state, health checks and the cached
//! snapshot decisions read.

use std::sync::Arc;
use std::time::Duration;

use super::candidate_stats::CandidateStats;
use super::candidates::{Exclusion, ExclusionReason, Requirement};
use super::config::RouterConfig;
use super::ejection::Ejection;
use super::penalty::DriftPenalty;
use super::probe::CheckState;
use super::registry::{HealthCheck, ServerEntry};
use super::stats::{LatencyMerge, Passive};

#[derive(Debug, Clone)]
pub struct Replica {
    pub endpoint: String,
    pub server: Arc<ServerEntry>,
    /// False once its server deregistered or dropped it; the slot keeps its id and statistics in case it returns.
    pub active: bool,
    pub passive: Passive,
    pub penalty: DriftPenalty,
    pub checks: Vec<CheckState>,
    /// The snapshot of the last refresh (in-flight patched in live by [`Replica::live`]).
    pub cached: CandidateStats,
    /// Out of rotation since its address refused a connection, until a probe answers (`ejection.rs`).
    pub ejected: Option<Ejection>,
}

impl Replica {
    pub fn new(endpoint: String, server: Arc<ServerEntry>, config: &RouterConfig, now: Duration) -> Self {
        let passive = Passive::new(
            config,
            server.latency_p95(config.default_latency_p95),
            server.max_concurrent(config.default_max_concurrent),
            now,
        );
        // No bucket has recorded yet: the fold allocates nothing.
        let cached = passive.snapshot(now, config.min_samples, &mut LatencyMerge::default());
        let mut replica = Replica {
            endpoint,
            server: server.clone(),
            active: true,
            passive,
            penalty: DriftPenalty::new(config),
            checks: Vec::new(),
            cached,
            ejected: None,
        };
        replica.declare(server, config, now);
        replica
    }

    /// Takes a (re)registered server's declaration; keeps observations and, for unchanged checks, their strikes.
    pub fn declare(&mut self, server: Arc<ServerEntry>, config: &RouterConfig, now: Duration) {
        self.passive.redeclare(
            server.latency_p95(config.default_latency_p95),
            server.max_concurrent(config.default_max_concurrent),
        );
        let specs = if server.checks.is_empty() { vec![HealthCheck::ping()] } else { server.checks.clone() };
        let old = std::mem::take(&mut self.checks);
        self.checks = specs
            .into_iter()
            .map(|spec| old.iter().find(|c| c.spec == spec).cloned().unwrap_or_else(|| CheckState::new(spec, now)))
            .collect();
        self.server = server;
        self.active = true;
    }

    /// Recomputes the cached snapshot and samples the drift penalty.
    pub fn refresh(&mut self, now: Duration, min_samples: u64, merged: &mut LatencyMerge) {
        let mut stats = self.passive.snapshot(now, min_samples, merged);
        stats.penalty = self.penalty.observe(stats.score, now);
        self.cached = stats;
    }

    /// The cached snapshot with the live in-flight count.
    pub fn live(&self) -> CandidateStats {
        self.cached.with_in_flight(self.passive.in_flight())
    }

    /// A call finished: statistics, and the latency estimate a decision reads (p2c must see a spike on the first
    /// slow response, not at the next refresh).
    pub fn finished(&mut self, ok: bool, latency: Duration, now: Duration) {
        self.passive.finished(ok, latency, now);
        self.cached.peak_ewma_ms = self.passive.peak_ewma_ms();
    }

    /// Why this replica cannot serve `tool` under `requirements`, if it cannot. Requirements are reported first:
    /// an unmet requirement is permanent, ill health passes.
    pub fn exclusion(&self, tool: &str, requirements: &[Requirement], threshold: u32) -> Option<ExclusionReason> {
        if let Some(unmet) = requirements.iter().find(|r| !r.holds_for(&self.server)) {
            return Some(ExclusionReason::Unmet(unmet.clone()));
        }
        self.checks
            .iter()
            .find(|c| c.guards(tool) && c.is_down(threshold))
            .map(|c| ExclusionReason::Unhealthy { capability: c.spec.capability.clone(), failures: c.failures() })
    }

    /// [`Replica::exclusion`] without building the reason: the decision path's test.
    pub fn eligible(&self, tool: &str, requirements: &[Requirement], threshold: u32) -> bool {
        requirements.iter().all(|r| r.holds_for(&self.server))
            && !self.checks.iter().any(|c| c.is_down(threshold) && c.guards(tool))
    }

    pub fn excluded(&self, reason: ExclusionReason) -> Exclusion {
        Exclusion { server: self.server.name.clone(), replica: self.endpoint.clone(), reason }
    }
}
