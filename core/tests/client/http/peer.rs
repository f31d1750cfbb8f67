//! A scripted HTTP/1.1 peer on loopback TCP, written byte by byte so that it can also misbehave: every request is
//! logged, and a script decides what is written back (JSON, SSE chunks, a cut, a wait for the client to hang up).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

/// One request as the peer read it.
#[derive(Debug, Clone)]
pub struct Req {
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Req {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The JSON-RPC method of a POST (`GET`/`DELETE` for those).
    pub fn rpc(&self) -> String {
        match self.json().get("method").and_then(Value::as_str) {
            Some(m) => m.to_owned(),
            None => self.method.clone(),
        }
    }

    pub fn id(&self) -> Value {
        self.json().get("id").cloned().unwrap_or(Value::Null)
    }
}

/// What the peer does next on the connection.
#[derive(Debug, Clone)]
pub enum Act {
    Write(Vec<u8>),
    Sleep(Duration),
    /// Close the connection (mid-stream, if a stream is open).
    Close,
    /// Read until the client hangs up, then set the flag.
    AwaitHangUp(Arc<AtomicBool>),
    /// Never answer (the connection stays open).
    Hang,
}

pub type Script = Arc<dyn Fn(&Req) -> Vec<Act> + Send + Sync>;

#[derive(Clone)]
pub struct Peer {
    pub addr: String,
    pub log: Arc<Mutex<Vec<Req>>>,
}

impl Peer {
    pub async fn start(script: Script) -> Peer {
        Self::start_with(script, |s| async move { Some(Box::new(s) as Box<dyn Io>) }).await
    }

    /// As `start`, each accepted stream first passed through `wrap` (TLS).
    pub async fn start_with<F, Fut>(script: Script, wrap: F) -> Peer
    where
        F: Fn(tokio::net::TcpStream) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<Box<dyn Io>>> + Send,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("scripted peer");
        let addr = listener.local_addr().expect("scripted peer").to_string();
        let log = Arc::new(Mutex::new(Vec::new()));
        let peer = Peer { addr, log: log.clone() };
        let wrap = Arc::new(wrap);
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (script, log, wrap) = (script.clone(), log.clone(), wrap.clone());
                tokio::spawn(async move {
                    if let Some(io) = wrap(tcp).await {
                        serve(io, script, log).await;
                    }
                });
            }
        });
        peer
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    pub fn requests(&self) -> Vec<Req> {
        self.log.lock().expect("scripted peer").clone()
    }

    pub fn count(&self, rpc: &str) -> usize {
        self.requests().iter().filter(|r| r.rpc() == rpc).count()
    }

    /// Waits (bounded) until a request matching `pred` has been logged.
    pub async fn wait_for(&self, pred: impl Fn(&Req) -> bool) -> Req {
        for _ in 0..500 {
            if let Some(r) = self.requests().into_iter().find(&pred) {
                return r;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the expected request never came: {:#?}", self.requests());
    }
}

pub trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

async fn serve(mut io: Box<dyn Io>, script: Script, log: Arc<Mutex<Vec<Req>>>) {
    let mut buf = Vec::new();
    while let Some(req) = read_request(&mut io, &mut buf).await {
        log.lock().expect("scripted peer").push(req.clone());
        for act in script(&req) {
            match act {
                Act::Write(bytes) => {
                    if io.write_all(&bytes).await.is_err() {
                        return;
                    }
                }
                Act::Sleep(d) => tokio::time::sleep(d).await,
                Act::Close => return,
                Act::AwaitHangUp(flag) => {
                    let mut sink = [0u8; 1024];
                    while matches!(io.read(&mut sink).await, Ok(n) if n > 0) {}
                    flag.store(true, Ordering::SeqCst);
                    return;
                }
                Act::Hang => std::future::pending::<()>().await,
            }
        }
    }
}

async fn read_request(io: &mut Box<dyn Io>, buf: &mut Vec<u8>) -> Option<Req> {
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let mut chunk = [0u8; 4096];
        let n = io.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    buf.drain(..head_end + 4);
    let mut lines = head.split("\r\n");
    let method = lines.next()?.split(' ').next()?.to_owned();
    let headers: Vec<(String, String)> =
        lines.filter_map(|l| l.split_once(':').map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))).collect();
    let len = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    while buf.len() < len {
        let mut chunk = [0u8; 4096];
        let n = io.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = buf.drain(..len).collect();
    Some(Req { method, headers, body })
}

/// A complete response with a body and `Content-Length`.
pub fn respond(status: &str, content_type: &str, headers: &[(&str, &str)], body: &[u8]) -> Act {
    let mut out = format!("HTTP/1.1 {status}\r\ncontent-length: {}\r\n", body.len());
    if !content_type.is_empty() {
        out.push_str(&format!("content-type: {content_type}\r\n"));
    }
    for (n, v) in headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    Act::Write(bytes)
}

pub fn json_reply(req: &Req, result: Value) -> Act {
    json_with(req, result, &[])
}

pub fn json_with(req: &Req, result: Value, headers: &[(&str, &str)]) -> Act {
    let body = json!({"jsonrpc": "2.0", "id": req.id(), "result": result});
    respond("200 OK", "application/json", headers, body.to_string().as_bytes())
}

pub fn accepted() -> Act {
    respond("202 Accepted", "", &[], b"")
}

/// The head of a chunked SSE response.
pub fn sse_head(headers: &[(&str, &str)]) -> Act {
    let mut out = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n".to_owned();
    for (n, v) in headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str("\r\n");
    Act::Write(out.into_bytes())
}

/// One chunk of the SSE body.
pub fn chunk(text: &str) -> Act {
    Act::Write(format!("{:x}\r\n{text}\r\n", text.len()).into_bytes())
}

pub fn sse_event(msg: &Value) -> Act {
    chunk(&format!("data: {msg}\n\n"))
}

pub fn end_chunks() -> Act {
    Act::Write(b"0\r\n\r\n".to_vec())
}

pub fn result_msg(req: &Req, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": req.id(), "result": result})
}

pub fn tools() -> Value {
    json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]})
}

pub fn text(t: &str) -> Value {
    json!({"content": [{"type": "text", "text": t}], "isError": false})
}

pub fn init_result() -> Value {
    json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "peer", "version": "1"}})
}

pub fn discover_result() -> Value {
    json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}, "ttlMs": 0})
}

/// A legacy (2025-11-25) server's answer to the requests every test makes; `None` for the rest.
/// `server/discover` is refused as the Python SDK refuses it without a session: 400 and a JSON-RPC error.
pub fn legacy_basics(req: &Req, session: &str) -> Option<Vec<Act>> {
    let acts = match (req.method.as_str(), req.rpc().as_str()) {
        ("GET", _) => vec![respond("405 Method Not Allowed", "", &[], b"")],
        ("DELETE", _) => vec![respond("200 OK", "", &[], b"")],
        (_, "server/discover") => {
            let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": "Bad Request: Missing session ID"}});
            vec![respond("400 Bad Request", "application/json", &[], body.to_string().as_bytes())]
        }
        (_, "initialize") => vec![json_with(req, init_result(), &[("mcp-session-id", session)])],
        (_, m) if m.starts_with("notifications/") => vec![accepted()],
        (_, "tools/list") => vec![json_reply(req, tools())],
        _ => return None,
    };
    Some(acts)
}
