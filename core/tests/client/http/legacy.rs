//! 2025-11-25 Streamable HTTP: JSON and SSE answers, the session id, 404 → new session, DELETE, the GET stream's
//! 405, resumption with `Last-Event-ID`, and 429 with `Retry-After`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcpstorm_core::{CallError, CallOptions};
use serde_json::json;

use super::client;
use super::peer::*;

#[tokio::test]
async fn json_and_sse_answers_on_one_session_ended_by_delete() {
    let peer = Peer::start(Arc::new(|req: &Req| {
        if let Some(acts) = legacy_basics(req, "sess-1") {
            return acts;
        }
        // tools/call: an SSE stream with a log notification before the result.
        let note = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "working"}});
        vec![sse_head(&[]), sse_event(&note), sse_event(&result_msg(req, text("hi"))), end_chunks()]
    }))
    .await;
    let c = client(&peer);
    let result = c.call_tool("echo", json!({}), CallOptions::default()).await.unwrap();
    assert_eq!(result.content[0]["text"], "hi");
    let again = c.call_tool("echo", json!({}), CallOptions::default()).await.unwrap();
    assert_eq!(again.content[0]["text"], "hi");

    let log = peer.requests();
    // The era probe found a legacy server (400 without a modern JSON-RPC error) and fell back to initialize.
    assert_eq!(log[0].rpc(), "server/discover");
    assert_eq!(log[1].rpc(), "initialize");
    for req in &log[..2] {
        assert_eq!(req.method, "POST");
        assert_eq!(req.header("accept"), Some("application/json, text/event-stream"));
        assert_eq!(req.header("content-type"), Some("application/json"));
        assert_eq!(req.header("mcp-session-id"), None);
    }
    for req in log.iter().skip(2) {
        assert_eq!(req.header("mcp-session-id"), Some("sess-1"), "{req:?}");
        assert_eq!(req.header("mcp-protocol-version"), Some("2025-11-25"), "{req:?}");
        assert_eq!(req.header("mcp-method"), None, "the modern era's headers stay out of a legacy session");
    }
    assert_eq!(peer.count("notifications/initialized"), 1);
    // The GET stream was offered a try, and its 405 taken quietly.
    peer.wait_for(|r| r.method == "GET").await;
    assert_eq!(peer.count("tools/call"), 2);

    c.close().await;
    let delete = peer.wait_for(|r| r.method == "DELETE").await;
    assert_eq!(delete.header("mcp-session-id"), Some("sess-1"));
}

/// A call's answer may skip the reader's queue (straight from its exchange to the caller), but not when its own
/// stream sent messages before it, which the reader must see first: behind a backlog of 60 log messages, every
/// progress notification reaches the caller before the result does, call after call. Two workers, so that the
/// reader and the exchange run at once. (The race this guards against is narrow: on this test's loopback the reader
/// usually wins it even unguarded, so this checks the order, not the guard alone.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_on_a_calls_stream_reaches_the_caller_before_its_result() {
    let peer = Peer::start(Arc::new(|req: &Req| {
        if let Some(acts) = legacy_basics(req, "sess-p") {
            return acts;
        }
        let token = req.json()["params"]["_meta"]["progressToken"].clone();
        let mut acts = vec![sse_head(&[])];
        // A backlog for the reader, so that an answer that skipped its queue would overtake the progress behind it.
        let log =
            json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}});
        acts.extend((0..60).map(|_| sse_event(&log)));
        if !token.is_null() {
            for step in 1..=3 {
                let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": step, "total": 3}});
                acts.push(sse_event(&progress));
            }
        }
        acts.extend([sse_event(&result_msg(req, text("done"))), end_chunks()]);
        acts
    }))
    .await;
    let c = client(&peer);
    for round in 0..20 {
        let (tx, mut rx) = tokio::sync::mpsc::channel(8);
        let opts = CallOptions { progress: Some(tx), ..CallOptions::default() };
        let result = c.call_tool("echo", json!({}), opts).await.expect("the call");
        assert_eq!(result.content[0]["text"], "done");
        let mut steps = Vec::new();
        while let Ok(p) = rx.try_recv() {
            steps.push(p.progress);
        }
        assert_eq!(steps, [1.0, 2.0, 3.0], "round {round}: progress must reach the caller before its result");
        let plain = c.call_tool("echo", json!({}), CallOptions::default()).await.expect("a call without progress");
        assert_eq!(plain.content[0]["text"], "done");
    }
}

