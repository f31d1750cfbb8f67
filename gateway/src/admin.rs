//! The operators' listener: `GET /metrics` (Prometheus text, no token: it holds names and numbers, never a
//! secret) and the admin API, every route of which needs `Authorization: Bearer <token>` (401 without it):
//!
//! - `GET /admin/breakers`: every breaker by server, replica and tool with its state and window counts, every
//!   replica's health score, every bulkhead ([`Protection`]), and every configured replica with its state (`ready`,
//!   `connecting`, `failed`) and last error, whether or not it ever answered.
//! - `POST /admin/breakers` with `{"server", "tool", "replica"?, "action", "fallback"?}`: the design's manual
//!   switch. `action` is `force_open`, `force_degrade` (with `fallback`, a tool named in the degraded result) or
//!   `reset`; without `replica` it applies to every replica of the server. Answers the breakers it changed.
//! - `POST /admin/drain`: `/readyz` answers 503 from now on, so a load balancer moves new agents elsewhere, while
//!   this process goes on serving the sessions it has.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue, WWW_AUTHENTICATE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use mcpstorm_core::Secret;
use mcpstorm_core::gateway::Operation;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::net::TcpListener;

use super::federation::{Current, current};
use super::metrics::Metrics;
use super::state::Protection;

/// The largest admin request body.
const MAX_BODY: usize = 64 << 10;

/// What the admin listener serves.
#[derive(Debug)]
pub struct Admin {
    pub current: Current,
    pub metrics: Arc<Metrics>,
    /// The bearer token; `None` when `[admin]` is absent (then only `/metrics` is served).
    pub token: Option<Secret>,
    pub draining: Arc<AtomicBool>,
}

/// One `POST /admin/breakers` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Switch {
    server: String,
    tool: String,
    #[serde(default)]
    replica: Option<String>,
    action: Action,
    #[serde(default)]
    fallback: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Action {
    ForceOpen,
    ForceDegrade,
    Reset,
}

type Reply = Response<Full<Bytes>>;

fn reply(status: StatusCode, body: &Value) -> Reply {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn error(status: StatusCode, message: impl Into<String>) -> Reply {
    reply(status, &json!({ "error": message.into() }))
}

/// Compares in time independent of where the first difference is, so a caller cannot learn the token byte by byte.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Admin {
    /// Serves connections from `listener` until the task is dropped.
    pub async fn serve(self: Arc<Self>, listener: TcpListener) {
        loop {
            let Ok((stream, _)) = listener.accept().await else { continue };
            let admin = self.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request| {
                    let admin = admin.clone();
                    async move { Ok::<_, Infallible>(admin.route(request).await) }
                });
                let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    }

    async fn route(&self, request: Request<Incoming>) -> Reply {
        let path = request.uri().path().to_owned();
        if path == "/metrics" && request.method() == Method::GET {
            let federation = current(&self.current);
            let text = self.metrics.scrape(&self.protection(), federation.sync().map(|s| s.status()));
            let mut response = Response::new(Full::new(Bytes::from(text)));
            response.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
            );
            return response;
        }
        let Some(token) = &self.token else {
            return error(StatusCode::NOT_FOUND, "the admin API is off: add an [admin] table to the config");
        };
        let presented = request.headers().get(AUTHORIZATION).and_then(|v| v.as_bytes().strip_prefix(b"Bearer "));
        if !presented.is_some_and(|p| same(p, token.expose().as_bytes())) {
            let mut response = error(StatusCode::UNAUTHORIZED, "a bearer token is required");
            response.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return response;
        }
        match (request.method().clone(), path.as_str()) {
            (Method::GET, "/admin/breakers") => {
                let mut state = serde_json::to_value(self.protection()).unwrap_or_default();
                // Every configured replica, whatever its state: one that never answered has no breaker yet.
                let replicas = current(&self.current).replica_states();
                state["replicas"] = serde_json::to_value(replicas).unwrap_or_default();
                reply(StatusCode::OK, &state)
            }
            (Method::POST, "/admin/breakers") => match read_json::<Switch>(request).await {
                Ok(switch) => self.switch(&switch),
                Err(e) => e,
            },
            (Method::POST, "/admin/drain") => {
                self.draining.store(true, Ordering::Relaxed);
                tracing::info!("draining: /readyz answers 503 from now on");
                reply(StatusCode::ACCEPTED, &json!({ "draining": true }))
            }
            (_, "/admin/breakers" | "/admin/drain") => error(StatusCode::METHOD_NOT_ALLOWED, "method not allowed"),
            _ => error(StatusCode::NOT_FOUND, format!("no admin route {path}")),
        }
    }

    fn protection(&self) -> Protection {
        current(&self.current).protection()
    }

    fn switch(&self, switch: &Switch) -> Reply {
        let federation = current(&self.current);
        let Some(server) = federation.servers().iter().find(|s| s.name == switch.server) else {
            return error(StatusCode::NOT_FOUND, format!("/server: no server {:?}", switch.server));
        };
        let replicas: Vec<String> = match &switch.replica {
            Some(r) if (0..server.replicas.len()).any(|i| server.replica_id(i) == *r) => vec![r.clone()],
            Some(r) => {
                return error(
                    StatusCode::NOT_FOUND,
                    format!("/replica: server {:?} has no replica {r:?}", server.name),
                );
            }
            None => (0..server.replicas.len()).map(|i| server.replica_id(i)).collect(),
        };
        if switch.fallback.is_some() && !matches!(switch.action, Action::ForceDegrade) {
            return error(StatusCode::BAD_REQUEST, "/fallback: only `force_degrade` takes a fallback");
        }
        let op = match switch.action {
            Action::ForceOpen => Operation::ForceOpen,
            Action::ForceDegrade => Operation::ForceDegrade { fallback: switch.fallback.clone() },
            Action::Reset => Operation::Reset,
        };
        let gateway = federation.gateway();
        let mut changed = Vec::new();
        for replica in &replicas {
            match federation.operate(replica, &switch.tool, &op) {
                Ok(t) => changed.push(json!({
                    "replica": replica,
                    "tool": switch.tool,
                    "state": gateway.breaker(replica, &switch.tool).map(|g| <&str>::from(g.state())),
                    "changed": t.is_some(),
                })),
                Err(e) => return error(StatusCode::CONFLICT, format!("{replica}: {e}")),
            }
        }
        tracing::info!(server = %switch.server, tool = %switch.tool, action = ?switch.action, "manual switch");
        reply(StatusCode::OK, &json!({ "breakers": changed }))
    }
}

/// The request's body as `T`: 413 beyond [`MAX_BODY`], 400 with serde's message naming a missing, unknown or mistyped field.
async fn read_json<T: serde::de::DeserializeOwned>(request: Request<Incoming>) -> Result<T, Reply> {
    let body = Limited::new(request.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|_| error(StatusCode::PAYLOAD_TOO_LARGE, format!("the body is over {MAX_BODY} bytes")))?
        .to_bytes();
    let value: Value = serde_json::from_slice(&body)
        .map_err(|e| error(StatusCode::BAD_REQUEST, format!("the body is not JSON: {e}")))?;
    serde_json::from_value(value).map_err(|e| error(StatusCode::BAD_REQUEST, format!("{e}")))
}
