//! The session and auth extension and schema drift, on the wire: what a gateway sees from the fake.

use std::time::Duration;

use mcpstorm_core::AuthScheme;
use mcpstorm_core::session::{META_AUTH_SCHEMES, META_AUTHORIZATION, META_SESSION, RENEW};
use serde_json::{Value, json};

use super::*;
use crate::{Drift, ValidationError};

const INIT: &str = "initialize";

fn init_params() -> Value {
    json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}})
}

fn session_server(ttl_ms: u64, renew: bool, auth: Option<Vec<AuthScheme>>) -> FakeServer {
    let echo = ToolConfig {
        input_schema: Some(json!({"type": "object", "properties": {"m": {"type": "string"}}, "required": ["m"]})),
        reply: Some("{arg:m}".into()),
        ..ToolConfig::new("echo")
    };
    server(FakeServerConfig { session_ttl_ms: Some(ttl_ms), renew, auth_schemes: auth, ..config(vec![echo]) })
}

/// A `tools/call` answered with a result that is not an error (`isError` is omitted when false).
fn succeeded(frame: &Value) -> bool {
    frame.get("result").is_some_and(|r| r.get("isError") != Some(&json!(true)))
}

/// Handshakes and returns the granted session id.
async fn handshake(raw: &mut Raw) -> (String, Value) {
    let init = raw.roundtrip(1, INIT, init_params()).await;
    let meta = init["result"]["_meta"].clone();
    let id = meta[META_SESSION]["id"].as_str().expect("a session id").to_owned();
    (id, meta)
}

fn call_params(session: &str, auth: Option<(&str, &str)>) -> Value {
    let mut meta = json!({META_SESSION: session});
    if let Some((scheme, credential)) = auth {
        meta[META_AUTHORIZATION] = json!({"scheme": scheme, "credential": credential});
    }
    json!({"name": "echo", "arguments": {"m": "hi"}, "_meta": meta})
}

#[tokio::test(start_paused = true)]
async fn sessions_are_granted_checked_renewed_and_expire_by_the_server_clock() {
    let fake = session_server(1_000, true, None);
    let mut raw = Raw::connect(&fake);
    let (id, meta) = handshake(&mut raw).await;
    assert_eq!(meta[META_SESSION]["ttlMs"], json!(1000), "{meta}");
    assert!(meta.get(META_AUTH_SCHEMES).is_none(), "no auth configured: {meta}");

    // No id, or an unknown one: refused before running.
    let refused = raw.roundtrip(2, "tools/call", json!({"name": "echo", "arguments": {"m": "x"}})).await;
    assert_eq!(
        (refused["error"]["code"].clone(), refused["error"]["message"].clone()),
        (json!(-32001), json!("Session not found"))
    );
    let refused = raw.roundtrip(3, "tools/call", call_params("s-999", None)).await;
    assert_eq!(refused["error"]["code"], json!(-32001));
    // ping and a second handshake need none.
    assert!(raw.roundtrip(4, "ping", json!({})).await.get("result").is_some());

    let ok = raw.roundtrip(5, "tools/call", call_params(&id, None)).await;
    assert_eq!(ok["result"]["content"][0]["text"], json!("hi"), "{ok}");

    // Renewed at 800 ms: alive at 1500 ms, gone after 1800 ms.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let renewed = raw.roundtrip(6, RENEW, json!({"_meta": {META_SESSION: id}})).await;
    assert_eq!(renewed["result"]["_meta"][META_SESSION]["id"], json!(id), "{renewed}");
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(raw.roundtrip(7, "tools/call", call_params(&id, None)).await.get("result").is_some());
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(raw.roundtrip(8, "tools/call", call_params(&id, None)).await["error"]["code"], json!(-32001));
    assert_eq!(raw.roundtrip(9, RENEW, json!({"_meta": {META_SESSION: id}})).await["error"]["code"], json!(-32001));

    // A new session works on another connection too (sessions belong to the server); expire_sessions drops it.
    let (id2, _) = handshake(&mut raw).await;
    let mut other = Raw::connect(&fake);
    assert!(other.roundtrip(1, "tools/call", call_params(&id2, None)).await.get("result").is_some());
    fake.control().expire_sessions();
    assert_eq!(other.roundtrip(2, "tools/call", call_params(&id2, None)).await["error"]["code"], json!(-32001));

    let stats = fake.stats();
    assert_eq!((stats.sessions_granted, stats.renewals, stats.sessions_not_found), (2, 1, 5));
    assert_eq!(stats.received, stats.completed + stats.errored, "every refused call counts as errored");
}

#[tokio::test(start_paused = true)]
async fn without_renew_the_method_is_unknown() {
    let fake = session_server(60_000, false, None);
    let mut raw = Raw::connect(&fake);
    let (id, _) = handshake(&mut raw).await;
    assert_eq!(raw.roundtrip(2, RENEW, json!({"_meta": {META_SESSION: id}})).await["error"]["code"], json!(-32601));
    // A server without sessions grants none and checks none.
    let plain = server(config(vec![ToolConfig::new("t")]));
    let mut raw = Raw::connect(&plain);
    let init = raw.roundtrip(1, INIT, init_params()).await;
    assert!(init["result"].get("_meta").is_none(), "{init}");
    let ok = raw.roundtrip(2, "tools/call", json!({"name": "t"})).await;
    assert!(succeeded(&ok), "{ok}");
}

