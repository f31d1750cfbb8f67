//! The fake driven by the real core client.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpstorm_core::mcp::LATEST_PROTOCOL_VERSION;
use mcpstorm_core::session::{Era, MODERN_PROTOCOL_VERSIONS};
use mcpstorm_core::{CallError, CallOptions, CancelToken, LocalError};
use serde_json::json;
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep};

use super::*;
use crate::{ErrorKind, ProtocolEra, both_eras};

#[tokio::test(start_paused = true)]
async fn handshake_and_paginated_tools_list_in_every_era() {
    let cases = [
        (vec![ProtocolEra::Legacy], Era::Legacy, LATEST_PROTOCOL_VERSION),
        (vec![ProtocolEra::Modern], Era::Modern, MODERN_PROTOCOL_VERSIONS[0]),
        (both_eras(), Era::Modern, MODERN_PROTOCOL_VERSIONS[0]),
    ];
    for (eras, era, version) in cases {
        let tools = (0..5).map(|i| ToolConfig::new(format!("t{i}"))).collect();
        let fake = server(FakeServerConfig { page_size: Some(2), eras: eras.clone(), ..config(tools) });
        let client = client(&fake);
        let session = client.session().await.expect("handshake");
        assert_eq!((session.era, session.init.protocol_version.as_str()), (era, version), "{eras:?}");
        let info = &session.init.server_info;
        assert_eq!((info.name.as_str(), info.version.as_str()), ("test", "9.9.9"), "{eras:?}");
        assert!(session.init.tools_list_changed(), "{eras:?}");
        let listed = client.list_tools().await.expect("tools/list");
        let names: Vec<&str> = listed.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["t0", "t1", "t2", "t3", "t4"], "{eras:?}");
        assert_eq!(listed[0].input_schema, json!({"type": "object"}));
        client.ping().await.expect("ping (server/discover in the modern era)");
    }
}

#[tokio::test(start_paused = true)]
async fn builtin_tools_behave_like_the_python_peer() {
    let fake = FakeServer::builtin();
    let client = client(&fake);
    let tools = client.list_tools().await.expect("tools/list");
    let sleep_ms = tools.iter().find(|t| t.name == "sleep_ms").expect("sleep_ms listed");
    // The Python peer's tools declare no annotations, and most real servers' tools declare none either.
    assert!(tools.iter().all(|t| t.annotations.is_none()), "{tools:?}");
    assert_eq!(sleep_ms.input_schema["required"], json!(["ms"]));
    assert_eq!(call_ok(&client, "echo", json!({"message": "hello"})).await, "hello");
    let start = Instant::now();
    assert_eq!(call_ok(&client, "sleep_ms", json!({"ms": 250})).await, "slept 250ms");
    assert_eq!(ms_since(start), 250);
    let stats = fake.stats();
    assert_eq!((stats.received, stats.completed, stats.errored), (2, 2, 0));
}

#[tokio::test(start_paused = true)]
async fn calls_complete_in_latency_order_not_arrival_order() {
    let fake = server(config(vec![fixed("slow", 30.0), fixed("mid", 20.0), fixed("fast", 10.0)]));
    let client = client(&fake);
    client.list_tools().await.expect("tools/list");
    let done = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for tool in ["slow", "mid", "fast"] {
        let (client, done) = (client.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            call_ok(&client, tool, json!({})).await;
            done.lock().expect("not poisoned").push((tool, ms_since(start)));
        }));
    }
    for task in tasks {
        task.await.expect("call task");
    }
    let done = done.lock().expect("not poisoned").clone();
    assert_eq!(done, [("fast", 10), ("mid", 20), ("slow", 30)]);
}

/// Starts `n` concurrent calls of `tool` and returns each one's completion time in ms, sorted.
async fn concurrent(client: &Arc<McpClient>, tool: &'static str, args: serde_json::Value, n: usize) -> Vec<u128> {
    let start = Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (client, args) = (client.clone(), args.clone());
            tokio::spawn(async move {
                call_ok(&client, tool, args).await;
                ms_since(start)
            })
        })
        .collect();
    let mut times = Vec::new();
    for task in tasks {
        times.push(task.await.expect("call task"));
    }
    times.sort_unstable();
    times
}

