//! The server side of MCP: the front a gateway process serves agents with.
//!
//! A [`Front`] accepts agent connections over Streamable HTTP (both eras, `/mcp`, with `/healthz` and `/readyz`)
//! and stdio ([`serve_stdio`]), answers the lifecycle requests itself (`initialize`, `ping`, `server/discover`)
//! and hands every other request to a [`Service`] with its [`RequestCtx`] (session, era, progress sink,
//! cancellation). [`Front::notify_all`] pushes a notification to every connected agent session.
//!
//! **Sessions survive a replica.** A 2025-11-25 `Mcp-Session-Id` is a signed token carrying the session's state
//! (`token.rs`), under keys from `MCPSTORM_SESSION_KEY` ([`Keys`], rotation documented there): any process with
//! the key continues a session begun on another, with no shared store and no load-balancer affinity. Without the
//! variable each process signs with a random key of its own and sessions do not survive a replica. A DELETE
//! revokes an id in the process that saw it only; elsewhere it lives until `FrontLimits::session_max_age`.
//!
//! **Hostile agents** meet the bounds of [`FrontLimits`] (body, headers, slow heads, sessions, calls in flight,
//! connections, `Origin`, bearer tokens) and get errors while the others are served; every connection runs on a
//! task of its own and every service request under a panic guard (`running.rs`), so a panic costs one request or
//! connection, never the listener.
//!
//! **Stopping**: [`Front::shutdown`] stops accepting, lets requests in flight finish up to the drain deadline, then
//! cancels the rest and closes every connection.

mod admission;
mod asks;
pub mod auth;
pub mod body;
mod dispatch;
mod front;
pub mod headers;
mod http;
mod keys;
mod lifecycle;
mod limits;
mod listen;
mod listener;
mod live;
mod logs;
mod parked;
mod running;
mod service;
mod shared;
pub mod sse;
mod stdio;
mod token;

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};

pub use asks::Asker;
pub use front::Front;
pub use http::MCP_PATH;
pub use keys::{KeyError, Keys, MIN_KEY_BYTES, SESSION_KEY_ENV, SessionKey};
pub use lifecycle::call_result_stamped;
pub use limits::FrontLimits;
pub use listen::{ACKNOWLEDGED, LISTEN, ListenStream, META_SUBSCRIPTION_ID};
pub use listener::{LISTEN_BACKLOG, bind_listener};
pub use logs::Logs;
pub use service::{Progress, RequestCtx, ServerDescription, Service, ServiceAnswer, ServiceFuture};
pub use stdio::STDIO_SESSION;
pub use token::{MAX_TOKEN, Refusal, Revoked, SessionClaims, sign, verify};

/// Serves one agent over newline-delimited JSON-RPC on `reader`/`writer` (the process's stdin and stdout) until
/// it closes its end, with a front of default limits, a random session key and no wall clock (stdio has no session
/// ids). A
/// gateway that also broadcasts notifications keeps a [`Front`] and calls [`Front::serve_stdio`].
pub async fn serve_stdio<R, W>(service: Arc<dyn Service>, reader: R, writer: W) -> Result<(), KeyError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let clock = Arc::new(crate::rt::TokioClock::new(0));
    let front = Front::new(service, Keys::random()?, FrontLimits::default(), clock)?;
    front.serve_stdio(reader, writer).await;
    Ok(())
}