#[tokio::test(start_paused = true)]
async fn auth_mismatch_names_the_accepted_schemes_and_never_echoes_the_credential() {
    let fake = session_server(60_000, true, Some(vec![AuthScheme::Bearer]));
    let mut raw = Raw::connect(&fake);
    let (id, meta) = handshake(&mut raw).await;
    assert_eq!(meta[META_AUTH_SCHEMES], json!(["bearer"]));
    assert!(raw.roundtrip(2, "tools/call", call_params(&id, Some(("bearer", "tok-1")))).await.get("result").is_some());

    let wrong = raw.roundtrip(3, "tools/call", call_params(&id, Some(("api-key", "sekrit-9")))).await;
    assert_eq!(wrong["error"]["code"], json!(-32003), "{wrong}");
    assert_eq!(wrong["error"]["data"]["accepted"], json!(["bearer"]));
    assert!(!wrong.to_string().contains("sekrit-9"), "{wrong}");
    // No credential at all is the same mismatch, checked before the session.
    let none = raw.roundtrip(4, "tools/call", call_params("s-404", None)).await;
    assert_eq!(none["error"]["code"], json!(-32003));

    fake.control().set_auth_schemes(Some(vec![AuthScheme::Jwt]));
    let rotated = raw.roundtrip(5, "tools/call", call_params(&id, Some(("bearer", "tok-1")))).await;
    assert_eq!(rotated["error"]["data"]["accepted"], json!(["mcp-jwt"]));
    assert!(raw.roundtrip(6, "tools/call", call_params(&id, Some(("mcp-jwt", "j")))).await.get("result").is_some());
    assert_eq!(fake.stats().auth_mismatches, 3);
}

#[tokio::test(start_paused = true)]
async fn drift_rejects_stale_arguments_both_ways_and_notifies_when_asked() {
    for kind in [ValidationError::ToolError, ValidationError::InvalidParams] {
        let echo = ToolConfig { reply: Some("{arg:m}".into()), ..ToolConfig::new("echo") };
        let fake = server(FakeServerConfig { validation_error: kind, ..config(vec![echo]) });
        let mut raw = Raw::connect(&fake);
        let mut quiet = Raw::connect(&fake);
        raw.roundtrip(1, INIT, init_params()).await;
        quiet.roundtrip(1, INIT, init_params()).await;
        let args = json!({"name": "echo", "arguments": {"m": "a"}});
        assert!(succeeded(&raw.roundtrip(2, "tools/call", args.clone()).await));

        let add = Drift::AddRequired {
            tool: "echo".into(),
            param: "region".into(),
            schema: json!({"type": "string", "default": "eu"}),
        };
        assert_eq!(fake.control().drift(&add, false), Ok(0), "no notification asked");
        let stale = raw.roundtrip(3, "tools/call", args.clone()).await;
        match kind {
            ValidationError::ToolError => {
                assert_eq!(stale["result"]["isError"], json!(true), "{stale}");
                let text = stale["result"]["content"][0]["text"].as_str().unwrap_or_default();
                assert!(text.starts_with("Input validation error:") && text.contains("`region`"), "{text}");
            }
            ValidationError::InvalidParams => {
                assert_eq!(stale["error"]["code"], json!(-32602), "{stale}");
                assert!(stale["error"]["message"].as_str().unwrap_or_default().contains("`region`"), "{stale}");
            }
        }
        let fresh = json!({"name": "echo", "arguments": {"m": "b", "region": "eu"}});
        assert!(succeeded(&raw.roundtrip(4, "tools/call", fresh).await));
        let listed = raw.roundtrip(5, "tools/list", json!({})).await;
        assert_eq!(listed["result"]["tools"][0]["inputSchema"]["required"], json!(["region"]));

        // A version bump with list_changed: every open connection hears it, and the handshake shows the version.
        assert_eq!(fake.control().drift(&Drift::Version { version: "2.0.0".into() }, true), Ok(2));
        for conn in [&mut raw, &mut quiet] {
            assert_eq!(conn.recv().await["method"], json!("notifications/tools/list_changed"));
        }
        let init = Raw::connect(&fake).roundtrip(1, INIT, init_params()).await;
        assert_eq!(init["result"]["serverInfo"]["version"], json!("2.0.0"));

        // A rename: the old name is unknown.
        fake.control().drift(&Drift::Rename { tool: "echo".into(), to: "say".into() }, false).expect("renames");
        let gone = raw.roundtrip(6, "tools/call", args).await;
        assert!(gone["result"]["content"][0]["text"].as_str().unwrap_or_default().contains("Unknown tool"), "{gone}");
        assert_eq!(fake.stats().schema_rejections, 1);
    }
}
