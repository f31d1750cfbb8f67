//! `mcpstorm diagnose` end to end: against the real peers (Python `mcp` 2.x and server-everything; skipped loudly
//! when missing unless `MCPSTORM_REQUIRE_PEERS=1`), against `mcpstorm serve-fake`, and against small scripted TCP
//! servers that break one layer each.

use std::process::Command;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::common::{mcpstorm_env, repo_root};
use crate::servers::{Fake, hostile, hostile_server, scripted_server};
const LAYERS: [&str; 10] =
    ["connect", "handshake", "version", "tools", "auth", "ping", "call", "renewal", "reconnect", "anomalies"];

fn require_peers() -> bool {
    std::env::var("MCPSTORM_REQUIRE_PEERS").is_ok_and(|v| v == "1")
}

/// Skips (`None`) or fails, depending on `MCPSTORM_REQUIRE_PEERS`.
fn missing(what: &str, how: &str) -> Option<String> {
    assert!(!require_peers(), "interop peer missing: {what}. Install it with: {how}");
    eprintln!("\n*** SKIPPING: interop peer missing: {what}. Install it with: {how} ***\n");
    None
}

pub(crate) fn python() -> String {
    std::env::var("MCPSTORM_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// The `--stdio` command of the Python `mcp` 2.x peer (run from the repository root).
pub(crate) fn python_peer() -> Option<String> {
    let ok =
        Command::new(python()).args(["-c", "import mcp.server.mcpserver"]).output().is_ok_and(|o| o.status.success());
    if !ok {
        return missing("Python package mcp 2.x", "pip install 'mcp==2.3.0'");
    }
    Some(format!("{} tests/peers/py_server.py", python()))
}

/// The `--stdio` command of server-everything (run from the repository root).
fn everything_peer() -> Option<String> {
    let index = "tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
    if !repo_root().join(index).exists() {
        return missing("@modelcontextprotocol/server-everything", "npm ci --prefix tests/peers");
    }
    Some(format!("node {index} stdio"))
}

#[derive(Debug)]
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    /// The line of one check, e.g. `PASS  connect   0.3 ms   stdio python3`.
    fn line(&self, layer: &str) -> &str {
        self.stdout
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(layer))
            .unwrap_or_else(|| panic!("no {layer} line in:\n{}", self.stdout))
    }

    fn status(&self, layer: &str) -> &str {
        &self.line(layer)[..4]
    }

    /// Fails with the whole output unless `layer`'s line has `status` and contains `text`.
    fn expect(&self, layer: &str, status: &str, text: &str) {
        let line = self.line(layer);
        assert!(line.starts_with(status) && line.contains(text), "{layer}: want {status} {text:?}, got:\n{self:#?}");
    }
}

fn diagnose(args: &[&str]) -> Run {
    diagnose_with_env(args, &[])
}

fn diagnose_with_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    let o = mcpstorm_env(&[&["diagnose"], args].concat(), env);
    Run {
        code: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// A scripted MCP server: answers `initialize` with `version` and `capabilities`, `ping` with `{}`, and `tools/list`
/// with `tools(n)` on its `n`-th connection.
fn scripted(version: &'static str, capabilities: Value, tools: fn(usize) -> Value) -> String {
    scripted_server(Arc::new(move |n, msg| match msg["method"].as_str() {
        Some("initialize") => json!({"result": {
            "protocolVersion": version,
            "capabilities": capabilities,
            "serverInfo": {"name": "scripted", "version": "0.1"},
        }}),
        Some("ping") => json!({"result": {}}),
        Some("tools/list") => json!({"result": {"tools": tools(n)}}),
        _ => json!({"error": {"code": -32601, "message": "method not found"}}),
    }))
}

fn echo_tool(_: usize) -> Value {
    json!([{"name": "echo", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}}])
}

