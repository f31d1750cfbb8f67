//! Both protocol eras: the fake's answers on the wire (modelled on the Python SDK 2.3.0 server's, see
//! `mcpstorm_core::session`), and the core client's era detection, fallback and cache against it.

use std::time::Duration;

use mcpstorm_core::jsonrpc::ErrorCode;
use mcpstorm_core::session::{CachedEra, DiscoverResult, Era, EraCache, MODERN_PROTOCOL_VERSIONS};
use mcpstorm_core::{DialFuture, Dialer};
use mcpstorm_core::{TransportError, error::LifecycleError};

use tokio::time::sleep;

use super::*;
use crate::pipe::{byte_stream, spawn_server};
use crate::{ConfigError, LegacyDiscover, ProtocolEra, both_eras};

const MODERN: &str = "2026-07-28";

fn envelope(version: &str) -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": {}})
}

fn modern(params: Value, version: &str) -> Value {
    let mut params = params;
    params["_meta"] = envelope(version);
    params
}

fn init_params() -> Value {
    json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}})
}

fn fake(eras: Vec<ProtocolEra>, legacy_discover: LegacyDiscover) -> FakeServer {
    server(FakeServerConfig { eras, legacy_discover, cache_ttl_ms: 1500, ..config(vec![ToolConfig::new("t")]) })
}

fn legacy_only(answer: LegacyDiscover) -> FakeServer {
    fake(vec![ProtocolEra::Legacy], answer)
}

fn client_with(server: &FakeServer, config: ClientConfig, cache: &EraCache) -> Arc<McpClient> {
    let client = McpClient::new("fake", Arc::new(PipeDialer(server.clone())), config, mcpstorm_core::SeededRng::new(0))
        .with_era_cache(cache.clone());
    Arc::new(client)
}

fn error_code(frame: &Value) -> i64 {
    frame["error"]["code"].as_i64().unwrap_or_else(|| panic!("expected an error, got {frame}"))
}

// ---------------------------------------------------------------------------------------------------------------
// The wire

#[tokio::test(start_paused = true)]
async fn modern_connection_discover_envelope_and_refusals() {
    assert_eq!(MODERN_PROTOCOL_VERSIONS, [MODERN]);
    let mut raw = Raw::connect(&fake(both_eras(), LegacyDiscover::MethodNotFound));
    let r = raw.roundtrip(1, "server/discover", modern(json!({}), MODERN)).await;
    assert_eq!(
        r["result"],
        json!({"supportedVersions": [MODERN], "capabilities": {"tools": {"listChanged": true}}, "ttlMs": 1500,
               "cacheScope": "private", "resultType": "complete",
               "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "test", "version": "9.9.9"}}})
    );
    let _: DiscoverResult = serde_json::from_value(r["result"].clone()).expect("the core reads it");
    // A request without the envelope, or with half of it: invalid params naming what is missing.
    let r = raw.roundtrip(2, "tools/list", json!({})).await;
    assert_eq!(error_code(&r), -32602);
    let msg = r["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("io.modelcontextprotocol/protocolVersion") && msg.contains("clientCapabilities"), "{msg}");
    let half = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}});
    let r = raw.roundtrip(3, "tools/list", half).await;
    assert_eq!(
        r["error"],
        json!({"code": -32602,
               "message": "params._meta is missing the required envelope key(s): io.modelcontextprotocol/clientCapabilities"})
    );
    // A version we do not serve; the handshake of the other era; ping, which 2026-07-28 removed.
    let r = raw.roundtrip(4, "tools/list", modern(json!({}), "2099-01-01")).await;
    assert_eq!(
        r["error"],
        json!({"code": -32022, "message": "Unsupported protocol version",
               "data": {"supported": [MODERN], "requested": "2099-01-01"}})
    );
    let r = raw.roundtrip(5, "initialize", init_params()).await;
    assert_eq!(
        (error_code(&r), &r["error"]["data"]),
        (-32022, &json!({"supported": [MODERN], "requested": "2025-11-25"}))
    );
    assert_eq!(error_code(&raw.roundtrip(6, "ping", modern(json!({}), MODERN)).await), -32601);
    // Served requests carry the modern stamps; cacheable ones the TTL.
    let r = raw.roundtrip(7, "tools/list", modern(json!({}), MODERN)).await;
    assert_eq!((&r["result"]["ttlMs"], &r["result"]["cacheScope"]), (&json!(1500), &json!("private")));
    assert_eq!(r["result"]["resultType"], "complete");
    let r = raw.roundtrip(8, "tools/call", modern(json!({"name": "t", "arguments": {}}), MODERN)).await;
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    assert_eq!(r["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "test");
    assert!(r["result"].get("ttlMs").is_none(), "tools/call is not cacheable: {r}");
}

#[tokio::test(start_paused = true)]
async fn legacy_connection_of_a_both_era_server_refuses_the_modern_era() {
    let mut raw = Raw::connect(&fake(both_eras(), LegacyDiscover::Silent));
    let r = raw.roundtrip(1, "initialize", init_params()).await;
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
    raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    assert_eq!(error_code(&raw.roundtrip(2, "server/discover", modern(json!({}), MODERN)).await), -32600);
    assert_eq!(error_code(&raw.roundtrip(3, "server/discover", json!({})).await), -32601);
    assert_eq!(error_code(&raw.roundtrip(4, "tools/list", modern(json!({}), MODERN)).await), -32600);
    let r = raw.roundtrip(5, "tools/list", json!({})).await;
    assert_eq!(r["result"]["tools"][0]["name"], "t");
    assert!(r["result"].get("resultType").is_none() && r["result"].get("_meta").is_none(), "no modern stamps: {r}");
    assert_eq!(raw.roundtrip(6, "ping", json!({})).await["result"], json!({}));
}

#[tokio::test(start_paused = true)]
async fn legacy_only_servers_answer_discover_as_configured_and_ignore_the_envelope() {
    for (answer, expected) in [
        (LegacyDiscover::MethodNotFound, Some(-32601)),
        (LegacyDiscover::InvalidParams, Some(-32602)),
        (LegacyDiscover::Silent, None),
    ] {
        let fake = legacy_only(answer);
        let mut raw = Raw::connect(&fake);
        raw.request(1, "server/discover", modern(json!({}), MODERN)).await;
        let got = raw.recv_within(Duration::from_secs(60)).await.map(|r| error_code(&r));
        assert_eq!(got, expected, "{answer:?}");
        // The probe did not disturb the handshake that follows, nor do envelopes on later requests.
        let r = raw.roundtrip(2, "initialize", init_params()).await;
        assert_eq!(r["result"]["protocolVersion"], "2025-11-25", "{answer:?}");
        let r = raw.roundtrip(3, "tools/list", modern(json!({}), MODERN)).await;
        assert_eq!(r["result"]["tools"][0]["name"], "t", "{answer:?}");
        // A cancellation of the ignored probe names an unknown request: ignored too.
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})).await;
        assert_eq!(raw.roundtrip(4, "ping", json!({})).await["result"], json!({}));
        assert_eq!((fake.stats().discovers, fake.stats().initializes), (1, 1));
    }
}

