//! A 2026-07-28 agent's `subscriptions/listen`: the stream that replaces that era's `resources/subscribe` and
//! `list_changed` notifications. The gateway honours `toolsListChanged` (an upstream's change to the names agents see)
//! and `resourceSubscriptions` (each URI subscribed upstream as a 2025-11-25 agent's `resources/subscribe` is, under a
//! subscription of its own; a URI that cannot be subscribed is left out of the acknowledgement, as the spec has a
//! server omit what it does not honour). The stream lives until the agent closes it (every subscription it made is
//! then dropped upstream as a session's end drops them) or the gateway stops, when it ends with a result.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mcpstorm_core::jsonrpc::{ErrorCode, ErrorObject};
use mcpstorm_core::mcp::method;
use mcpstorm_core::serve::{ACKNOWLEDGED, ListenStream, RequestCtx};
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use super::federation::Federation;

/// Numbers this process's subscriptions, whose ids are only their agents' request ids.
static NEXT: AtomicU64 = AtomicU64::new(1);

/// The most URIs one subscription may name (each is an upstream subscription).
const MAX_URIS: usize = 256;

pub async fn listen(
    federation: &Arc<Federation>,
    ctx: RequestCtx,
    params: Option<Value>,
) -> Result<Value, ErrorObject> {
    let Some(stream) = ctx.listen.clone() else {
        return Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "subscriptions/listen is part of 2026-07-28 only"));
    };
    let filter = params.as_ref().and_then(|p| p.get("notifications")).and_then(Value::as_object);
    let Some(filter) = filter else {
        return Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, "subscriptions/listen needs a `notifications` object"));
    };
    let tools = filter.get("toolsListChanged").and_then(Value::as_bool) == Some(true);
    let uris = match filter.get("resourceSubscriptions") {
        None => Vec::new(),
        Some(Value::Array(list)) if list.len() <= MAX_URIS && list.iter().all(Value::is_string) => {
            list.iter().filter_map(Value::as_str).map(str::to_owned).collect()
        }
        Some(_) => {
            let why = format!("`resourceSubscriptions` must be a list of at most {MAX_URIS} URIs");
            return Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, why));
        }
    };
    // The subscriptions module keys subscriptions by agent session; this stream is one of its own.
    let session: Arc<str> = Arc::from(format!("listen:{}", NEXT.fetch_add(1, Ordering::Relaxed)));
    let mut updates = federation.resource_updates();
    let mut honoured_uris = Vec::new();
    for uri in uris {
        match federation.subscribe(&session, Some(json!({ "uri": uri }))).await {
            Ok(_) => honoured_uris.push(Value::String(uri)),
            Err(e) => tracing::info!(%uri, error = %e.message, "a listened resource could not be subscribed"),
        }
    }
    let mut honoured = Map::new();
    if tools {
        honoured.insert("toolsListChanged".into(), Value::Bool(true));
    }
    if !honoured_uris.is_empty() {
        honoured.insert("resourceSubscriptions".into(), Value::Array(honoured_uris));
    }
    let mut changes = federation.changes();
    let acknowledged = stream.notify(ACKNOWLEDGED, json!({ "notifications": honoured })).await;
    if acknowledged {
        relay(&stream, &ctx, tools, &session, &mut changes, &mut updates).await;
    }
    federation.session_ended(&session);
    Ok(json!({ "_meta": stream.meta() }))
}

/// Passes on what the agent opted in to, until the agent goes or the gateway stops.
async fn relay(
    stream: &ListenStream,
    ctx: &RequestCtx,
    tools: bool,
    session: &Arc<str>,
    changes: &mut tokio::sync::watch::Receiver<u64>,
    updates: &mut broadcast::Receiver<crate::subscriptions::Update>,
) {
    loop {
        let sent = tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => return,
            () = stream.closing.cancelled() => return,
            changed = changes.changed(), if tools => match changed {
                Ok(()) => stream.notify(method::TOOLS_LIST_CHANGED, json!({})).await,
                Err(_) => return,
            },
            update = updates.recv() => match update {
                Ok(update) if update.session == *session => {
                    stream.notify(method::RESOURCES_UPDATED, json!({ "uri": update.uri })).await
                }
                Ok(_) => true,
                Err(broadcast::error::RecvError::Lagged(skipped)) => {
                    tracing::warn!(skipped, "resource updates skipped: a subscription stream fell behind");
                    true
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
        };
        if !sent {
            return;
        }
    }
}