#[tokio::test(start_paused = true)]
async fn worker_pool_queues_calls_fifo() {
    let fake = builtin_with_workers(1);
    let client = client(&fake);
    client.list_tools().await.expect("tools/list");
    let probe = {
        let control = fake.control();
        tokio::spawn(async move {
            sleep(Duration::from_millis(10)).await;
            control.stats()
        })
    };
    let times = concurrent(&client, "sleep_ms", json!({"ms": 50}), 3).await;
    assert_eq!(times, [50, 100, 150]);
    let mid = probe.await.expect("probe");
    assert_eq!((mid.in_progress, mid.queued), (1, 2));
    let end = fake.stats();
    assert_eq!((end.completed, end.in_progress, end.queued), (3, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn worker_pool_is_shared_by_all_connections() {
    let fake = builtin_with_workers(1);
    let (a, b) = (client(&fake), client(&fake));
    a.list_tools().await.expect("tools/list");
    b.list_tools().await.expect("tools/list");
    let start = Instant::now();
    let (a2, b2) = (a.clone(), b.clone());
    let first = tokio::spawn(async move { call_ok(&a2, "sleep_ms", json!({"ms": 40})).await });
    let second = tokio::spawn(async move { call_ok(&b2, "sleep_ms", json!({"ms": 40})).await });
    first.await.expect("first");
    second.await.expect("second");
    assert_eq!(ms_since(start), 80);
    assert_eq!(fake.stats().connections, 2);
    drop((a, b));
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(fake.stats().connections, 0, "closing both clients closes both server connections");
}

#[tokio::test(start_paused = true)]
async fn injected_errors_of_both_kinds() {
    let rpc = ToolConfig { error_rate: 1.0, error_kind: ErrorKind::Jsonrpc, ..ToolConfig::new("rpc") };
    let tool = ToolConfig { error_rate: 1.0, ..ToolConfig::new("tool") };
    let fake = server(config(vec![rpc, tool, ToolConfig::new("fine")]));
    let client = client(&fake);
    match call(&client, "rpc", json!({})).await {
        Err(CallError::Protocol(e)) => {
            assert_eq!((e.code, e.message.as_str()), (-32603, "injected failure"));
        }
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
    let result = call(&client, "tool", json!({})).await.expect("a result");
    assert!(result.is_error && result.joined_text().contains("injected failure"), "{result:?}");
    assert_eq!(call_ok(&client, "fine", json!({})).await, "ok fine 0ms");
    let stats = fake.stats();
    assert_eq!((stats.received, stats.errored, stats.completed), (3, 2, 1));
}

/// Which of 40 calls at error rate 0.5 fail, on a fresh server seeded `seed`.
async fn failure_pattern(seed: u64) -> Vec<bool> {
    let flaky = ToolConfig {
        error_rate: 0.5,
        latency: LatencyDist::Lognormal { p50_ms: 5.0, p99_ms: 50.0 },
        ..ToolConfig::new("flaky")
    };
    let fake = server(FakeServerConfig { seed, ..config(vec![flaky]) });
    let client = client(&fake);
    let mut pattern = Vec::new();
    for _ in 0..40 {
        pattern.push(call(&client, "flaky", json!({})).await.expect("a result").is_error);
    }
    pattern
}

#[tokio::test(start_paused = true)]
async fn error_draws_are_deterministic_per_seed() {
    let a = failure_pattern(42).await;
    assert_eq!(a, failure_pattern(42).await);
    assert_ne!(a, failure_pattern(43).await);
    let failures = a.iter().filter(|f| **f).count();
    assert!((8..=32).contains(&failures), "{failures} of 40 failed at rate 0.5");
}

#[tokio::test(start_paused = true)]
async fn cancellation_aborts_the_call_and_frees_its_worker() {
    let fake = builtin_with_workers(1);
    let client = client(&fake);
    client.list_tools().await.expect("tools/list");
    let token = CancelToken::new();
    let canceller = {
        let token = token.clone();
        tokio::spawn(async move {
            sleep(Duration::from_millis(100)).await;
            token.cancel("user gave up");
        })
    };
    let start = Instant::now();
    let opts = CallOptions { cancel: Some(token), ..CallOptions::default() };
    let outcome = client.call_tool("sleep_ms", json!({"ms": 1000}), opts).await;
    assert!(matches!(outcome, Err(CallError::Local(LocalError::Cancelled(_)))), "{outcome:?}");
    canceller.await.expect("canceller");
    // The only worker was released by the cancellation: the next call runs at once, not after 1000 ms.
    assert_eq!(call_ok(&client, "sleep_ms", json!({"ms": 10})).await, "slept 10ms");
    assert_eq!(ms_since(start), 110);
    let stats = fake.stats();
    assert_eq!((stats.cancelled, stats.completed, stats.in_progress, stats.queued), (1, 1, 0, 0));
    // Well past the cancelled call's latency, no answer for it ever arrived.
    sleep(Duration::from_millis(2000)).await;
    let conn = client.session().await.expect("session").conn.stats();
    assert_eq!((conn.late_responses, conn.unknown_responses, conn.cancels_sent), (0, 0, 1));
}

#[tokio::test(start_paused = true)]
async fn progress_reaches_the_caller() {
    let fake = FakeServer::builtin();
    let client = client(&fake);
    let (tx, mut rx) = mpsc::channel(16);
    let opts = CallOptions { progress: Some(tx), ..CallOptions::default() };
    let start = Instant::now();
    let result = client.call_tool("slow_progress", json!({"steps": 3, "step_ms": 100}), opts).await;
    assert_eq!(result.expect("call succeeds").joined_text(), "done 3 steps");
    assert_eq!(ms_since(start), 300);
    let mut seen = Vec::new();
    while let Ok(p) = rx.try_recv() {
        seen.push((p.progress, p.total));
    }
    assert_eq!(seen, [(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))]);
}

#[tokio::test(start_paused = true)]
async fn progress_ms_reports_periodically_during_a_sampled_latency() {
    let tool = ToolConfig { progress_ms: Some(20), ..fixed("long", 100.0) };
    let fake = server(config(vec![tool]));
    let client = client(&fake);
    let (tx, mut rx) = mpsc::channel(16);
    let opts = CallOptions { progress: Some(tx), ..CallOptions::default() };
    client.call_tool("long", json!({}), opts).await.expect("call succeeds");
    let mut count = 0;
    while rx.try_recv().is_ok() {
        count += 1;
    }
    assert_eq!(count, 5);
}

#[tokio::test(start_paused = true)]
async fn structured_content_is_listed_and_returned() {
    let tool = ToolConfig { structured_content: true, reply: Some("{arg:x}!".into()), ..ToolConfig::new("s") };
    let fake = server(config(vec![tool]));
    let client = client(&fake);
    let listed = client.list_tools().await.expect("tools/list");
    assert_eq!(
        listed[0].output_schema.as_ref().and_then(|s| s.pointer("/properties/result/type")),
        Some(&json!("string"))
    );
    let result = call(&client, "s", json!({"x": "hey"})).await.expect("result");
    assert_eq!(result.structured_content, Some(json!({"result": "hey!"})));
}

/// A server cannot tell a client that closed from one that half-closed until an answer fails to reach it, so a
/// closed connection's calls run out their time and hold their workers, as on a real server; then the connection
/// ends. (Cancelling, which the client does for calls it gives up on, is what frees a worker early.)
#[tokio::test(start_paused = true)]
async fn a_closed_connection_runs_its_calls_out_then_ends() {
    let fake = builtin_with_workers(1);
    let (a, b) = (client(&fake), client(&fake));
    a.list_tools().await.expect("tools/list");
    b.list_tools().await.expect("tools/list");
    let a2 = a.clone();
    let doomed = tokio::spawn(async move { call(&a2, "sleep_ms", json!({"ms": 3_000})).await });
    sleep(Duration::from_millis(10)).await;
    assert_eq!(fake.stats().in_progress, 1);
    a.close().await;
    assert!(doomed.await.expect("doomed task").is_err());
    assert_eq!(fake.stats().connections, 2, "a's connection waits for its call");
    let start = Instant::now();
    assert_eq!(call_ok(&b, "sleep_ms", json!({"ms": 5})).await, "slept 5ms");
    assert_eq!(ms_since(start), 2_995, "b waited for the worker");
    let stats = fake.stats();
    assert_eq!((stats.abandoned, stats.in_progress, stats.connections, stats.connections_total), (0, 0, 1, 2));
}

#[tokio::test]
async fn serves_over_loopback_tcp() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("bound address").to_string();
    let fake = FakeServer::builtin();
    let serving = {
        let fake = fake.clone();
        tokio::spawn(async move { fake.serve(listener).await })
    };
    let dialer = mcpstorm_core::TcpDialer { addr };
    let client = McpClient::new(
        "fake",
        Arc::new(dialer),
        mcpstorm_core::ClientConfig::default(),
        mcpstorm_core::SeededRng::new(0),
    );
    assert_eq!(client.list_tools().await.expect("tools/list").len(), 3);
    assert_eq!(call_ok(&client, "echo", json!({"message": "over tcp"})).await, "over tcp");
    assert_eq!(call_ok(&client, "sleep_ms", json!({"ms": 20})).await, "slept 20ms");
    assert_eq!(fake.stats().connections_total, 1);
    serving.abort();
}

/// A client that shuts its write side after its last request and goes on reading (a half-close, as HTTP/1.1 clients
/// and JSON-RPC peers piping a batch do) gets every answer, and then the end of the stream.
#[tokio::test]
async fn a_half_closed_tcp_client_gets_every_answer_then_eof() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("bound address");
    let fake = FakeServer::builtin();
    let serving = {
        let fake = fake.clone();
        tokio::spawn(async move { fake.serve(listener).await })
    };
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let mut batch = String::new();
    for (id, method, params) in [
        (1, "ping", json!({})),
        (2, "tools/call", json!({"name": "sleep_ms", "arguments": {"ms": 200}})),
        (3, "tools/call", json!({"name": "echo", "arguments": {"message": "half"}})),
    ] {
        batch.push_str(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string());
        batch.push('\n');
    }
    stream.write_all(batch.as_bytes()).await.expect("write the batch");
    stream.shutdown().await.expect("half-close");
    let mut text = String::new();
    let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_string(&mut text)).await;
    read.expect("the server closes after answering").expect("read the answers");
    let mut answers: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("JSON frame")).collect();
    answers.sort_by_key(|a| a["id"].as_i64());
    assert_eq!(answers.len(), 3, "{text}");
    assert_eq!(answers[0], json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    assert_eq!(answers[1]["result"]["content"][0]["text"], "slept 200ms", "{text}");
    assert_eq!(answers[2]["result"]["content"][0]["text"], "half", "{text}");
    let stats = fake.stats();
    assert_eq!((stats.completed, stats.abandoned, stats.connections), (2, 0, 0));
    serving.abort();
}

