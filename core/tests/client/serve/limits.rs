//! The front's bounds and access rules: Origin, body size, header count, bearer tokens, calls per session, the
//! session table, the health routes, and the graceful stop.

use std::sync::atomic::Ordering;
use std::time::Duration;

use mcpstorm_core::serve::{FrontLimits, Keys};
use mcpstorm_core::{CallOptions, Secret};
use serde_json::json;

use super::*;

#[tokio::test]
async fn origins_other_than_loopback_are_refused() {
    let (_echo, _front, addr) = start_default().await;
    let with_origin = |origin: &'static str| [JSON_AND_SSE, CT_JSON, ("origin", origin)];
    let evil = send(&addr, "POST", &with_origin("http://evil.example"), &initialize_body(1)).await;
    assert_eq!(evil.status, 403);
    let rebinding = send(&addr, "POST", &with_origin("http://localhost.evil.example:8848"), &initialize_body(1)).await;
    assert_eq!(rebinding.status, 403);
    let local = send(&addr, "POST", &with_origin("http://localhost:5173"), &initialize_body(1)).await;
    assert_eq!(local.status, 200);
}

#[tokio::test]
async fn bodies_and_heads_beyond_the_limits_are_refused() {
    let echo = Echo::new();
    let limits = FrontLimits { max_body: 1024, max_headers: 16, ..FrontLimits::default() };
    let (_front, addr) = start(&echo, Keys::random().unwrap(), limits).await;
    let big = call_body(1, "echo", json!({"text": "x".repeat(2000)}), None);
    let answer = send(&addr, "POST", &[JSON_AND_SSE, CT_JSON], &big).await;
    assert_eq!(answer.status, 413);
    let names: Vec<String> = (0..40).map(|i| format!("x-filler-{i}")).collect();
    let many: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "1")).collect();
    assert_eq!(send(&addr, "POST", &many, &initialize_body(1)).await.status, 431);
    let garbage = send(&addr, "POST", &[JSON_AND_SSE, CT_JSON], "{not json").await;
    assert_eq!((garbage.status, garbage.json()["error"]["code"].as_i64()), (400, Some(-32700)));
    // The front serves on.
    assert_eq!(send(&addr, "POST", &[JSON_AND_SSE, CT_JSON], &initialize_body(1)).await.status, 200);
}

#[tokio::test]
async fn agent_bearer_tokens_are_required_when_configured() {
    let echo = Echo::new();
    let limits = FrontLimits { agent_tokens: vec![Secret::new("s3cret-token")], ..FrontLimits::default() };
    let (_front, addr) = start(&echo, Keys::random().unwrap(), limits).await;
    let none = send(&addr, "POST", &[JSON_AND_SSE, CT_JSON], &initialize_body(1)).await;
    assert_eq!(none.status, 401);
    assert!(none.header("www-authenticate").is_some_and(|v| v.starts_with("Bearer")));
    for wrong in ["Bearer s3cret", "Bearer s3cret-token2", "Basic s3cret-token", "s3cret-token"] {
        let answer = send(&addr, "POST", &[JSON_AND_SSE, CT_JSON, ("authorization", wrong)], &initialize_body(1)).await;
        assert_eq!(answer.status, 401, "{wrong}");
    }
    let right =
        send(&addr, "POST", &[JSON_AND_SSE, CT_JSON, ("authorization", "Bearer s3cret-token")], &initialize_body(1))
            .await;
    assert_eq!(right.status, 200);
    assert_eq!(send(&addr, "GET", &[], "").await.status, 401, "/mcp GET too");
    // The core's client with the header configured.
    let endpoint = HttpEndpoint::new(&format!("http://{addr}/mcp"))
        .and_then(|e| e.with_header("authorization", Secret::new("Bearer s3cret-token")))
        .expect("endpoint");
    let client =
        McpClient::new("front", Arc::new(TcpDialer { addr: addr.clone() }), test_config(false), SeededRng::new(2))
            .with_http(endpoint);
    let result = client.call_tool("echo", json!({"text": "authorized"}), CallOptions::default()).await;
    assert_eq!(result.expect("echo").joined_text(), "authorized");
}

