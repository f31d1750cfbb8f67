//! The connection core against a scripted peer: every behaviour asked of a client connection.

use std::time::Duration;

use mcpstorm_core::jsonrpc::{ErrorCode, ErrorObject, Message, RequestId};
use mcpstorm_core::mcp::logging::{self, LogLevel, LogSink};
use mcpstorm_core::mcp::method;
use mcpstorm_core::{CallError, CancelToken, LocalError, TransportError};
use mcpstorm_core::{CallOptions, ConnectionConfig, conn::Lane};
use mcpstorm_fake::doubles::peer;
use serde_json::json;
use tokio::time::Instant;

fn config() -> ConnectionConfig {
    ConnectionConfig::default()
}

async fn settle() {
    // Let spawned tasks run (paused time auto-advances only when every task is idle).
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(start_paused = true)]
async fn responses_out_of_order_reach_their_own_callers() {
    let (conn, mut peer) = peer::connect(config(), 1 << 16);
    let calls: Vec<_> = (0..5)
        .map(|i| {
            let conn = conn.clone();
            tokio::spawn(async move {
                conn.request("tools/call", Some(json!({"name": "t", "n": i})), CallOptions::default()).await
            })
        })
        .collect();
    let mut reqs = Vec::new();
    for _ in 0..5 {
        reqs.push(peer.request().await);
    }
    // Answer in reverse order, echoing the caller's own argument.
    for r in reqs.iter().rev() {
        let n = r.params.as_ref().unwrap()["n"].clone();
        peer.respond(r.id.clone(), json!({"n": n})).await;
    }
    for (i, call) in calls.into_iter().enumerate() {
        assert_eq!(call.await.unwrap().unwrap(), json!({"n": i}));
    }
    assert_eq!(conn.pending(), 0);
    assert_eq!(conn.stats().in_flight, 0);
}

