//! Resource subscriptions through the gateway (2025-11-25 agents).
//!
//! - **Once upstream per resource.** An upstream connection carries the calls of many agents, so the gateway
//!   subscribes upstream once per (server, URI), on the first replica of the server that answers (its carrier),
//!   however many agents subscribed, and unsubscribes when the last of them unsubscribes or its session ends (DELETE,
//!   the stdio peer gone). A server's replicas serve the same resources, so one subscription covers the server.
//! - **Fan-out.** Each `notifications/resources/updated` the carrier's client hears (see
//!   [`McpClient::watch_resources`](mcpstorm_core::McpClient::watch_resources)) becomes one [`Update`] per
//!   subscribed agent session, under the URI the agent used; the front writes it on the session's GET stream (or to
//!   the stdio peer).
//! - **Restarts.** Every [`RESUBSCRIBE_EVERY`] the carrier of each subscription is checked: when its connection is
//!   no longer the one subscribed on (the replica restarted, the connection was replaced), the subscription is made
//!   again on the server's first replica that answers. Updates sent while no connection carried it are lost.
//! - **Eras.** A 2026-07-28 upstream has no `resources/subscribe` (its updates ride `subscriptions/listen`, which the
//!   gateway does not open): subscribing to one of its resources is refused with a reason. A 2026-07-28 agent has
//!   no `resources/subscribe` either.
//! - **Bounds.** At most [`MAX_SUBSCRIPTIONS`] (agent session, resource) pairs per process; an agent's session that
//!   ends without a DELETE keeps its subscriptions until the process restarts or the agent unsubscribes.
//!   Subscriptions live in the process that took them: an agent whose GET stream is served by another process
//!   behind the same load balancer gets no updates.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcpstorm_core::client::ResourceUpdated;
use mcpstorm_core::jsonrpc::{ErrorCode, ErrorObject};
use mcpstorm_core::mcp::method;
use mcpstorm_core::observe::ConnId;
use mcpstorm_core::session::Era;
use mcpstorm_core::{CallError, CallOptions, Gateway};
use serde_json::json;
use tokio::sync::broadcast;

use crate::config::UpstreamSpec;

/// The most (agent session, resource) subscription pairs one process keeps.
pub const MAX_SUBSCRIPTIONS: usize = 4096;
/// How often each subscription's carrier connection is checked (see the module documentation).
pub const RESUBSCRIBE_EVERY: Duration = Duration::from_secs(5);
/// Updates queued for the front; one that falls further behind skips the oldest.
const UPDATES: usize = 256;

/// A resource as its own server names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Resource {
    pub server: String,
    pub uri: String,
}

/// The upstream connection a subscription was made on: the replica and its client's connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Carrier {
    pub replica: usize,
    pub conn: ConnId,
}

/// One resource's subscribers.
#[derive(Debug)]
struct Subscribed {
    /// The URI the agents subscribed with (the agent-facing one).
    shown: String,
    agents: BTreeSet<Arc<str>>,
    /// `None` until made upstream, and again when a re-subscription failed.
    carrier: Option<Carrier>,
}

/// One update for one agent session: `uri` is the agent-facing URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Update {
    pub session: Arc<str>,
    pub uri: String,
}

/// What [`Registry::join`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Joined {
    /// The resource's first subscriber: subscribe upstream.
    First,
    /// Already subscribed upstream (or the agent already was).
    Again,
    /// [`MAX_SUBSCRIPTIONS`] reached.
    Full,
}

/// Who subscribed to what (plain data; the upstream calls are [`subscribe_upstream`] and [`unsubscribe_upstream`]).
#[derive(Debug, Default)]
pub struct Registry {
    subs: BTreeMap<Resource, Subscribed>,
    pairs: usize,
}

impl Registry {
    /// `agent` subscribes to `at`, which it knows as `shown`.
    pub fn join(&mut self, agent: &Arc<str>, at: &Resource, shown: &str) -> Joined {
        if self.subs.get(at).is_some_and(|s| s.agents.contains(agent)) {
            return Joined::Again;
        }
        if self.pairs >= MAX_SUBSCRIPTIONS {
            return Joined::Full;
        }
        self.pairs += 1;
        match self.subs.get_mut(at) {
            Some(sub) => {
                sub.agents.insert(agent.clone());
                Joined::Again
            }
            None => {
                let agents = BTreeSet::from([agent.clone()]);
                self.subs.insert(at.clone(), Subscribed { shown: shown.to_owned(), agents, carrier: None });
                Joined::First
            }
        }
    }

    /// `agent` leaves the subscription to the resource it knows as `shown`: the resource and its carrier when it
    /// was the last subscriber (unsubscribe upstream), else `None`.
    pub fn leave(&mut self, agent: &str, shown: &str) -> Option<(Resource, Option<Carrier>)> {
        let at =
            self.subs.iter().find(|(_, s)| s.shown == shown && s.agents.contains(agent)).map(|(r, _)| r.clone())?;
        self.leave_resource(agent, &at)
    }