#[tokio::test]
async fn a_404_for_our_session_starts_a_new_one_and_resends_once() {
    let inits = Arc::new(AtomicUsize::new(0));
    let calls = Arc::new(AtomicUsize::new(0));
    let (i, n) = (inits.clone(), calls.clone());
    let peer = Peer::start(Arc::new(move |req: &Req| {
        if req.rpc() == "initialize" {
            let session = format!("sess-{}", i.fetch_add(1, Ordering::SeqCst) + 1);
            return vec![json_with(req, init_result(), &[("mcp-session-id", &session)])];
        }
        if let Some(acts) = legacy_basics(req, "unused") {
            return acts;
        }
        if n.fetch_add(1, Ordering::SeqCst) == 0 {
            // The session expired on the server's side.
            return vec![respond("404 Not Found", "", &[], b"")];
        }
        vec![json_reply(req, text(req.header("mcp-session-id").unwrap_or("none")))]
    }))
    .await;
    let c = client(&peer);
    let result = c.call_tool("echo", json!({}), CallOptions::default()).await.unwrap();
    assert_eq!(result.content[0]["text"], "sess-2", "resent on the new session");
    assert_eq!(inits.load(Ordering::SeqCst), 2);
    assert_eq!(calls.load(Ordering::SeqCst), 2, "exactly one resend");
    let stats = c.session_stats();
    assert_eq!((stats.not_found, stats.resent), (1, 1));
}

/// A 404 to a listing (not a call) loses the session for the whole connection: nothing more goes out without an
/// id (a server refuses that with a bare 400); the next call is answered "session not found" at once, starts a new
/// session and is resent there.
#[tokio::test]
async fn a_404_outside_a_call_leaves_no_request_without_a_session() {
    let inits = Arc::new(AtomicUsize::new(0));
    let lists = Arc::new(AtomicUsize::new(0));
    let (i, l) = (inits.clone(), lists.clone());
    let peer = Peer::start(Arc::new(move |req: &Req| {
        if req.rpc() == "initialize" {
            let session = format!("sess-{}", i.fetch_add(1, Ordering::SeqCst) + 1);
            return vec![json_with(req, init_result(), &[("mcp-session-id", &session)])];
        }
        if req.rpc() == "tools/list" && l.fetch_add(1, Ordering::SeqCst) == 0 {
            return vec![respond("404 Not Found", "", &[], b"")];
        }
        if let Some(acts) = legacy_basics(req, "unused") {
            return acts;
        }
        vec![json_reply(req, text(req.header("mcp-session-id").unwrap_or("none")))]
    }))
    .await;
    let c = client(&peer);
    let err = c.list_tools().await.unwrap_err();
    assert!(matches!(&err, CallError::Protocol(obj) if obj.code == -32001), "{err:?}");
    let result = c.call_tool("echo", json!({}), CallOptions::default()).await.unwrap();
    assert_eq!(result.content[0]["text"], "sess-2", "resent on a new session");
    for req in peer.requests().iter().filter(|r| r.method == "POST") {
        let opening = ["server/discover", "initialize"].contains(&req.rpc().as_str());
        assert!(opening || req.header("mcp-session-id").is_some(), "sent without a session: {req:?}");
    }
    assert_eq!(peer.count("tools/call"), 1, "the call went out once, on the new session");
}

#[tokio::test]
async fn a_second_404_is_the_callers_error() {
    let peer = Peer::start(Arc::new(|req: &Req| {
        legacy_basics(req, "s").unwrap_or_else(|| vec![respond("404 Not Found", "", &[], b"")])
    }))
    .await;
    let c = client(&peer);
    let err = c.call_tool("echo", json!({}), CallOptions::default()).await.unwrap_err();
    let CallError::Protocol(obj) = err else { panic!("{err:?}") };
    assert_eq!(obj.code, -32001);
    assert_eq!(peer.count("tools/call"), 2);
}