#[tokio::test(start_paused = true)]
async fn tool_calls_carry_their_id_as_progress_token() {
    let (conn, mut peer) = peer::connect(config(), 1 << 16);
    let call = tokio::spawn({
        let conn = conn.clone();
        async move { conn.request(method::TOOLS_CALL, Some(json!({"name": "t"})), CallOptions::default()).await }
    });
    let req = peer.request().await;
    let token = req.params.as_ref().unwrap().pointer("/_meta/progressToken").cloned();
    assert_eq!(token.and_then(|t| t.as_i64()), req.id.as_number());
    peer.respond(req.id, json!({})).await;
    call.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_call_that_asks_for_log_messages_says_its_level_and_gets_them() {
    let (conn, mut peer) = peer::connect(config(), 1 << 16);
    let (tx, mut logs) = tokio::sync::mpsc::channel(4);
    let opts = CallOptions { logs: Some(LogSink { level: LogLevel::Info, tx }), ..CallOptions::default() };
    let call = tokio::spawn({
        let conn = conn.clone();
        async move { conn.request(method::TOOLS_CALL, Some(json!({"name": "t"})), opts).await }
    });
    let req = peer.request().await;
    let level = req.params.as_ref().unwrap().pointer("/_meta/io.modelcontextprotocol~1logLevel").cloned();
    assert_eq!(level, Some(json!("info")));
    let message = json!({"level": "info", "logger": "db", "data": "working"});
    peer.send(Message::notification(logging::MESSAGE, Some(message.clone()))).await;
    peer.respond(req.id, json!({})).await;
    call.await.unwrap().unwrap();
    assert_eq!(logs.try_recv().unwrap(), message, "the message came before the answer, to the call");
}

#[tokio::test(start_paused = true)]
async fn peer_dying_fails_every_pending_call_at_once() {
    let (conn, mut peer) = peer::connect(config(), 1 << 16);
    let started = Instant::now();
    let calls: Vec<_> = (0..10)
        .map(|_| {
            let conn = conn.clone();
            tokio::spawn(async move { conn.request("tools/call", None, CallOptions::default()).await })
        })
        .collect();
    for _ in 0..10 {
        peer.request().await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    peer.hang_up();
    for call in calls {
        assert_eq!(call.await.unwrap(), Err(CallError::Transport(TransportError::Closed)));
    }
    // Failed on the hang-up, not at the 5 s first-response timeout.
    assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
    assert_eq!(conn.closed(), Some(TransportError::Closed));
    assert_eq!(conn.pending(), 0);
    // New calls fail fast too.
    let err = conn.request("ping", None, CallOptions::default()).await.unwrap_err();
    assert_eq!(err, CallError::Transport(TransportError::Closed));
}

#[tokio::test(start_paused = true)]
async fn cancel_resolves_at_once_notifies_the_server_and_drops_the_late_response() {
    let (conn, mut peer) = peer::connect(config(), 1 << 16);
    let token = CancelToken::new();
    let call = tokio::spawn({
        let (conn, token) = (conn.clone(), token.clone());
        async move { conn.request("tools/call", None, CallOptions { cancel: Some(token), ..Default::default() }).await }
    });
    let req = peer.request().await;
    token.cancel("user pressed stop");
    assert_eq!(call.await.unwrap(), Err(CallError::Local(LocalError::Cancelled("user pressed stop".into()))));
    let cancelled = peer.notification().await;
    assert_eq!(cancelled.method, method::CANCELLED);
    let params = cancelled.params.unwrap();
    assert_eq!(params["requestId"], json!(req.id.as_number().unwrap()));
    assert_eq!(params["reason"], json!("user pressed stop"));
    // The server answers anyway: dropped and counted, never delivered to the next caller.
    peer.respond(req.id.clone(), json!({"stale": true})).await;
    let next = tokio::spawn({
        let conn = conn.clone();
        async move { conn.request("tools/call", None, CallOptions::default()).await }
    });
    let req2 = peer.request().await;
    assert_ne!(req2.id, req.id);
    peer.respond(req2.id, json!({"fresh": true})).await;
    assert_eq!(next.await.unwrap().unwrap(), json!({"fresh": true}));
    let stats = conn.stats();
    assert_eq!((stats.late_responses, stats.cancels_sent, stats.pending, stats.in_flight), (1, 1, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn dropping_the_call_future_cleans_up_and_cancels() {
    let (conn, mut peer) = peer::connect(config(), 1 << 16);
    let call = tokio::spawn({
        let conn = conn.clone();
        async move { conn.request("tools/call", None, CallOptions::default()).await }
    });
    let req = peer.request().await;
    call.abort();
    let _ = call.await;
    let note = peer.notification().await;
    assert_eq!(note.params.unwrap()["requestId"], json!(req.id.as_number().unwrap()));
    assert_eq!((conn.pending(), conn.stats().in_flight), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn unanswered_call_times_out_in_first_response_phase_and_a_dead_stream_is_closed() {
    let (conn, mut peer) = peer::connect(config(), 1 << 16);
    let started = Instant::now();
    let call = tokio::spawn({
        let conn = conn.clone();
        async move { conn.request("tools/call", None, CallOptions::default()).await }
    });
    peer.request().await;
    let err = call.await.unwrap().unwrap_err();
    assert_eq!(err, CallError::Local(LocalError::FirstResponseTimeout(Duration::from_secs(5))));
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    // The stream said nothing since the request: the client probes it with a ping on the priority lane...
    let _cancel = peer.notification().await;
    let probe = peer.request().await;
    assert_eq!(probe.method, "ping");
    // ...and, unanswered within the 2 s stall probe, declares it dead.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(matches!(conn.closed(), Some(TransportError::Stalled(_))), "{:?}", conn.closed());
}

/// Callers' deadlines shorter than the first-response phase end every wait first: once the stream has said nothing
/// for a whole phase, it is probed all the same, and closed when the probe goes unanswered (else every later call on
/// a dead stream would time out for as long as the connection lived).
#[tokio::test(start_paused = true)]
async fn a_dead_stream_is_probed_when_the_deadline_ends_the_wait_first() {
    let (conn, mut peer) = peer::connect(config(), 1 << 16);
    let call = |secs: u64| {
        let conn = conn.clone();
        let opts = CallOptions { deadline: Some(Instant::now() + Duration::from_secs(secs)), ..CallOptions::default() };
        tokio::spawn(async move { conn.request("tools/call", None, opts).await })
    };
    // 2 s of silence on a new connection: too short to suspect the stream (it may be a slow first answer).
    let first = call(2);
    peer.request().await;
    assert_eq!(first.await.unwrap().unwrap_err(), CallError::Local(LocalError::DeadlineExceeded));
    let _cancel = peer.notification().await;
    // 4 s more: the stream has said nothing for 6 s, more than the 5 s first-response phase, when this one gives up.
    let second = call(4);
    assert_eq!(peer.request().await.method, "tools/call");
    assert_eq!(second.await.unwrap().unwrap_err(), CallError::Local(LocalError::DeadlineExceeded));
    let _cancel = peer.notification().await;
    assert_eq!(peer.request().await.method, "ping");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(matches!(conn.closed(), Some(TransportError::Stalled(_))), "{:?}", conn.closed());
}

#[tokio::test(start_paused = true)]
async fn a_live_but_slow_server_is_not_declared_dead() {
    let (conn, mut peer) = peer::connect(config(), 1 << 16);
    let call = tokio::spawn({
        let conn = conn.clone();
        async move { conn.request("tools/call", None, CallOptions::default()).await }
    });
    peer.request().await;
    assert!(matches!(call.await.unwrap(), Err(CallError::Local(LocalError::FirstResponseTimeout(_)))));
    let _cancel = peer.notification().await;
    let probe = peer.request().await;
    peer.respond(probe.id, json!({})).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(conn.is_open());
}

/// A stream that answered before and then says nothing for `probe_after` (1 s) after a tool call was written is
/// probed at once, not at the end of the call's 5 s first-response phase: a stream that lost a request loses every
/// later one, and each call sent on it would otherwise wait out its whole timeout. Unanswered within the 2 s stall
/// probe, the stream is declared dead and the call fails then, with the connection's reason.
#[tokio::test(start_paused = true)]
async fn a_stream_that_falls_silent_is_probed_early_and_closed_when_dead() {
    let (conn, mut peer) = spoken_peer().await;
    let started = Instant::now();
    let call = tokio::spawn({
        let conn = conn.clone();
        async move { conn.request(method::TOOLS_CALL, Some(json!({})), CallOptions::default()).await }
    });
    peer.request().await;
    let probe = peer.request().await;
    assert_eq!((probe.method.as_str(), started.elapsed()), ("ping", Duration::from_secs(1)));
    let err = call.await.unwrap().unwrap_err();
    assert!(matches!(err, CallError::Transport(TransportError::Stalled(_))), "{err:?}");
    assert_eq!(started.elapsed(), Duration::from_secs(3));
}

/// The same early probe on a live server with a slow tool: the ping is answered, the connection stays, and the call
/// gets its answer when the tool finishes.
#[tokio::test(start_paused = true)]
async fn a_slow_tool_on_a_live_stream_survives_the_early_probe() {
    let (conn, mut peer) = spoken_peer().await;
    let call = tokio::spawn({
        let conn = conn.clone();
        async move { conn.request(method::TOOLS_CALL, Some(json!({})), CallOptions::default()).await }
    });
    let req = peer.request().await;
    let probe = peer.request().await;
    peer.respond(probe.id, json!({})).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    peer.respond(req.id, json!({"done": true})).await;
    assert_eq!(call.await.unwrap().unwrap(), json!({"done": true}));
    assert!(conn.is_open());
}

/// A connection whose peer has answered one call: the stream has spoken.
async fn spoken_peer() -> (mcpstorm_core::Connection, peer::Peer) {
    let (conn, mut peer) = peer::connect(config(), 1 << 16);
    let first = tokio::spawn({
        let conn = conn.clone();
        async move { conn.request(method::TOOLS_CALL, Some(json!({})), CallOptions::default()).await }
    });
    let req = peer.request().await;
    peer.respond(req.id, json!({})).await;
    first.await.expect("the call task").expect("the first call is answered");
    // Later than that answer: what is sent from now on has heard nothing since.
    tokio::time::sleep(Duration::from_millis(10)).await;
    (conn, peer)
}

#[tokio::test(start_paused = true)]
async fn progress_keeps_a_long_call_alive_then_idle_timeout_applies() {
    let mut cfg = config();
    cfg.stream_idle = Duration::from_secs(10);
    let (conn, mut peer) = peer::connect(cfg, 1 << 16);
    let (tx, mut progress) = tokio::sync::mpsc::channel(4);
    let started = Instant::now();
    let call = tokio::spawn({
        let conn = conn.clone();
        async move {
            conn.request(method::TOOLS_CALL, Some(json!({})), CallOptions { progress: Some(tx), ..Default::default() })
                .await
        }
    });
    let req = peer.request().await;
    let token = req.id.as_number().unwrap();
    // Progress every 4 s for 20 s: far beyond the 5 s first-response timeout.
    for i in 1..=5 {
        tokio::time::sleep(Duration::from_secs(4)).await;
        let params = json!({"progressToken": token, "progress": i, "total": 10});
        peer.send(Message::notification(method::PROGRESS, Some(params))).await;
    }
    settle().await;
    let mut seen = 0;
    while let Ok(p) = progress.try_recv() {
        seen += 1;
        assert!(p.progress >= 1.0);
    }
    assert!(seen >= 4, "saw {seen} progress events");
    // Then silence: the 10 s idle timeout counts from the last progress (t = 20 s).
    let err = call.await.unwrap().unwrap_err();
    assert_eq!(err, CallError::Local(LocalError::IdleTimeout(Duration::from_secs(10))));
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_secs(30) && elapsed < Duration::from_secs(31), "{elapsed:?}");
}

#[tokio::test(start_paused = true)]
async fn overall_deadline_caps_every_phase() {
    let (conn, mut peer) = peer::connect(config(), 1 << 16);
    let deadline = Instant::now() + Duration::from_secs(2);
    let call = tokio::spawn({
        let conn = conn.clone();
        async move { conn.request("tools/call", None, CallOptions { deadline: Some(deadline), ..Default::default() }).await }
    });
    peer.request().await;
    assert_eq!(call.await.unwrap(), Err(CallError::Local(LocalError::DeadlineExceeded)));
    assert_eq!(Instant::now(), deadline);
}

#[tokio::test(start_paused = true)]
async fn queue_wait_times_out_and_permits_come_back() {
    let mut cfg = config();
    cfg.max_in_flight = 1;
    cfg.queue_wait = Duration::from_secs(1);
    let (conn, mut peer) = peer::connect(cfg, 1 << 16);
    let first = tokio::spawn({
        let conn = conn.clone();
        async move { conn.request("tools/call", None, CallOptions::default()).await }
    });
    let req = peer.request().await;
    let second = conn.request("tools/call", None, CallOptions::default()).await;
    assert_eq!(second, Err(CallError::Local(LocalError::QueueTimeout(Duration::from_secs(1)))));
    peer.respond(req.id, json!(1)).await;
    assert_eq!(first.await.unwrap().unwrap(), json!(1));
    assert_eq!(conn.stats().in_flight, 0);
    // The freed permit serves the next call.
    let third = tokio::spawn({
        let conn = conn.clone();
        async move { conn.request("tools/call", None, CallOptions::default()).await }
    });
    let req = peer.request().await;
    peer.respond(req.id, json!(3)).await;
    assert_eq!(third.await.unwrap().unwrap(), json!(3));
}

#[tokio::test(start_paused = true)]
async fn priority_lane_overtakes_queued_tool_calls() {
    // A tiny pipe: the writer blocks on the first big request while the rest pile up in the lanes.
    let (conn, mut peer) = peer::connect(config(), 64);
    let spawn_call = |lane: Lane, method: &'static str, pad: usize| {
        let conn = conn.clone();
        tokio::spawn(async move {
            conn.request(method, Some(json!({"pad": "x".repeat(pad)})), CallOptions { lane, ..Default::default() })
                .await
        })
    };
    let mut calls = vec![spawn_call(Lane::Normal, "tools/call", 10_000)];
    settle().await;
    calls.extend((0..20).map(|_| spawn_call(Lane::Normal, "tools/call", 10)));
    settle().await;
    calls.push(spawn_call(Lane::Priority, "ping", 0));
    settle().await;
    let mut order = Vec::new();
    for _ in 0..22 {
        order.push(peer.request().await.method);
    }
    // The blocked request first, then the ping ahead of the twenty tool calls queued before it.
    assert_eq!(order[1], "ping", "{order:?}");
    drop(calls);
}

#[tokio::test(start_paused = true)]
async fn server_requests_are_answered() {
    let (_conn, mut peer) = peer::connect(config(), 1 << 16);
    peer.send(Message::request(RequestId::String("s1".into()), "ping", None)).await;
    match peer.recv().await {
        Some(Ok(Message::Response(r))) => assert_eq!(
            r,
            mcpstorm_core::jsonrpc::Response {
                id: Some(RequestId::String("s1".into())),
                body: mcpstorm_core::jsonrpc::ResponseBody::Result(json!({}).into())
            }
        ),
        other => panic!("{other:?}"),
    }
    peer.send(Message::request(0, "roots/list", None)).await;
    match peer.recv().await {
        Some(Ok(Message::Response(mcpstorm_core::jsonrpc::Response {
            body: mcpstorm_core::jsonrpc::ResponseBody::Error(e),
            ..
        }))) => assert_eq!(e.code(), ErrorCode::METHOD_NOT_FOUND),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn malformed_frames_cost_one_frame_and_a_readable_id_fails_its_call_at_once() {
    let (conn, mut peer) = peer::connect(config(), 1 << 16);
    let call = tokio::spawn({
        let conn = conn.clone();
        async move { conn.request("tools/call", None, CallOptions::default()).await }
    });
    let req = peer.request().await;
    peer.send_raw(b"{not json\n[1,2]\n\xff\xfe\n{\"foo\":1}\n").await;
    let bad = format!("{{\"jsonrpc\":\"2.0\",\"id\":{},\"error\":\"boom\"}}\n", req.id);
    peer.send_raw(bad.as_bytes()).await;
    let err = call.await.unwrap().unwrap_err();
    assert!(matches!(err, CallError::MalformedResponse(_)), "{err:?}");
    // The connection still works.
    let ok = tokio::spawn({
        let conn = conn.clone();
        async move { conn.request("tools/call", None, CallOptions::default()).await }
    });
    let req = peer.request().await;
    peer.respond(req.id, json!("fine")).await;
    assert_eq!(ok.await.unwrap().unwrap(), json!("fine"));
    assert_eq!(conn.stats().rejected_frames, 5);
}

#[tokio::test(start_paused = true)]
async fn oversize_frame_fails_the_connection_with_a_clear_error() {
    let (conn, mut peer) = peer::connect_with(config(), 1 << 16, None, 1024);
    let call = tokio::spawn({
        let conn = conn.clone();
        async move { conn.request("tools/call", None, CallOptions::default()).await }
    });
    let req = peer.request().await;
    peer.respond(req.id, json!("y".repeat(4096))).await;
    assert_eq!(call.await.unwrap(), Err(CallError::Transport(TransportError::FrameTooLarge { max: 1024 })));
}

#[tokio::test(start_paused = true)]
async fn protocol_errors_keep_the_connection() {
    let (conn, mut peer) = peer::connect(config(), 1 << 16);
    let call = tokio::spawn({
        let conn = conn.clone();
        async move { conn.request("tools/call", None, CallOptions::default()).await }
    });
    let req = peer.request().await;
    let err = ErrorObject::new(ErrorCode::INVALID_PARAMS, "bad arguments");
    peer.send(Message::error(Some(req.id), err.clone())).await;
    let got = call.await.unwrap().unwrap_err();
    assert_eq!(got, CallError::Protocol(err));
    assert!(!got.closes_connection() && !got.retry_allowed(true));
    assert!(conn.is_open());
}

#[tokio::test(start_paused = true)]
async fn notifications_are_bounded_and_dropped_when_the_handler_is_slow() {
    let mut cfg = config();
    cfg.notification_queue = 4;
    cfg.notification_concurrency = 1;
    let (gate_tx, gate_rx) = tokio::sync::watch::channel(false);
    let handled = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let handler: mcpstorm_core::conn::NotificationHandler = {
        let handled = handled.clone();
        std::sync::Arc::new(move |_n| {
            let (handled, mut gate) = (handled.clone(), gate_rx.clone());
            Box::pin(async move {
                let _ = gate.wait_for(|open| *open).await;
                handled.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            })
        })
    };
    let (conn, mut peer) = peer::connect_with(cfg, 1 << 20, Some(handler), 1 << 20);
    for i in 0..100 {
        peer.send(Message::notification("notifications/message", Some(json!({"i": i})))).await;
    }
    settle().await;
    // The reader drains the pipe faster than the dispatcher runs: at most the queue (4), one waiting for a permit and
    // one in the handler survive; the rest are dropped and counted, and the reader never blocks.
    let dropped = conn.stats().notifications_dropped;
    assert!((94..=96).contains(&dropped), "dropped {dropped}");
    // Responses still flow while notifications back up.
    let call = tokio::spawn({
        let conn = conn.clone();
        async move { conn.request("ping", None, CallOptions::default()).await }
    });
    let req = peer.request().await;
    peer.respond(req.id, json!({})).await;
    assert_eq!(call.await.unwrap().unwrap(), json!({}));
    gate_tx.send(true).unwrap();
    settle().await;
    assert_eq!(handled.load(std::sync::atomic::Ordering::SeqCst) as u64, 100 - dropped);
}

#[tokio::test(start_paused = true)]
async fn progress_after_cancel_is_counted_not_delivered() {
    let (conn, mut peer) = peer::connect(config(), 1 << 16);
    let token = CancelToken::new();
    let call = tokio::spawn({
        let (conn, token) = (conn.clone(), token.clone());
        async move {
            conn.request(method::TOOLS_CALL, Some(json!({})), CallOptions { cancel: Some(token), ..Default::default() })
                .await
        }
    });
    let req = peer.request().await;
    token.cancel("stop");
    let _ = call.await;
    let id = req.id.as_number().unwrap();
    for i in 0..3 {
        peer.send(Message::notification(method::PROGRESS, Some(json!({"progressToken": id, "progress": i})))).await;
    }
    settle().await;
    assert_eq!(conn.stats().stray_progress, 3);
}
