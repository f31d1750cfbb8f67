//! An in-process MCP server (legacy era, optionally modern too) speaking the mcpstorm session extension, for the session tests: it grants
//! sessions with a TTL measured on its *own* wall clock (any function of elapsed time: offset, drift, jumps), checks
//! the session id and credential of every request, and logs each request with the verdict it got, so a test can
//! count frames and prove which calls went out on a session the server considered expired.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use mcpstorm_core::AuthScheme;
use mcpstorm_core::jsonrpc::{ErrorCode, ErrorObject, Message, Request};
use mcpstorm_core::mcp::method;
use mcpstorm_core::session::{DISCOVER, MODERN_PROTOCOL_VERSIONS};
use mcpstorm_core::session::{META_AUTH_SCHEMES, META_AUTHORIZATION, META_SESSION, RENEW};
use mcpstorm_core::{DialFuture, Dialer};
use serde_json::{Value, json};
use tokio::io::DuplexStream;
use tokio::time::Instant;

use crate::doubles::peer::Peer;
use crate::pipe::{byte_stream, spawn_server};

/// The server's wall clock in ms, as a function of the (tokio, monotonic) time elapsed since the server started.
pub type WallFn = Arc<dyn Fn(Duration) -> u64 + Send + Sync>;

/// A wall clock at `origin_ms` that runs at real speed.
pub fn steady_wall(origin_ms: u64) -> WallFn {
    Arc::new(move |elapsed| origin_ms + elapsed.as_millis() as u64)
}

#[derive(Clone)]
pub struct ServerConfig {
    /// `None`: grants no session (a plain MCP server).
    pub ttl: Option<Duration>,
    /// Declared schemes (`None`: declares none and checks nothing).
    pub schemes: Option<Vec<AuthScheme>>,
    /// Answers [`RENEW`]; otherwise -32601.
    pub renew: bool,
    /// Answers every `tools/call` with session-not-found, whatever the session.
    pub always_not_found: bool,
    /// Also speaks the modern era: answers `server/discover` (with the grant in its `_meta`).
    pub modern: bool,
    pub wall: WallFn,
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig").field("ttl", &self.ttl).field("schemes", &self.schemes).finish_non_exhaustive()
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            ttl: Some(Duration::from_secs(600)),
            schemes: None,
            renew: true,
            always_not_found: false,
            modern: false,
            wall: steady_wall(1_700_000_000_000),
        }
    }
}

/// How the server answered a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Ok,
    /// The id was unknown (never granted, or dropped).
    UnknownSession,
    /// The id was granted but the server's clock says it expired.
    Expired,
    AuthMismatch,
    MethodNotFound,
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// Which connection (0 for the first dialed).
    pub conn: usize,
    pub method: String,
    /// The session id in `_meta`, if any.
    pub session: Option<String>,
    /// The raw authorization object in `_meta`, if any (it holds the secret: tests only).
    pub authorization: Option<Value>,
    /// Whether the request carried any `io.mcpstorm/` key at all.
    pub extension_keys: bool,
    pub verdict: Verdict,
    pub at: Instant,
}

struct State {
    config: ServerConfig,
    started: Instant,
    next_session: u64,
    /// Session id -> expiry on the server's wall clock.
    sessions: BTreeMap<String, u64>,
    log: Vec<Seen>,
    dials: usize,
    /// Connections the client has closed, in order.
    closed: Vec<usize>,
}

/// The server; clone freely (all clones share state). Also the client's [`Dialer`].
#[derive(Clone)]
pub struct SessionServer(Arc<Mutex<State>>);

impl std::fmt::Debug for SessionServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionServer")
    }
}

impl SessionServer {
    pub fn new(config: ServerConfig) -> SessionServer {
        SessionServer(Arc::new(Mutex::new(State {
            config,
            started: Instant::now(),
            next_session: 0,
            sessions: BTreeMap::new(),
            log: Vec::new(),
            dials: 0,
            closed: Vec::new(),
        })))
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every request so far, in arrival order.
    pub fn log(&self) -> Vec<Seen> {
        self.state().log.clone()
    }

    /// The requests of one method.
    pub fn seen(&self, method: &str) -> Vec<Seen> {
        self.log().into_iter().filter(|s| s.method == method).collect()
    }

    pub fn dials(&self) -> usize {
        self.state().dials
    }

    /// The connections the client has closed so far (by dial order).
    pub fn closed(&self) -> Vec<usize> {
        self.state().closed.clone()
    }

    /// Forgets every session (the `session_expiry` fault).
    pub fn drop_sessions(&self) {
        self.state().sessions.clear();
    }

    /// Changes the accepted schemes (the `auth_rotation` fault).
    pub fn rotate_schemes(&self, schemes: Vec<AuthScheme>) {
        self.state().config.schemes = Some(schemes);
    }

    pub fn set_always_not_found(&self, on: bool) {
        self.state().config.always_not_found = on;
    }

    /// The server's wall clock now.
    pub fn wall_ms(&self) -> u64 {
        let s = self.state();
        (s.config.wall)(s.started.elapsed())
    }

    async fn serve(self, conn: usize, stream: DuplexStream) {
        let mut peer = Peer::new(stream);
        while let Some(Ok(msg)) = peer.recv().await {
            let Message::Request(req) = msg else { continue };
            let reply = self.state().handle(conn, &req);
            if !peer.try_send(reply).await {
                break;
            }
        }
        self.state().closed.push(conn);
    }
}

impl Dialer for SessionServer {
    fn dial(&self) -> DialFuture<'_> {
        Box::pin(async move {
            let conn = {
                let mut s = self.state();
                s.dials += 1;
                s.dials - 1
            };
            let server = self.clone();
            Ok(byte_stream(spawn_server(1 << 16, move |theirs| server.serve(conn, theirs))))
        })
    }