#[tokio::test]
async fn a_live_server_refuses_an_invalid_config() {
    let bad = FakeServerConfig { workers: Some(0), ..FakeServerConfig::builtin() };
    let err = crate::live_server(bad).expect_err("invalid config");
    assert!(err.to_string().contains("workers"), "{err}");
}

/// A server's declared router hints and capability matrix ride in its handshake's `_meta`, in both eras, where the
/// core's capability record reads them (`RouterHints`, the router's `matrix_from_meta`).
#[tokio::test(start_paused = true)]
async fn declared_hints_and_capabilities_reach_the_core_through_meta() {
    let meta = json!({"latency_p95_ms": 100.0, "max_concurrent_requests": 20, "language_support": ["python", "rust"]});
    for eras in [vec![ProtocolEra::Legacy], vec![ProtocolEra::Modern]] {
        let meta = meta.as_object().cloned();
        let fake = server(FakeServerConfig { eras: eras.clone(), meta, ..config(vec![ToolConfig::new("t")]) });
        let client = client(&fake);
        let caps = client.capabilities().await.expect("handshake and tools/list");
        let hints = caps.server_hints();
        assert_eq!(hints.latency_p95, Some(Duration::from_millis(100)), "{eras:?}");
        assert_eq!(hints.max_concurrent_requests, Some(20), "{eras:?}");
        let session = client.session().await.expect("session");
        let spec =
            mcpstorm_core::router::ServerEntry::from_capabilities("s", ["s-0"], &caps, session.init.extra.get("_meta"));
        assert!(spec.matrix["language_support"].contains("rust"), "{eras:?}: {:?}", spec.matrix);
        assert_eq!(spec.hints, hints);
    }
}
