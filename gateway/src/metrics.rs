//! Prometheus metrics (`GET /metrics` on the admin listener), through `prometheus-client`.
//!
//! Counted as they happen: attempts by server, replica, tool and outcome; agent-call latency by server and tool;
//! handshake failures and breaker transitions by replica; the router's decision time. Read at scrape time from [`Protection`], so they cannot
//! disagree with `GET /admin/breakers`: breaker states, health scores, bulkhead limits and permits in use.
//! Label values are server, replica and tool names from the config and the upstreams' listings; never a header,
//! a token or an argument.

use std::sync::Mutex;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::atomic::{AtomicU64, Ordering};

use mcpstorm_core::sync::SyncStatus;

use super::state::Protection;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AttemptLabels {
    pub server: String,
    pub replica: String,
    pub tool: String,
    /// `ok`, `tool_error`, `degraded`, or the error class (`transport`, `protocol`, `lifecycle`, `local`, `auth`).
    pub outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ToolLabels {
    pub server: String,
    pub tool: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReplicaLabels {
    pub server: String,
    pub replica: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BreakerLabels {
    pub server: String,
    pub replica: String,
    pub tool: String,
    pub state: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PoolLabels {
    pub pool: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SyncLabels {
    pub event: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RefusedLabels {
    /// `DenyReason`'s name: `missing`, `expired`, `audience`, `insufficient_scope`, `unverifiable`, ...
    pub reason: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TokenLabels {
    pub server: String,
    /// `ok`, `http_4xx`, `http_5xx`, `http_2xx_unreadable`, `unreachable`, `discovery`.
    pub outcome: String,
}

type FloatGauge = Gauge<f64, AtomicU64>;

/// Every metric, registered once.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    pub attempts: Family<AttemptLabels, Counter>,
    pub call_seconds: Family<ToolLabels, Histogram>,
    pub handshake_failures: Family<ReplicaLabels, Counter>,
    pub breaker_transitions: Family<BreakerLabels, Counter>,
    pub route_decision_seconds: Histogram,
    breaker_state: Family<BreakerLabels, Gauge>,
    health_score: Family<ReplicaLabels, FloatGauge>,
    ejected: Family<ReplicaLabels, Gauge>,
    pub ejections: Family<ReplicaLabels, Counter>,
    bulkhead_in_flight: Family<PoolLabels, Gauge>,
    bulkhead_limit: Family<PoolLabels, Gauge>,
    sync_connected: Gauge,
    sync_events: Family<SyncLabels, Counter>,
    pub agents_refused: Family<RefusedLabels, Counter>,
    pub upstream_token_requests: Family<TokenLabels, Counter>,
    /// Spans `[telemetry]` exported, and those it dropped (a full queue, a collector that failed or was too slow).
    pub trace_spans_exported: Counter,
    pub trace_spans_dropped: Counter,
    /// Scrapes fill the read-at-scrape gauges and encode under this lock, so two scrapes never interleave.
    scrape: Mutex<()>,
}

/// Every state a breaker can be in, so a scrape sets each to 0 or 1.
const STATES: [&str; 6] = ["closed", "open", "half_open", "forced_open", "disabled", "metrics_only"];

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("mcpstorm_gateway");
        let attempts = Family::<AttemptLabels, Counter>::default();
        registry.register("attempts", "Attempts sent to upstream replicas, by outcome", attempts.clone());
        // 1 ms to about 65 s.
        let call_seconds = Family::<ToolLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.001, 2.0, 17))
        });
        registry.register("call_seconds", "Agent tool calls through the gateway, end to end", call_seconds.clone());
        let handshake_failures = Family::<ReplicaLabels, Counter>::default();
        registry.register(
            "handshake_failures",
            "Connections to upstream replicas on which no MCP handshake worked (an era probe answered -32601 and then an initialize that worked is no failure)",
            handshake_failures.clone(),
        );
        let breaker_transitions = Family::<BreakerLabels, Counter>::default();
        registry.register(
            "breaker_transitions",
            "Circuit breaker transitions, by the state entered",
            breaker_transitions.clone(),
        );
        // 10 µs to about 0.3 s: the design's alert fires above 50 ms.
        let route_decision_seconds = Histogram::new(exponential_buckets(0.000_01, 2.0, 16));
        registry.register(
            "route_decision_seconds",
            "The router's decision for one call, with the wait for the router",
            route_decision_seconds.clone(),
        );
        let breaker_state = Family::<BreakerLabels, Gauge>::default();
        registry.register(
            "breaker_state",
            "1 for each breaker's current state, 0 for the others",
            breaker_state.clone(),
        );
        let health_score = Family::<ReplicaLabels, FloatGauge>::default();
        registry.register(
            "health_score",
            "Each replica's health score (1 healthy; alert below 0.5)",
            health_score.clone(),
        );
        let ejected = Family::<ReplicaLabels, Gauge>::default();
        registry.register(
            "replica_ejected",
            "1 while a replica is out of rotation because its address refused a connection (until a probe answers)",
            ejected.clone(),
        );
        let ejections = Family::<ReplicaLabels, Counter>::default();
        registry.register("ejections", "Replicas taken out of rotation at a refused connection", ejections.clone());
        let bulkhead_in_flight = Family::<PoolLabels, Gauge>::default();
        registry.register("bulkhead_in_flight", "Bulkhead permits in use", bulkhead_in_flight.clone());
        let bulkhead_limit = Family::<PoolLabels, Gauge>::default();
        registry.register("bulkhead_limit", "Each bulkhead's current concurrency limit", bulkhead_limit.clone());
        let sync_connected = Gauge::default();
        registry.register(
            "sync_connected",
            "1 while breaker sync is connected to Redis ([gateway.sync]; 0 when down or off)",
            sync_connected.clone(),
        );
        let sync_events = Family::<SyncLabels, Counter>::default();
        registry.register(
            "sync_events",
            "Breaker sync: Redis outages, reports published and received, remote opens followed or made suspect, \
             reports dropped on a full queue",
            sync_events.clone(),
        );
        let agents_refused = Family::<RefusedLabels, Counter>::default();
        registry.register(
            "agents_refused",
            "Agent requests refused by [auth], by reason (401, 403 insufficient_scope, 503 \
             unverifiable)",
            agents_refused.clone(),
        );
        let upstream_token_requests = Family::<TokenLabels, Counter>::default();
        registry.register(
            "upstream_token_requests",
            "Access token requests for OAuth-protected upstreams ([servers.oauth]), by server and outcome",
            upstream_token_requests.clone(),
        );
        let trace_spans_exported = Counter::default();
        registry.register(
            "trace_spans_exported",
            "Spans the OTLP collector accepted ([telemetry])",
            trace_spans_exported.clone(),
        );
        let trace_spans_dropped = Counter::default();
        registry.register(
            "trace_spans_dropped",
            "Spans not exported ([telemetry]): the queue was full, or the collector refused, failed or timed out",
            trace_spans_dropped.clone(),
        );
        Metrics {
            registry,
            trace_spans_exported,
            trace_spans_dropped,
            agents_refused,
            upstream_token_requests,
            sync_connected,
            sync_events,
            attempts,
            call_seconds,
            handshake_failures,
            breaker_transitions,
            route_decision_seconds,
            breaker_state,
            health_score,
            ejected,
            ejections,
            bulkhead_in_flight,
            bulkhead_limit,
            scrape: Mutex::new(()),
        }
    }
}

