//! `mcpstorm gateway` as an operator meets it: a config federating two fake servers (NDJSON over TCP, Streamable
//! HTTP) and one that is down; agents (the `tools` and `call` commands, the core's client) reach every live tool,
//! colliding names prefixed `server__tool`; `/readyz` says not ready while a server has no listing; the admin API
//! refuses a missing token, force-opens a tool (its calls answer degraded at once) and shows it, as `/metrics`
//! does; SIGTERM ends the process with exit 0. `validate` checks a gateway config like a scenario.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use crate::common::fixtures::gateway;
use crate::common::{command, mcpstorm, scratch_in, text};
use crate::servers::Fake;

pub(crate) const TOKEN_ENV: &str = "MCPSTORM_TEST_ADMIN_TOKEN";
pub(crate) const TOKEN: &str = "test-admin-token";

/// A running `mcpstorm gateway`, killed when dropped unless it was stopped.
pub(crate) struct Running {
    child: Child,
    pub mcp: String,
    pub admin: String,
    /// The config file (rewritten before a SIGHUP).
    path: std::path::PathBuf,
    /// Every line it has written to stderr so far.
    pub stderr: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the gateway on `config` and waits for the two lines that say where it listens.
pub(crate) fn start(config: &str, name: &str) -> Running {
    start_with(config, name, &[])
}

/// [`start`] with more environment variables.
pub(crate) fn start_with(config: &str, name: &str, env: &[(&str, &str)]) -> Running {
    let dir = scratch_in("gateway", name);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let path = dir.join("gateway.toml");
    std::fs::write(&path, config).expect("write config");
    let mut child = command()
        .args(["gateway", "--config"])
        .arg(&path)
        .env(TOKEN_ENV, TOKEN)
        .envs(env.iter().copied())
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start mcpstorm gateway");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let (mut mcp, mut admin) = (None, None);
    while mcp.is_none() || admin.is_none() {
        let line = lines.next().and_then(Result::ok).unwrap_or_else(|| panic!("the gateway stopped early"));
        if let Some(rest) = line.strip_prefix("mcpstorm gateway: serving MCP at ") {
            mcp = rest.split_whitespace().next().map(str::to_owned);
        }
        if let Some(rest) = line.strip_prefix("mcpstorm gateway: admin API at http://") {
            admin = rest.split('/').next().map(str::to_owned);
        }
    }
    // Keep reading stderr so the gateway never blocks on a full pipe.
    let stderr = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = stderr.clone();
    std::thread::spawn(move || lines.map_while(Result::ok).for_each(|l| kept.lock().expect("stderr lines").push(l)));
    Running { child, mcp: mcp.unwrap_or_default(), admin: admin.unwrap_or_default(), path, stderr }
}

/// One HTTP/1.1 request on a fresh connection: the status code and the body.
pub(crate) fn http(addr: &str, method: &str, path: &str, token: Option<&str>, body: Option<&Value>) -> (u16, String) {
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    let (status, _, body) = exchange(addr, method, path, &auth, body);
    (status, body)
}

/// One HTTP/1.1 request with the extra header lines `headers`: the status, the response head and the body.
fn exchange(addr: &str, method: &str, path: &str, headers: &str, body: Option<&Value>) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    let body = body.map(Value::to_string).unwrap_or_default();
    let auth = headers;
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read");
    let status = answer.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    (status, head.to_owned(), body.to_owned())
}

/// Three servers: `alpha` over TCP at `tcp`, `beta` over HTTP at `http_url`, and `down`, which nothing answers.
fn config(tcp: &str, http_url: &str) -> String {
    gateway()
        .drain("2s")
        .tcp("alpha", tcp)
        .http("beta", http_url)
        .tcp("down", "127.0.0.1:1")
        .table("[gateway.breaker]\nopen = \"30s\"")
        .table("[client]\nconnect_timeout = \"1s\"")
        .admin(TOKEN_ENV)
        .build()
}

