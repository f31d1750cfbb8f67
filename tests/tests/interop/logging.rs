//! Log messages through `mcpstorm gateway`, end to end: the conformance suite's fixture server (the Python `mcp` SDK
//! 2.x over stdio, which the gateway speaks 2026-07-28 to) logs three `info` messages from `test_tool_with_logging`;
//! agents (the core's own client over Streamable HTTP, one of each era) get those their own level admits, with
//! `logger` naming the server, and an agent that asked for none gets none.

use mcpstorm_core::mcp::logging::{LogLevel, LogSink};
use mcpstorm_core::session::EraMode;
use mcpstorm_core::{CallOptions, ClientConfig, HttpEndpoint, McpClient, SeededRng};
use mcpstorm_tests::real_servers::{python_server, repo_root};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::gateway::gateway;

fn agent(url: &str, era_mode: EraMode) -> McpClient {
    let config = ClientConfig { era_mode, ..ClientConfig::default() };
    McpClient::http("agent", HttpEndpoint::new(url).expect("url"), config, SeededRng::new(1))
}

/// The log messages one `test_tool_with_logging` call of `agent` got, asking for them at `level`.
async fn logs_of_a_call(agent: &McpClient, level: Option<LogLevel>) -> Vec<Value> {
    let (tx, mut rx) = mpsc::channel(16);
    let opts = CallOptions { logs: level.map(|level| LogSink { level, tx }), ..CallOptions::default() };
    let result = agent.call_tool("test_tool_with_logging", json!({}), opts).await.expect("call");
    assert!(!result.is_error, "{result:?}");
    let mut got = Vec::new();
    while let Ok(message) = rx.try_recv() {
        got.push(message);
    }
    got
}

fn the_three() -> Vec<Value> {
    ["started", "working", "finished"]
        .map(|step| json!({"level": "info", "logger": "fixture", "data": format!("test_tool_with_logging {step}")}))
        .to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_agent_gets_the_log_messages_of_its_own_level_with_the_server_named() {
    peer_or_skip!(python_server());
    let python = std::env::var("MCPSTORM_PYTHON").unwrap_or_else(|_| "python3".into());
    let command = format!("{python} {}", repo_root().join("tests/conformance/fixture_server.py").display());
    let (mut process, url) =
        gateway(&format!("[[servers]]\nname = \"fixture\"\n[[servers.replicas]]\nstdio = {command:?}\n")).await;

    // 2026-07-28: each request's own level.
    let modern = agent(&url, EraMode::Auto);
    assert_eq!(logs_of_a_call(&modern, Some(LogLevel::Debug)).await, the_three());
    assert_eq!(logs_of_a_call(&modern, Some(LogLevel::Warning)).await, [] as [Value; 0]);
    assert_eq!(logs_of_a_call(&modern, None).await, [] as [Value; 0]);

    // 2025-11-25: the session's level, as its logging/setLevel set it.
    let legacy = agent(&url, EraMode::Legacy);
    assert_eq!(logs_of_a_call(&legacy, Some(LogLevel::Debug)).await, [] as [Value; 0], "no level set yet");
    let session = legacy.session().await.expect("session");
    for (level, expected) in [("warning", vec![]), ("info", the_three())] {
        let set = session.conn.request("logging/setLevel", Some(json!({"level": level})), CallOptions::default());
        assert_eq!(set.await.expect("logging/setLevel"), json!({}));
        assert_eq!(logs_of_a_call(&legacy, Some(LogLevel::Debug)).await, expected, "at {level}");
    }
    // Another agent's level is not this one's.
    assert_eq!(logs_of_a_call(&modern, Some(LogLevel::Error)).await, [] as [Value; 0]);
    modern.close().await;
    legacy.close().await;
    process.stop().await;
}
