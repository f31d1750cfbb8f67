//! The Streamable HTTP transport against real servers: the Python `mcp` SDK 2.x (both eras) and 1.x (legacy) serving
//! `tests/peers/py_http_server.py` in stateful, stateless and JSON-response modes, and
//! `@modelcontextprotocol/server-everything` in its `streamableHttp` mode (legacy, sessions). A missing peer skips
//! loudly, or fails under `MCPSTORM_REQUIRE_PEERS=1`.

use std::sync::Arc;
use std::time::Duration;

use mcpstorm_core::session::{Era, EraMode};
use mcpstorm_core::{CallOptions, ClientConfig, HttpEndpoint, McpClient, SeededRng, StdioDialer, TcpDialer};
use mcpstorm_tests::real_servers::{everything_server, python_mcp1_server, python_server};
use serde_json::json;
use tokio::process::{Child, Command};

/// A server process listening on a loopback port; killed when dropped.
struct Served {
    _child: Child,
    port: u16,
}

/// A free loopback port (there is a small race until the server binds it; the tests tolerate no reuse).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    l.local_addr().expect("bound address").port()
}

/// Starts `program args` and waits (bounded) until its port accepts connections.
async fn serve(program: &str, args: Vec<String>, port: u16, env: &[(&str, String)]) -> Served {
    let child = Command::new(program)
        .args(&args)
        .envs(env.iter().map(|(k, v)| (*k, v.clone())))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start the peer");
    for _ in 0..300 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return Served { _child: child, port };
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{program} {args:?} never listened on port {port}");
}

/// The Python peer over HTTP, run by the interpreter `stdio` would have used.
async fn python_http(stdio: StdioDialer, flags: &[&str]) -> Served {
    let script = mcpstorm_tests::real_servers::repo_root().join("tests/peers/py_http_server.py");
    let port = free_port();
    let mut args = vec![script.to_string_lossy().into_owned(), port.to_string()];
    args.extend(flags.iter().map(|f| (*f).to_owned()));
    serve(&stdio.program, args, port, &[]).await
}

fn client(served: &Served, mode: EraMode) -> McpClient {
    let mut config = ClientConfig { era_mode: mode, lifecycle_retries: 0, ..ClientConfig::default() };
    config.connection.first_response = Duration::from_secs(20);
    let url = format!("http://127.0.0.1:{}/mcp", served.port);
    let endpoint = HttpEndpoint::new(&url).expect("endpoint");
    let dialer = Arc::new(TcpDialer { addr: format!("127.0.0.1:{}", served.port) });
    McpClient::new(url, dialer, config, SeededRng::new(1)).with_http(endpoint)
}

/// Connects in `mode`, checks the era, lists tools, calls `echo` twice (the pool reuses its connection) and
/// `slow_progress` when the peer has it.
async fn exercise(served: &Served, mode: EraMode, era: Era, tool: &str) {
    let c = client(served, mode);
    let session = c.session().await.expect("connect over HTTP");
    assert_eq!(session.era, era);
    let tools = c.list_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == tool), "{tool} not listed");
    for word in ["hello", "again"] {
        let result = c.call_tool(tool, json!({"message": word}), CallOptions::default()).await.expect("echo");
        let text = result.content[0]["text"].as_str().unwrap_or_default().to_owned();
        assert!(text.contains(word), "{text}");
    }
    if tools.iter().any(|t| t.name == "slow_progress") {
        let result = c
            .call_tool("slow_progress", json!({"steps": 3, "step_ms": 10}), CallOptions::default())
            .await
            .expect("slow_progress");
        assert_eq!(result.content[0]["text"], "done 3 steps");
    }
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_2_stateful_sse_in_both_eras() {
    let stdio = peer_or_skip!(python_server());
    let served = python_http(stdio, &[]).await;
    exercise(&served, EraMode::Auto, Era::Modern, "echo").await;
    exercise(&served, EraMode::Legacy, Era::Legacy, "echo").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_2_stateless_json_in_both_eras() {
    let stdio = peer_or_skip!(python_server());
    let served = python_http(stdio, &["--stateless", "--json"]).await;
    exercise(&served, EraMode::Auto, Era::Modern, "echo").await;
    exercise(&served, EraMode::Legacy, Era::Legacy, "echo").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_1_stateful_stateless_and_json() {
    let stdio = peer_or_skip!(python_mcp1_server());
    for flags in [&[][..], &["--stateless"][..], &["--json"][..]] {
        let served = python_http(stdio.clone(), flags).await;
        // Auto: the 1.x server refuses `server/discover`, and the core falls back to `initialize`.
        exercise(&served, EraMode::Auto, Era::Legacy, "echo").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_streamable_http() {
    let stdio = peer_or_skip!(everything_server());
    let port = free_port();
    let args = vec![stdio.args[0].clone(), "streamableHttp".to_owned()];
    let served = serve(&stdio.program, args, port, &[("PORT", port.to_string())]).await;
    exercise(&served, EraMode::Auto, Era::Legacy, "echo").await;
}

/// `EraMode::HandshakeFirst` (the gateway's default) over HTTP to a server of both eras (the Python SDK 2.x): the
/// session is 2025-11-25's, a call whose asks could be answered is made on it, and one nobody could be asked for
/// leaves it for 2026-07-28, as the server itself reports (`protocol_version`). To a 2025-11-25-only server (the
/// Python SDK 1.x, server-everything) every call stays on the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handshake_first_calls_leave_the_session_only_when_nothing_can_be_asked_and_the_server_speaks_both_eras() {
    let stdio = peer_or_skip!(python_server());
    let script = mcpstorm_tests::real_servers::repo_root().join("tests/peers/py_ask_server.py");
    let port = free_port();
    let served = serve(&stdio.program, vec![script.to_string_lossy().into_owned(), port.to_string()], port, &[]).await;
    let c = client(&served, EraMode::HandshakeFirst);
    let session = c.session().await.expect("connect over HTTP");
    assert_eq!((session.era, session.init.protocol_version.as_str()), (Era::Legacy, "2025-11-25"));
    let saw = |opts: CallOptions| {
        let c = &c;
        async move {
            let result = c.call_tool("protocol_version", json!({}), opts).await.expect("protocol_version");
            result.content[0]["text"].as_str().unwrap_or_default().to_owned()
        }
    };
    assert_eq!(saw(CallOptions::default()).await, "2026-07-28", "no relay for asks: the call leaves the session");
    let (asks, _held) = tokio::sync::mpsc::channel::<mcpstorm_core::conn::Asked>(1);
    let relayed = CallOptions { asks: Some(Arc::new(asks)), ..CallOptions::default() };
    assert_eq!(saw(relayed).await, "2025-11-25", "asks can be answered: the call stays on the session");
    c.close().await;

    let stdio = peer_or_skip!(python_mcp1_server());
    let served = python_http(stdio, &[]).await;
    exercise(&served, EraMode::HandshakeFirst, Era::Legacy, "echo").await;
    // server-everything refuses the probe outside its session: its session is not harmed by it.
    let stdio = peer_or_skip!(everything_server());
    let port = free_port();
    let args = vec![stdio.args[0].clone(), "streamableHttp".to_owned()];
    let served = serve(&stdio.program, args, port, &[("PORT", port.to_string())]).await;
    exercise(&served, EraMode::HandshakeFirst, Era::Legacy, "echo").await;
}