#[tokio::test]
async fn a_cut_stream_is_resumed_with_last_event_id() {
    let call_id = Arc::new(std::sync::Mutex::new(json!(null)));
    let id = call_id.clone();
    let peer = Peer::start(Arc::new(move |req: &Req| {
        if req.method == "GET" && req.header("last-event-id").is_some() {
            // The replay: the response the cut stream never delivered.
            let call = json!({"jsonrpc": "2.0", "id": id.lock().unwrap().clone(), "result": text("resumed")});
            return vec![sse_head(&[]), chunk("id: e2\n"), sse_event(&call), end_chunks()];
        }
        if let Some(acts) = legacy_basics(req, "s") {
            return acts;
        }
        // Priming event with an id, a short retry, then the connection drops mid-stream.
        *id.lock().unwrap() = req.id();
        vec![sse_head(&[]), chunk("id: e1\nretry: 20\ndata:\n\n"), Act::Close]
    }))
    .await;
    let c = client(&peer);
    let result = c.call_tool("echo", json!({}), CallOptions::default()).await.unwrap();
    assert_eq!(result.content[0]["text"], "resumed");
    let get = peer.wait_for(|r| r.method == "GET" && r.header("last-event-id").is_some()).await;
    assert_eq!(get.header("last-event-id"), Some("e1"));
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    assert_eq!(get.header("mcp-session-id"), Some("s"));
}

#[tokio::test]
async fn a_stream_that_cannot_be_resumed_fails_its_call_only() {
    let peer = Peer::start(Arc::new(|req: &Req| {
        legacy_basics(req, "s").unwrap_or_else(|| {
            // No event id: nothing to resume from.
            vec![sse_head(&[]), chunk(": hello\n\n"), Act::Close]
        })
    }))
    .await;
    let c = client(&peer);
    let err = c.call_tool("echo", json!({}), CallOptions::default()).await.unwrap_err();
    assert_eq!(err, CallError::Transport(mcpstorm_core::TransportError::Closed));
    // The transport is still up: the next request works.
    assert_eq!(c.list_tools().await.unwrap().len(), 1);
}

#[tokio::test]
async fn too_many_requests_with_retry_after_becomes_retry_after_ms() {
    let peer = Peer::start(Arc::new(|req: &Req| {
        legacy_basics(req, "s")
            .unwrap_or_else(|| vec![respond("429 Too Many Requests", "", &[("retry-after", "2")], b"")])
    }))
    .await;
    let c = client(&peer);
    let err = c.call_tool("echo", json!({}), CallOptions::default()).await.unwrap_err();
    let CallError::Protocol(obj) = &err else { panic!("{err:?}") };
    assert_eq!(obj.data.as_ref().unwrap()["retryAfterMs"], 2000);
    use mcpstorm_core::resilience::{HealthVerdict, classify_error};
    assert_eq!(classify_error(&err), HealthVerdict::RetryAfter(std::time::Duration::from_secs(2)));
}

#[tokio::test]
async fn a_503_without_retry_after_is_a_transport_failure_of_that_call() {
    let peer = Peer::start(Arc::new(|req: &Req| {
        legacy_basics(req, "s").unwrap_or_else(|| vec![respond("503 Service Unavailable", "text/plain", &[], b"busy")])
    }))
    .await;
    let c = client(&peer);
    let err = c.call_tool("echo", json!({}), CallOptions::default()).await.unwrap_err();
    assert_eq!(
        err,
        CallError::Transport(mcpstorm_core::TransportError::Http(mcpstorm_core::error::HttpError::Status {
            status: 503
        }))
    );
}

/// A request sent while the GET stream is on its way races it (the server may answer or notify on a stream that
/// does not exist yet, and lose it): the first request after `notifications/initialized` waits for the GET's answer.
/// The peer holds that answer back a while and refuses a `tools/list` that comes before it.
#[tokio::test]
async fn the_get_stream_is_answered_before_the_next_request_is_sent() {
    const HELD: std::time::Duration = std::time::Duration::from_millis(300);
    let got = Arc::new(std::sync::Mutex::new(None));
    let peer = Peer::start(Arc::new(move |req: &Req| {
        if req.method == "GET" {
            *got.lock().unwrap() = Some(tokio::time::Instant::now());
            return vec![Act::Sleep(HELD), respond("405 Method Not Allowed", "", &[], b"")];
        }
        let early = got.lock().unwrap().is_none_or(|at| at.elapsed() < HELD);
        if req.rpc() == "tools/list" && early {
            return vec![respond("409 Conflict", "", &[], b"")];
        }
        legacy_basics(req, "sess-1").unwrap_or_else(|| vec![json_reply(req, text("hi"))])
    }))
    .await;
    let c = client(&peer);
    let listed = c.list_tools().await;
    assert!(listed.is_ok(), "tools/list overtook the GET stream: {listed:?}");
}