    fn leave_resource(&mut self, agent: &str, at: &Resource) -> Option<(Resource, Option<Carrier>)> {
        let sub = self.subs.get_mut(at)?;
        if !sub.agents.remove(agent) {
            return None;
        }
        self.pairs -= 1;
        if !sub.agents.is_empty() {
            return None;
        }
        let carrier = sub.carrier;
        self.subs.remove(at);
        Some((at.clone(), carrier))
    }

    /// Every subscription of an agent session that ended: the resources left with no subscriber (unsubscribe them
    /// upstream).
    pub fn end_session(&mut self, agent: &str) -> Vec<(Resource, Option<Carrier>)> {
        let mine: Vec<Resource> =
            self.subs.iter().filter(|(_, s)| s.agents.contains(agent)).map(|(r, _)| r.clone()).collect();
        mine.iter().filter_map(|at| self.leave_resource(agent, at)).collect()
    }

    /// The subscription to `at` is carried by `carrier` now (ignored if it has no subscriber left).
    pub fn carried(&mut self, at: &Resource, carrier: Option<Carrier>) {
        if let Some(sub) = self.subs.get_mut(at) {
            sub.carrier = carrier;
        }
    }

    /// Every subscribed resource and its carrier.
    pub fn carriers(&self) -> Vec<(Resource, Option<Carrier>)> {
        self.subs.iter().map(|(r, s)| (r.clone(), s.carrier)).collect()
    }

    /// An update of `server`'s `uri`, one per subscribed agent session (none if nobody subscribed).
    pub fn updates(&self, server: &str, uri: &str) -> Vec<Update> {
        let at = Resource { server: server.to_owned(), uri: uri.to_owned() };
        let Some(sub) = self.subs.get(&at) else { return Vec::new() };
        sub.agents.iter().map(|a| Update { session: a.clone(), uri: sub.shown.clone() }).collect()
    }
}

/// The registry and where its updates go, shared with the hooks of the upstream clients.
#[derive(Debug)]
pub struct Subscriptions {
    pub registry: Mutex<Registry>,
    updates: broadcast::Sender<Update>,
    /// Held across each change that talks to an upstream, so that subscribing, unsubscribing and re-subscribing
    /// one resource never interleave.
    pub upstream: tokio::sync::Mutex<()>,
    /// The re-subscribing task has started (with the first subscription).
    pub keeper: std::sync::atomic::AtomicBool,
}

