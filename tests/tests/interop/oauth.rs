//! The gateway as an OAuth 2.1 resource server (`[auth]`, issue 43) against a real identity provider: panva's
//! `oidc-provider` (`tests/peers/idp/idp.mjs`, client credentials with resource indicators, JWT access tokens), and
//! an agent on the Python `mcp` SDK holding its tokens. Every refusal is checked for its status and the challenge an
//! agent acts on; key rotation, expiry, a flood of made-up key ids and an unreachable issuer end to end.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcpstorm_core::transport::Fetcher;
use mcpstorm_core::{Clock, TokioClock};
use mcpstorm_sim::gateway::Process;
// The binary's clock: tokens' `exp` are real times.
use mcpstorm_sim::gateway::cli::wall_clock;
use mcpstorm_sim::scenario::tables::GatewayFile;
use mcpstorm_sim::seed::Seed;
use mcpstorm_tests::real_servers::{identity_provider, python_server, python_token_client, repo_root};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

mod upstream;

pub(crate) fn clock() -> Arc<dyn Clock> {
    Arc::new(TokioClock::new(0))
}

/// Starts a peer that prints `listening URL` once it serves, and exits when its stdin closes: the child (killed on
/// drop) and the URL.
pub(crate) async fn listening(mut command: tokio::process::Command) -> (tokio::process::Child, String) {
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).kill_on_drop(true);
    let mut child = command.spawn().expect("start the peer");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    let read = stdout.read_line(&mut line);
    tokio::time::timeout(Duration::from_secs(30), read).await.expect("the peer starts").expect("read");
    let url = line.trim().strip_prefix("listening ").unwrap_or_else(|| panic!("{line:?}")).to_owned();
    (child, url)
}

/// A running `idp.mjs`; killed when dropped (and it exits by itself when our end of its stdin closes).
pub(crate) struct Idp {
    _child: tokio::process::Child,
    pub issuer: String,
}

impl Idp {
    pub(crate) async fn start(args: &[&str]) -> Option<Idp> {
        let mut command = tokio::process::Command::from(identity_provider()?);
        command.args(args);
        let (child, line) = listening(command).await;
        Some(Idp { _child: child, issuer: line })
    }

    pub(crate) async fn fetch(&self, path: &str, form: Option<&[(&str, &str)]>) -> Value {
        let url = format!("{}{path}", self.issuer);
        let fetcher = Fetcher::new(&url, None, clock(), Duration::from_secs(10)).expect("url");
        let fetched = match form {
            Some(form) => fetcher.post_form(form, None).await,
            None => fetcher.get_json().await,
        };
        let fetched = fetched.unwrap_or_else(|e| panic!("{url}: {e}"));
        fetched.json().unwrap_or_else(|| panic!("{url}: HTTP {} {:?}", fetched.status, fetched.body))
    }

    /// A client-credentials token of `client` for `resource` with `scope`.
    pub(crate) async fn token(&self, client: &str, secret: &str, resource: &str, scope: &str) -> String {
        let form = [
            ("grant_type", "client_credentials"),
            ("client_id", client),
            ("client_secret", secret),
            ("resource", resource),
            ("scope", scope),
        ];
        let answer = self.fetch("/token", Some(&form)).await;
        answer["access_token"].as_str().unwrap_or_else(|| panic!("{answer}")).to_owned()
    }

    pub(crate) async fn stats(&self) -> Value {
        self.fetch("/__test/stats", None).await
    }

    pub(crate) async fn control(&self, path: &str) {
        self.fetch(path, Some(&[])).await;
    }
}

/// A free loopback port (bound and released: the gateway's audience must name its port before it binds).
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// A gateway at `port` with `[auth]` for `issuer`, over the Python SDK's stdio server.
async fn gateway(port: u16, issuer: &str) -> Option<(Process, String)> {
    gateway_with(port, issuer, "").await
}

/// [`gateway`] with more of the file after `[auth]`'s keys.
async fn gateway_with(port: u16, issuer: &str, more: &str) -> Option<(Process, String)> {
    python_server()?;
    let python = std::env::var("MCPSTORM_PYTHON").unwrap_or_else(|_| "python3".into());
    let command = format!("{python} {}", repo_root().join("tests/peers/py_server.py").display());
    let audience = format!("http://127.0.0.1:{port}/mcp");
    let text = format!(
        "[listen]\nhttp = \"127.0.0.1:{port}\"\ndrain = \"1s\"\n\
         [auth]\nissuer = {issuer:?}\naudience = {audience:?}\nscopes = [\"mcp\"]\n\
         tool_scopes = {{ sleep_ms = [\"tools:add\"] }}\nkeys_min_interval = \"1s\"\nleeway = \"1s\"\n{more}\n\
         [[servers]]\nname = \"py\"\n[[servers.replicas]]\nstdio = {command:?}\n"
    );
    let file = GatewayFile::load_str(&text, "gateway.toml").unwrap_or_else(|e| panic!("{e}"));
    let mut process = Process::start(PathBuf::from("gateway.toml"), file, Seed::new(7), wall_clock())
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    process.open(false).await.unwrap_or_else(|e| panic!("{e:?}"));
    Some((process, audience))
}

