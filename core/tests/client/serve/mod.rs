//! The MCP front (`mcpstorm_core::serve`) served to real clients: the core's own `McpClient` over Streamable HTTP
//! in both eras and over stdio (`eras`), the signed session ids across two fronts, DELETE and resumption, spoken
//! as raw HTTP (`sessions`), and the security bounds (`limits`). The service behind it is a small echo service.

mod eras;
mod limits;
mod logs;
mod notices;
mod sessions;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use mcpstorm_core::TokioClock;
use mcpstorm_core::jsonrpc::{ErrorCode, ErrorObject};
use mcpstorm_core::mcp::Implementation;
use mcpstorm_core::serve::{
    Front, FrontLimits, Keys, RequestCtx, ServerDescription, Service, ServiceAnswer, ServiceFuture,
};
use mcpstorm_core::{ByteStream, ClientConfig, DialFuture, Dialer, HttpEndpoint, McpClient, SeededRng, TcpDialer};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

/// What the echo service saw, shared with the test.
#[derive(Debug)]
pub struct Seen {
    /// `hold` answers once it gets a permit: the test adds them.
    pub gate: Semaphore,
    /// `hold` calls that observed their cancellation.
    pub cancelled: AtomicUsize,
    /// `hold` calls that started.
    pub held: AtomicUsize,
}

/// Tools: `echo` (its `text` back, with a debug and an info log message and two progress notifications first, each
/// when asked), `whoami` (the context the
/// front gave), `hold` (answers once the test opens the gate, or counts its cancellation), `boom` (panics).
#[derive(Debug, Clone)]
pub struct Echo(pub Arc<Seen>);

impl Echo {
    pub fn new() -> Echo {
        Echo(Arc::new(Seen { gate: Semaphore::new(0), cancelled: AtomicUsize::new(0), held: AtomicUsize::new(0) }))
    }
}

impl Echo {
    /// Until a `hold` call has started.
    pub async fn until_held(&self) {
        until(|| self.0.held.load(Ordering::SeqCst) > 0).await;
    }

    /// Until a `hold` call has seen its cancellation.
    pub async fn until_cancelled(&self) {
        until(|| self.0.cancelled.load(Ordering::SeqCst) > 0).await;
    }
}

/// Waits until `done` holds (checked every few milliseconds; the test asserts the outcome, never the wait).
pub async fn until(done: impl Fn() -> bool) {
    while !done() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn text(s: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": s.into()}], "isError": false})
}

async fn call(seen: Arc<Seen>, ctx: RequestCtx, params: Value) -> Result<Value, ErrorObject> {
    let args = &params["arguments"];
    match params["name"].as_str().unwrap_or_default() {
        "echo" => {
            for level in ["debug", "info"] {
                ctx.logs.send(json!({"level": level, "data": format!("echo {level}")})).await;
            }
            for step in 1..=2 {
                ctx.progress.send(f64::from(step), Some(2.0), Some(format!("step {step}"))).await;
            }
            Ok(text(args["text"].as_str().unwrap_or_default()))
        }
        "whoami" => Ok(text(
            json!({
                "session": ctx.session.as_deref(),
                "era": ctx.era.to_string(),
                "version": ctx.protocol_version,
                "client": ctx.client_info.map(|c| c.name),
            })
            .to_string(),
        )),
        "hold" => {
            seen.held.fetch_add(1, Ordering::SeqCst);
            tokio::select! {
                permit = seen.gate.acquire() => {
                    permit.map(|p| p.forget()).ok();
                    Ok(text("released"))
                }
                () = ctx.cancel.cancelled() => {
                    seen.cancelled.fetch_add(1, Ordering::SeqCst);
                    Err(ErrorObject::new(ErrorCode::REQUEST_CANCELLED, ctx.cancel.reason()))
                }
            }
        }
        "boom" => panic!("the echo service's planted panic"),
        other => Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("unknown tool {other}"))),
    }
}

impl Service for Echo {
    fn request(&self, ctx: RequestCtx, method: String, params: Option<Value>) -> ServiceFuture {
        let seen = self.0.clone();
        Box::pin(async move {
            let answered = match method.as_str() {
                "tools/list" => {
                    let tools = ["echo", "whoami", "hold", "boom"]
                        .map(|n| json!({"name": n, "inputSchema": {"type": "object"}}));
                    Ok(json!({ "tools": tools }))
                }
                "tools/call" => call(seen, ctx, params.unwrap_or_default()).await,
                "logging/setLevel" => Ok(json!({})),
                other => Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, format!("Method not found: {other}"))),
            };
            answered.map(ServiceAnswer::Tree)
        })
    }

    fn describe(&self) -> ServerDescription {
        ServerDescription {
            capabilities: json!({"tools": {"listChanged": true}}),
            server_info: Implementation::new("echo-front", "1.0"),
            instructions: None,
        }
    }
}

/// Wall time for the fronts: a fixed reading, the same in every front of a test, as replicas in NTP sync.
pub fn clock() -> Arc<TokioClock> {
    Arc::new(TokioClock::new(1_790_000_000_000))
}

