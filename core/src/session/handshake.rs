//! The legacy (handshake-era, 2025-11-25) lifecycle: `initialize` → result → `notifications/initialized`, with
//! version negotiation. Which era a server speaks is decided first, by [`super::establish`].

use std::time::Duration;

use tokio::time::Instant;

use super::LifecycleConfig;
use crate::conn::{CallOptions, Connection, Lane};
use crate::error::{CallError, LifecycleError, LocalError, TransportError};
use crate::mcp::{InitializeParams, InitializeResult, method};

/// The handshake. A JSON-RPC error answer is [`LifecycleError::InitializeRefused`] carrying the server's error (a
/// -32022 there is a modern server's refusal, which the era detection acts on); a version we do not speak is
/// [`LifecycleError::VersionMismatch`], and the connection is then to be dropped, as the spec requires.
pub(crate) async fn initialize(conn: &Connection, config: &LifecycleConfig) -> Result<InitializeResult, CallError> {
    let Some(ours) = config.protocol_versions.first() else {
        return Err(LifecycleError::VersionMismatch { ours: Vec::new(), theirs: String::new() }.into());
    };
    let params = InitializeParams {
        protocol_version: ours.clone(),
        capabilities: config.client_capabilities.clone(),
        client_info: config.client_info.clone(),
    };
    let limit = config.handshake_timeout;
    let opts = lifecycle_call(limit);
    let raw = conn.request(method::INITIALIZE, serde_json::to_value(params).ok(), opts).await.map_err(|e| match e {
        CallError::Protocol(obj) => LifecycleError::InitializeRefused(obj).into(),
        CallError::Local(LocalError::DeadlineExceeded | LocalError::FirstResponseTimeout(_)) => {
            TransportError::HandshakeTimeout(limit).into()
        }
        other => other,
    })?;
    let init: InitializeResult =
        serde_json::from_value(raw).map_err(|e| LifecycleError::MalformedInitialize(e.to_string()))?;
    if !config.protocol_versions.contains(&init.protocol_version) {
        // The spec: a client that cannot speak the server's version should disconnect.
        return Err(LifecycleError::VersionMismatch {
            ours: config.protocol_versions.clone(),
            theirs: init.protocol_version,
        }
        .into());
    }
    conn.notify(method::INITIALIZED, None).await?;
    Ok(init)
}

/// A lifecycle request's options: the priority lane, and `limit` both for its first response and in all.
pub(super) fn lifecycle_call(limit: Duration) -> CallOptions {
    CallOptions {
        lane: Lane::Priority,
        deadline: Some(Instant::now() + limit),
        first_response: Some(limit),
        ..CallOptions::default()
    }
}
