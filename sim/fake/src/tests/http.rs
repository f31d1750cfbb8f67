//! Streamable HTTP, both revisions, on the wire: a hyper client over an in-memory pipe, paused time.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::{SendRequest, handshake};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

use super::*;
use crate::{HttpGet, HttpResponse, Transport};

pub(super) const LEGACY: &str = "2025-11-25";
pub(super) const MODERN: &str = "2026-07-28";

/// The built-in tools over HTTP, answering as `response` says.
pub(super) fn http_server(response: HttpResponse) -> FakeServer {
    server(FakeServerConfig { transport: Transport::Http, http_response: response, ..FakeServerConfig::builtin() })
}

/// One HTTP/1.1 connection to a fake.
pub(super) struct Http {
    sender: SendRequest<Full<Bytes>>,
}

impl Http {
    pub async fn connect(server: &FakeServer) -> Http {
        let io = TokioIo::new(server.connect_pipe());
        let (sender, conn) = handshake(io).await.expect("HTTP handshake");
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                eprintln!("client conn: {e:?}");
            }
        });
        Http { sender }
    }

    pub async fn send(&mut self, method: Method, headers: &[(&str, &str)], body: &str) -> Response<Incoming> {
        let mut builder = Request::builder().method(method).uri("/mcp");
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let request = builder.body(Full::new(Bytes::from(body.to_owned()))).expect("a valid request");
        self.sender.ready().await.expect("connection ready");
        self.sender.send_request(request).await.expect("a response")
    }

    /// POSTs, reads the whole answer (so the connection can carry the next request) and returns its status.
    pub async fn status(&mut self, headers: &[(&str, &str)], msg: Value) -> StatusCode {
        let response = self.post(headers, msg).await;
        let status = response.status();
        let _ = response.into_body().collect().await;
        status
    }

    /// POSTs one JSON-RPC message with the usual headers plus `headers`.
    pub async fn post(&mut self, headers: &[(&str, &str)], msg: Value) -> Response<Incoming> {
        let mut all = vec![("content-type", "application/json"), ("accept", "application/json, text/event-stream")];
        all.extend_from_slice(headers);
        self.send(Method::POST, &all, &msg.to_string()).await
    }
}

pub(super) fn rpc(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

pub(super) fn init() -> Value {
    rpc(
        0,
        "initialize",
        json!({"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    )
}

pub(super) fn header<'a>(response: &'a Response<Incoming>, name: &str) -> Option<&'a str> {
    response.headers().get(name).and_then(|v| v.to_str().ok())
}

pub(super) async fn json_body(response: Response<Incoming>) -> Value {
    let bytes = response.into_body().collect().await.expect("a whole body").to_bytes();
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&bytes)))
}

/// Reads SSE events (id, data) off a streaming body.
pub(super) struct Events {
    body: Incoming,
    buf: String,
}

impl Events {
    pub fn of(response: Response<Incoming>) -> Events {
        assert_eq!(header(&response, "content-type"), Some("text/event-stream"));
        Events { body: response.into_body(), buf: String::new() }
    }

    /// The next event, `None` at the end of the stream, `Err` when the connection broke.
    pub async fn next(&mut self) -> Result<Option<(String, String)>, String> {
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..end + 2).collect();
                if block.starts_with(':') {
                    continue;
                }
                let field = |name: &str| {
                    block
                        .lines()
                        .find_map(|l| l.strip_prefix(name))
                        .map(|v| v.trim_start().to_owned())
                        .unwrap_or_default()
                };
                return Ok(Some((field("id:"), field("data:"))));
            }
            match self.body.frame().await {
                None => return Ok(None),
                Some(Err(e)) => return Err(e.to_string()),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.buf.push_str(&String::from_utf8_lossy(&data));
                    }
                }
            }
        }
    }

    /// Every remaining event's data, parsed (the priming event's empty data skipped).
    pub async fn messages(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        while let Some((_, data)) = self.next().await.expect("the stream is whole") {
            if !data.is_empty() {
                out.push(serde_json::from_str(&data).expect("SSE data is JSON"));
            }
        }
        out
    }
}