#[test]
fn the_gateway_federates_servers_and_operators_switch_a_tool_off() {
    let (alpha, beta) = (Fake::start(None), Fake::start_http(None));
    let mut gateway = start(&config(&alpha.addr, &beta.url()), "federates");

    // Both live servers offer the built-in tools: every name collides, so every one is `server__tool`; the server
    // that is down is left out, and the others are served.
    let o = mcpstorm(&["tools", "--http", &gateway.mcp, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let tools: Value = serde_json::from_slice(&o.stdout).expect("tools --json");
    let names: Vec<&str> = tools.as_array().into_iter().flatten().filter_map(|t| t["name"].as_str()).collect();
    for name in ["alpha__echo", "beta__echo", "alpha__sleep_ms", "beta__slow_progress"] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    assert!(!names.iter().any(|n| n.starts_with("down__") || *n == "echo"), "{names:?}");
    let o = mcpstorm(&["call", "--http", &gateway.mcp, "beta__echo", r#"{"message": "through the gateway"}"#]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "through the gateway\n");

    let origin = gateway.mcp.trim_start_matches("http://").split('/').next().unwrap_or_default().to_owned();
    assert_eq!(http(&origin, "GET", "/healthz", None, None).0, 200);
    let (status, body) = readyz_settled(&origin, "down#0");
    assert_eq!(status, 503, "server `down` has no listing (ready = \"all\"): {body}");
    let readiness: Value = serde_json::from_str(&body).expect("/readyz answers JSON");
    let server =
        |name: &str| readiness["servers"].as_array().into_iter().flatten().find(|s| s["name"] == name).cloned();
    let down = server("down").unwrap_or_else(|| panic!("`down` named: {body}"));
    assert_eq!(
        (&down["listed"], &down["replicas"][0]["replica"], &down["replicas"][0]["state"]),
        (&json!(false), &json!("down#0"), &json!("failed")),
        "{body}"
    );
    assert!(down["replicas"][0]["last_error"].as_str().is_some_and(|e| !e.is_empty()), "the error is given: {body}");
    let alpha = server("alpha").unwrap_or_else(|| panic!("`alpha` named: {body}"));
    assert_eq!((&alpha["listed"], &alpha["replicas"][0]["state"]), (&json!(true), &json!("ready")), "{body}");

    // The admin API: no token, no answer; with it, the manual switch.
    assert_eq!(http(&gateway.admin, "GET", "/admin/breakers", None, None).0, 401);
    assert_eq!(http(&gateway.admin, "GET", "/admin/breakers", Some("wrong"), None).0, 401);
    let switch = json!({"server": "alpha", "tool": "echo", "action": "force_degrade", "fallback": "beta__echo"});
    let (status, body) = http(&gateway.admin, "POST", "/admin/breakers", Some(TOKEN), Some(&switch));
    assert_eq!(status, 200, "{body}");
    let o = mcpstorm(&["call", "--http", &gateway.mcp, "alpha__echo", r#"{"message": "x"}"#]);
    assert_eq!(o.status.code(), Some(1), "a degraded result is an error result: {}", text(&o));
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(said.contains("Do not retry") && said.contains("beta__echo"), "{said}");
    assert!(
        said.contains("the tool `alpha__echo`"),
        "the degraded result names the tool as the agent knows it: {said}"
    );

    let (status, body) = http(&gateway.admin, "GET", "/admin/breakers", Some(TOKEN), None);
    assert_eq!(status, 200, "{body}");
    let state: Value = serde_json::from_str(&body).expect("JSON");
    let breaker = state["breakers"].as_array().into_iter().flatten().find(|b| b["replica"] == "alpha#0");
    assert_eq!(breaker.map(|b| (&b["tool"], &b["state"])), Some((&json!("echo"), &json!("forced_open"))), "{body}");
    assert!(state["health"].as_array().is_some_and(|h| h.iter().any(|r| r["replica"] == "beta#0")), "{body}");
    // Every configured replica, the one that never answered too.
    let down = state["replicas"].as_array().into_iter().flatten().find(|r| r["replica"] == "down#0");
    assert_eq!(down.map(|r| &r["state"]), Some(&json!("failed")), "{body}");

    let (status, metrics) = http(&gateway.admin, "GET", "/metrics", None, None);
    assert_eq!(status, 200);
    assert!(
        metrics.contains(
            r#"mcpstorm_gateway_breaker_state{server="alpha",replica="alpha#0",tool="echo",state="forced_open"} 1"#
        ),
        "{metrics}"
    );
    assert!(metrics.contains(r#"outcome="ok""#) && metrics.contains(r#"outcome="degraded""#), "{metrics}");
    assert!(!metrics.contains(TOKEN));
    // Every metric the shipped alerting rules read is one the gateway exports.
    let rules = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/deploy/alerts.yml"))
        .expect("docs/deploy/alerts.yml");
    let named = rules.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| w.starts_with("mcpstorm_"));
    for series in named {
        let family = ["_total", "_bucket", "_count", "_sum"].iter().fold(series, |s, x| s.strip_suffix(x).unwrap_or(s));
        assert!(metrics.contains(&format!("# TYPE {family} ")), "alerts.yml reads {series}, not exported:\n{metrics}");
    }

    let bad = json!({"server": "alpha", "tool": "echo", "action": "melt"});
    assert_eq!(http(&gateway.admin, "POST", "/admin/breakers", Some(TOKEN), Some(&bad)).0, 400);
    let unknown = json!({"server": "gamma", "tool": "echo", "action": "reset"});
    assert_eq!(http(&gateway.admin, "POST", "/admin/breakers", Some(TOKEN), Some(&unknown)).0, 404);

    // SIGTERM: a clean stop.
    let pid = gateway.child.id().to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status().expect("kill");
    assert!(killed.success());
    let status = gateway.child.wait().expect("wait");
    assert_eq!(status.code(), Some(0), "SIGTERM drains and exits 0");
}

#[test]
fn validate_checks_a_gateway_config_with_file_line_column() {
    let dir = scratch_in("gateway", "validate");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let good = dir.join("good.toml");
    std::fs::write(&good, config("127.0.0.1:9", "http://127.0.0.1:9/mcp")).expect("write");
    let o = mcpstorm(&["validate", good.to_str().unwrap_or_default()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).starts_with("ok: gateway config (3 servers, 3 replicas)"),
        "{}",
        text(&o)
    );

    let bad = dir.join("bad.toml");
    let text_bad = config("127.0.0.1:9", "http://127.0.0.1:9/mcp").replace("open = \"30s\"", "open = \"0s\"");
    std::fs::write(&bad, text_bad).expect("write");
    let o = mcpstorm(&["validate", bad.to_str().unwrap_or_default()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.toml:21:") && err.contains("gateway.breaker.open"), "{err}");

    // The same file refuses to start the gateway, with the same message.
    let o = mcpstorm(&["gateway", "--config", bad.to_str().unwrap_or_default()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("gateway.breaker.open"), "{}", text(&o));

    // A syntax error in another table comes with it, in file order, and nothing it caused (issue 48 item 6).
    let broken = dir.join("broken.toml");
    let text_broken = config("127.0.0.1:9", "http://127.0.0.1:9/mcp")
        .replace("open = \"30s\"", "open = \"0s\"")
        .replace("connect_timeout = \"1s\"", "connect_timeout = 1s");
    let line_of = |key: &str| text_broken.lines().position(|l| l.starts_with(key)).map(|i| i + 1).expect("key");
    std::fs::write(&broken, &text_broken).expect("write");
    for args in [vec!["validate"], vec!["gateway", "--config"]] {
        let o = mcpstorm(&[args.clone(), vec![broken.to_str().unwrap_or_default()]].concat());
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        // Each problem's line names the file with a line number (`gateway` puts `mcpstorm: ` before the first).
        let at_line =
            |l: &&str| l.split("/broken.toml:").nth(1).is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()));
        let lines: Vec<&str> = err.lines().filter(at_line).collect();
        let (open, syntax) =
            (format!("/broken.toml:{}:", line_of("open")), format!("/broken.toml:{}:", line_of("connect_timeout")));
        assert_eq!(lines.len(), 2, "{args:?}: {err}");
        assert!(lines[0].contains(&open) && lines[0].contains("gateway.breaker.open"), "{args:?}: {err}");
        assert!(lines[1].contains(&syntax) && lines[1].contains("TOML syntax"), "{args:?}: {err}");
    }
}

/// `initialize` (2025-11-25) on the gateway at `addr`: the session id it issued.
fn initialize(addr: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}});
    let accept = "Accept: application/json, text/event-stream\r\n";
    let (status, head, body) = exchange(addr, "POST", "/mcp", accept, Some(&init));
    assert_eq!(status, 200, "{head}\n{body}");
    let id = head.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("mcp-session-id").then(|| value.trim().to_owned())
    });
    id.unwrap_or_else(|| panic!("no Mcp-Session-Id: {head}"))
}

/// `tools/list` on session `session` at `addr`: the status and the body.
fn list_on(addr: &str, session: &str) -> (u16, String) {
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let headers = format!(
        "Accept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n"
    );
    let (status, _, body) = exchange(addr, "POST", "/mcp", &headers, Some(&list));
    (status, body)
}

fn host_of(url: &str) -> String {
    url.trim_start_matches("http://").split('/').next().unwrap_or_default().to_owned()
}

#[test]
fn a_session_begun_on_one_gateway_continues_on_another_with_the_same_key() {
    let fake = Fake::start(None);
    let one = gateway().tcp("f", &fake.addr).admin(TOKEN_ENV).build();
    let key = ("MCPSTORM_SESSION_KEY", "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff");
    let a = start_with(&one, "session-a", &[key]);
    let b = start_with(&one, "session-b", &[key]);
    let other = start_with(&one, "session-other", &[("MCPSTORM_SESSION_KEY", &"ab".repeat(32))]);
    let session = initialize(&host_of(&a.mcp));
    let (status, body) = list_on(&host_of(&b.mcp), &session);
    assert_eq!(status, 200, "the second gateway continues the session: {body}");
    assert!(body.contains("\"echo\""), "{body}");
    let (status, body) = list_on(&host_of(&other.mcp), &session);
    assert_eq!(status, 404, "a gateway with another key does not know the session: {body}");
}

#[test]
fn sighup_reloads_the_servers_and_the_history_file_records_calls() {
    let (first, second) = (Fake::start(None), Fake::start(None));
    let dir = scratch_in("gateway", "reload-history");
    let history = dir.join("history/calls.jsonl");
    let with = |servers: &[(&str, &str)]| {
        let history = format!("[history]\nfile = {:?}", history.display().to_string());
        servers.iter().fold(gateway(), |g, (name, addr)| g.tcp(name, addr)).admin(TOKEN_ENV).table(&history).build()
    };
    let mut gateway = start(&with(&[("one", &first.addr)]), "reload-history");
    let o = mcpstorm(&["call", "--http", &gateway.mcp, "echo", r#"{"message": "secret-argument"}"#]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    // A bad file is refused and the running configuration stays.
    std::fs::write(&gateway.path, "[listen]\nhttp = 7\n").expect("rewrite");
    let pid = gateway.child.id().to_string();
    assert!(Command::new("kill").args(["-HUP", &pid]).status().expect("kill").success());
    std::thread::sleep(std::time::Duration::from_millis(500));
    let o = mcpstorm(&["call", "--http", &gateway.mcp, "echo", r#"{"message": "still served"}"#]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    // A good one replaces the servers: both now offer `echo`, so names are prefixed.
    std::fs::write(&gateway.path, with(&[("one", &first.addr), ("two", &second.addr)])).expect("rewrite");
    assert!(Command::new("kill").args(["-HUP", &pid]).status().expect("kill").success());
    let mut names = String::new();
    for _ in 0..50 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        names = String::from_utf8_lossy(&mcpstorm(&["tools", "--http", &gateway.mcp, "--json"]).stdout).into_owned();
        if names.contains("two__echo") {
            break;
        }
    }
    assert!(names.contains("one__echo") && names.contains("two__echo"), "{names}");
    let o = mcpstorm(&["call", "--http", &gateway.mcp, "two__echo", r#"{"message": "after the reload"}"#]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    // SIGTERM writes what is left; the history holds the calls, never their arguments.
    assert!(Command::new("kill").args(["-TERM", &pid]).status().expect("kill").success());
    assert_eq!(gateway.child.wait().expect("wait").code(), Some(0));
    let written = std::fs::read_to_string(&history).unwrap_or_default();
    let records: Vec<Value> = written.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert!(records.iter().any(|r| r["tool"] == "echo" && r["server"] == "one#0"), "{written}");
    assert!(records.iter().any(|r| r["server"] == "two#0"), "{written}");
    assert!(!written.contains("secret-argument"), "{written}");
}

#[test]
fn hostile_agents_get_errors_while_the_others_are_served() {
    let fake = Fake::start(None);
    let gateway = start(&gateway().tcp("f", &fake.addr).admin(TOKEN_ENV).build(), "hostile");
    let host = host_of(&gateway.mcp);
    let served = || {
        let o = mcpstorm(&["call", "--http", &gateway.mcp, "echo", r#"{"message": "still served"}"#]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    };

    // Slow heads: connections that never finish their request line and headers.
    let slow: Vec<TcpStream> = (0..50)
        .map(|_| {
            let mut s = TcpStream::connect(&host).expect("connect");
            s.write_all(b"POST /mcp HTTP/1.1\r\nHost: x\r\n").expect("partial head");
            s
        })
        .collect();
    served();

    // Garbage instead of HTTP: an error status or a closed connection, never a hang.
    let mut garbage = TcpStream::connect(&host).expect("connect");
    garbage.set_read_timeout(Some(std::time::Duration::from_secs(5))).expect("timeout");
    garbage.write_all(b"\x00\x01\x02 not http at all\r\n\r\n").expect("send");
    let mut answer = Vec::new();
    let _ = garbage.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 400"), "{answer}");

    // A 100 MB body, announced: refused at once with 413, before the body is read.
    let mut big = TcpStream::connect(&host).expect("connect");
    big.set_read_timeout(Some(std::time::Duration::from_secs(5))).expect("timeout");
    big.write_all(
        b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 104857600\r\n\r\n{",
    )
    .expect("send");
    let mut head = [0u8; 12];
    big.read_exact(&mut head).expect("an answer before the body");
    assert_eq!(&head, b"HTTP/1.1 413", "{}", String::from_utf8_lossy(&head));
    served();

    // Thousands of sessions opened and left idle: an id costs the gateway nothing until used.
    for _ in 0..2000 {
        initialize(&host);
    }
    served();
    drop(slow);
}

/// A server that accepts and never answers must not keep the gateway from serving the others: the process serves
/// while that server's handshake is still pending (its connection still open: the handshake timeout is 30 s), lists
/// the live server's tools, and says not ready until the silent one is listed.
#[test]
fn a_server_that_never_answers_does_not_hold_back_serving_the_others() {
    let fake = Fake::start(None);
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the silent server");
    let silent_addr = silent.local_addr().expect("addr").to_string();
    let config = gateway().tcp("live", &fake.addr).tcp("silent", &silent_addr).admin(TOKEN_ENV).build();
    let gateway = start(&config, "silent-upstream");
    let (conn, _) = silent.accept().expect("the gateway dials the silent server");
    let addr = host_of(&gateway.mcp);
    let session = initialize(&addr);
    let (status, body) = list_on(&addr, &session);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"echo\""), "the live server's tools are served: {body}");
    assert_eq!(http(&addr, "GET", "/readyz", None, None).0, 503, "not ready while a server has no listing");
    // The gateway is still waiting for the silent server's answer: it has not given up on the connection.
    // Its `initialize` is read off first; then a closed connection reads as the end, an open one would block.
    conn.set_nonblocking(true).expect("nonblocking");
    let mut buf = [0u8; 4096];
    let open = loop {
        match (&conn).read(&mut buf) {
            Ok(0) => break false,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break true,
            Err(e) => panic!("reading the silent server's connection: {e}"),
        }
    };
    assert!(open, "the silent server's handshake is still pending while the gateway serves");
}

/// Every environment variable a gateway file names is checked before anything starts, each at the key that names
/// it: `validate` warns (the deploy environment may differ), `validate --env` and the gateway refuse (exit 2), and
/// the gateway never spawns its stdio replica.
#[test]
fn an_unset_variable_is_found_before_anything_starts_at_the_key_that_names_it() {
    let dir = scratch_in("gateway", "unset-env");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let marker = dir.join("spawned");
    let _ = std::fs::remove_file(&marker);
    let path = dir.join("gw.toml");
    let config = format!(
        "[listen]\nhttp = \"127.0.0.1:0\"\n\n[[servers]]\nname = \"api\"\n[[servers.replicas]]\n\
         http = \"http://127.0.0.1:9/mcp\"\nheaders = {{ Authorization = \"env:MCPSTORM_TEST_UNSET_TOKEN\" }}\n\n\
         [[servers]]\nname = \"local\"\n[[servers.replicas]]\nstdio = \"touch {}\"\n\n\
         [admin]\nlisten = \"127.0.0.1:0\"\ntoken_env = \"MCPSTORM_TEST_UNSET_ADMIN\"\n",
        marker.display()
    );
    std::fs::write(&path, &config).expect("write");
    let line_of = |key: &str| config.lines().position(|l| l.starts_with(key)).map(|i| i + 1).expect("key");
    let header = format!("gw.toml:{}:", line_of("headers"));
    let admin = format!("gw.toml:{}:", line_of("token_env"));
    let file = path.to_str().unwrap_or_default();

    let o = mcpstorm(&["validate", file]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("ok: gateway config"), "{}", text(&o));
    let warned = String::from_utf8_lossy(&o.stderr);
    assert!(warned.contains("warning: ") && warned.contains(&header), "{warned}");
    assert!(warned.contains("environment variable MCPSTORM_TEST_UNSET_TOKEN is not set"), "{warned}");

    for args in [vec!["validate", "--env", file], vec!["gateway", "--config", file]] {
        let o = mcpstorm(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(&header) && err.contains("servers[0].replicas[0].headers.Authorization"), "{err}");
        assert!(err.contains(&admin) && err.contains("MCPSTORM_TEST_UNSET_ADMIN is not set"), "{err}");
    }
    assert!(!marker.exists(), "the gateway started its stdio replica before refusing the file");
}

/// `[listen] ready = "any"`: one dead server does not keep the node out of a load balancer; `/readyz` still names
/// it and its replica's error.
#[test]
fn with_ready_any_one_dead_server_leaves_the_node_ready_and_named() {
    let fake = Fake::start(None);
    let config = gateway()
        .ready("any")
        .tcp("live", &fake.addr)
        .tcp("down", "127.0.0.1:1")
        .table("[client]\nconnect_timeout = \"1s\"")
        .admin(TOKEN_ENV)
        .build();
    let gateway = start(&config, "ready-any");
    let (status, body) = readyz_settled(&host_of(&gateway.mcp), "down#0");
    assert_eq!(status, 200, "{body}");
    let readiness: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(readiness["rule"], "any", "{body}");
    let down = readiness["servers"].as_array().into_iter().flatten().find(|s| s["name"] == "down");
    assert_eq!(down.map(|d| &d["replicas"][0]["state"]), Some(&json!("failed")), "{body}");
}

/// `/readyz` once `replica` is no longer `connecting`: a one-replica server's listing retries its connection (1, 2
/// and 4 s apart) before it fails, while the node already serves the others.
fn readyz_settled(addr: &str, replica: &str) -> (u16, String) {
    // 20 s at most: 100 looks 0.2 s apart.
    for _ in 0..100 {
        let (status, body) = http(addr, "GET", "/readyz", None, None);
        let settled = serde_json::from_str::<Value>(&body).is_ok_and(|v| {
            v["servers"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|s| s["replicas"].as_array().into_iter().flatten())
                .any(|r| r["replica"] == replica && r["state"] != "connecting")
        });
        if settled {
            return (status, body);
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    http(addr, "GET", "/readyz", None, None)
}

/// A rolling restart mid-call (issue 48): a Python SDK agent (`mcp` 2.x `Client`) has a 3 s call in flight when the
/// gateway gets SIGTERM. The call completes, the agent's session closes cleanly (its stream and DELETE still served
/// during the drain), a new agent meanwhile gets 503 with `Retry-After`, and the gateway exits 0.
#[test]
fn a_python_sdk_agents_call_in_flight_finishes_through_a_sigterm() {
    if crate::diagnose::python_peer().is_none() {
        return;
    }
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let server = format!("{} {root}/tests/peers/py_server.py", crate::diagnose::python());
    let config = gateway()
        .drain("10s")
        .table(&format!("[[servers]]\nname = \"py\"\n[[servers.replicas]]\nstdio = {server:?}"))
        .admin(TOKEN_ENV)
        .build();
    let mut gateway = start(&config, "drain-sdk");
    let agent = Command::new(crate::diagnose::python())
        .arg(format!("{root}/tests/peers/py_token_client.py"))
        .arg(&gateway.mcp)
        .args(["--call", "sleep_ms", "--args", r#"{"ms": 3000}"#, "--mode", "legacy"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the Python SDK agent");
    // The agent connects, lists and calls (its Python start takes most of a second); then SIGTERM mid-call.
    std::thread::sleep(std::time::Duration::from_millis(2000));
    let pid = gateway.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().expect("kill").success());
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (status, _) = http(&host_of(&gateway.mcp), "GET", "/readyz", None, None);
    assert_eq!(status, 503, "draining: not ready");
    let (status, head, _) = exchange(
        &host_of(&gateway.mcp),
        "POST",
        "/mcp",
        "",
        Some(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})),
    );
    assert_eq!(status, 503, "new work is sent elsewhere: {head}");
    assert!(head.to_ascii_lowercase().contains("retry-after: 1"), "{head}");
    let output = agent.wait_with_output().expect("the agent ends");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "the agent's call failed: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let seen: Value = serde_json::from_str(stdout.trim()).expect("one JSON line");
    assert_eq!(seen["is_error"], false, "{seen}");
    let exit = gateway.child.wait().expect("wait");
    assert_eq!(exit.code(), Some(0), "the drain ends with exit 0");
}
