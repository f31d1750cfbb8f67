//! The agent-facing side of resource subscriptions: `resources/subscribe` and `resources/unsubscribe` of a
//! federation, an agent session's end, and the task that subscribes again when a carrier connection is gone. The
//! design (one upstream subscription per resource, fan-out, restarts, bounds) is in [`subscriptions`].

use std::sync::{Arc, Weak};

use mcpstorm_core::jsonrpc::{ErrorCode, ErrorObject};
use mcpstorm_core::mcp::method;
use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::federation::Federation;
use super::proxied::Kind;
use super::subscriptions::{self, Joined, MAX_SUBSCRIPTIONS, RESUBSCRIBE_EVERY, Resource, Update};

impl Federation {
    /// An agent session's `resources/subscribe`: refused as `resources/read` is for a URI the agent cannot read;
    /// subscribed upstream if no agent was yet (see [`subscriptions`](super::subscriptions)).
    pub async fn subscribe(self: &Arc<Self>, agent: &Arc<str>, params: Option<Value>) -> Result<Value, ErrorObject> {
        let params = params.unwrap_or_else(|| json!({}));
        let (spec, origin) = self.origin(method::RESOURCES_SUBSCRIBE, Kind::Resources, "uri", &params)?;
        let shown = params["uri"].as_str().unwrap_or_default();
        let at = Resource { server: origin.server, uri: origin.name };
        let _upstream = self.subscriptions().upstream.lock().await;
        let joined = self.subscriptions().registry().join(agent, &at, shown);
        match joined {
            Joined::Again => return Ok(json!({})),
            Joined::Full => {
                let why = format!("this gateway keeps at most {MAX_SUBSCRIPTIONS} resource subscriptions");
                return Err(ErrorObject::new(ErrorCode::INTERNAL_ERROR, why));
            }
            Joined::First => {}
        }
        let hook = self.subscriptions().hook(&at.server);
        let subscribed = subscriptions::subscribe_upstream(self.gateway(), spec, &at.uri, &hook).await;
        let mut registry = self.subscriptions().registry();
        match subscribed {
            Ok(carrier) => registry.carried(&at, Some(carrier)),
            Err(e) => {
                let _ = registry.leave(agent, shown);
                return Err(e);
            }
        }
        drop(registry);
        if !self.subscriptions().keeper.swap(true, std::sync::atomic::Ordering::Relaxed) {
            tokio::spawn(keep_subscriptions(Arc::downgrade(self)));
        }
        Ok(json!({}))
    }

    /// An agent session's `resources/unsubscribe` (of a URI it is not subscribed to: nothing to do); the last
    /// subscriber of a resource unsubscribes it upstream.
    pub async fn unsubscribe(&self, agent: &str, params: Option<Value>) -> Result<Value, ErrorObject> {
        let Some(shown) = params.as_ref().and_then(|p| p.get("uri")).and_then(Value::as_str) else {
            return Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, "resources/unsubscribe needs a string `uri`"));
        };
        let _upstream = self.subscriptions().upstream.lock().await;
        let left = self.subscriptions().registry().leave(agent, shown);
        if let Some((at, carrier)) = left
            && let Some(spec) = self.servers().iter().find(|s| s.name == at.server)
        {
            subscriptions::unsubscribe_upstream(self.gateway(), spec, &at.uri, carrier).await;
        }
        Ok(json!({}))
    }

    /// An agent session ended: its subscriptions go, and those it was the last subscriber of are unsubscribed
    /// upstream (on a task of their own: the front tells this from its DELETE, which does not wait).
    pub fn session_ended(self: &Arc<Self>, agent: &str) {
        let (this, agent) = (self.clone(), agent.to_owned());
        tokio::spawn(async move {
            let _upstream = this.subscriptions().upstream.lock().await;
            let left = this.subscriptions().registry().end_session(&agent);
            for (at, carrier) in left {
                if let Some(spec) = this.servers().iter().find(|s| s.name == at.server) {
                    subscriptions::unsubscribe_upstream(this.gateway(), spec, &at.uri, carrier).await;
                }
            }
        });
    }

    /// The resource updates for agent sessions, as upstreams send them.
    pub fn resource_updates(&self) -> broadcast::Receiver<Update> {
        self.subscriptions().updates()
    }

    /// Subscribes again each subscription whose carrier connection is gone (see
    /// [`subscriptions`](super::subscriptions)).
    async fn resubscribe(&self) {
        let _upstream = self.subscriptions().upstream.lock().await;
        let carriers = self.subscriptions().registry().carriers();
        for (at, carrier) in carriers {
            let Some(spec) = self.servers().iter().find(|s| s.name == at.server) else { continue };
            if let Some(carrier) = carrier
                && subscriptions::still_carried(self.gateway(), spec, carrier).await
            {
                continue;
            }
            let hook = self.subscriptions().hook(&at.server);
            let carrier = match subscriptions::subscribe_upstream(self.gateway(), spec, &at.uri, &hook).await {
                Ok(carrier) => {
                    tracing::info!(server = %at.server, uri = %at.uri, replica = carrier.replica, "subscribed again");
                    Some(carrier)
                }
                Err(e) => {
                    tracing::warn!(server = %at.server, uri = %at.uri, error = %e.message, "cannot subscribe again");
                    None
                }
            };
            self.subscriptions().registry().carried(&at, carrier);
        }
    }
}

/// Checks every [`RESUBSCRIBE_EVERY`] that each subscription still has a carrier (from the first subscription on,
/// until the federation is gone: a reload replaced it and its last request finished).
async fn keep_subscriptions(federation: Weak<Federation>) {
    loop {
        tokio::time::sleep(RESUBSCRIBE_EVERY).await;
        let Some(federation) = federation.upgrade() else { return };
        federation.resubscribe().await;
    }
}