#[tokio::test(start_paused = true)]
async fn modern_only_server_refuses_the_handshake_and_bare_requests() {
    let mut raw = Raw::connect(&fake(vec![ProtocolEra::Modern], LegacyDiscover::MethodNotFound));
    let r = raw.roundtrip(1, "initialize", init_params()).await;
    assert_eq!(
        (error_code(&r), &r["error"]["data"]),
        (-32022, &json!({"supported": [MODERN], "requested": "2025-11-25"}))
    );
    assert_eq!(error_code(&raw.roundtrip(2, "tools/list", json!({})).await), -32602);
    assert_eq!(error_code(&raw.roundtrip(3, "ping", json!({})).await), -32602);
    let r = raw.roundtrip(4, "server/discover", modern(json!({}), MODERN)).await;
    assert_eq!(r["result"]["supportedVersions"], json!([MODERN]));
}

#[test]
fn eras_config_is_checked() {
    let field = |text: &str| match FakeServerConfig::from_toml_str(text) {
        Err(ConfigError::Invalid { field, message }) => format!("{field}: {message}"),
        other => panic!("expected a validation error, got {other:?}"),
    };
    assert!(field("name = \"x\"\neras = []\n").starts_with("eras: must name at least one"));
    assert!(field("name = \"x\"\neras = [\"modern\", \"modern\"]\n").starts_with("eras: lists an era twice"));
    let err = FakeServerConfig::from_toml_str("name = \"x\"\neras = [\"future\"]\n").expect_err("unknown era");
    assert!(err.to_string().contains("line"), "{err}");
    let c = FakeServerConfig::from_toml_str("name = \"x\"\n").expect("defaults");
    assert_eq!((c.eras, c.cache_ttl_ms, c.legacy_discover), (both_eras(), 0, LegacyDiscover::MethodNotFound));
    let c = FakeServerConfig::from_toml_str(
        "name = \"x\"\neras = [\"legacy\"]\nlegacy_discover = \"invalid_params\"\ncache_ttl_ms = 60000\n",
    )
    .expect("valid");
    assert_eq!(
        (c.eras, c.cache_ttl_ms, c.legacy_discover),
        (vec![ProtocolEra::Legacy], 60_000, LegacyDiscover::InvalidParams)
    );
}

