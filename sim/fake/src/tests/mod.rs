//! Behaviour tests: the fake server driven by the real core client, or by raw frames where the wire itself is the
//! subject. In-memory duplex streams and paused tokio time make timings exact and the tests instant.

mod client;
mod control;
mod eras;
mod http;
mod http_faults;
mod sessions;
mod wire;

use std::sync::Arc;
use std::time::Duration;

use mcpstorm_core::CallError;
use mcpstorm_core::CallOptions;
use mcpstorm_core::mcp::CallToolResult;
use mcpstorm_core::{ClientConfig, McpClient};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf};
use tokio::time::{Instant, timeout};

use crate::pipe::PipeDialer;
use crate::{FakeServer, FakeServerConfig, LatencyDist, ToolConfig};

fn client(server: &FakeServer) -> Arc<McpClient> {
    Arc::new(McpClient::new(
        "fake",
        Arc::new(PipeDialer(server.clone())),
        ClientConfig::default(),
        mcpstorm_core::SeededRng::new(0),
    ))
}

fn server(config: FakeServerConfig) -> FakeServer {
    FakeServer::new(config).expect("test config is valid")
}

/// A server named "test" with the given tools.
fn config(tools: Vec<ToolConfig>) -> FakeServerConfig {
    FakeServerConfig { version: "9.9.9".into(), seed: 1, tools, ..FakeServerConfig::named("test") }
}

fn fixed(name: &str, ms: f64) -> ToolConfig {
    ToolConfig { latency: LatencyDist::Fixed { ms }, ..ToolConfig::new(name) }
}

/// Builtin tools with a worker limit.
fn builtin_with_workers(workers: usize) -> FakeServer {
    server(FakeServerConfig { workers: Some(workers), ..FakeServerConfig::builtin() })
}

async fn call(client: &McpClient, tool: &str, args: Value) -> Result<CallToolResult, CallError> {
    client.call_tool(tool, args, CallOptions::default()).await
}

async fn call_ok(client: &McpClient, tool: &str, args: Value) -> String {
    let result = call(client, tool, args).await.expect("call succeeds");
    assert!(!result.is_error, "unexpected tool error: {result:?}");
    result.joined_text()
}

/// Milliseconds since `start`.
fn ms_since(start: Instant) -> u128 {
    start.elapsed().as_millis()
}

/// A client that speaks raw frames, for wire-level assertions.
struct Raw {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    writer: WriteHalf<DuplexStream>,
}

impl Raw {
    fn connect(server: &FakeServer) -> Raw {
        let (reader, writer) = tokio::io::split(server.connect_pipe());
        Raw { lines: BufReader::new(reader).lines(), writer }
    }

    async fn send_bytes(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).await.expect("duplex write");
        self.writer.write_all(b"\n").await.expect("duplex write");
    }

    async fn send(&mut self, frame: Value) {
        self.send_bytes(frame.to_string().as_bytes()).await;
    }

    async fn request(&mut self, id: i64, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
    }

    /// The next frame within `wait`, or `None`.
    async fn recv_within(&mut self, wait: Duration) -> Option<Value> {
        let line = timeout(wait, self.lines.next_line()).await.ok()?;
        let line = line.expect("duplex read").expect("server closed the stream");
        Some(serde_json::from_str(&line).expect("server frames are JSON"))
    }

    async fn recv(&mut self) -> Value {
        self.recv_within(Duration::from_secs(60)).await.expect("a frame within 60 s")
    }

    /// Sends a request and returns the next frame, which must be its response.
    async fn roundtrip(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.request(id, method, params).await;
        let frame = self.recv().await;
        assert_eq!(frame["id"], json!(id), "{frame}");
        frame
    }
}