impl Default for Subscriptions {
    fn default() -> Self {
        Subscriptions {
            registry: Mutex::default(),
            updates: broadcast::channel(UPDATES).0,
            upstream: tokio::sync::Mutex::new(()),
            keeper: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

impl Subscriptions {
    pub fn registry(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The updates for agents, as upstreams send them.
    pub fn updates(&self) -> broadcast::Receiver<Update> {
        self.updates.subscribe()
    }

    /// The hook a carrier's client calls with each updated URI of `server`.
    pub fn hook(self: &Arc<Self>, server: &str) -> ResourceUpdated {
        let (this, server) = (Arc::downgrade(self), server.to_owned());
        ResourceUpdated(Arc::new(move |uri: &str| {
            let Some(this) = this.upgrade() else { return };
            let updates = this.registry().updates(&server, uri);
            for update in updates {
                let _ = this.updates.send(update);
            }
        }))
    }
}

/// Subscribes to `uri` on the first replica of `spec` that answers and offers subscriptions in 2025-11-25, its
/// client told to hand updates to `hook`; the carrier.
pub async fn subscribe_upstream(
    gateway: &Gateway,
    spec: &UpstreamSpec,
    uri: &str,
    hook: &ResourceUpdated,
) -> Result<Carrier, ErrorObject> {
    let mut refused = None;
    let mut last = None;
    for replica in 0..spec.replicas.len() {
        let (_, client) = gateway.client(&spec.name, &spec.replica_id(replica));
        let session = match client.session().await {
            Ok(s) => s,
            Err(e) => {
                last = Some(e);
                continue;
            }
        };
        if session.era == Era::Modern {
            let why = format!(
                "server `{}` speaks 2026-07-28, whose resource updates come over subscriptions/listen, which this \
                 gateway does not open",
                spec.name
            );
            refused = Some(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, why));
            continue;
        }
        if session.init.capabilities.pointer("/resources/subscribe").and_then(serde_json::Value::as_bool) != Some(true)
        {
            let why = format!("server `{}` offers no resource subscriptions", spec.name);
            refused = Some(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, why));
            continue;
        }
        client.watch_resources(hook.clone());
        let params = json!({ "uri": uri });
        match session.conn.request(method::RESOURCES_SUBSCRIBE, Some(params), CallOptions::default()).await {
            Ok(_) => return Ok(Carrier { replica, conn: session.conn.id() }),
            Err(CallError::Protocol(e)) => return Err(e),
            Err(e) => last = Some(e),
        }
    }
    if let Some(refused) = refused {
        return Err(refused);
    }
    let why = last.map_or_else(|| "it has no replica".to_owned(), |e| e.to_string());
    Err(ErrorObject::new(ErrorCode::INTERNAL_ERROR, format!("server `{}` could not be reached: {why}", spec.name)))
}

/// Unsubscribes from `uri` on the connection that carries the subscription, if it is still the replica's current
/// one (a replaced connection took its subscriptions with it). Best effort: a failure is logged.
pub async fn unsubscribe_upstream(gateway: &Gateway, spec: &UpstreamSpec, uri: &str, carrier: Option<Carrier>) {
    let Some(carrier) = carrier else { return };
    let (_, client) = gateway.client(&spec.name, &spec.replica_id(carrier.replica));
    let Some(session) = client.current_session() else { return };
    if session.conn.id() != carrier.conn || !session.conn.is_open() {
        return;
    }
    let params = json!({ "uri": uri });
    if let Err(e) = session.conn.request(method::RESOURCES_UNSUBSCRIBE, Some(params), CallOptions::default()).await {
        tracing::warn!(server = %spec.name, uri, error = %e, "cannot unsubscribe");
    }
}

/// Whether `carrier` still carries its subscription: its replica's current connection is the one subscribed on,
/// and open. Connects when the replica has no connection (a dead stdio child is started again).
pub async fn still_carried(gateway: &Gateway, spec: &UpstreamSpec, carrier: Carrier) -> bool {
    let (_, client) = gateway.client(&spec.name, &spec.replica_id(carrier.replica));
    match client.session().await {
        Ok(session) => session.conn.id() == carrier.conn && session.conn.is_open(),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(server: &str, uri: &str) -> Resource {
        Resource { server: server.to_owned(), uri: uri.to_owned() }
    }

    #[test]
    fn one_upstream_subscription_per_resource_fanned_out_to_every_agent() {
        let mut reg = Registry::default();
        let (a, b): (Arc<str>, Arc<str>) = (Arc::from("a"), Arc::from("b"));
        let watched = at("fixture", "test://watched");
        assert_eq!(reg.join(&a, &watched, "fixture__test://watched"), Joined::First);
        assert_eq!(reg.join(&b, &watched, "fixture__test://watched"), Joined::Again, "one upstream subscription");
        assert_eq!(reg.join(&a, &watched, "fixture__test://watched"), Joined::Again, "twice is once");
        let carrier = Carrier { replica: 0, conn: ConnId(3) };
        reg.carried(&watched, Some(carrier));
        let updates = reg.updates("fixture", "test://watched");
        assert_eq!(
            updates.iter().map(|u| (&*u.session, u.uri.as_str())).collect::<Vec<_>>(),
            [("a", "fixture__test://watched"), ("b", "fixture__test://watched")]
        );
        assert!(reg.updates("other", "test://watched").is_empty(), "another server's resource of the same URI");
        assert_eq!(reg.leave("a", "fixture__test://watched"), None, "b still listens");
        assert_eq!(reg.leave("a", "fixture__test://watched"), None, "a already left");
        assert_eq!(reg.leave("b", "fixture__test://watched"), Some((watched.clone(), Some(carrier))), "the last");
        assert!(reg.updates("fixture", "test://watched").is_empty());
        assert_eq!(reg.pairs, 0);
    }

    #[test]
    fn an_ended_session_leaves_everything_and_the_registry_is_bounded() {
        let mut reg = Registry::default();
        let (a, b): (Arc<str>, Arc<str>) = (Arc::from("a"), Arc::from("b"));
        assert_eq!(reg.join(&a, &at("s", "x"), "x"), Joined::First);
        assert_eq!(reg.join(&a, &at("s", "y"), "y"), Joined::First);
        assert_eq!(reg.join(&b, &at("s", "y"), "y"), Joined::Again);
        assert_eq!(reg.end_session("a"), [(at("s", "x"), None)], "y keeps b");
        assert_eq!(reg.carriers(), [(at("s", "y"), None)]);
        for i in 1..MAX_SUBSCRIPTIONS {
            assert_ne!(reg.join(&b, &at("s", &i.to_string()), "z"), Joined::Full);
        }
        assert_eq!(reg.join(&a, &at("s", "y"), "y"), Joined::Full);
        assert_eq!(reg.join(&b, &at("s", "y"), "y"), Joined::Again, "a pair already kept is no new one");
    }

    #[test]
    fn the_hook_hands_an_update_to_each_subscriber_until_the_registry_is_gone() {
        let subs = Arc::new(Subscriptions::default());
        let mut rx = subs.updates();
        let a: Arc<str> = Arc::from("a");
        subs.registry().join(&a, &at("s", "test://w"), "test://w");
        let hook = subs.hook("s");
        (hook.0)("test://w");
        (hook.0)("test://unwatched");
        assert_eq!(rx.try_recv().unwrap(), Update { session: a.clone(), uri: "test://w".to_owned() });
        assert!(rx.try_recv().is_err());
        drop(subs);
        (hook.0)("test://w");
    }
}