// ---------------------------------------------------------------------------------------------------------------
// The client's detection against the fake

#[tokio::test(start_paused = true)]
async fn client_detects_each_era_once_and_reconnects_from_the_cache() {
    let cases = [
        (fake(both_eras(), LegacyDiscover::MethodNotFound), Era::Modern),
        (fake(vec![ProtocolEra::Modern], LegacyDiscover::MethodNotFound), Era::Modern),
        (legacy_only(LegacyDiscover::MethodNotFound), Era::Legacy),
        (legacy_only(LegacyDiscover::InvalidParams), Era::Legacy),
    ];
    for (fake, era) in cases {
        let cache = EraCache::new();
        let client = client_with(&fake, ClientConfig::default(), &cache);
        let started = Instant::now();
        let session = client.session().await.expect("connect");
        assert_eq!(session.era, era);
        assert_eq!(started.elapsed(), Duration::ZERO, "an answered probe costs no timeout");
        assert_eq!(cache.era("fake"), Some(era));
        let handshakes = u64::from(era == Era::Legacy);
        assert_eq!((fake.stats().discovers, fake.stats().initializes), (1, handshakes), "{era}");
        assert_eq!(call_ok(&client, "t", json!({})).await, "ok t 0ms");
        // A reconnect: no probe; a legacy server gets its handshake, a modern one nothing at all before the call.
        client.close().await;
        assert_eq!(client.session().await.expect("reconnect").era, era);
        assert_eq!(call_ok(&client, "t", json!({})).await, "ok t 0ms");
        let stats = fake.stats();
        assert_eq!((stats.connections_total, stats.discovers, stats.initializes), (2, 1, 2 * handshakes), "{era}");
    }
}

#[tokio::test(start_paused = true)]
async fn silent_discover_falls_back_to_initialize_after_the_probe_timeout() {
    let fake = legacy_only(LegacyDiscover::Silent);
    let cache = EraCache::new();
    let config = ClientConfig { discover_timeout: Duration::from_secs(2), ..ClientConfig::default() };
    let client = client_with(&fake, config, &cache);
    let started = Instant::now();
    let session = client.session().await.expect("fallback handshake");
    assert_eq!((session.era, session.init.protocol_version.as_str()), (Era::Legacy, "2025-11-25"));
    assert_eq!(started.elapsed(), Duration::from_secs(2), "exactly the probe timeout");
    // The abandoned probe was cancelled, so nothing is left pending on either side.
    assert_eq!((session.conn.pending(), session.conn.stats().cancels_sent), (0, 1));
    assert_eq!(call_ok(&client, "t", json!({})).await, "ok t 0ms");
    // Cached: the reconnect pays no timeout.
    client.close().await;
    let started = Instant::now();
    assert_eq!(client.session().await.expect("reconnect").era, Era::Legacy);
    assert_eq!(started.elapsed(), Duration::ZERO);
    assert_eq!((fake.stats().discovers, fake.stats().initializes), (1, 2));
}

#[tokio::test(start_paused = true)]
async fn version_mismatch_in_either_era_fails_the_connect_without_retries() {
    // Legacy: the server offers 2025-11-25, which this client does not speak.
    let legacy = legacy_only(LegacyDiscover::MethodNotFound);
    let config = ClientConfig { protocol_versions: vec!["2024-11-05".into()], ..ClientConfig::default() };
    let client = client_with(&legacy, config, &EraCache::new());
    let err = client.session().await.expect_err("no common version");
    assert_eq!(
        err,
        CallError::Lifecycle(LifecycleError::VersionMismatch {
            ours: vec!["2024-11-05".into()],
            theirs: "2025-11-25".into()
        })
    );
    assert!(!err.retry_allowed(true));
    sleep(Duration::from_millis(10)).await;
    let stats = legacy.stats();
    assert_eq!((stats.connections_total, stats.initializes, stats.connections), (1, 1, 0), "not retried; closed");
    // Modern: a modern-only server that serves none of our modern versions.
    let modern_only = fake(vec![ProtocolEra::Modern], LegacyDiscover::MethodNotFound);
    let config = ClientConfig { modern_protocol_versions: vec!["2099-01-01".into()], ..ClientConfig::default() };
    let client = client_with(&modern_only, config, &EraCache::new());
    match client.session().await.expect_err("no common version") {
        CallError::Lifecycle(LifecycleError::VersionMismatch { ours, theirs }) => {
            assert_eq!((ours[0].as_str(), theirs.as_str()), ("2099-01-01", MODERN));
        }
        other => panic!("expected a version mismatch, got {other:?}"),
    }
    let stats = modern_only.stats();
    assert_eq!((stats.discovers, stats.initializes, stats.connections_total), (1, 0, 1));
}

