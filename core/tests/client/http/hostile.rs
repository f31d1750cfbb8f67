//! Hostile HTTP answers: each fails its call with an error of the right class, within a bound, without a panic.

use std::sync::Arc;
use std::time::Duration;

use mcpstorm_core::{CallError, CallOptions, HttpEndpoint, LocalError, McpClient, TransportError, error::HttpError};
use serde_json::json;

use super::client_of;
use super::peer::*;

/// A legacy peer whose tools/call is answered by `call`.
async fn peer_with(call: impl Fn(&Req) -> Vec<Act> + Send + Sync + 'static) -> Peer {
    Peer::start(Arc::new(move |req: &Req| legacy_basics(req, "s").unwrap_or_else(|| call(req)))).await
}

fn limited(peer: &Peer, tweak: impl FnOnce(&mut HttpEndpoint)) -> McpClient {
    let mut endpoint = HttpEndpoint::new(&peer.url()).expect("endpoint");
    tweak(&mut endpoint);
    client_of(endpoint, &peer.addr)
}

async fn call_err(c: &McpClient) -> CallError {
    c.call_tool("echo", json!({}), CallOptions::default()).await.expect_err("the call must fail")
}

fn http(e: HttpError) -> CallError {
    CallError::Transport(TransportError::Http(e))
}

#[tokio::test]
async fn an_endless_stream_of_keep_alives_ends_at_the_stream_lifetime() {
    let mut acts = vec![sse_head(&[])];
    acts.extend((0..1000).flat_map(|_| [chunk(": ping\n"), Act::Sleep(Duration::from_millis(5))]));
    let peer = peer_with(move |_| acts.clone()).await;
    let c = limited(&peer, |e| e.limits.max_stream_lifetime = Duration::from_millis(300));
    assert_eq!(call_err(&c).await, http(HttpError::StreamLifetime(Duration::from_millis(300))));
}

