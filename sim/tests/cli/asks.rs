//! Requests an upstream makes of its agent mid-call, relayed by `mcpstorm gateway` between software nobody here wrote:
//! the Python `mcp` SDK's server (`tests/peers/py_ask_server.py`: `ctx.elicit` asking to confirm a deletion, sampling,
//! roots) answered by the Python SDK's client (`tests/peers/py_ask_client.py`), through two gateway processes that
//! share a session key behind nginx's round robin, with no affinity. In 2025-11-25 the agent's answers land on
//! either process and reach the one that asked; in 2026-07-28 the question comes back as an input-required result and
//! the agent's retry reaches the process that parked the call. An agent that declared no capability has its calls
//! made in 2026-07-28, outside the gateway's session, where the server's asks fail at once, not hang.
//!
//! Python with the `mcp` SDK 2.x and nginx come from `.ci/run`; without them the test says so and passes, unless
//! `MCPSTORM_REQUIRE_PEERS=1`, where it fails.

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::{repo_root, scratch_in};
use crate::gateway::{TOKEN_ENV, start_with};

const KEY: (&str, &str) = ("MCPSTORM_SESSION_KEY", "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff");
/// Rounds of the confirming tool per agent: enough that round robin puts answers and retries on both processes.
const ROUNDS: usize = 6;

/// Skips (`None`) or, with `MCPSTORM_REQUIRE_PEERS=1`, fails.
fn missing<T>(what: &str) -> Option<T> {
    if std::env::var("MCPSTORM_REQUIRE_PEERS").is_ok_and(|v| v == "1") {
        panic!("peer missing: {what}");
    }
    eprintln!("\n*** SKIPPING: peer missing: {what} ***\n");
    None
}

fn python() -> String {
    std::env::var("MCPSTORM_PYTHON").unwrap_or_else(|_| "python3".into())
}