#[tokio::test(start_paused = true)]
async fn a_refused_cached_version_invalidates_the_cache_and_detects_once_more() {
    let fake = fake(both_eras(), LegacyDiscover::MethodNotFound);
    // A cache entry from before the server dropped 2099-01-01 (say): the reconnect trusts it and sends no probe.
    let cache = EraCache::new();
    let stale: DiscoverResult =
        serde_json::from_value(json!({"supportedVersions": ["2099-01-01"], "capabilities": {}})).expect("valid");
    cache.put("fake", CachedEra::Modern { version: "2099-01-01".into(), discover: Arc::new(stale) });
    let client = client_with(&fake, ClientConfig::default(), &cache);
    let first = client.session().await.expect("from the cache");
    assert_eq!((first.era, first.init.protocol_version.as_str()), (Era::Modern, "2099-01-01"));
    match client.list_tools().await.expect_err("the server refuses the version") {
        CallError::Protocol(e) => assert_eq!(e.code(), ErrorCode::UNSUPPORTED_PROTOCOL_VERSION),
        other => panic!("expected -32022, got {other:?}"),
    }
    assert_eq!(fake.stats().discovers, 0);
    // The next call detects again, on a new connection, and works.
    assert_eq!(call_ok(&client, "t", json!({})).await, "ok t 0ms");
    let session = client.session().await.expect("re-detected");
    assert_ne!(session.conn.id(), first.conn.id());
    assert_eq!((session.era, session.init.protocol_version.as_str()), (Era::Modern, MODERN));
    assert!(matches!(cache.get("fake"), Some(CachedEra::Modern { version, .. }) if version == MODERN));
    assert_eq!((fake.stats().discovers, fake.stats().connections_total), (1, 2), "one probe, one reconnect");
}

#[tokio::test(start_paused = true)]
async fn a_cached_legacy_era_refused_by_a_now_modern_server_is_detected_again_on_the_same_connection() {
    let fake = fake(vec![ProtocolEra::Modern], LegacyDiscover::MethodNotFound);
    let cache = EraCache::new();
    cache.put("fake", CachedEra::Legacy);
    let client = client_with(&fake, ClientConfig::default(), &cache);
    let session = client.session().await.expect("re-detected");
    assert_eq!(session.era, Era::Modern);
    assert_eq!(cache.era("fake"), Some(Era::Modern));
    let stats = fake.stats();
    assert_eq!((stats.initializes, stats.discovers, stats.connections_total), (1, 1, 1));
    assert_eq!(call_ok(&client, "t", json!({})).await, "ok t 0ms");
}

#[tokio::test(start_paused = true)]
async fn forced_legacy_mode_never_probes() {
    let fake = fake(both_eras(), LegacyDiscover::MethodNotFound);
    let config = ClientConfig { era_mode: mcpstorm_core::session::EraMode::Legacy, ..ClientConfig::default() };
    let cache = EraCache::new();
    let client = client_with(&fake, config, &cache);
    assert_eq!(client.session().await.expect("handshake").era, Era::Legacy);
    assert_eq!(call_ok(&client, "t", json!({})).await, "ok t 0ms");
    assert_eq!((fake.stats().discovers, fake.stats().initializes), (0, 1));
    assert!(cache.is_empty(), "a forced era is not a detection result");
}

#[tokio::test(start_paused = true)]
async fn a_server_that_dies_on_the_probe_is_a_transport_error_not_an_era() {
    // An outage during the probe must not be cached as "legacy".
    let dialer = PipeDialer(fake(both_eras(), LegacyDiscover::MethodNotFound));
    let config = ClientConfig { lifecycle_retries: 0, ..ClientConfig::default() };
    let cache = EraCache::new();
    let client = McpClient::new("fake", Arc::new(ClosingDialer(dialer)), config, mcpstorm_core::SeededRng::new(0))
        .with_era_cache(cache.clone());
    let err = client.session().await.expect_err("the stream closes");
    assert!(matches!(err, CallError::Transport(TransportError::Closed)), "{err:?}");
    assert!(cache.is_empty());
}

/// A dialer whose streams close as soon as the client writes anything.
#[derive(Debug)]
struct ClosingDialer(PipeDialer);

impl Dialer for ClosingDialer {
    fn dial(&self) -> DialFuture<'_> {
        Box::pin(async move {
            let ours = spawn_server(1024, |theirs| async move {
                let (mut reader, _writer) = tokio::io::split(theirs);
                let mut byte = [0u8; 1];
                let _ = tokio::io::AsyncReadExt::read(&mut reader, &mut byte).await;
            });
            Ok(byte_stream(ours))
        })
    }

    fn describe(&self) -> String {
        self.0.describe()
    }
}