#[tokio::test]
async fn an_endless_event_is_refused_at_the_event_bound() {
    let mut acts = vec![sse_head(&[]), chunk("data: ")];
    acts.extend((0..100).map(|_| chunk(&"x".repeat(1000))));
    let peer = peer_with(move |_| acts.clone()).await;
    let c = limited(&peer, |e| e.limits.max_event = 10_000);
    assert_eq!(call_err(&c).await, CallError::Transport(TransportError::FrameTooLarge { max: 10_000 }));
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused() {
    let peer =
        peer_with(|req| vec![json_reply(req, json!({"content": [{"type": "text", "text": "y".repeat(50_000)}]}))])
            .await;
    let c = limited(&peer, |e| e.limits.max_body = 20_000);
    assert_eq!(call_err(&c).await, CallError::Transport(TransportError::FrameTooLarge { max: 20_000 }));
}

#[tokio::test]
async fn a_wrong_content_type_is_a_clear_error() {
    let peer = peer_with(|_| vec![respond("200 OK", "text/html; charset=utf-8", &[], b"<html>login</html>")]).await;
    let c = limited(&peer, |_| {});
    assert_eq!(call_err(&c).await, http(HttpError::ContentType("text/html; charset=utf-8".into())));
}

#[tokio::test]
async fn a_redirect_loop_ends_after_max_redirects() {
    let peer = peer_with(|_| vec![respond("307 Temporary Redirect", "", &[("location", "/mcp")], b"")]).await;
    let c = limited(&peer, |e| e.limits.max_redirects = 2);
    assert_eq!(call_err(&c).await, http(HttpError::TooManyRedirects { max: 2 }));
    assert_eq!(peer.count("tools/call"), 3, "the first try and two redirects");
}

#[tokio::test]
async fn a_redirect_to_another_origin_is_not_followed() {
    let peer =
        peer_with(|_| vec![respond("308 Permanent Redirect", "", &[("location", "http://elsewhere:1/mcp")], b"")])
            .await;
    let c = limited(&peer, |_| {});
    assert!(matches!(call_err(&c).await, CallError::Transport(TransportError::Http(HttpError::Redirect(_)))));
}

#[tokio::test]
async fn a_ten_megabyte_session_id_is_refused() {
    let huge = "a".repeat(10 << 20);
    let peer = Peer::start(Arc::new(move |req: &Req| match req.rpc().as_str() {
        "initialize" => vec![json_with(req, init_result(), &[("mcp-session-id", &huge)])],
        _ => legacy_basics(req, "s").unwrap_or_default(),
    }))
    .await;
    let c = limited(&peer, |_| {});
    let err = c.list_tools().await.unwrap_err();
    assert!(matches!(err, CallError::Transport(TransportError::Http(HttpError::Head(_)))), "{err:?}");
    // Under the head limit but over the session id's own bound: refused as well.
    let long = "b".repeat(5000);
    let peer = Peer::start(Arc::new(move |req: &Req| match req.rpc().as_str() {
        "initialize" => vec![json_with(req, init_result(), &[("mcp-session-id", &long)])],
        _ => legacy_basics(req, "s").unwrap_or_default(),
    }))
    .await;
    let c = limited(&peer, |e| e.limits.max_header_value = 4096);
    assert!(matches!(
        c.list_tools().await.unwrap_err(),
        CallError::Transport(TransportError::Http(HttpError::Head(_)))
    ));
}

#[tokio::test]
async fn malformed_sse_data_fails_the_call_as_malformed() {
    let peer = peer_with(|_| vec![sse_head(&[]), chunk("data: {not json\n\n"), end_chunks()]).await;
    let c = limited(&peer, |_| {});
    assert!(matches!(call_err(&c).await, CallError::MalformedResponse(_)));
    let peer = peer_with(|_| vec![sse_head(&[]), Act::Write(b"zz\r\nnot a chunk\r\n".to_vec()), Act::Hang]).await;
    let c = limited(&peer, |_| {});
    let err = call_err(&c).await;
    assert_eq!(err.class(), mcpstorm_core::ErrorClass::Transport, "{err:?}");
}

/// An answer the reader decodes (a JSON body, or an SSE event that looks like our response) and cannot read fails
/// that call as malformed, at once, and the next call on the same client works.
#[tokio::test]
async fn an_unreadable_answer_fails_its_call_as_malformed_and_the_next_call_works() {
    let bodies: [&[u8]; 4] =
        [b"{not json", br#"{"jsonrpc":"2.0","id":5}"#, b"\xff\xfe", br#"{"jsonrpc":"2.0","id":5}"#];
    for (i, body) in bodies.iter().enumerate() {
        let broken = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let flag = broken.clone();
        let body = body.to_vec();
        let peer = peer_with(move |req| {
            if !flag.swap(false, std::sync::atomic::Ordering::SeqCst) {
                return vec![json_reply(req, text("ok"))];
            }
            // The id the client used, so that the second body is a response to it with neither result nor error.
            let body = String::from_utf8_lossy(&body).replace("\"id\":5", &format!("\"id\":{}", req.id()));
            match i % 2 {
                0 => vec![respond("200 OK", "application/json", &[], body.as_bytes())],
                _ => vec![sse_head(&[]), chunk(&format!("data: {body}\n\n")), end_chunks()],
            }
        })
        .await;
        let c = limited(&peer, |_| {});
        let opts = || CallOptions {
            deadline: Some(tokio::time::Instant::now() + Duration::from_secs(5)),
            ..CallOptions::default()
        };
        let started = tokio::time::Instant::now();
        let err = c.call_tool("echo", json!({}), opts()).await.expect_err("the broken answer must fail");
        assert!(matches!(err, CallError::MalformedResponse(_)), "body {i}: {err:?}");
        assert!(started.elapsed() < Duration::from_secs(4), "body {i} failed at its timeout, not at once");
        let ok = c.call_tool("echo", json!({}), opts()).await.expect("the next call");
        assert!(!ok.is_error, "body {i}");
    }
}

#[tokio::test]
async fn a_full_pool_queue_is_an_overload_error() {
    let peer = peer_with(|_| vec![Act::Hang]).await;
    let c = Arc::new(limited(&peer, |e| {
        e.pool.max_connections = 1;
        e.pool.max_waiting = 0;
    }));
    c.list_tools().await.unwrap();
    let first = tokio::spawn({
        let c = c.clone();
        async move { call_err(&c).await }
    });
    peer.wait_for(|r| r.rpc() == "tools/call").await;
    assert_eq!(call_err(&c).await, CallError::Local(LocalError::QueueFull));
    first.abort();
}
