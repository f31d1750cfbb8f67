//! The HTTP faults (status bursts, slow headers, stream resets and their resumption, a forgetful session store) and
//! the bounds a hostile client meets.

use hyper::{Method, StatusCode};

use super::http::{Events, Http, header, http_server, init, open_session, rpc};
use super::*;
use crate::{HttpResponse, StatusBurst, Transport};

#[tokio::test(start_paused = true)]
async fn status_bursts_answer_before_the_body_with_retry_after() {
    let fake = http_server(HttpResponse::Json);
    let control = fake.control();
    let mut http = Http::connect(&fake).await;
    let burst = StatusBurst { share: 1.0, status: 429, retry_after: Some(Duration::from_millis(2500)) };
    control.set_http_status(Some(burst));
    let response = http.post(&[], init()).await;
    assert_eq!((response.status(), header(&response, "retry-after")), (StatusCode::TOO_MANY_REQUESTS, Some("3")));
    control.set_http_status(Some(StatusBurst { share: 1.0, status: 500, retry_after: None }));
    let response = http.post(&[], init()).await;
    assert_eq!((response.status(), header(&response, "retry-after")), (StatusCode::INTERNAL_SERVER_ERROR, None));
    // Half the requests, drawn from the server's seeded stream: some of each, and the same ones every run.
    control.set_http_status(Some(StatusBurst { share: 0.5, status: 503, retry_after: None }));
    let mut statuses = Vec::new();
    for _ in 0..20 {
        statuses.push(http.status(&[], init()).await.as_u16());
    }
    let injected = statuses.iter().filter(|s| **s == 503).count();
    assert!((3..=17).contains(&injected), "{statuses:?}");
    control.set_http_status(None);
    assert_eq!(http.status(&[], init()).await, StatusCode::OK);
    let stats = fake.stats();
    assert_eq!(stats.http_status_injected, 2 + injected as u64);
    assert_eq!(stats.initializes, 20 - injected as u64 + 1, "an injected status never reaches the MCP handling");
}

#[tokio::test(start_paused = true)]
async fn slow_headers_hold_the_status_line_back() {
    let fake = http_server(HttpResponse::Json);
    let mut http = Http::connect(&fake).await;
    fake.control().set_slow_headers(Duration::from_secs(5));
    let start = Instant::now();
    assert_eq!(http.status(&[], init()).await, StatusCode::OK);
    assert_eq!(ms_since(start), 5000);
    fake.control().set_slow_headers(Duration::ZERO);
    let start = Instant::now();
    assert_eq!(http.status(&[], init()).await, StatusCode::OK);
    assert_eq!(ms_since(start), 0);
    assert_eq!(fake.stats().http_slow_headers, 1);
}

#[tokio::test(start_paused = true)]
async fn a_reset_stream_is_resumed_by_last_event_id() {
    let fake = http_server(HttpResponse::Sse);
    let mut http = Http::connect(&fake).await;
    let session = open_session(&mut http).await;
    fake.control().set_stream_reset(1.0);
    let with = [("mcp-session-id", session.as_str())];
    let params =
        json!({"name": "slow_progress", "arguments": {"steps": 2, "step_ms": 10}, "_meta": {"progressToken": 1}});
    let mut events = Events::of(http.post(&with, rpc(4, "tools/call", params)).await);
    let mut last = String::new();
    let broke = loop {
        match events.next().await {
            Ok(Some((id, _))) => last = id,
            Ok(None) => break false,
            Err(_) => break true,
        }
    };
    assert!(broke, "the stream is cut, not ended");
    // The cut may take the last event written before it along (hyper does not flush a failing body's buffer).
    assert!(last.ends_with("-1") || last.ends_with("-2"), "priming and progress came before the cut: {last}");
    fake.control().set_stream_reset(0.0);
    let mut http = Http::connect(&fake).await;
    let resume =
        [("mcp-session-id", session.as_str()), ("last-event-id", last.as_str()), ("accept", "text/event-stream")];
    let messages = Events::of(http.send(Method::GET, &resume, "").await).messages().await;
    let (response, progress) = messages.split_last().expect("the resumed stream carries the response");
    assert!(progress.iter().all(|m| m["method"] == "notifications/progress"), "{messages:?}");
    assert_eq!(progress.len(), usize::from(last.ends_with("-1")), "only what came after {last}");
    assert_eq!(
        (response["id"].as_i64(), response["result"]["content"][0]["text"].as_str()),
        (Some(4), Some("done 2 steps"))
    );
    // An id this session never gave: 400.
    let bogus = [("mcp-session-id", session.as_str()), ("last-event-id", "999-0")];
    assert_eq!(http.send(Method::GET, &bogus, "").await.status(), StatusCode::BAD_REQUEST);
    let stats = fake.stats();
    assert_eq!((stats.http_stream_resets, stats.http_streams_resumed, stats.completed), (1, 1, 1));
}

#[tokio::test(start_paused = true)]
async fn a_forgetful_session_store_turns_sessions_into_404() {
    let fake = http_server(HttpResponse::Json);
    let mut http = Http::connect(&fake).await;
    let a = open_session(&mut http).await;
    let b = open_session(&mut http).await;
    assert_eq!(fake.control().forget_http_sessions(), 2);
    for session in [&a, &b] {
        assert_eq!(
            http.status(&[("mcp-session-id", session)], rpc(1, "tools/list", json!({}))).await,
            StatusCode::NOT_FOUND
        );
    }
    // A new initialize opens a new session, with a new id.
    let c = open_session(&mut http).await;
    assert!(c != a && c != b);
    let stats = fake.stats();
    assert_eq!((stats.http_sessions_forgotten, stats.http_sessions_not_found, stats.http_sessions_opened), (2, 2, 3));
}

#[tokio::test(start_paused = true)]
async fn hostile_requests_meet_bounds() {
    let fake = server(FakeServerConfig {
        transport: Transport::Http,
        http_response: HttpResponse::Json,
        http_max_sessions: 2,
        http_max_body: 2048,
        ..FakeServerConfig::builtin()
    });
    let mut http = Http::connect(&fake).await;
    // A body over the limit: 413, declared or not.
    let big = rpc(1, "tools/call", json!({"name": "echo", "arguments": {"message": "x".repeat(4096)}}));
    assert_eq!(http.status(&[], big).await, StatusCode::PAYLOAD_TOO_LARGE);
    // Not one JSON-RPC message: 400 with the JSON-RPC error; a batch too.
    let response = http.send(Method::POST, &[("content-type", "application/json")], "{not json").await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(super::http::json_body(response).await["error"]["code"], -32700);
    let response = http.send(Method::POST, &[], "[]").await;
    assert_eq!(super::http::json_body(response).await["error"]["code"], -32600);
    // Wrong media types.
    assert_eq!(http.send(Method::POST, &[("accept", "text/html")], "{}").await.status(), StatusCode::NOT_ACCEPTABLE);
    let text = [("content-type", "text/plain")];
    assert_eq!(http.send(Method::POST, &text, "{}").await.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(http.send(Method::PUT, &[], "").await.status(), StatusCode::METHOD_NOT_ALLOWED);
    // The session table is bounded: a third live session is refused.
    open_session(&mut http).await;
    open_session(&mut http).await;
    assert_eq!(http.status(&[], super::http::init()).await, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(fake.stats().http_refused, 7);
    // Too many headers: hyper answers 431 and closes the connection.
    let names: Vec<String> = (0..100).map(|i| format!("x-h{i}")).collect();
    let many: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "v")).collect();
    let mut http = Http::connect(&fake).await;
    assert_eq!(http.send(Method::POST, &many, "{}").await.status(), StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
}
