//! The gateway as an OAuth client of a protected upstream (`[servers.oauth]`, issue 43): a Python `mcp` SDK server
//! that validates its own tokens (`tests/peers/py_oauth_server.py`: signature against the issuer's keys, `aud` equal
//! to its own URL) behind the gateway, the gateway's tokens from `oidc-provider`, and an agent holding a token for
//! the gateway only. The agent's token never reaches the upstream; a burst on no token makes one token request; a
//! refused token is renewed once and the call sent again; a server that refuses every token gets a clear error and
//! no storm of token requests.

use std::path::PathBuf;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcpstorm_core::{CallOptions, ClientConfig, HttpEndpoint, McpClient, Secret, SeededRng};
use mcpstorm_sim::gateway::Process;
use mcpstorm_sim::gateway::cli::wall_clock;
use mcpstorm_sim::scenario::tables::GatewayFile;
use mcpstorm_sim::seed::Seed;
use mcpstorm_tests::real_servers::{python_baseline, python_token_client, repo_root};
use serde_json::{Value, json};

use super::{Idp, agent, free_port, listening};

/// The variable holding the gateway's client secret. A test cannot set one (the workspace forbids unsafe code, and
/// `std::env::set_var` is unsafe), so the identity provider is given, as the gateway's secret, the value of one
/// that cargo sets for every test process.
pub(crate) const SECRET_ENV: &str = "CARGO_PKG_NAME";

/// The identity provider with the default clients, but the gateway's secret being `SECRET_ENV`'s value.
pub(crate) async fn idp() -> Option<Idp> {
    idp_with(&[]).await
}

/// [`idp`] with more options for `idp.mjs`.
pub(crate) async fn idp_with(options: &[&str]) -> Option<Idp> {
    idp_with_clients(&[], options).await
}

/// [`idp_with`], with more clients.
async fn idp_with_clients(more: &[Value], options: &[&str]) -> Option<Idp> {
    let secret = std::env::var(SECRET_ENV).expect("cargo sets CARGO_PKG_NAME for tests");
    let clients = json!([
        {"client_id": "agent", "client_secret": "agent-secret", "scope": "mcp tools:echo tools:add"},
        {"client_id": "agent-narrow", "client_secret": "narrow-secret", "scope": "mcp tools:echo"},
        {"client_id": "gateway", "client_secret": secret, "scope": "mcp tools:echo tools:add",
         "grant_types": ["client_credentials", "urn:ietf:params:oauth:grant-type:token-exchange"], "introspect": true},
    ]);
    let clients: Vec<Value> = clients.as_array().into_iter().flatten().chain(more).cloned().collect();
    let path = std::env::temp_dir().join(format!("mcpstorm-idp-clients-{}-{}.json", std::process::id(), more.len()));
    std::fs::write(&path, Value::from(clients).to_string()).expect("write the clients");
    let mut args = vec!["--port", "0", "--clients", path.to_str().expect("utf-8 path")];
    args.extend_from_slice(options);
    Idp::start(&args).await
}

/// The protected Python server on `port` for `issuer`, accepting only tokens whose `aud` is `audience` (default:
/// its own URL).
async fn upstream(port: u16, issuer: &str, audience: Option<&str>) -> (tokio::process::Child, String) {
    let python = python_baseline().expect("checked by the caller");
    let mut command = tokio::process::Command::new(python);
    command.arg(repo_root().join("tests/peers/py_oauth_server.py"));
    command.args(["--port", &port.to_string(), "--issuer", issuer]);
    if let Some(audience) = audience {
        command.args(["--audience", audience]);
    }
    listening(command).await
}

/// A gateway with `[auth]` for `idp`'s tokens, over the protected server at `up_url` reached with `grant`.
async fn gateway(idp: &Idp, up_url: &str, grant: &str, extra: &str) -> (Process, String) {
    let client = format!("client_id = \"gateway\"\nclient_secret_env = {SECRET_ENV:?}");
    gateway_as(idp, up_url, grant, &client, extra).await
}

