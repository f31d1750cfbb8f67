//! The era matrix against real MCP servers over stdio: the Python `mcp` 2.x SDK (both eras; the core picks the
//! modern one), the Python `mcp` 1.x SDK (legacy only; answers `server/discover` with -32602) and
//! `@modelcontextprotocol/server-everything` (legacy only; -32601). A missing peer skips loudly, or fails under
//! `MCPSTORM_REQUIRE_PEERS=1` (as in CI).

use std::sync::Arc;
use std::time::Duration;

use mcpstorm_core::jsonrpc::ErrorCode;
use mcpstorm_core::mcp::{Implementation, method};
use mcpstorm_core::session::{CachedEra, DiscoverResult, Era, EraCache, EraMode, envelope};
use mcpstorm_core::{
    CallError, CallOptions, ClientConfig, Connection, ConnectionConfig, Dialer, McpClient, NoopObserver, StdioDialer,
    conn::ConnectionParts, observe::ConnId, transport::DEFAULT_MAX_FRAME, transport::line_transport,
};
use mcpstorm_tests::real_servers::{everything_server, python_mcp1_server, python_server};
use serde_json::json;
use tokio::time::Instant;

const MODERN: &str = "2026-07-28";

/// A long probe timeout, so that a fallback driven by the timeout (rather than by the server's answer) shows.
fn config() -> ClientConfig {
    let mut config = ClientConfig { discover_timeout: Duration::from_secs(20), ..ClientConfig::default() };
    config.connection.first_response = Duration::from_secs(20);
    config
}

fn client(dialer: StdioDialer, config: ClientConfig, cache: &EraCache) -> McpClient {
    McpClient::new(dialer.describe(), Arc::new(dialer), config, mcpstorm_core::SeededRng::new(0))
        .with_era_cache(cache.clone())
}

/// Detects the era, checks what the session says, calls `echo`, pings, then reconnects from the cache.
async fn era_check(dialer: StdioDialer, era: Era, version: &str, name: &str, echoed: &str) {
    let server = dialer.describe();
    let cache = EraCache::new();
    let c = client(dialer, config(), &cache);
    let started = Instant::now();
    let session = c.session().await.expect("connect");
    let took = started.elapsed();
    eprintln!("{server}: {era} era ({version}) detected in {took:?}");
    assert_eq!((session.era, session.init.protocol_version.as_str()), (era, version), "{server}");
    assert_eq!(session.init.server_info.name, name, "{server}");
    assert!(took < Duration::from_secs(10), "{server}: settled by an answer, not the 20 s probe timeout: {took:?}");
    assert_eq!(cache.era(&server), Some(era));
    let tools = c.list_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "echo"), "{server}");
    let r = c.call_tool("echo", json!({"message": "hi"}), CallOptions::default()).await.expect("echo");
    assert_eq!(r.joined_text(), echoed, "{server}");
    c.ping().await.expect("ping");
    // A reconnect (a new process) uses the cached era.
    let first = session.conn.id();
    c.close().await;
    let session = c.session().await.expect("reconnect");
    assert_ne!(session.conn.id(), first);
    assert_eq!(session.era, era, "{server}");
    let r = c.call_tool("echo", json!({"message": "again"}), CallOptions::default()).await.expect("echo");
    assert!(r.joined_text().ends_with("again"), "{server}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn era_matrix_python_mcp_2x_is_modern() {
    let dialer = peer_or_skip!(python_server());
    era_check(dialer, Era::Modern, MODERN, "mcpstorm-py-peer", "hi").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn era_matrix_python_mcp_1x_is_legacy() {
    let dialer = peer_or_skip!(python_mcp1_server());
    era_check(dialer, Era::Legacy, "2025-11-25", "mcpstorm-py1-peer", "hi").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn era_matrix_server_everything_is_legacy() {
    let dialer = peer_or_skip!(everything_server());
    era_check(dialer, Era::Legacy, "2025-11-25", "mcp-servers/everything", "Echo: hi").await;
}

/// The Python 2.x server also serves the legacy era, to a client that asks for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_mcp_2x_serves_the_legacy_era_too() {
    let dialer = peer_or_skip!(python_server());
    let cache = EraCache::new();
    let c = client(dialer, ClientConfig { era_mode: EraMode::Legacy, ..config() }, &cache);
    let session = c.session().await.expect("handshake");
    assert_eq!((session.era, session.init.protocol_version.as_str()), (Era::Legacy, "2025-11-25"));
    let r = c.call_tool("echo", json!({"message": "old school"}), CallOptions::default()).await.expect("echo");
    assert_eq!(r.joined_text(), "old school");
    c.ping().await.expect("a real ping");
    assert!(cache.is_empty(), "a forced era is not cached");
}

/// A cached version the server does not serve: the real server's -32022 reaches the caller, and the next call
/// detects the era again and works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_mcp_2x_refusing_a_cached_version_triggers_detection_again() {
    let dialer = peer_or_skip!(python_server());
    let server = dialer.describe();
    let cache = EraCache::new();
    let stale: DiscoverResult =
        serde_json::from_value(json!({"supportedVersions": ["2099-01-01"], "capabilities": {}})).expect("valid");
    cache.put(&server, CachedEra::Modern { version: "2099-01-01".into(), discover: Arc::new(stale) });
    let c = client(dialer, config(), &cache);
    match c.list_tools().await.expect_err("refused") {
        CallError::Protocol(e) => {
            assert_eq!(e.code(), ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, "{e:?}");
            assert_eq!(e.data, Some(json!({"supported": [MODERN], "requested": "2099-01-01"})));
        }
        other => panic!("expected -32022, got {other:?}"),
    }
    let tools = c.list_tools().await.expect("re-detected");
    assert!(tools.iter().any(|t| t.name == "echo"));
    assert!(matches!(cache.get(&server), Some(CachedEra::Modern { version, .. }) if version == MODERN));
    assert_eq!(c.session().await.expect("session").init.protocol_version, MODERN);
}

