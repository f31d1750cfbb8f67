//! What the core reports, turned into the process's metrics and logs: breaker transitions (one info line each,
//! since an operator wants to see them; per-call events stay at debug and below) and failed handshakes with each
//! replica. Everything else goes to the core's [`TracingObserver`], which rate-limits anomalies a peer controls.

use std::sync::Arc;

use mcpstorm_core::observe::Event;
use mcpstorm_core::{Observer, TracingObserver};

use super::metrics::{BreakerLabels, Metrics, ReplicaLabels};
use super::state::server_of;

/// The gateway's own observer (breakers, degraded decisions).
#[derive(Debug)]
pub struct GatewayObserver {
    pub metrics: Arc<Metrics>,
    pub tracing: TracingObserver,
}

impl Observer for GatewayObserver {
    fn event(&self, event: &Event<'_>) {
        if let Event::RouteDecided { elapsed, .. } = event {
            self.metrics.route_decision_seconds.observe(elapsed.as_secs_f64());
        }
        if let Event::Breaker { server, replica, tool, transition } = event {
            let to: &str = transition.to.into();
            let from: &str = transition.from.into();
            let reason: &str = transition.reason.into();
            tracing::info!(server, replica, tool, from, to, reason, "circuit breaker");
            let labels = BreakerLabels {
                server: (*server).to_owned(),
                replica: (*replica).to_owned(),
                tool: (*tool).to_owned(),
                state: to.to_owned(),
            };
            self.metrics.breaker_transitions.get_or_create(&labels).inc();
        }
        if let Event::Ejection { server, replica, ejected: true } = event {
            let labels = ReplicaLabels { server: (*server).to_owned(), replica: (*replica).to_owned() };
            self.metrics.ejections.get_or_create(&labels).inc();
        }
        self.tracing.event(event);
    }
}

/// One replica client's observer.
#[derive(Debug)]
pub struct ReplicaObserver {
    pub metrics: Arc<Metrics>,
    pub replica: String,
    pub tracing: Arc<TracingObserver>,
}

impl Observer for ReplicaObserver {
    fn event(&self, event: &Event<'_>) {
        // Not every failed `initialize` or `server/discover`: a probe of an era the server does not speak (-32601
        // to `server/discover`) is how the era is found, and alerting on it would fire at every start.
        if let Event::HandshakeFailed { error, .. } = event {
            tracing::warn!(replica = %self.replica, %error, "handshake failed");
            let labels = ReplicaLabels { server: server_of(&self.replica).to_owned(), replica: self.replica.clone() };
            self.metrics.handshake_failures.get_or_create(&labels).inc();
        }
        self.tracing.event(event);
    }
}