fn nginx() -> Option<String> {
    let found = ["nginx", "/usr/sbin/nginx"]
        .into_iter()
        .find(|p| Command::new(p).arg("-v").output().is_ok_and(|o| o.status.success()));
    match found {
        Some(program) => Some(program.to_owned()),
        None => missing("nginx (apt-get install nginx)"),
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

fn wait_listening(port: u16, what: &str) {
    for _ in 0..300 {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{what} never listened on port {port}");
}

/// A child process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// nginx in front of `ports`, round robin (its default) with no affinity, in `dir`.
fn round_robin(nginx: &str, dir: &Path, ports: &[u16]) -> (Killed, u16) {
    let port = free_port();
    let servers: String = ports.iter().map(|p| format!("server 127.0.0.1:{p}; ")).collect();
    let d = dir.display();
    let conf = format!(
        "worker_processes 1; pid {d}/nginx.pid; error_log {d}/error.log warn; daemon off;\n\
         events {{ worker_connections 256; }}\n\
         http {{ access_log off; client_body_temp_path {d}/body; proxy_temp_path {d}/proxy;\n\
         fastcgi_temp_path {d}/fastcgi; uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;\n\
         upstream gateways {{ {servers} }}\n\
         server {{ listen 127.0.0.1:{port}; location / {{ proxy_pass http://gateways; proxy_http_version 1.1;\n\
         proxy_set_header Connection \"\"; proxy_set_header Host $http_host; proxy_buffering off; }} }} }}\n"
    );
    std::fs::write(dir.join("nginx.conf"), conf).expect("nginx.conf");
    let child = Command::new(nginx)
        .arg("-p")
        .arg(dir)
        .arg("-e")
        .arg(dir.join("error.log"))
        .arg("-c")
        .arg(dir.join("nginx.conf"))
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start nginx");
    let child = Killed(child);
    wait_listening(port, "nginx");
    (child, port)
}

/// The Python SDK's server on a free port; `None` (skip) without the SDK.
fn ask_server() -> Option<(Killed, u16)> {
    let ok = Command::new(python())
        .args(["-c", "import mcp.server.mcpserver, mcp.client.streamable_http"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        return missing("Python package mcp 2.x (pip install 'mcp==2.3.0')");
    }
    let port = free_port();
    let child = Command::new(python())
        .arg(repo_root().join("tests/peers/py_ask_server.py"))
        .arg(port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the Python server");
    let child = Killed(child);
    wait_listening(port, "the Python server");
    Some((child, port))
}

/// What the Python SDK agent saw at `url` in `mode`, with or without capabilities, after `rounds` deletions.
fn agent(url: &str, mode: &str, capabilities: bool) -> Value {
    agent_rounds(url, mode, capabilities, ROUNDS)
}

fn agent_rounds(url: &str, mode: &str, capabilities: bool, rounds: usize) -> Value {
    let mut command = Command::new(python());
    command.arg(repo_root().join("tests/peers/py_ask_client.py")).args([url, mode, &rounds.to_string()]);
    if !capabilities {
        command.arg("--no-capabilities");
    }
    let output = command.output().expect("run the Python agent");
    assert!(output.status.success(), "{mode}: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{mode}: {e}: {output:?}"))
}

fn lines_with(logs: &[&std::sync::Mutex<Vec<String>>], needle: &str) -> usize {
    logs.iter().map(|l| l.lock().expect("lines").iter().filter(|line| line.contains(needle)).count()).sum()
}

#[test]
fn a_server_asks_its_agent_mid_call_through_two_gateways_behind_round_robin() {
    let Some((_server, server_port)) = ask_server() else { return };
    let Some(nginx) = nginx() else { return };
    let config = format!(
        "[listen]\nhttp = \"127.0.0.1:0\"\ndrain = \"1s\"\n\n[admin]\nlisten = \"127.0.0.1:0\"\ntoken_env = {TOKEN_ENV:?}\n\n\
         [[servers]]\nname = \"files\"\n[[servers.replicas]]\nhttp = \"http://127.0.0.1:{server_port}/mcp\"\n"
    );
    let env = [KEY, ("RUST_LOG", "mcpstorm_core=info,warn")];
    let a = start_with(&config, "asks-a", &env);
    let b = start_with(&config, "asks-b", &env);
    let port = |url: &str| url.rsplit(':').next().and_then(|p| p.split('/').next()?.parse::<u16>().ok()).expect("port");
    let dir = scratch_in("gateway", "asks-nginx");
    std::fs::create_dir_all(&dir).expect("nginx dir");
    let (_front, front) = round_robin(&nginx, &dir, &[port(&a.mcp), port(&b.mcp)]);
    let url = format!("http://127.0.0.1:{front}/mcp");

    for mode in ["legacy", "auto"] {
        let seen = agent(&url, mode, true);
        let version = if mode == "legacy" { "2025-11-25" } else { "2026-07-28" };
        assert_eq!(seen["protocol_version"], version, "{seen}");
        // The agent confirms every other deletion: each answer reached the call that asked, whichever process
        // received it.
        let expected: Vec<String> = (0..ROUNDS)
            .map(|i| if i % 2 == 0 { format!("deleted /tmp/f{i}") } else { format!("kept /tmp/f{i} (accept)") })
            .collect();
        assert_eq!(seen["deleted"], serde_json::json!(expected), "{mode}: {seen}");
        // One question per deletion, and `archive_file`'s (the SDK's resolver: back-channel in 2025-11-25, an
        // input-required result in 2026-07-28, relayed either way), confirmed.
        assert_eq!(seen["asked"].as_array().map(Vec::len), Some(ROUNDS + 1), "{mode}: one question per call: {seen}");
        assert_eq!(seen["archived"], "archived /tmp/a", "{mode}: {seen}");
        assert_eq!(seen["summarize"], "model said: short", "{mode}: sampling relayed: {seen}");
        assert_eq!(seen["roots"], "file:///work/project", "{mode}: roots relayed: {seen}");

        // An agent that can be asked has its calls made on the gateway's 2025-11-25 session, where the server can ask.
        assert_eq!(seen["server_saw"], "2025-11-25", "{mode}: {seen}");

        // No capability declared: nothing can be asked of the agent, so its calls leave the session and reach the
        // dual-era server in 2026-07-28 (answered as JSON, as through a plain proxy). The SDK's back-channel asks
        // fail there at once, naming what they asked; the resolver's input-required is refused naming the capability.
        let refused = agent(&url, mode, false);
        assert_eq!(refused["server_saw"], "2026-07-28", "{mode}: {refused}");
        for (call, method) in
            [("summarize", "sampling/createMessage"), ("roots", "roots/list"), ("archived", "elicitation/create")]
        {
            let error = refused[call].as_str().unwrap_or_default();
            assert!(error.starts_with("MCPERROR") && error.contains(method), "{mode}: {call}: {refused}");
        }
        let deleted = refused["deleted"][0].as_str().unwrap_or_default();
        assert!(deleted.starts_with("MCPERROR") && deleted.contains("elicitation/create"), "{mode}: {refused}");
        let archived = refused["archived"].as_str().unwrap_or_default();
        assert!(archived.contains("`elicitation`"), "{mode}: {refused}");
        assert_eq!(refused["asked"], serde_json::json!([]), "{mode}: {refused}");
    }
    // Round robin put answers (2025-11-25) and retries (2026-07-28) on the process that did not ask: they were
    // forwarded to the one that did.
    let logs = [&*a.stderr, &*b.stderr];
    assert!(lines_with(&logs, "forwarded an agent's answer") > 0, "no 2025-11-25 answer crossed processes");
    assert!(lines_with(&logs, "forwarded a retry") > 0, "no 2026-07-28 retry crossed processes");
}

/// A server the gateway speaks 2026-07-28 to (`era = "discover-first"`) asks the 2026-07-28 way, with an input-required
/// result (the Python SDK's `Resolve(Elicit(...))`): a 2026-07-28 agent gets it and its retry reaches the server; a
/// 2025-11-25 agent is asked over its stream and the gateway makes the call again with the answer. Without the
/// capability: -32021 (2026-07-28) and -32601 (2025-11-25), at once.
#[test]
fn a_2026_07_28_servers_input_required_reaches_agents_of_both_eras() {
    let Some((_server, server_port)) = ask_server() else { return };
    let config = format!(
        "[listen]\nhttp = \"127.0.0.1:0\"\ndrain = \"1s\"\n\n[admin]\nlisten = \"127.0.0.1:0\"\ntoken_env = {TOKEN_ENV:?}\n\n\
         [[servers]]\nname = \"files\"\nera = \"discover-first\"\n\
         [[servers.replicas]]\nhttp = \"http://127.0.0.1:{server_port}/mcp\"\n"
    );
    let gateway = start_with(&config, "asks-modern", &[KEY]);
    for (mode, refusal) in [("auto", "MCPERROR -32021"), ("legacy", "MCPERROR -32601")] {
        let seen = agent_rounds(&gateway.mcp, mode, true, 0);
        assert_eq!(seen["archived"], "archived /tmp/a", "{mode}: the agent confirmed: {seen}");
        assert_eq!(seen["asked"], serde_json::json!(["Archive /tmp/a?"]), "{mode}: {seen}");
        let refused = agent_rounds(&gateway.mcp, mode, false, 0);
        let archived = refused["archived"].as_str().unwrap_or_default();
        assert!(archived.starts_with(refusal) && archived.contains("`elicitation`"), "{mode}: {refused}");
    }
}

/// `mcpstorm call` as the agent: `--elicit ask` reads the user's answer from stdin, `decline` declines, and
/// `accept-defaults` declines a form whose required field has no default (the Python server's confirmation).
#[test]
fn the_cli_answers_a_servers_form_as_its_user_says() {
    let Some((_server, port)) = ask_server() else { return };
    let url = format!("http://127.0.0.1:{port}/mcp");
    let run = |mode: &str, stdin: &str| {
        let mut child = crate::common::command()
            .args(["call", "--http", &url, "--elicit", mode, "delete_file", r#"{"path": "/tmp/x"}"#])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("mcpstorm call");
        std::io::Write::write_all(child.stdin.as_mut().expect("stdin"), stdin.as_bytes()).expect("type");
        let output = child.wait_with_output().expect("wait");
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).trim().to_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (code, out, err) = run("ask", "maybe\nyes\n");
    assert_eq!((code, out.as_str()), (Some(0), "deleted /tmp/x"), "{err}");
    assert!(
        err.contains("Delete /tmp/x?") && err.contains("answer yes or no"),
        "asked, and again after a bad answer: {err}"
    );
    let (code, out, err) = run("decline", "");
    assert_eq!((code, out.as_str()), (Some(0), "kept /tmp/x (decline)"), "{err}");
    let (code, out, err) = run("accept-defaults", "");
    assert_eq!((code, out.as_str()), (Some(0), "kept /tmp/x (decline)"), "no default for `confirm`: {err}");
}
