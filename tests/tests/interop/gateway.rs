//! `mcpstorm gateway` between software nobody here wrote: the Python `mcp` SDK's client (both of its modes: probing
//! 2026-07-28 first, and the 2025-11-25 handshake) calls, through the gateway, the Python SDK's server
//! (`tests/peers/py_server.py`, spawned over stdio by the gateway), with progress relayed; and the core's own client,
//! as an agent, reaches tools of server-everything and the Python server federated side by side.

use std::path::PathBuf;

use mcpstorm_core::{ClientConfig, HttpEndpoint, McpClient, SeededRng, TokioClock};
use mcpstorm_sim::gateway::Process;
use mcpstorm_sim::scenario::tables::GatewayFile;
use mcpstorm_sim::seed::Seed;
use mcpstorm_tests::real_servers::{everything_server, python_http_client, python_server, repo_root};
use serde_json::{Value, json};

/// A gateway on a free loopback port over the servers of `servers` (TOML `[[servers]]` tables); its `/mcp` URL.
pub(super) async fn gateway(servers: &str) -> (Process, String) {
    let text = format!("[listen]\nhttp = \"127.0.0.1:0\"\ndrain = \"1s\"\n{servers}");
    let file = GatewayFile::load_str(&text, "gateway.toml").unwrap_or_else(|e| panic!("{e}"));
    let mut process = Process::start(PathBuf::from("gateway.toml"), file, Seed::new(7), TokioClock::new(0))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    let bound = process.open(false).await.unwrap_or_else(|e| panic!("{e:?}"));
    let url = format!("http://{}/mcp", bound.http.expect("an HTTP listener"));
    (process, url)
}

/// The `stdio` command of a real peer's dialer, as a config writes it.
fn python_command() -> Option<String> {
    python_server()?;
    let python = std::env::var("MCPSTORM_PYTHON").unwrap_or_else(|_| "python3".into());
    Some(format!("{python} {}", repo_root().join("tests/peers/py_server.py").display()))
}

/// The `[[servers]]` tables of the Python SDK's server (`py`) and server-everything (`everything`), each with the
/// lines given added to its table; `None` (the test returns) when a peer is missing.
pub(super) fn python_and_everything(py: &str, everything: &str) -> Option<String> {
    let command = python_command()?;
    everything_server()?;
    let script = repo_root().join("tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    Some(format!(
        "[[servers]]\nname = \"py\"\n{py}[[servers.replicas]]\nstdio = {command:?}\n\n\
         [[servers]]\nname = \"everything\"\n{everything}[[servers.replicas]]\nstdio = \"node {} stdio\"\n",
        script.display()
    ))
}

