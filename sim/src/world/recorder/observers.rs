//! The core's observers on a load host: what its clients and its gateway tell the recorder.

use mcpstorm_core::{Event, Observer, observe::SessionEvent};

use super::{Recorder, is_stale_refusal};
use crate::world::clock::RunTime;

/// The core's observer on a load host, for its client of one server replica: connection lifecycle and session
/// changes become events on the timeline, and every `tools/call` refused for a stale schema is counted (with its
/// send time, `now − latency`), including those the gateway then hid by a transparent resend.
#[derive(Debug)]
pub struct SimObserver {
    pub recorder: Recorder,
    pub time: RunTime,
    pub host: String,
    /// The server replica this client talks to.
    pub replica: String,
}

impl Observer for SimObserver {
    fn event(&self, event: &Event<'_>) {
        // Read only by the arms that use it: most events (every finished request) are ignored, and each read of the
        // host's clock is a lookup and a lock.
        let now = || self.time.elapsed().unwrap_or_default();
        match event {
            Event::ConnectionClosed { server, reason, .. } => {
                self.recorder.event(now(), "connection_closed", server, format!("{} from {}", reason, self.host));
            }
            Event::ConnectionOpened { server, .. } => {
                self.recorder.event(now(), "connection_opened", server, format!("from {}", self.host));
            }
            Event::RequestFinished { method, latency, error: Some(error), .. }
                if *method == mcpstorm_core::mcp::method::TOOLS_CALL && is_stale_refusal(error) =>
            {
                let now = now();
                let sent = now.saturating_sub(*latency);
                self.recorder.stale_refusal(&self.host, &self.replica, sent, now);
            }
            Event::UnknownResponseDropped { .. } => self.recorder.lock().audit.dropped_response(true),
            Event::LateResponseDropped { .. } => self.recorder.lock().audit.dropped_response(false),
            Event::SchemaRefetched { server, reason } => {
                self.recorder.event(
                    now(),
                    "schema_refetched",
                    server,
                    format!("{} from {}", <&str>::from(reason), self.host),
                );
            }
            Event::Session { server, what } => {
                let now = now();
                self.recorder.session_event(now, *what);
                // Grants and renewals are routine; the rest is what a reader of the event log looks for.
                if !matches!(what, SessionEvent::Granted | SessionEvent::Renewed) {
                    self.recorder.event(now, "session", server, format!("{what} from {}", self.host));
                }
            }
            _ => {}
        }
    }
}

/// The observer of a load host's [`Gateway`](mcpstorm_core::Gateway) itself (its clients have [`SimObserver`]s):
/// breaker transitions, ejections (a replica out of this gateway's rotation, or back) and degraded results go to the
/// recorder. With `[gateway.sync]` the sync's tap wraps it, and publishes this gateway's own transitions.
#[derive(Debug)]
pub struct GatewayObserver {
    pub recorder: Recorder,
    pub time: RunTime,
    pub host: String,
    /// A gateway node's: its calls are its agents' requests, not their tasks, so a degraded result is counted
    /// without marking the task (the agent reads it from the result: see `remote`).
    pub node: bool,
}

impl Observer for GatewayObserver {
    fn event(&self, event: &Event<'_>) {
        let now = || self.time.elapsed().unwrap_or_default();
        match event {
            Event::Breaker { replica, tool, transition, .. } => {
                // A node's federation names replicas `server#i`; the report names them by their hosts.
                self.recorder.breaker(now(), &self.host, &crate::scenario::replica_host(replica), tool, transition);
            }
            Event::Degraded { reason, tool } => {
                self.recorder.degraded(now(), *reason, !self.node);
                if !self.node {
                    self.recorder.trace_declined(now(), &self.host, tool, *reason);
                }
            }
            Event::Ejection { replica, ejected, .. } => {
                let kind = if *ejected { "ejected" } else { "readmitted" };
                self.recorder.event(now(), kind, &crate::scenario::replica_host(replica), format!("on {}", self.host));
            }
            _ => {}
        }
    }
}