    fn describe(&self) -> String {
        "session-server".into()
    }
}

fn meta(req: &Request) -> Option<&serde_json::Map<String, Value>> {
    req.params.as_ref()?.get("_meta")?.as_object()
}

impl State {
    fn wall(&self) -> u64 {
        (self.config.wall)(self.started.elapsed())
    }

    /// A new grant (registered), as result `_meta`.
    fn grant(&mut self) -> Value {
        let mut out = serde_json::Map::new();
        if let Some(ttl) = self.config.ttl {
            let id = format!("s-{}", self.next_session);
            self.next_session += 1;
            let ttl_ms = ttl.as_millis() as u64;
            let expires = self.wall() + ttl_ms;
            self.sessions.insert(id.clone(), expires);
            out.insert(META_SESSION.into(), json!({"id": id, "ttlMs": ttl_ms, "expiresAtMs": expires}));
        }
        if let Some(schemes) = &self.config.schemes {
            out.insert(META_AUTH_SCHEMES.into(), json!(schemes));
        }
        Value::Object(out)
    }

    /// The session check, then the auth check, as the extension specifies (both before the request runs).
    fn admit(&mut self, req: &Request) -> Verdict {
        if self.config.ttl.is_some() {
            let id = meta(req).and_then(|m| m.get(META_SESSION)).and_then(Value::as_str);
            match id.and_then(|id| self.sessions.get(id).map(|exp| (id.to_owned(), *exp))) {
                None => return Verdict::UnknownSession,
                Some((id, expires)) if self.wall() >= expires => {
                    self.sessions.remove(&id);
                    return Verdict::Expired;
                }
                Some(_) => {}
            }
            if self.config.always_not_found && req.method == method::TOOLS_CALL {
                return Verdict::UnknownSession;
            }
        }
        if let Some(schemes) = self.config.schemes.as_ref().filter(|s| !s.is_empty()) {
            let scheme = meta(req)
                .and_then(|m| m.get(META_AUTHORIZATION))
                .and_then(|a| serde_json::from_value::<AuthScheme>(a.get("scheme")?.clone()).ok());
            if !scheme.is_some_and(|s| schemes.contains(&s)) {
                return Verdict::AuthMismatch;
            }
        }
        Verdict::Ok
    }

    fn handle(&mut self, conn: usize, req: &Request) -> Message {
        let (verdict, reply) = self.answer(req);
        let m = meta(req);
        self.log.push(Seen {
            conn,
            method: req.method.clone(),
            session: m.and_then(|m| m.get(META_SESSION)).and_then(Value::as_str).map(str::to_owned),
            authorization: m.and_then(|m| m.get(META_AUTHORIZATION)).cloned(),
            extension_keys: m.is_some_and(|m| m.keys().any(|k| k.starts_with("io.mcpstorm/"))),
            verdict,
            at: Instant::now(),
        });
        match reply {
            Ok(result) => Message::result(req.id.clone(), result),
            Err(e) => Message::error(Some(req.id.clone()), e),
        }
    }

    fn answer(&mut self, req: &Request) -> (Verdict, Result<Value, ErrorObject>) {
        match req.method.as_str() {
            method::INITIALIZE => {
                let result = json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                    "serverInfo": {"name": "session-server", "version": "1"}, "_meta": self.grant()});
                return (Verdict::Ok, Ok(result));
            }
            DISCOVER if self.config.modern => {
                let result = json!({"supportedVersions": MODERN_PROTOCOL_VERSIONS, "capabilities": {"tools": {}},
                    "ttlMs": 0, "cacheScope": "private", "resultType": "complete", "_meta": self.grant()});
                return (Verdict::Ok, Ok(result));
            }
            method::PING => return (Verdict::Ok, Ok(json!({}))),
            RENEW if !self.config.renew => {
                return (
                    Verdict::MethodNotFound,
                    Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "Method not found")),
                );
            }
            _ => {}
        }
        let verdict = self.admit(req);
        let refusal = match verdict {
            Verdict::Ok => None,
            Verdict::UnknownSession => Some(ErrorObject::new(ErrorCode::SESSION_NOT_FOUND, "Session not found")),
            Verdict::Expired => Some(ErrorObject::new(ErrorCode::SESSION_NOT_FOUND, "Session expired")),
            Verdict::AuthMismatch => {
                let mut e = ErrorObject::new(ErrorCode::AUTH_MISMATCH, "MCP_AUTH_MISMATCH");
                e.data = Some(json!({"accepted": self.config.schemes.clone().unwrap_or_default()}));
                Some(e)
            }
            Verdict::MethodNotFound => None,
        };
        if let Some(e) = refusal {
            return (verdict, Err(e));
        }
        let result = match req.method.as_str() {
            RENEW => {
                let sid = meta(req).and_then(|m| m.get(META_SESSION)).and_then(Value::as_str).unwrap_or_default();
                let ttl_ms = self.config.ttl.unwrap_or_default().as_millis() as u64;
                let expires = self.wall() + ttl_ms;
                self.sessions.insert(sid.to_owned(), expires);
                json!({"_meta": {META_SESSION: {"id": sid, "ttlMs": ttl_ms, "expiresAtMs": expires}}})
            }
            method::TOOLS_LIST => json!({"tools": [
                {"name": "echo", "inputSchema": {"type": "object"}},
                {"name": "lookup", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}}]}),
            method::TOOLS_CALL => json!({"content": [{"type": "text", "text": "ok"}]}),
            _ => {
                return (
                    Verdict::MethodNotFound,
                    Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "Method not found")),
                );
            }
        };
        (Verdict::Ok, Ok(result))
    }
}