/// An agent of the gateway at `url`: the core's own client over Streamable HTTP.
pub(super) fn agent(url: &str) -> McpClient {
    McpClient::http("agent", HttpEndpoint::new(url).expect("url"), ClientConfig::default(), SeededRng::new(1))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_client_calls_a_python_server_through_the_gateway_in_both_modes() {
    let command = peer_or_skip!(python_command());
    let (mut process, url) =
        gateway(&format!("[[servers]]\nname = \"py\"\n[[servers.replicas]]\nstdio = {command:?}\n")).await;
    for mode in ["auto", "legacy"] {
        let mut client = peer_or_skip!(python_http_client(&url, mode));
        let output = tokio::task::spawn_blocking(move || client.output()).await.expect("join").expect("run client");
        assert!(output.status.success(), "{mode}: {}", String::from_utf8_lossy(&output.stderr));
        let seen: Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
        assert_eq!(seen["server"], "mcpstorm-gateway", "{mode}: {seen}");
        assert_eq!(seen["tools"], json!(["echo", "sleep_ms", "slow_progress"]), "{mode}: a lone server's names stay");
        assert_eq!(seen["echo"], "hello over http", "{mode}: {seen}");
        assert_eq!(seen["echo_error"], false, "{mode}: {seen}");
        // The upstream's three progress notifications, relayed under the agent's own token.
        assert_eq!(seen["progress"].as_array().map(Vec::len), Some(3), "{mode}: {seen}");
    }
    process.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_reaches_two_real_servers_federated_and_a_collision_is_prefixed() {
    let servers = peer_or_skip!(python_and_everything("", ""));
    let (mut process, url) = gateway(&servers).await;
    let agent = agent(&url);
    let tools = agent.list_tools().await.expect("tools/list through the gateway");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    // Both servers have an `echo`: each becomes `server__echo`, neither shadows the other.
    assert!(names.contains(&"py__echo") && names.contains(&"everything__echo"), "{names:?}");
    assert!(!names.contains(&"echo"), "{names:?}");
    // A name only one server has stays as written.
    assert!(names.contains(&"sleep_ms"), "{names:?}");
    let py = agent.call_tool("py__echo", json!({"message": "to python"}), Default::default()).await.expect("call");
    assert!(!py.is_error, "{py:?}");
    assert_eq!(py.content[0]["text"], "to python");
    let node = agent.call_tool("everything__echo", json!({"message": "to node"}), Default::default()).await;
    let node = node.expect("call");
    assert!(!node.is_error && node.content[0]["text"].as_str().is_some_and(|t| t.contains("to node")), "{node:?}");

    // Prompts and resources are federated too: server-everything's, under their own names (no other server has
    // any), and a read or a get reaches it.
    let session = agent.session().await.expect("session");
    let request = |method: &'static str, params: Option<Value>| {
        let conn = session.conn.clone();
        async move { conn.request(method, params, Default::default()).await }
    };
    let prompts = request("prompts/list", None).await.expect("prompts/list");
    let prompt = prompts["prompts"].as_array().and_then(|p| {
        p.iter().find(|p| {
            p.get("arguments").is_none_or(|a| a.as_array().is_none_or(|a| a.iter().all(|x| x["required"] != true)))
        })
    });
    let name = prompt
        .and_then(|p| p["name"].as_str())
        .unwrap_or_else(|| panic!("a prompt without required arguments: {prompts}"));
    let got = request("prompts/get", Some(json!({"name": name}))).await.expect("prompts/get");
    assert!(got["messages"].as_array().is_some_and(|m| !m.is_empty()), "{got}");
    let resources = request("resources/list", None).await.expect("resources/list");
    let uri = resources["resources"][0]["uri"].as_str().unwrap_or_else(|| panic!("a resource: {resources}"));
    let read = request("resources/read", Some(json!({"uri": uri}))).await.expect("resources/read");
    assert!(read["contents"].as_array().is_some_and(|c| !c.is_empty()), "{read}");
    let unknown = request("prompts/get", Some(json!({"name": "no such prompt"}))).await;
    assert!(unknown.is_err(), "{unknown:?}");
    // server-everything speaks 2025-11-25 only: the gateway's `server/discover` probe was answered -32601 and it fell
    // back to `initialize`. That is how an era is found, not a failed handshake: nothing counts, nothing alerts.
    let metrics = process.metrics_text();
    let failures: Vec<&str> =
        metrics.lines().filter(|l| l.starts_with("mcpstorm_gateway_handshake_failures_total")).collect();
    assert!(failures.is_empty(), "{failures:?}");
    agent.close().await;
    process.stop().await;
}

/// A stdio replica's `env` and `cwd` reach the command the gateway starts (the Python SDK's server reports them): a
/// literal, an `env:NAME` read from the gateway's own environment, and the working directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_replica_runs_with_its_env_and_cwd() {
    peer_or_skip!(python_command());
    let python = std::env::var("MCPSTORM_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = repo_root().join("tests/peers/py_env_server.py");
    // A variable every test process has, so the test needs no environment of its own.
    let home = std::env::var("HOME").expect("HOME is set");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("stdio-cwd");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let servers = format!(
        "[[servers]]\nname = \"py\"\n[[servers.replicas]]\nstdio = {:?}\ncwd = {:?}\n\
         env = {{ MCPSTORM_PEER_PLAIN = \"as written\", MCPSTORM_PEER_TOKEN = \"env:HOME\" }}\n",
        format!("{python} {}", script.display()),
        dir.display().to_string(),
    );
    let (mut process, url) = gateway(&servers).await;
    let agent =
        McpClient::http("agent", HttpEndpoint::new(&url).expect("url"), ClientConfig::default(), SeededRng::new(1));
    let seen = agent.call_tool("surroundings", json!({}), Default::default()).await.expect("call");
    assert!(!seen.is_error, "{seen:?}");
    let seen: Value = serde_json::from_str(seen.content[0]["text"].as_str().expect("text")).expect("JSON");
    let cwd = std::fs::canonicalize(&dir).expect("canonical");
    assert_eq!(seen["cwd"].as_str().map(PathBuf::from), Some(cwd), "{seen}");
    assert_eq!(seen["plain"], "as written", "{seen}");
    assert_eq!(seen["token"], home.as_str(), "{seen}");
    process.stop().await;
}