/// [`gateway`] with the `[servers.oauth]` keys that say who the gateway is.
async fn gateway_as(idp: &Idp, up_url: &str, grant: &str, client: &str, extra: &str) -> (Process, String) {
    let port = free_port();
    let audience = format!("http://127.0.0.1:{port}/mcp");
    let text = format!(
        "[listen]\nhttp = \"127.0.0.1:{port}\"\ndrain = \"1s\"\n\
         [auth]\nissuer = {issuer:?}\naudience = {audience:?}\nscopes = [\"mcp\"]\n\
         [[servers]]\nname = \"secure\"\n[[servers.replicas]]\nhttp = {up_url:?}\n\
         [servers.oauth]\ngrant = {grant:?}\n{client}\n\
         scopes = [\"mcp\", \"tools:echo\"]\n{extra}\n",
        issuer = idp.issuer,
    );
    let file = GatewayFile::load_str(&text, "gateway.toml").unwrap_or_else(|e| panic!("{e}"));
    let mut process = Process::start(PathBuf::from("gateway.toml"), file, Seed::new(7), wall_clock())
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    process.open(false).await.unwrap_or_else(|e| panic!("{e:?}"));
    (process, audience)
}

/// A counter of a `/__test/stats` document (0 when absent).
fn count(stats: &Value, pointer: &str) -> u64 {
    stats.pointer(pointer).and_then(Value::as_u64).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_reaches_a_protected_server_with_its_own_tokens_renewed_once_and_never_the_agents() {
    let idp = peer_or_skip!(idp().await);
    peer_or_skip!(python_baseline());
    peer_or_skip!(python_token_client("http://127.0.0.1:1/mcp"));
    let up_port = free_port();
    let (up_child, up_url) = upstream(up_port, &idp.issuer, None).await;
    let (mut process, audience) = gateway(&idp, &up_url, "client_credentials", "").await;
    // Every client-credentials grant but the agent's one is the gateway's.
    let token_requests = || async { count(&idp.stats().await, "/grants/client_credentials") - 1 };
    let agent_token = idp.token("agent", "agent-secret", &audience, "mcp tools:echo").await;
    // The gateway listed the server at start: one token, found through the server's own metadata.
    let at_start = token_requests().await;
    assert_eq!(at_start, 1, "{}", idp.stats().await);

    // An agent holding a token for the gateway: its calls reach the server, which sees the gateway's token.
    let (seen, code) = agent(&audience, Some(&agent_token), Some(("whoami", json!({})))).await;
    assert_eq!(code, 0, "{seen}");
    let whoami: Value = serde_json::from_str(seen["result"].as_str().unwrap_or("{}")).unwrap_or_else(|_| seen.clone());
    assert_eq!(whoami["aud"], json!(up_url), "the upstream saw a token for itself: {whoami}");
    assert_eq!(whoami["client_id"], "gateway", "the gateway's own token, never the agent's: {whoami}");

    // A burst of 20 concurrent calls makes no token request: the token is shared and still fresh.
    let mut endpoint = HttpEndpoint::new(&audience).expect("url");
    endpoint = endpoint.with_header("Authorization", Secret::new(format!("Bearer {agent_token}"))).expect("header");
    let client = McpClient::http("agent", endpoint, ClientConfig::default(), SeededRng::new(1));
    let calls =
        (0..20).map(|i| client.call_tool("echo", json!({"message": format!("burst {i}")}), CallOptions::default()));
    let outcomes = futures_util::future::join_all(calls).await;
    assert!(outcomes.iter().all(|o| o.as_ref().is_ok_and(|r| !r.is_error)), "{outcomes:?}");
    assert_eq!(token_requests().await, at_start, "a burst on a fresh token asked for none");

    // The server restarts knowing only a new key: it refuses the gateway's token (401), which is renewed once and
    // the call sent again. The agent sees nothing of it.
    drop(up_child);
    idp.control("/__test/ttl?seconds=4").await;
    idp.control("/__test/rotate?kid=k2").await;
    tokio::time::sleep(Duration::from_millis(5200)).await;
    let (restarted, _) = upstream(up_port, &idp.issuer, None).await;
    let before = token_requests().await;
    let (seen, code) =
        agent(&audience, Some(&agent_token), Some(("echo", json!({"message": "after the rotation"})))).await;
    assert_eq!((code, &seen["result"]), (0, &json!("after the rotation")), "{seen}");
    assert_eq!(token_requests().await, before + 1, "one renewal for the refused token");

    // Tokens now live 4 s: a steady load across three lifetimes never meets an expired token, and the renewals
    // run in the background, one per lifetime, not one per call.
    let before = token_requests().await;
    let mut outcomes = Vec::new();
    for wave in 0..30 {
        let calls =
            (0..7).map(|i| client.call_tool("echo", json!({"message": format!("{wave}.{i}")}), CallOptions::default()));
        outcomes.extend(futures_util::future::join_all(calls).await);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let failed: Vec<_> = outcomes.iter().filter(|o| !o.as_ref().is_ok_and(|r| !r.is_error)).collect();
    assert!(failed.is_empty(), "{} of {} calls failed across the expiries: {failed:?}", failed.len(), outcomes.len());
    let renewals = token_requests().await - before;
    eprintln!("4 s tokens under load: {} calls, {renewals} token requests", outcomes.len());
    assert!((2..=6).contains(&renewals), "210 calls over about 9 s of 4 s tokens made {renewals} token requests");

    // A server that refuses every token (it wants another audience): a clear error, and no storm of token requests.
    drop(restarted);
    tokio::time::sleep(Duration::from_millis(5200)).await;
    let (_wrong, _) = upstream(up_port, &idp.issuer, Some("http://127.0.0.1:1/elsewhere")).await;
    let before = token_requests().await;
    for _ in 0..5 {
        let outcome = client.call_tool("echo", json!({"message": "refused"}), CallOptions::default()).await;
        let text = format!("{outcome:?}");
        assert!(text.contains("refused our access token"), "{text}");
    }
    let after = token_requests().await;
    assert!(after <= before + 1, "5 refused calls made {} token requests", after - before);
    let metrics = process.metrics_text();
    assert!(
        metrics.contains("mcpstorm_gateway_upstream_token_requests_total{server=\"secure\",outcome=\"ok\"}"),
        "{metrics}"
    );
    process.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_token_exchange_the_server_sees_each_agent_as_the_subject_and_the_gateway_as_the_actor() {
    let idp = peer_or_skip!(idp().await);
    peer_or_skip!(python_baseline());
    peer_or_skip!(python_token_client("http://127.0.0.1:1/mcp"));
    let (_up, up_url) = upstream(free_port(), &idp.issuer, None).await;
    let (mut process, audience) = gateway(&idp, &up_url, "token_exchange", "").await;
    let exchanges = || async { count(&idp.stats().await, "/grants/urn:ietf:params:oauth:grant-type:token-exchange") };
    for (client, secret) in [("agent", "agent-secret"), ("agent-narrow", "narrow-secret")] {
        let token = idp.token(client, secret, &audience, "mcp tools:echo").await;
        let before = exchanges().await;
        for _ in 0..2 {
            let (seen, code) = agent(&audience, Some(&token), Some(("whoami", json!({})))).await;
            assert_eq!(code, 0, "{seen}");
            let whoami: Value = serde_json::from_str(seen["result"].as_str().unwrap_or("{}")).unwrap_or(seen.clone());
            assert_eq!(whoami["sub"], client, "the agent is the subject: {whoami}");
            assert_eq!(whoami["act"], json!({"sub": "gateway"}), "the gateway is the actor: {whoami}");
            assert_eq!(whoami["aud"], json!(up_url), "a token for the server, not the agent's own: {whoami}");
        }
        assert_eq!(exchanges().await, before + 1, "{client}'s token was exchanged once, then kept");
    }
    process.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_endpoint_outage_fails_calls_at_once_without_hammering_it_and_they_recover_with_it() {
    let idp = peer_or_skip!(idp().await);
    peer_or_skip!(python_baseline());
    let (_up, up_url) = upstream(free_port(), &idp.issuer, None).await;
    // Tokens of 3 s, renewed 1.5 s before they expire; backoff 0.5 s doubling to 2 s.
    idp.control("/__test/ttl?seconds=3").await;
    let extra = "refresh_before = \"1500ms\"\nbackoff = \"500ms\"\nmax_backoff = \"2s\"";
    let (mut process, audience) = gateway(&idp, &up_url, "client_credentials", extra).await;
    let agent_token = idp.token("agent", "agent-secret", &audience, "mcp tools:echo").await;
    let endpoint = HttpEndpoint::new(&audience)
        .expect("url")
        .with_header("Authorization", Secret::new(format!("Bearer {agent_token}")))
        .expect("header");
    let client = McpClient::http("agent", endpoint, ClientConfig::default(), SeededRng::new(1));
    let echo = || client.call_tool("echo", json!({"message": "x"}), CallOptions::default());
    assert!(echo().await.is_ok_and(|r| !r.is_error), "served before the outage");

    // The token endpoint answers 503 from now on. Once the token has expired, calls fail at once, saying why.
    idp.control("/__test/fail?status=503").await;
    let before = count(&idp.stats().await, "/token_requests");
    tokio::time::sleep(Duration::from_millis(3200)).await;
    let mut failed = 0;
    for _ in 0..40 {
        let started = tokio::time::Instant::now();
        let outcome = echo().await;
        let text = format!("{outcome:?}");
        if !outcome.is_ok_and(|r| !r.is_error) {
            failed += 1;
            assert!(text.contains("access token"), "{text}");
            assert!(started.elapsed() < Duration::from_secs(2), "a call without a token fails at once: {text}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let during = count(&idp.stats().await, "/token_requests") - before;
    eprintln!("token endpoint down for about 7 s: {failed} of 40 calls failed, {during} token requests");
    assert_eq!(failed, 40, "no call was served without a token");
    assert!(during <= 8, "40 calls over about 7 s of outage made {during} token requests (backoff 0.5 s to 2 s)");

    // It comes back: within one backoff the calls are served again.
    idp.control("/__test/fail?status=0").await;
    tokio::time::sleep(Duration::from_millis(2200)).await;
    let outcome = echo().await;
    assert!(outcome.as_ref().is_ok_and(|r| !r.is_error), "{outcome:?}");
    let metrics = process.metrics_text();
    assert!(metrics.contains("upstream_token_requests_total{server=\"secure\",outcome=\"http_5xx\"}"), "{metrics}");
    process.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_private_key_the_gateway_proves_who_it_is_by_a_signed_assertion_and_no_secret() {
    let key = rcgen::KeyPair::generate().expect("a P-256 key");
    let point = key.public_key_raw();
    let (x, y) = (URL_SAFE_NO_PAD.encode(&point[1..33]), URL_SAFE_NO_PAD.encode(&point[33..65]));
    let client = json!({
        "client_id": "gateway-jwt", "token_endpoint_auth_method": "private_key_jwt",
        "token_endpoint_auth_signing_alg": "ES256", "scope": "mcp tools:echo",
        "jwks": {"keys": [{"kty": "EC", "crv": "P-256", "x": x, "y": y, "kid": "gw-1", "alg": "ES256", "use": "sig"}]},
    });
    let idp = peer_or_skip!(idp_with_clients(&[client], &[]).await);
    peer_or_skip!(python_baseline());
    peer_or_skip!(python_token_client("http://127.0.0.1:1/mcp"));
    let path = std::env::temp_dir().join(format!("mcpstorm-gateway-key-{}.pem", std::process::id()));
    std::fs::write(&path, key.serialize_pem()).expect("write the key");
    let (_up, up_url) = upstream(free_port(), &idp.issuer, None).await;
    let who = format!(
        "client_id = \"gateway-jwt\"\nprivate_key_file = {:?}\nprivate_key_alg = \"ES256\"\nprivate_key_id = \"gw-1\"",
        path.display().to_string()
    );
    let (mut process, audience) = gateway_as(&idp, &up_url, "client_credentials", &who, "").await;
    let token = idp.token("agent", "agent-secret", &audience, "mcp tools:echo").await;
    let (seen, code) = agent(&audience, Some(&token), Some(("whoami", json!({})))).await;
    assert_eq!(code, 0, "{seen}");
    let whoami: Value = serde_json::from_str(seen["result"].as_str().unwrap_or("{}")).unwrap_or(seen.clone());
    assert_eq!(whoami["client_id"], "gateway-jwt", "{whoami}");
    process.stop().await;
}
