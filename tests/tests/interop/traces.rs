//! The gateway's traces against what nobody here wrote (issue 45): the Python SDK's client, as an agent, sends each
//! call with a `traceparent` in `params._meta`; the gateway routes it over two replicas of a Python SDK server
//! (`tests/peers/py_trace_server.py`, which answers with the trace context its request carried), one of them killed,
//! and exports its spans to a collector this test runs. What the collector received is decoded with OpenTelemetry's
//! own protobuf messages (`opentelemetry-proto`) and must hold, for every call, one trace: the agent's span as the
//! parent of the gateway's call span, the call's attempts under it, and the upstream's `traceparent` naming the
//! attempt that reached it; and for the call that met the killed replica first, two attempts, the first admitted by
//! its breaker and failed, the second retried by the gateway on the live replica.

use std::collections::BTreeMap;
use std::sync::PoisonError;
use std::time::Duration;

use mcpstorm_core::observe::trace::{TraceParent, attr};
use mcpstorm_tests::real_servers::{python_server, repo_root};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;
use serde_json::Value;
use tokio::process::{Child, Command};

use super::gateway::gateway;
use super::otlp_sink::{Received, otlp_sink};

/// Every span received so far, decoded.
fn spans(received: &Received) -> Vec<Span> {
    let bodies = received.lock().unwrap_or_else(PoisonError::into_inner).clone();
    let mut out = Vec::new();
    for body in bodies {
        let request = ExportTraceServiceRequest::decode(body.as_slice()).expect("an OTLP ExportTraceServiceRequest");
        for resource in request.resource_spans {
            let service = resource.resource.as_ref().and_then(|r| {
                r.attributes.iter().find(|kv| kv.key == "service.name").and_then(|kv| text(kv.value.as_ref()))
            });
            assert_eq!(service.as_deref(), Some("mcpstorm-gateway"), "the resource names the gateway");
            out.extend(resource.scope_spans.into_iter().flat_map(|s| s.spans));
        }
    }
    out
}

fn text(value: Option<&opentelemetry_proto::tonic::common::v1::AnyValue>) -> Option<String> {
    match value?.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(s.clone()),
        any_value::Value::IntValue(i) => Some(i.to_string()),
        _ => None,
    }
}

/// A span's attributes as text.
fn attributes(span: &Span) -> BTreeMap<String, String> {
    span.attributes.iter().filter_map(|kv| Some((kv.key.clone(), text(kv.value.as_ref())?))).collect()
}