/// The raw answers the fallback relies on, as the servers give them (see `mcpstorm_core::session`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn how_each_server_answers_an_enveloped_server_discover() {
    let cases = [
        (python_server(), Ok(())),
        (python_mcp1_server(), Err(ErrorCode::INVALID_PARAMS)),
        (everything_server(), Err(ErrorCode::METHOD_NOT_FOUND)),
    ];
    for (dialer, expected) in cases {
        let dialer = peer_or_skip!(dialer);
        let conn = raw_connection(&dialer).await;
        let params = json!({"_meta": envelope(MODERN, &json!({}), &Implementation::new("raw", "0"))});
        let answer = conn.request("server/discover", Some(params), CallOptions::default()).await;
        match (&answer, expected) {
            (Ok(raw), Ok(())) => {
                assert_eq!(raw["supportedVersions"], json!([MODERN]));
                assert_eq!((&raw["ttlMs"], &raw["cacheScope"]), (&json!(0), &json!("private")));
                assert_eq!(raw["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcpstorm-py-peer");
                // The connection is modern now: a bare request is refused as missing its envelope.
                let bare = conn.request(method::TOOLS_LIST, None, CallOptions::default()).await;
                assert!(
                    matches!(&bare, Err(CallError::Protocol(e)) if e.code() == ErrorCode::INVALID_PARAMS),
                    "{bare:?}"
                );
            }
            (Err(CallError::Protocol(e)), Err(code)) => assert_eq!(e.code(), code, "{}: {e:?}", dialer.describe()),
            (other, _) => panic!("{}: unexpected {other:?}", dialer.describe()),
        }
        conn.shutdown();
    }
}

async fn raw_connection(dialer: &StdioDialer) -> Connection {
    let stream = dialer.dial().await.expect("spawn");
    let (sink, source) = line_transport(stream.reader, stream.writer, DEFAULT_MAX_FRAME);
    Connection::start(
        sink,
        source,
        ConnectionParts {
            id: ConnId(0),
            server: dialer.describe(),
            config: ConnectionConfig { first_response: Duration::from_secs(20), ..ConnectionConfig::default() },
            observer: Arc::new(NoopObserver),
            global: None,
            on_notification: None,
            guard: stream.guard,
        },
    )
}