/// The Python SDK agent against `url` with `token`, calling `call` with `args`: its JSON line and exit code.
pub(crate) async fn agent(url: &str, token: Option<&str>, call: Option<(&str, Value)>) -> (Value, i32) {
    let mut command = python_token_client(url).expect("checked by the caller");
    if let Some(token) = token {
        command.args(["--token", token]);
    }
    if let Some((name, args)) = call {
        command.args(["--call", name, "--args", &args.to_string()]);
    }
    let output = tokio::task::spawn_blocking(move || command.output()).await.expect("join").expect("run agent");
    let code = output.status.code().unwrap_or(-1);
    let line: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("exit {code}: {}", String::from_utf8_lossy(&output.stderr)));
    (line, code)
}

/// One raw `initialize` posted to `/mcp` with `Authorization: Bearer token`: the status and the response's head (hyper writes header
/// names in lower case). Fast enough for a flood.
pub(crate) async fn raw_status(port: u16, token: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.expect("read");
    let status = answer.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let head = answer.split("\r\n\r\n").next().unwrap_or_default().to_owned();
    (status, head)
}

/// A JWT-shaped token with `header` (base64url JSON) and junk claims and signature.
pub(crate) fn forged(header: &str) -> String {
    format!("{header}.eyJpc3MiOiJ4IiwiYXVkIjoieSIsImV4cCI6OTk5OTk5OTk5OX0.c2ln")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_agent_with_a_real_providers_token_is_let_in_and_each_bad_token_is_refused_for_its_reason() {
    let idp = peer_or_skip!(Idp::start(&["--port", "0", "--kid", "k1"]).await);
    peer_or_skip!(python_token_client("http://127.0.0.1:1/mcp"));
    let port = free_port();
    let (process, audience) = peer_or_skip!(gateway(port, &idp.issuer).await);
    let url = audience.clone();

    // No token: 401 naming the metadata, which names the issuer and this resource.
    let (seen, code) = agent(&url, None, None).await;
    assert_eq!((code, seen["http_status"].as_u64()), (3, Some(401)), "{seen}");
    let challenge = seen["www_authenticate"].as_str().unwrap_or_default();
    let metadata_url = format!("http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp");
    assert!(challenge.contains(&format!("resource_metadata=\"{metadata_url}\"")), "{challenge}");
    assert!(challenge.contains("scope=\"mcp\"") && !challenge.contains("error="), "{challenge}");
    let metadata = Fetcher::new(&metadata_url, None, clock(), Duration::from_secs(5)).expect("url");
    let document = metadata.get_json().await.expect("metadata").json().expect("JSON");
    assert_eq!(document["resource"], audience.as_str());
    assert_eq!(document["authorization_servers"], json!([idp.issuer]));

    // A token for this gateway with every scope: listed and called.
    let full = idp.token("agent", "agent-secret", &audience, "mcp tools:echo tools:add").await;
    let (seen, code) = agent(&url, Some(&full), Some(("echo", json!({"message": "with a token"})))).await;
    assert_eq!(code, 0, "{seen}");
    assert_eq!(seen["result"], "with a token", "{seen}");
    let (seen, code) = agent(&url, Some(&full), Some(("sleep_ms", json!({"ms": 1})))).await;
    assert_eq!((code, &seen["is_error"]), (0, &json!(false)), "{seen}");

    // Without the tool's scope: 403 insufficient_scope naming what to ask for; other tools still work.
    let narrow = idp.token("agent-narrow", "narrow-secret", &audience, "mcp tools:echo").await;
    let (seen, code) = agent(&url, Some(&narrow), Some(("sleep_ms", json!({"ms": 1})))).await;
    assert_eq!((code, seen["http_status"].as_u64()), (3, Some(403)), "{seen}");
    let challenge = seen["www_authenticate"].as_str().unwrap_or_default();
    assert!(
        challenge.contains("error=\"insufficient_scope\"") && challenge.contains("scope=\"mcp tools:add\""),
        "{challenge}"
    );
    let (seen, code) = agent(&url, Some(&narrow), Some(("echo", json!({"message": "narrow"})))).await;
    assert_eq!((code, &seen["result"]), (0, &json!("narrow")), "{seen}");

    // A token for another server, garbage, a shared-secret algorithm, `none`: 401 invalid_token, each for its reason.
    let elsewhere = idp.token("agent", "agent-secret", "http://127.0.0.1:1/mcp", "mcp").await;
    let (seen, code) = agent(&url, Some(&elsewhere), None).await;
    assert_eq!((code, seen["http_status"].as_u64()), (3, Some(401)), "{seen}");
    assert!(seen["www_authenticate"].as_str().is_some_and(|c| c.contains("not issued for")), "{seen}");
    for (token, why) in [
        ("garbage".to_owned(), "not a JWT"),
        (forged("eyJhbGciOiJIUzI1NiIsImtpZCI6ImsxIn0"), "HS256"),
        (forged("eyJhbGciOiJub25lIn0"), "not a readable JWT"),
    ] {
        let (status, challenge) = raw_status(port, &token).await;
        assert_eq!(status, 401, "{why}: {challenge}");
        assert!(challenge.contains("error=\"invalid_token\"") && challenge.contains(why), "{why}: {challenge}");
    }

    // Rotation: a new key signs; the gateway fetches the keys again once and takes it, and the old key's tokens go.
    let fetched_before = idp.stats().await["jwks_requests"].as_u64().unwrap_or(0);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    idp.control("/__test/rotate?kid=k2").await;
    let rotated = idp.token("agent", "agent-secret", &audience, "mcp tools:echo").await;
    let (seen, code) = agent(&url, Some(&rotated), Some(("echo", json!({"message": "rotated"})))).await;
    assert_eq!((code, &seen["result"]), (0, &json!("rotated")), "{seen}");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (status, challenge) = raw_status(port, &full).await;
    assert_eq!(status, 401, "{challenge}");
    assert!(challenge.contains("a key the issuer does not publish"), "{challenge}");

    // A flood of made-up key ids makes at most one more fetch of the keys (the least interval is 1 s).
    let fetched_rotated = idp.stats().await["jwks_requests"].as_u64().unwrap_or(0);
    assert!(fetched_rotated > fetched_before, "the rotation was fetched: {fetched_before} → {fetched_rotated}");
    let flood = (0..50).map(|i| {
        let header = format!("{{\"alg\":\"RS256\",\"kid\":\"made-up-{i}\"}}");
        forged(&URL_SAFE_NO_PAD.encode(header))
    });
    let statuses = futures_util::future::join_all(flood.map(|t| async move { raw_status(port, &t).await.0 })).await;
    assert!(statuses.iter().all(|s| *s == 401), "{statuses:?}");
    let fetched_after = idp.stats().await["jwks_requests"].as_u64().unwrap_or(0);
    assert!(
        fetched_after <= fetched_rotated + 1,
        "50 unknown kids fetched the keys {} times",
        fetched_after - fetched_rotated
    );

    // Expiry: a token that lapses is refused as expired.
    idp.control("/__test/ttl?seconds=1").await;
    let short = idp.token("agent", "agent-secret", &audience, "mcp tools:echo").await;
    assert_eq!(raw_status(port, &short).await.0, 200);
    tokio::time::sleep(Duration::from_millis(2600)).await;
    let (status, challenge) = raw_status(port, &short).await;
    assert_eq!(status, 401, "{challenge}");
    assert!(challenge.contains("expired"), "{challenge}");

    let metrics = process.metrics_text();
    for reason in ["missing", "insufficient_scope", "audience", "algorithm", "malformed", "unknown_key", "expired"] {
        let line = format!("mcpstorm_gateway_agents_refused_total{{reason=\"{reason}\"}}");
        assert!(metrics.contains(&line), "{reason} not counted:\n{metrics}");
    }
    let mut process = process;
    process.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_identity_provider_unreachable_an_agent_is_told_to_retry_later_not_refused() {
    let port = free_port();
    let dead = format!("http://127.0.0.1:{}", free_port());
    let (mut process, _) = peer_or_skip!(gateway(port, &dead).await);
    let (status, challenge) = raw_status(port, &forged("eyJhbGciOiJSUzI1NiJ9")).await;
    assert_eq!(status, 503, "a token that cannot be checked is not an invalid token: {challenge}");
    assert!(!challenge.contains("invalid_token") && challenge.contains("retry-after: 2"), "{challenge}");
    process.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_opaque_token_is_introspected_once_and_its_answer_kept_even_a_no() {
    let idp = peer_or_skip!(upstream::idp_with(&["--format", "opaque"]).await);
    peer_or_skip!(python_server());
    let port = free_port();
    let audience = format!("http://127.0.0.1:{port}/mcp");
    let introspection =
        format!("[auth.introspection]\nclient_id = \"gateway\"\nclient_secret_env = {:?}\n", upstream::SECRET_ENV);
    let (mut process, _) = peer_or_skip!(gateway_with(port, &idp.issuer, &introspection).await);
    let introspected = || async { idp.stats().await["introspection_requests"].as_u64().unwrap_or(0) };

    let token = idp.token("agent", "agent-secret", &audience, "mcp tools:echo").await;
    assert!(!token.starts_with("ey"), "an opaque token: {token}");
    for _ in 0..3 {
        assert_eq!(raw_status(port, &token).await.0, 200);
    }
    assert_eq!(introspected().await, 1, "asked once, then kept");

    let elsewhere = idp.token("agent", "agent-secret", "http://127.0.0.1:1/mcp", "mcp").await;
    let (status, head) = raw_status(port, &elsewhere).await;
    assert_eq!(status, 401, "{head}");
    assert!(head.contains("not issued for"), "{head}");

    let before = introspected().await;
    for _ in 0..5 {
        let (status, head) = raw_status(port, "made-up-opaque-token").await;
        assert_eq!(status, 401, "{head}");
        assert!(head.contains("not active"), "{head}");
    }
    assert_eq!(introspected().await, before + 1, "a made-up token repeated is asked about once");
    process.stop().await;
}