/// Initializes a legacy session: its id.
pub(super) async fn open_session(http: &mut Http) -> String {
    let response = http.post(&[], init()).await;
    assert_eq!(response.status(), StatusCode::OK);
    let id = header(&response, "mcp-session-id").expect("a session id on initialize").to_owned();
    assert!(id.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{id}");
    let _ = response.into_body().collect().await;
    id
}

/// A modern request's params and headers.
pub(super) fn modern_call(id: i64, tool: &str, args: Value) -> Value {
    let meta =
        json!({"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}});
    rpc(id, "tools/call", json!({"name": tool, "arguments": args, "_meta": meta}))
}

// ---------------------------------------------------------------------------------------------------------------
// 2025-11-25

#[tokio::test(start_paused = true)]
async fn legacy_json_sessions_are_issued_required_and_deleted() {
    let fake = http_server(HttpResponse::Json);
    let mut http = Http::connect(&fake).await;
    let session = open_session(&mut http).await;
    let v = [("mcp-protocol-version", LEGACY)];
    let with = [("mcp-protocol-version", LEGACY), ("mcp-session-id", session.as_str())];
    assert_eq!(http.post(&with, json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await.status(), 202);
    let list = http.post(&with, rpc(1, "tools/list", json!({}))).await;
    assert_eq!((list.status(), header(&list, "content-type")), (StatusCode::OK, Some("application/json")));
    assert_eq!(json_body(list).await["result"]["tools"].as_array().map(Vec::len), Some(3));
    // No session: 400; an unknown one: 404; an unsupported version header: 400.
    assert_eq!(http.post(&v, rpc(2, "tools/list", json!({}))).await.status(), StatusCode::BAD_REQUEST);
    let unknown = [("mcp-protocol-version", LEGACY), ("mcp-session-id", "nope")];
    assert_eq!(http.post(&unknown, rpc(3, "tools/list", json!({}))).await.status(), StatusCode::NOT_FOUND);
    let old = [("mcp-protocol-version", "1999-01-01"), ("mcp-session-id", session.as_str())];
    assert_eq!(http.post(&old, rpc(4, "tools/list", json!({}))).await.status(), StatusCode::BAD_REQUEST);
    // A call works in the session; DELETE ends it, after which it is 404.
    let call = http.post(&with, rpc(5, "tools/call", json!({"name": "echo", "arguments": {"message": "hi"}}))).await;
    assert_eq!(json_body(call).await["result"]["content"][0]["text"], "hi");
    assert_eq!(http.send(Method::DELETE, &with, "").await.status(), StatusCode::OK);
    assert_eq!(http.post(&with, rpc(6, "tools/list", json!({}))).await.status(), StatusCode::NOT_FOUND);
    let stats = fake.stats();
    assert_eq!((stats.http_sessions_opened, stats.http_sessions_deleted, stats.http_sessions_missing), (1, 1, 1));
    assert_eq!((stats.http_sessions_not_found, stats.http_header_rejections, stats.completed), (2, 1, 1));
}

#[tokio::test(start_paused = true)]
async fn legacy_sessions_expire_by_the_servers_clock() {
    let fake = server(FakeServerConfig {
        transport: Transport::Http,
        http_session_ttl_ms: Some(1000),
        ..FakeServerConfig::builtin()
    });
    let mut http = Http::connect(&fake).await;
    let session = open_session(&mut http).await;
    let with = [("mcp-session-id", session.as_str())];
    assert_eq!(http.status(&with, rpc(1, "tools/list", json!({}))).await, StatusCode::OK);
    tokio::time::sleep(Duration::from_millis(1001)).await;
    assert_eq!(http.status(&with, rpc(2, "tools/list", json!({}))).await, StatusCode::NOT_FOUND);
}

#[tokio::test(start_paused = true)]
async fn legacy_sse_streams_prime_then_progress_then_the_response_with_ids() {
    let fake = http_server(HttpResponse::Sse);
    let mut http = Http::connect(&fake).await;
    let session = open_session(&mut http).await;
    let with = [("mcp-session-id", session.as_str())];
    let params =
        json!({"name": "slow_progress", "arguments": {"steps": 3, "step_ms": 100}, "_meta": {"progressToken": "p"}});
    let mut events = Events::of(http.post(&with, rpc(7, "tools/call", params)).await);
    let mut ids = Vec::new();
    let mut data = Vec::new();
    while let Some((id, d)) = events.next().await.expect("whole") {
        ids.push(id);
        data.push(d);
    }
    assert_eq!(data.len(), 5, "priming, 3 progress, response: {data:?}");
    assert_eq!(data[0], "", "the priming event has an id and no data");
    let stream = ids[0].split('-').next().unwrap_or_default().to_owned();
    assert_eq!(ids, (0..5).map(|i| format!("{stream}-{i}")).collect::<Vec<_>>());
    let progress: Value = serde_json::from_str(&data[1]).expect("JSON");
    assert_eq!(
        (progress["method"].as_str(), progress["params"]["progress"].as_f64()),
        (Some("notifications/progress"), Some(1.0))
    );
    let response: Value = serde_json::from_str(&data[4]).expect("JSON");
    assert_eq!(
        (response["id"].as_i64(), response["result"]["content"][0]["text"].as_str()),
        (Some(7), Some("done 3 steps"))
    );
}

#[tokio::test(start_paused = true)]
async fn legacy_cancellation_by_notification_reaches_the_call_on_another_connection() {
    let fake = http_server(HttpResponse::Sse);
    let mut http = Http::connect(&fake).await;
    let session = open_session(&mut http).await;
    let with = [("mcp-session-id", session.as_str())];
    let mut events = Events::of(
        http.post(&with, rpc(9, "tools/call", json!({"name": "sleep_ms", "arguments": {"ms": 10_000}}))).await,
    );
    assert_eq!(events.next().await.expect("whole").map(|e| e.1), Some(String::new()), "priming");
    let mut other = Http::connect(&fake).await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}});
    assert_eq!(other.post(&with, cancel).await.status(), StatusCode::ACCEPTED);
    assert_eq!(events.messages().await, Vec::<Value>::new(), "a cancelled request is never answered");
    let stats = fake.stats();
    assert_eq!((stats.cancelled, stats.completed, stats.in_progress), (1, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn legacy_get_streams_server_messages_or_is_405() {
    let fake = http_server(HttpResponse::Sse);
    let mut http = Http::connect(&fake).await;
    let session = open_session(&mut http).await;
    let with = [("mcp-session-id", session.as_str()), ("accept", "text/event-stream")];
    let mut events = Events::of(http.send(Method::GET, &with, "").await);
    assert_eq!(events.next().await.expect("whole").map(|e| e.1), Some(String::new()), "priming");
    let drift = crate::Drift::Version { version: "2.0.0".into() };
    assert_eq!(fake.control().drift(&drift, true), Ok(1), "the GET stream is registered for broadcasts");
    let (_, data) = events.next().await.expect("whole").expect("an event");
    assert_eq!(serde_json::from_str::<Value>(&data).expect("JSON")["method"], "notifications/tools/list_changed");

    let no_get = server(FakeServerConfig {
        transport: Transport::Http,
        http_get: HttpGet::MethodNotAllowed,
        ..FakeServerConfig::builtin()
    });
    let mut http = Http::connect(&no_get).await;
    let session = open_session(&mut http).await;
    let response = http.send(Method::GET, &[("mcp-session-id", session.as_str())], "").await;
    assert_eq!((response.status(), header(&response, "allow")), (StatusCode::METHOD_NOT_ALLOWED, None));
    assert_eq!(no_get.stats().http_refused, 1);
}

// ---------------------------------------------------------------------------------------------------------------
// 2026-07-28

#[tokio::test(start_paused = true)]
async fn modern_requests_mirror_their_headers_or_get_the_spec_errors() {
    let fake = http_server(HttpResponse::Json);
    let mut http = Http::connect(&fake).await;
    let call = modern_call(1, "echo", json!({"message": "hi"}));
    let good = [("mcp-protocol-version", MODERN), ("mcp-method", "tools/call"), ("mcp-name", "echo")];
    let ok = http.post(&good, call.clone()).await;
    assert_eq!(ok.status(), StatusCode::OK);
    let body = json_body(ok).await;
    assert_eq!(
        (body["result"]["content"][0]["text"].as_str(), body["result"]["resultType"].as_str()),
        (Some("hi"), Some("complete"))
    );
    // A sentinel-encoded name is decoded before the comparison.
    let encoded = [("mcp-protocol-version", MODERN), ("mcp-method", "tools/call"), ("mcp-name", "=?base64?ZWNobw==?=")];
    assert_eq!(http.post(&encoded, call.clone()).await.status(), StatusCode::OK);
    let mismatch = |headers: &'static [(&'static str, &'static str)], body: Value| (headers, body);
    let bad = [
        mismatch(&[("mcp-method", "tools/call"), ("mcp-name", "echo")], call.clone()),
        mismatch(&[("mcp-protocol-version", MODERN), ("mcp-name", "echo")], call.clone()),
        mismatch(&[("mcp-protocol-version", MODERN), ("mcp-method", "tools/list"), ("mcp-name", "echo")], call.clone()),
        mismatch(&[("mcp-protocol-version", MODERN), ("mcp-method", "tools/call")], call.clone()),
        mismatch(
            &[("mcp-protocol-version", MODERN), ("mcp-method", "tools/call"), ("mcp-name", "other")],
            call.clone(),
        ),
    ];
    for (headers, body) in bad {
        let response = http.post(headers, body).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{headers:?}");
        let body = json_body(response).await;
        assert_eq!(
            (body["error"]["code"].as_i64(), body["id"].as_i64()),
            (Some(-32020), Some(1)),
            "{headers:?}: {body}"
        );
    }
    // The body's version differs from the header's: -32020 too.
    let mut other_version = call.clone();
    other_version["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    assert_eq!(json_body(http.post(&good, other_version.clone()).await).await["error"]["code"], -32020);
    // Both say a version we do not serve: 400 with -32022 and our list.
    let v2099 = [("mcp-protocol-version", "2099-01-01"), ("mcp-method", "tools/call"), ("mcp-name", "echo")];
    let response = http.post(&v2099, other_version).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body = json_body(response).await;
    assert_eq!((body["error"]["code"].as_i64(), &body["error"]["data"]["supported"]), (Some(-32022), &json!([MODERN])));
    // An unknown method: 404 with -32601.
    let mut unknown = call.clone();
    unknown["method"] = json!("nope/nothing");
    let response = http.post(&[("mcp-protocol-version", MODERN), ("mcp-method", "nope/nothing")], unknown).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_eq!(json_body(response).await["error"]["code"], -32601);
    // No GET, no DELETE, no sessions in this revision.
    let response = http.send(Method::GET, &[("mcp-protocol-version", MODERN)], "").await;
    assert_eq!((response.status(), header(&response, "allow")), (StatusCode::METHOD_NOT_ALLOWED, Some("POST")));
    let ok = http.post(&good, call).await;
    assert_eq!(header(&ok, "mcp-session-id"), None);
    assert_eq!(fake.stats().http_header_rejections, 7);
}

#[tokio::test(start_paused = true)]
async fn modern_sse_stream_closed_by_the_client_cancels_its_call() {
    let fake = http_server(HttpResponse::Sse);
    let mut http = Http::connect(&fake).await;
    let headers = [("mcp-protocol-version", MODERN), ("mcp-method", "tools/call"), ("mcp-name", "sleep_ms")];
    let response = http.post(&headers, modern_call(3, "sleep_ms", json!({"ms": 60_000}))).await;
    assert_eq!(header(&response, "content-type"), Some("text/event-stream"));
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(fake.stats().in_progress, 1);
    drop(response);
    drop(http);
    tokio::time::sleep(Duration::from_millis(10)).await;
    let stats = fake.stats();
    assert_eq!((stats.cancelled, stats.completed, stats.in_progress), (1, 0, 0));
}