/// A Python SDK trace server on a free port; killed when dropped.
async fn replica(python: &str) -> (Child, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("port").port();
    let child = Command::new(python)
        .arg(repo_root().join("tests/peers/py_trace_server.py"))
        .arg(port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start the trace server");
    for _ in 0..300 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return (child, port);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("py_trace_server.py never listened on port {port}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_agents_trace_runs_through_the_gateway_into_a_python_server() {
    let python = peer_or_skip!(python_server()).program;
    let (collector, received) = otlp_sink(true).await.expect("the collector");
    let (mut killed, killed_port) = replica(&python).await;
    let (_live, live_port) = replica(&python).await;
    // Round robin, so the calls after the kill meet the dead replica before any health check could take it out of
    // rotation (checks every 10 minutes here); one export every 50 ms, so the test waits little for its spans.
    let config = format!(
        "[telemetry]\notlp = \"http://{collector}\"\ninterval = \"50ms\"\n\n\
         [gateway]\nformula = \"round_robin\"\n[gateway.router]\ncheck_interval = \"10m\"\n\n\
         [[servers]]\nname = \"traced\"\n\
         [[servers.replicas]]\nhttp = \"http://127.0.0.1:{killed_port}/mcp\"\n\
         [[servers.replicas]]\nhttp = \"http://127.0.0.1:{live_port}/mcp\"\n"
    );
    let (mut process, url) = gateway(&config).await;
    killed.kill().await.expect("kill a replica");
    while tokio::net::TcpStream::connect(("127.0.0.1", killed_port)).await.is_ok() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    const CALLS: usize = 4;
    let mut agent = Command::new(&python);
    agent.arg(repo_root().join("tests/peers/py_trace_client.py")).args([url.as_str(), &CALLS.to_string()]);
    let output = agent.output().await.expect("run the Python agent");
    assert!(output.status.success(), "the agent failed: {}", String::from_utf8_lossy(&output.stderr));
    let calls: Vec<Value> = serde_json::from_slice(&output.stdout).expect("the agent's JSON list");
    assert_eq!(calls.len(), CALLS);

    // Every call ends with its spans queued; they reach the collector within an export interval or two.
    let want_servers = CALLS;
    let mut all = spans(&received);
    for _ in 0..600 {
        if all.iter().filter(|s| s.kind == SpanKind::Server as i32).count() >= want_servers {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        all = spans(&received);
    }
    process.stop().await;

    let mut retried = 0;
    for call in &calls {
        let sent = TraceParent::parse(call["sent"].as_str().expect("sent")).expect("the agent's traceparent");
        let trace_id = sent.trace_id.0.to_vec();
        let trace: Vec<&Span> = all.iter().filter(|s| s.trace_id == trace_id).collect();
        let servers: Vec<&&Span> = trace.iter().filter(|s| s.kind == SpanKind::Server as i32).collect();
        assert_eq!(servers.len(), 1, "one gateway call span in trace {}: {trace:#?}", sent.trace_id);
        let server = servers[0];
        assert_eq!(server.parent_span_id, sent.parent_id.0.to_vec(), "the agent's span is the call span's parent");
        assert_eq!(server.name, "tools/call whoami");
        assert_eq!(server.trace_state, "agent=1", "the agent's tracestate stays with its trace");
        let a = attributes(server);
        assert_eq!(a.get(attr::MCP_METHOD_NAME).map(String::as_str), Some("tools/call"));
        assert_eq!(a.get(attr::GEN_AI_TOOL_NAME).map(String::as_str), Some("whoami"));
        assert_eq!(a.get(attr::GEN_AI_OPERATION_NAME).map(String::as_str), Some("execute_tool"));
        assert_eq!(a.get(attr::ERROR_TYPE), None, "the call succeeded");
        assert!(!a.contains_key("gen_ai.tool.call.arguments"), "no content without record_content");

        let mut attempts: Vec<&&Span> = trace.iter().filter(|s| s.kind == SpanKind::Client as i32).collect();
        attempts.sort_by_key(|s| attributes(s).get(attr::ATTEMPT_RETRY).cloned());
        assert!(!attempts.is_empty(), "an attempt span");
        for (i, attempt) in attempts.iter().enumerate() {
            assert_eq!(attempt.parent_span_id, server.span_id, "attempts are children of the call span");
            let a = attributes(attempt);
            assert_eq!(a.get(attr::ATTEMPT_RETRY), Some(&i.to_string()));
            assert_eq!(a.get(attr::BREAKER_DECISION).map(String::as_str), Some("admitted"));
            assert!(attempt.start_time_unix_nano >= server.start_time_unix_nano, "{attempt:?} within {server:?}");
            assert!(attempt.end_time_unix_nano <= server.end_time_unix_nano, "{attempt:?} within {server:?}");
        }
        // What the upstream received names the last attempt, the one that reached it, in the agent's trace.
        let last = attempts.last().expect("an attempt");
        let seen = &call["seen"];
        let upstream = TraceParent::parse(seen["traceparent"].as_str().expect("the server saw a traceparent"))
            .expect("a valid traceparent upstream");
        assert_eq!(upstream.trace_id, sent.trace_id, "the upstream joins the agent's trace");
        assert_eq!(upstream.parent_id.0.to_vec(), last.span_id, "the upstream's parent is its attempt's span");
        assert_eq!((seen["tracestate"].as_str(), seen["baggage"].as_str()), (Some("agent=1"), Some("user=test")));
        let last_attrs = attributes(last);
        assert_eq!(last_attrs.get(attr::ATTEMPT_OUTCOME).map(String::as_str), Some("success"));
        assert_eq!(seen["port"], live_port, "only the live replica answers");
        assert_eq!(last_attrs.get(attr::SERVER_PORT), Some(&live_port.to_string()));

        if attempts.len() == 2 {
            retried += 1;
            let first = attributes(attempts[0]);
            assert_eq!(first.get(attr::SERVER_PORT), Some(&killed_port.to_string()), "the first try met the kill");
            assert_ne!(first.get(attr::ATTEMPT_OUTCOME).map(String::as_str), Some("success"));
            assert!(first.contains_key(attr::ERROR_TYPE), "{first:?}");
            assert_eq!(last_attrs.get(attr::ATTEMPT_RETRY_BY).map(String::as_str), Some("gateway"));
            assert!(attempts[0].end_time_unix_nano <= attempts[1].start_time_unix_nano);
        }
    }
    assert!(retried >= 1, "round robin sends one call to the killed replica first, and the gateway retries it");
    assert_eq!(
        all.iter().filter(|s| s.kind == SpanKind::Server as i32).count(),
        CALLS,
        "one call span per call, no other"
    );
}