impl Metrics {
    /// The text exposition, with the read-at-scrape gauges set from `now`.
    pub fn scrape(&self, now: &Protection, sync: Option<&SyncStatus>) -> String {
        let _one = self.scrape.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        self.breaker_state.clear();
        for b in &now.breakers {
            for state in STATES {
                let labels = BreakerLabels {
                    server: b.server.clone(),
                    replica: b.replica.clone(),
                    tool: b.tool.clone(),
                    state: state.to_owned(),
                };
                self.breaker_state.get_or_create(&labels).set(i64::from(state == b.state));
            }
        }
        self.health_score.clear();
        for h in &now.health {
            let labels = ReplicaLabels { server: h.server.clone(), replica: h.replica.clone() };
            self.health_score.get_or_create(&labels).set(h.score);
            self.ejected.get_or_create(&labels).set(i64::from(h.ejected_s.is_some()));
        }
        for p in &now.bulkheads {
            let labels = PoolLabels { pool: p.pool.clone() };
            self.bulkhead_in_flight.get_or_create(&labels).set(i64::try_from(p.in_flight).unwrap_or(i64::MAX));
            self.bulkhead_limit.get_or_create(&labels).set(i64::try_from(p.limit).unwrap_or(i64::MAX));
        }
        if let Some(sync) = sync {
            self.sync_connected.set(i64::from(sync.connected.load(Ordering::Relaxed)));
            let events = [
                ("outage", &sync.outages),
                ("published", &sync.published),
                ("received", &sync.received),
                ("followed", &sync.followed),
                ("suspected", &sync.suspected),
                ("dropped", &sync.dropped),
            ];
            for (event, count) in events {
                // The sync counts; a counter only goes up, so it is brought up to the count (under the scrape lock).
                let counter = self.sync_events.get_or_create(&SyncLabels { event });
                counter.inc_by(count.load(Ordering::Relaxed).saturating_sub(counter.get()));
            }
        }
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        text
    }
}