#[test]
fn python_peer_passes_every_check() {
    let Some(cmd) = python_peer() else { return };
    let r = diagnose(&["--stdio", &cmd, "--call", "echo", r#"{"message": "hi"}"#]);
    assert_eq!(r.code, Some(0), "{r:#?}");
    r.expect("connect", "PASS", "stdio python3");
    r.expect("handshake", "PASS", "mcpstorm-py-peer");
    // mcp 2.x serves the modern era when probed with server/discover.
    r.expect("handshake", "PASS", "protocol 2026-07-28, era modern (server/discover, no handshake)");
    r.expect("version", "PASS", "2026-07-28, the version we asked for");
    r.expect("version", "PASS", "server lists 2026-07-28");
    r.expect("tools", "PASS", "3 tools in 1 page, every schema compiles");
    r.expect("auth", "SKIP", "server declares no auth schemes");
    r.expect("ping", "PASS", "5 server/discover round trips (the modern era has no ping): min ");
    r.expect("call", "PASS", "echo returned: hi");
    r.expect("renewal", "SKIP", "no session granted (plain MCP): nothing to renew");
    r.expect("reconnect", "PASS", "era re-detected (modern); tool list hash unchanged");
    assert!(r.stdout.ends_with("ok: 8 passed, 0 failed, 2 skipped\n"), "{r:#?}");
}

#[test]
fn everything_server_passes_every_check() {
    let Some(cmd) = everything_peer() else { return };
    let r = diagnose(&["--stdio", &cmd, "--call", "echo", r#"{"message": "hi"}"#]);
    assert_eq!(r.code, Some(0), "{r:#?}");
    for layer in LAYERS.iter().filter(|l| !["auth", "renewal"].contains(*l)) {
        assert_eq!(r.status(layer), "PASS", "{layer}: {r:#?}");
    }
    r.expect("handshake", "PASS", "mcp-servers/everything");
    r.expect("handshake", "PASS", "protocol 2025-11-25, era legacy (initialize)");
    r.expect("version", "PASS", "2025-11-25, the version we asked for");
    r.expect("tools", "PASS", "every schema compiles");
    r.expect("ping", "PASS", "5 pings: min ");
    r.expect("reconnect", "PASS", "era re-detected (legacy); tool list hash unchanged");
    r.expect("auth", "SKIP", "server declares no auth schemes");
    r.expect("call", "PASS", "echo returned: Echo: hi");
}

#[test]
fn missing_program_fails_connect_with_a_path_hint_and_skips_the_rest() {
    let r = diagnose(&["--stdio", "mcpstorm-no-such-server --flag"]);
    assert_eq!(r.code, Some(1), "{r:#?}");
    r.expect("connect", "FAIL", "could not start the server");
    assert!(r.stdout.contains(r#"hint: is "mcpstorm-no-such-server" on PATH?"#), "{r:#?}");
    for layer in &LAYERS[1..] {
        r.expect(layer, "SKIP", "skipped: connect failed");
    }
}

#[test]
fn nothing_listening_fails_connect() {
    let r = diagnose(&["--tcp", "127.0.0.1:1"]);
    assert_eq!(r.code, Some(1), "{r:#?}");
    r.expect("connect", "FAIL", "127.0.0.1:1");
    assert!(r.stdout.contains("hint: is the server listening on 127.0.0.1:1?"), "{r:#?}");
    for layer in &LAYERS[1..] {
        assert_eq!(r.status(layer), "SKIP", "{r:#?}");
    }
}

#[test]
fn a_program_that_exits_at_once_fails_the_handshake() {
    let r = diagnose(&["--stdio", "sh -c 'exit 0'"]);
    assert_eq!(r.code, Some(1), "{r:#?}");
    r.expect("connect", "PASS", "stdio sh");
    r.expect("handshake", "FAIL", "peer closed the connection");
    assert!(r.stdout.contains("hint: the server closed the connection before answering initialize"), "{r:#?}");
    for layer in &LAYERS[2..] {
        r.expect(layer, "SKIP", "skipped: handshake failed");
    }
}

#[test]
fn invalid_sample_arguments_fail_locally_naming_the_pointer() {
    let fake = Fake::start(None);
    let r = diagnose(&["--tcp", &fake.addr, "--call", "echo", r#"{"message": 3}"#]);
    assert_eq!(r.code, Some(1), "{r:#?}");
    r.expect("call", "FAIL", r#"arguments do not match the inputSchema of "echo"; not sent"#);
    assert!(r.stdout.contains(r#"        /message: 3 is not of type "string""#), "{r:#?}");
    // The failure is confined to the call: every other layer passed.
    for layer in ["connect", "handshake", "version", "tools", "ping", "reconnect"] {
        assert_eq!(r.status(layer), "PASS", "{layer}: {r:#?}");
    }

    let r = diagnose(&["--tcp", &fake.addr, "--call", "echo", r#"{"message": 3}"#, "--json"]);
    let v: Value = serde_json::from_str(&r.stdout).expect("JSON report");
    let call = &v["checks"][6];
    assert_eq!((call["name"].as_str(), call["status"].as_str()), (Some("call"), Some("fail")), "{v:#}");
    assert_eq!(call["data"]["sent"], false, "{v:#}");
    assert_eq!(call["data"]["violations"][0]["pointer"], "/message", "{v:#}");
}

#[test]
fn json_report_parses_and_lists_every_layer() {
    let fake = Fake::start(None);
    let r = diagnose(&["--tcp", &fake.addr, "--json", "--call", "echo", r#"{"message": "x"}"#, "--pings", "3"]);
    assert_eq!(r.code, Some(0), "{r:#?}");
    let v: Value = serde_json::from_str(&r.stdout).expect("JSON report");
    assert_eq!(v["ok"], true);
    assert_eq!(v["target"], format!("tcp {}", fake.addr));
    let checks = v["checks"].as_array().expect("checks");
    let names: Vec<&str> = checks.iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(names, LAYERS);
    let statuses: Vec<&str> = checks.iter().filter_map(|c| c["status"].as_str()).collect();
    // auth and renewal skipped: the fake declares no auth schemes and grants no session.
    assert_eq!(statuses, ["pass", "pass", "pass", "pass", "skip", "pass", "pass", "skip", "pass", "pass"], "{v:#}");
    assert!(checks[0]["ms"].as_f64().is_some_and(|ms| ms >= 0.0), "{v:#}");
    assert_eq!(checks[1]["data"]["era"], "modern", "{v:#}");
    assert_eq!(checks[2]["data"]["asked"], "2026-07-28", "{v:#}");
    assert_eq!(checks[3]["data"]["count"], 3);
    assert_eq!(checks[5]["data"]["count"], 3);
    let ping = &checks[5]["data"];
    assert!(
        ping["min_ms"].as_f64() <= ping["median_ms"].as_f64() && ping["median_ms"].as_f64() <= ping["max_ms"].as_f64()
    );
    assert_eq!(checks[8]["data"]["hash_before"], checks[8]["data"]["hash_after"]);
    assert_eq!(checks[8]["data"]["hash_before"], checks[3]["data"]["hash"]);
}

#[test]
fn output_to_a_pipe_has_no_ansi_escapes() {
    let fake = Fake::start(None);
    for r in [diagnose(&["--tcp", &fake.addr]), diagnose(&["--stdio", "mcpstorm-no-such-server"])] {
        assert!(!r.stdout.contains('\x1b') && !r.stderr.contains('\x1b'), "{r:#?}");
        assert!(
            r.stdout.lines().next().is_some_and(|l| l.starts_with("PASS  connect") || l.starts_with("FAIL  connect"))
        );
    }
}

#[test]
fn a_legacy_only_server_is_diagnosed_in_the_legacy_era() {
    let fake = Fake::start(Some("name = \"old\"\neras = [\"legacy\"]\n\n[[tools]]\nname = \"t\"\n"));
    let r = diagnose(&["--tcp", &fake.addr]);
    assert_eq!(r.code, Some(0), "{r:#?}");
    r.expect("handshake", "PASS", "protocol 2025-11-25, era legacy (initialize)");
    r.expect("ping", "PASS", "5 pings: min ");
    r.expect("reconnect", "PASS", "era re-detected (legacy); tool list hash unchanged");
}

#[test]
fn unusable_schemas_fail_tools_while_independent_layers_still_run() {
    let fake = Fake::start(Some(
        r#"
name = "broken"
page_size = 2

[[tools]]
name = "echo"
input_schema = { type = "object", properties = { message = { type = "string" } } }
reply = "{arg:message}"

[[tools]]
name = "typo"
input_schema = { type = "object", properties = { n = { type = "strin" } } }

[[tools]]
name = "remote"
input_schema = { type = "object", properties = { n = { "$ref" = "https://example.com/n.json" } } }
"#,
    ));
    let r = diagnose(&["--tcp", &fake.addr, "--call", "typo", r#"{"n": 1}"#]);
    assert_eq!(r.code, Some(1), "{r:#?}");
    r.expect("tools", "FAIL", "3 tools in 2 pages, 2 with a schema that does not compile");
    assert!(r.stdout.contains(r#"        typo: inputSchema: /properties/n/type: "strin""#), "{r:#?}");
    assert!(r.stdout.contains("        remote: inputSchema: ") && r.stdout.contains("https://example.com/n.json"));
    r.expect("call", "FAIL", "has an unusable inputSchema");
    r.expect("call", "FAIL", "not sent");
    r.expect("ping", "PASS", "5 server/discover round trips");
    r.expect("reconnect", "PASS", "hash unchanged");
    assert!(r.stdout.ends_with("FAILED: 6 passed, 2 failed, 2 skipped\n"), "{r:#?}");
}

#[test]
fn an_unknown_protocol_version_fails_version_after_the_handshake() {
    let addr = scripted("1999-01-01", json!({"tools": {}}), echo_tool);
    let r = diagnose(&["--tcp", &addr]);
    assert_eq!(r.code, Some(1), "{r:#?}");
    r.expect("handshake", "PASS", "server answered, offering 1999-01-01");
    r.expect("version", "FAIL", "no common protocol version: server offers 1999-01-01; we speak 2026-07-28 (modern), ");
    assert!(r.stdout.contains("hint: upgrade the server's MCP SDK"), "{r:#?}");
    for layer in &LAYERS[3..] {
        r.expect(layer, "SKIP", "skipped: version failed");
    }
}

#[test]
fn declared_auth_schemes_are_reported() {
    let caps = json!({"tools": {}, "experimental": {"auth": {"schemes": ["bearer", "api-key"]}}});
    let r = diagnose(&["--tcp", &scripted("2025-06-18", caps, echo_tool)]);
    assert_eq!(r.code, Some(0), "{r:#?}");
    r.expect("handshake", "PASS", "era legacy (initialize)");
    r.expect("version", "PASS", "2025-06-18, we asked for 2025-11-25");
    r.expect("auth", "SKIP", "server declares auth");
    assert!(
        r.stdout.contains(r#"        capabilities.experimental.auth = {"schemes":["bearer","api-key"]}"#),
        "{r:#?}"
    );
}

#[test]
fn a_tool_list_that_changes_across_sessions_fails_reconnect() {
    fn per_connection(n: usize) -> Value {
        json!([{"name": format!("tool{n}"), "inputSchema": {"type": "object"}}])
    }
    let r = diagnose(&["--tcp", &scripted("2025-11-25", json!({"tools": {}}), per_connection)]);
    assert_eq!(r.code, Some(1), "{r:#?}");
    r.expect("tools", "PASS", "1 tool in 1 page");
    r.expect("reconnect", "FAIL", "the tool list changed across sessions");
    assert!(r.stdout.contains("        added: tool1\n        removed: tool0\n"), "{r:#?}");
}

#[test]
fn bad_input_exits_2_before_dialling() {
    for args in [
        &["--stdio", "python3 'unterminated"][..],
        &["--tcp", "127.0.0.1:1", "--call", "echo", r#"{"message": "#][..],
        &["--tcp", "127.0.0.1:1", "--call", "echo", "[1]"][..],
    ] {
        let r = diagnose(args);
        assert_eq!(r.code, Some(2), "{args:?}: {r:#?}");
        assert_eq!(r.stdout, "", "{args:?}");
        assert!(r.stderr.starts_with("mcpstorm: "), "{args:?}: {r:#?}");
    }
}

/// A server granting sessions and accepting only `mcp-jwt`: with a matching `--auth` (read from the environment)
/// the auth layer passes and the renewal layer renews in place; without one, auth fails with a hint. The secret
/// never appears in the output, text or JSON.
#[test]
fn auth_and_forced_renewal_against_a_session_granting_server() {
    let fake = Fake::start(Some(
        r#"
name = "guarded"
session_ttl_ms = 60000
auth_schemes = ["mcp-jwt"]

[[tools]]
name = "echo"
input_schema = { type = "object", properties = { message = { type = "string" } }, required = ["message"] }
reply = "{arg:message}"
"#,
    ));
    let secret = "jwt-s3cr3t-do-not-print";
    let run = |args: &[&str]| {
        let mut all = vec!["--tcp", fake.addr.as_str()];
        all.extend_from_slice(args);
        diagnose_with_env(&all, &[("MCPSTORM_TEST_JWT", secret)])
    };
    let ok = run(&[
        "--auth",
        "bearer=MCPSTORM_TEST_JWT",
        "--auth",
        "mcp-jwt=MCPSTORM_TEST_JWT",
        "--call",
        "echo",
        r#"{"message": "hi"}"#,
    ]);
    assert_eq!(ok.code, Some(0), "{ok:#?}");
    ok.expect("auth", "PASS", "server accepts mcp-jwt; using a mcp-jwt credential");
    ok.expect("renewal", "PASS", "session renewed in place (60 s TTL)");
    ok.expect("reconnect", "PASS", "tool list hash unchanged");
    ok.expect("call", "PASS", "");

    let missing = run(&[]);
    assert_eq!(missing.code, Some(1), "{missing:#?}");
    missing.expect("auth", "FAIL", "server accepts mcp-jwt, configured credentials: none");
    assert!(missing.stdout.contains("--auth SCHEME=ENV_VAR"), "{missing:#?}");

    let json = run(&["--auth", "mcp-jwt=MCPSTORM_TEST_JWT", "--json"]);
    for r in [&ok, &missing, &json] {
        assert!(!r.stdout.contains(secret) && !r.stderr.contains(secret), "the secret leaked: {r:#?}");
    }
    let unset = run(&["--auth", "mcp-jwt=MCPSTORM_NO_SUCH_VAR"]);
    assert_eq!(unset.code, Some(2), "{unset:#?}");
    assert!(unset.stderr.contains("environment variable MCPSTORM_NO_SUCH_VAR is not set"), "{unset:#?}");
}

/// A server with terminal escapes in its name, version and tool names, whose sample call fails with a megabyte of
/// escape-laden lines, can neither paint nor flood the report: every line is escaped and bounded, the cut is said,
/// and the JSON report keeps the exact text.
#[test]
fn a_hostile_server_can_neither_paint_nor_flood_the_report() {
    let addr = hostile_server();
    let r = diagnose(&["--tcp", &addr, "--call", hostile::FAIL, "{}"]);
    assert_eq!(r.code, Some(1), "{r:#?}");
    assert!(!r.stdout.contains('\x1b') && !r.stdout.contains('\u{202e}'), "{r:#?}");
    assert!(!r.stderr.contains('\x1b'), "{r:#?}");
    r.expect("handshake", "PASS", r"evil\x1b]0;pwned\x07\x1b[2J 6.6.6\x1b[31m\u{202e}, protocol 2025-11-25");
    r.expect("call", "FAIL", r"line 00000 \x1b[2K\x1b[31mred\x1b[0m");
    r.expect("call", "FAIL", " more bytes cut; --json prints it whole]");
    assert!(r.line("call").chars().count() < 1_100, "{}", r.line("call"));
    // One line per check, a hint under the failed one, the verdict: nothing of the server's own.
    assert_eq!(r.stdout.lines().count(), 12, "{r:#?}");
    assert!(r.stdout.ends_with("FAILED: 7 passed, 1 failed, 2 skipped\n"), "{r:#?}");

    let r = diagnose(&["--tcp", &addr, "--call", hostile::FAIL, "{}", "--json"]);
    let v: Value = serde_json::from_str(&r.stdout).expect("JSON report");
    assert_eq!(v["checks"][1]["data"]["server"], json!({"name": hostile::SERVER, "version": hostile::VERSION}));
    assert_eq!(v["checks"][3]["data"]["tools"][0], hostile::TOOL);
    let summary = v["checks"][6]["summary"].as_str().unwrap_or_default();
    assert!(summary.contains(&hostile::big_text()), "the JSON summary carries the whole message");
}

/// The anomalies check reports what the connection counted: a server that writes non-JSON lines and answers ids
/// never issued fails it, with the counts (the log shows only the 1st, 10th, 100th, ... of each).
#[test]
fn a_server_writing_garbage_fails_the_anomalies_check_with_its_counts() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/peers/hostile.py");
    let r = diagnose(&["--stdio", &format!("python3 {script} flood 1234")]);
    r.expect("anomalies", "FAIL", "1234 frames that are not JSON-RPC, 1234 responses to ids never issued");
    assert!(r.stderr.len() < 8_000, "{} bytes of log", r.stderr.len());
}