/// An echo service and its front, with a random key and the default limits.
pub async fn start_default() -> (Echo, Front, String) {
    let echo = Echo::new();
    let (front, addr) = start(&echo, Keys::random().expect("key"), FrontLimits::default()).await;
    (echo, front, addr)
}

/// A front for `echo` on a loopback port.
pub async fn start(echo: &Echo, keys: Keys, limits: FrontLimits) -> (Front, String) {
    let front = Front::new(Arc::new(echo.clone()), keys, limits, clock()).expect("front");
    let addr = front.bind("127.0.0.1:0").await.expect("bind").to_string();
    (front, addr)
}

pub fn test_config(legacy: bool) -> ClientConfig {
    let mut config = ClientConfig { lifecycle_retries: 0, ..ClientConfig::default() };
    if legacy {
        config.era_mode = mcpstorm_core::session::EraMode::Legacy;
    }
    config.discover_timeout = Duration::from_secs(5);
    config.connection.call_deadline = Duration::from_secs(20);
    config.connection.first_response = Duration::from_secs(20);
    config
}

/// The core's client of the front at `addr`, over Streamable HTTP.
pub fn http_client(addr: &str, legacy: bool) -> McpClient {
    let endpoint = HttpEndpoint::new(&format!("http://{addr}/mcp")).expect("endpoint");
    McpClient::new("front", Arc::new(TcpDialer { addr: addr.to_owned() }), test_config(legacy), SeededRng::new(7))
        .with_http(endpoint)
}

/// Dials the front over an in-memory pipe: each dial is a new stdio peer of `front`.
#[derive(Debug)]
pub struct StdioPipe(pub Front);

impl Dialer for StdioPipe {
    fn dial(&self) -> DialFuture<'_> {
        Box::pin(async move {
            let (ours, theirs) = tokio::io::duplex(1 << 16);
            let (reader, writer) = tokio::io::split(theirs);
            let front = self.0.clone();
            tokio::spawn(async move { front.serve_stdio(reader, writer).await });
            let (reader, writer) = tokio::io::split(ours);
            Ok(ByteStream { reader: Box::new(reader), writer: Box::new(writer), guard: None })
        })
    }

    fn describe(&self) -> String {
        "front-stdio".into()
    }
}

/// One raw HTTP exchange's answer.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    /// The `data` of every SSE event that carries a message.
    pub fn events(&self) -> Vec<Value> {
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str(d).ok())
            .collect()
    }
}

/// Sends one request on a new connection and reads the whole answer.
pub async fn send(addr: &str, method: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let response = start_request(addr, method, headers, body).await;
    let (parts, incoming) = response.into_parts();
    let bytes = incoming.collect().await.map(|c| c.to_bytes()).unwrap_or_default();
    Answer { status: parts.status.as_u16(), headers: parts.headers, body: String::from_utf8_lossy(&bytes).into_owned() }
}

/// Sends one request and returns its response with the body unread (an SSE stream to read step by step).
pub async fn start_request(
    addr: &str,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> hyper::Response<Incoming> {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.expect("handshake");
    tokio::spawn(conn);
    let mut request = Request::builder().method(method).uri("/mcp").header("host", addr);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(Full::new(Bytes::from(body.to_owned()))).expect("request");
    sender.send_request(request).await.expect("response")
}

/// The next SSE event's (id, data) from a streaming body (`None` when the stream ended).
pub async fn next_event(body: &mut Incoming, buffer: &mut String) -> Option<(String, String)> {
    loop {
        if let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            let field = |name: &str| event.lines().find_map(|l| l.strip_prefix(name)).map(str::to_owned);
            match (field("id: "), field("data: ")) {
                (Some(id), Some(data)) => return Some((id, data)),
                _ => continue,
            }
        }
        let frame = body.frame().await?.ok()?;
        if let Ok(data) = frame.into_data() {
            buffer.push_str(&String::from_utf8_lossy(&data));
        }
    }
}

pub const JSON_AND_SSE: (&str, &str) = ("accept", "application/json, text/event-stream");
pub const CT_JSON: (&str, &str) = ("content-type", "application/json");

/// An `initialize` body.
pub fn initialize_body(id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw-agent", "version": "0"}
    }})
    .to_string()
}

/// A `tools/call` body.
pub fn call_body(id: u64, tool: &str, arguments: Value, progress: Option<u64>) -> String {
    let mut params = json!({"name": tool, "arguments": arguments});
    if let Some(token) = progress {
        params["_meta"] = json!({"progressToken": token});
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string()
}

/// Opens a 2025-11-25 session on the front at `addr` with raw HTTP: its id.
pub async fn open_session(addr: &str) -> String {
    let init = send(addr, "POST", &[JSON_AND_SSE, CT_JSON], &initialize_body(1)).await;
    assert_eq!(init.status, 200, "{init:?}");
    init.header("mcp-session-id").expect("a session id").to_owned()
}