/// The health routes answer without auth; other paths are 404.
#[tokio::test]
async fn health_routes_and_unknown_paths() {
    let echo = Echo::new();
    let limits = FrontLimits { agent_tokens: vec![Secret::new("t")], ..FrontLimits::default() };
    let (_front, addr) = start(&echo, Keys::random().unwrap(), limits).await;
    let get = |path: &'static str| {
        let addr = addr.clone();
        async move {
            let stream = TcpStream::connect(&addr).await.unwrap();
            let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
            tokio::spawn(conn);
            let request = Request::get(path).header("host", &addr).body(Full::new(Bytes::new())).unwrap();
            sender.send_request(request).await.unwrap().status().as_u16()
        }
    };
    assert_eq!(get("/healthz").await, 200);
    assert_eq!(get("/readyz").await, 200);
    assert_eq!(get("/other").await, 404);
}

#[tokio::test]
async fn calls_beyond_capacity_wait_their_turn_and_live_sessions_are_bounded() {
    let echo = Echo::new();
    let limits = FrontLimits {
        max_calls_in_flight: 1,
        max_queued_calls: 1,
        queue_wait: Duration::from_secs(30),
        max_sessions: 1,
        ..FrontLimits::default()
    };
    let (front, addr) = start(&echo, Keys::random().unwrap(), limits).await;
    let id = open_session(&addr).await;
    let headers = [JSON_AND_SSE, CT_JSON, ("mcp-session-id", id.as_str())];
    let post = |n: u64, tool: &'static str| {
        let (a, h) = (addr.clone(), headers.map(|(k, v)| (k.to_owned(), v.to_owned())));
        tokio::spawn(async move {
            let h: Vec<(&str, &str)> = h.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            send(&a, "POST", &h, &call_body(n, tool, json!({}), None)).await
        })
    };
    let held = post(1, "hold");
    echo.until_held().await;
    // Over capacity: the second call waits for the slot instead of being refused.
    let waiting = post(2, "echo");
    while front.in_flight() < 2 {
        tokio::task::yield_now().await;
    }
    // The queue is full and this session queues the most: its newest call is shed, with a Retry-After.
    let third = send(&addr, "POST", &headers, &call_body(3, "echo", json!({}), None)).await;
    assert_eq!(third.status, 429);
    let retry_after: u64 = third.header("retry-after").expect("Retry-After").parse().expect("whole seconds");
    assert!((1..=60).contains(&retry_after));
    // The only session slot is busy: a new session is refused.
    assert_eq!(send(&addr, "POST", &[JSON_AND_SSE, CT_JSON], &initialize_body(1)).await.status, 503);
    echo.0.gate.add_permits(1);
    assert_eq!(held.await.unwrap().status, 200);
    assert_eq!(waiting.await.unwrap().status, 200, "the waiting call ran once the slot freed");
    assert_eq!(front.in_flight(), 0);
    // Idle now: its state makes room for the next session.
    assert_eq!(send(&addr, "POST", &[JSON_AND_SSE, CT_JSON], &initialize_body(1)).await.status, 200);
}

#[tokio::test]
async fn shutdown_lets_calls_finish_then_cancels_what_outlives_the_drain() {
    let (echo, front, addr) = start_default().await;
    let client = Arc::new(http_client(&addr, false));
    let c = client.clone();
    let finishing = tokio::spawn(async move { c.call_tool("hold", json!({}), CallOptions::default()).await });
    echo.until_held().await;
    let f = front.clone();
    let stopping = tokio::spawn(async move { f.shutdown(Duration::from_secs(600)).await });
    // Draining: the listener stays open (the held call's session may still send its DELETE), and new work is
    // answered 503 with Retry-After while the held call goes on.
    let refused = loop {
        let answer = send(&addr, "POST", &[JSON_AND_SSE, CT_JSON], &initialize_body(9)).await;
        if answer.status == 503 {
            break answer;
        }
        tokio::task::yield_now().await;
    };
    assert_eq!(refused.header("retry-after"), Some("1"));
    echo.0.gate.add_permits(1);
    assert_eq!(finishing.await.unwrap().expect("finished during the drain").joined_text(), "released");
    stopping.await.unwrap();
    assert_eq!(echo.0.cancelled.load(Ordering::SeqCst), 0);

    // A zero drain: what is in flight is cancelled.
    let (echo, front, addr) = start_default().await;
    let client = Arc::new(http_client(&addr, false));
    let held = tokio::spawn(async move { client.call_tool("hold", json!({}), CallOptions::default()).await });
    echo.until_held().await;
    front.shutdown(Duration::ZERO).await;
    assert!(held.await.unwrap().is_err());
    echo.until_cancelled().await;
}
