//! A 2026-07-28 `subscriptions/listen` request's stream, as the service sees it: the request's id (which names the
//! subscription in every message it carries), where its notifications go, and the signal that the front is stopping
//! (a subscription never ends by itself, so it ends there rather than holding the drain to its deadline).

use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::cancel::CancelToken;
use crate::jsonrpc::{Message, RequestId};

/// The method.
pub const LISTEN: &str = "subscriptions/listen";
/// The `_meta` key naming the subscription on its acknowledgement, its notifications and its final result.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// The first notification of a subscription: what of the request's filter the server honours.
pub const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

/// See the module documentation.
#[derive(Debug, Clone)]
pub struct ListenStream {
    pub id: RequestId,
    out: Option<mpsc::Sender<Message>>,
    /// Fired when the front starts stopping.
    pub closing: CancelToken,
}

impl ListenStream {
    pub(crate) fn new(id: RequestId, out: Option<mpsc::Sender<Message>>, closing: CancelToken) -> ListenStream {
        ListenStream { id, out, closing }
    }

    /// `params._meta` naming this subscription.
    pub fn meta(&self) -> Value {
        json!({ META_SUBSCRIPTION_ID: self.id })
    }

    /// Sends `method` with `params` (its `_meta` naming the subscription) on the stream, waiting while it is full.
    /// False when the stream has gone (the agent closed it, which also cancels the request).
    pub async fn notify(&self, method: &str, mut params: Value) -> bool {
        let Some(out) = &self.out else { return false };
        if let Some(obj) = params.as_object_mut() {
            obj.insert("_meta".into(), self.meta());
        }
        out.send(Message::notification(method, Some(params))).await.is_ok()
    }
}
