//! The session extension end to end against an in-process server (`mcpstorm_fake::doubles::session_server`), in paused
//! time: renewal and re-handshake points, session-not-found recovery, the naive profile's failures, auth
//! negotiation and rotation, secrets kept out of every output, snapshot and resume, and call history rows.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpstorm_core::CallOptions;
use mcpstorm_core::TokioClock;
use mcpstorm_core::error::AuthError;
use mcpstorm_core::history::{CallCode, CallStatus, IdempotencyConfig};
use mcpstorm_core::jsonrpc::ErrorCode;
use mcpstorm_core::mcp::{CallToolResult, method};
use mcpstorm_core::session::SessionStats;
use mcpstorm_core::session::{DISCOVER, Era, EraMode};
use mcpstorm_core::session::{GatewayProfile, RENEW};
use mcpstorm_core::{AuthScheme, Credential, Secret};
use mcpstorm_core::{CallError, ErrorClass};
use mcpstorm_core::{ClientConfig, McpClient, client::SessionSnapshot};
use mcpstorm_core::{Event, Observer};
use mcpstorm_fake::doubles::session_server::{Seen, ServerConfig, SessionServer, Verdict, steady_wall};
use serde_json::json;
use tokio::time::{Instant, sleep_until};

const SERVER_WALL: u64 = 1_700_000_000_000;

fn client(server: &SessionServer, config: ClientConfig) -> McpClient {
    let config = ClientConfig { era_mode: EraMode::Legacy, lifecycle_retries: 0, ..config };
    McpClient::new("srv", Arc::new(server.clone()), config, mcpstorm_core::SeededRng::new(0))
}

async fn call(c: &McpClient) -> Result<CallToolResult, CallError> {
    c.call_tool("echo", json!({}), CallOptions::default()).await
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

fn ids(seen: &[Seen]) -> Vec<Option<String>> {
    seen.iter().map(|s| s.session.clone()).collect()
}

fn stats(granted: u64, renewed: u64, rehandshakes: u64, not_found: u64, resent: u64) -> SessionStats {
    SessionStats { granted, renewed, rehandshakes, not_found, resent, auth_mismatches: 0 }
}

/// Keeps every event formatted (Debug), for counting and for the secret check.
#[derive(Debug, Default)]
struct Recording(Mutex<Vec<String>>);

impl Observer for Recording {
    fn event(&self, event: &Event<'_>) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(format!("{event:?}"));
    }
}

#[tokio::test(start_paused = true)]
async fn renews_at_seventy_percent_of_the_ttl_without_delaying_the_call() {
    let server = SessionServer::new(ServerConfig { ttl: Some(secs(100.0)), ..ServerConfig::default() });
    let c = client(&server, ClientConfig::default());
    let t0 = Instant::now();
    call(&c).await.unwrap();
    sleep_until(t0 + secs(69.9)).await;
    call(&c).await.unwrap();
    assert!(server.seen(RENEW).is_empty(), "not due before 70 s");
    sleep_until(t0 + secs(70.1)).await;
    call(&c).await.unwrap();
    tokio::task::yield_now().await;
    let renewals = server.seen(RENEW);
    assert_eq!(renewals.len(), 1);
    assert_eq!((renewals[0].verdict, renewals[0].session.as_deref()), (Verdict::Ok, Some("s-0")));
    // The renewal extended the lease: 69.9 s after it, still no renewal and no new session.
    sleep_until(t0 + secs(70.1 + 69.0)).await;
    call(&c).await.unwrap();
    assert_eq!(server.seen(RENEW).len(), 1);
    assert_eq!(server.dials(), 1);
    assert_eq!(ids(&server.seen(method::TOOLS_CALL)), vec![Some("s-0".into()); 4]);
    assert_eq!(c.session_stats(), stats(1, 1, 0, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_600_s_ttl_renews_at_300_s() {
    let server = SessionServer::new(ServerConfig::default());
    let c = client(&server, ClientConfig::default());
    let t0 = Instant::now();
    call(&c).await.unwrap();
    sleep_until(t0 + secs(299.0)).await;
    call(&c).await.unwrap();
    assert!(server.seen(RENEW).is_empty());
    sleep_until(t0 + secs(301.0)).await;
    call(&c).await.unwrap();
    tokio::task::yield_now().await;
    assert_eq!(server.seen(RENEW).len(), 1);
    assert_eq!(c.session_stats().renewed, 1);
}

#[tokio::test(start_paused = true)]
async fn rehandshakes_before_sending_inside_the_30_s_margin() {
    let server = SessionServer::new(ServerConfig::default());
    let c = client(&server, ClientConfig::default());
    let t0 = Instant::now();
    call(&c).await.unwrap();
    // No call between 0 and 575 s: nothing renewed it, 25 s remain.
    sleep_until(t0 + secs(575.0)).await;
    call(&c).await.unwrap();
    let calls = server.seen(method::TOOLS_CALL);
    assert_eq!(ids(&calls), vec![Some("s-0".into()), Some("s-1".into())]);
    assert!(calls.iter().all(|s| s.verdict == Verdict::Ok), "nothing was sent on the old session");
    assert_eq!((server.dials(), server.seen(method::INITIALIZE).len()), (2, 2));
    assert_eq!(c.session_stats(), stats(2, 0, 1, 0, 0));
    tokio::time::sleep(secs(0.001)).await; // every task runs before paused time moves
    assert_eq!(server.closed(), [0], "the old connection closed once nothing used it");
}

#[tokio::test(start_paused = true)]
async fn a_server_that_cannot_renew_gets_a_new_session_instead() {
    let server = SessionServer::new(ServerConfig { renew: false, ..ServerConfig::default() });
    let c = client(&server, ClientConfig::default());
    let t0 = Instant::now();
    call(&c).await.unwrap();
    sleep_until(t0 + secs(400.0)).await;
    call(&c).await.unwrap(); // triggers the renewal, answered -32601, and goes out on the still-valid session
    tokio::task::yield_now().await;
    call(&c).await.unwrap(); // finds the session marked for replacement
    assert_eq!(server.seen(RENEW).len(), 1);
    assert_eq!(ids(&server.seen(method::TOOLS_CALL)), vec![Some("s-0".into()), Some("s-0".into()), Some("s-1".into())]);
    assert!(server.log().iter().all(|s| s.verdict != Verdict::Expired && s.verdict != Verdict::UnknownSession));
    assert_eq!(c.session_stats(), stats(2, 0, 1, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_server_that_grants_nothing_sees_plain_mcp() {
    let server = SessionServer::new(ServerConfig { ttl: None, ..ServerConfig::default() });
    let c = client(&server, ClientConfig::default());
    let t0 = Instant::now();
    for at in [0.0, 400.0, 900.0, 5000.0] {
        sleep_until(t0 + secs(at)).await;
        call(&c).await.unwrap();
    }
    let log = server.log();
    assert!(log.len() >= 6, "{log:?}");
    assert!(log.iter().all(|s| !s.extension_keys), "{log:?}");
    assert!(server.seen(RENEW).is_empty());
    assert_eq!(server.dials(), 1);
    assert_eq!(c.session_stats(), SessionStats::default());
}

#[tokio::test(start_paused = true)]
async fn session_not_found_means_one_rehandshake_and_one_resend() {
    let server = SessionServer::new(ServerConfig::default());
    let c = client(&server, ClientConfig::default());
    call(&c).await.unwrap();
    server.drop_sessions();
    call(&c).await.unwrap();
    let calls = server.seen(method::TOOLS_CALL);
    let verdicts: Vec<_> = calls.iter().map(|s| s.verdict).collect();
    assert_eq!(verdicts, [Verdict::Ok, Verdict::UnknownSession, Verdict::Ok]);
    assert_eq!(ids(&calls), vec![Some("s-0".into()), Some("s-0".into()), Some("s-1".into())]);
    assert_eq!(server.seen(method::INITIALIZE).len(), 2);
    assert_eq!(c.session_stats(), stats(2, 0, 1, 1, 1));
    tokio::time::sleep(secs(0.001)).await; // every task runs before paused time moves
    assert_eq!(server.closed(), [0]);
}

#[tokio::test(start_paused = true)]
async fn concurrent_callers_share_one_rehandshake() {
    let server = SessionServer::new(ServerConfig::default());
    let c = Arc::new(client(&server, ClientConfig::default()));
    call(&c).await.unwrap();
    server.drop_sessions();
    let tasks: Vec<_> = (0..5)
        .map(|_| {
            tokio::spawn({
                let c = c.clone();
                async move { call(&c).await }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    assert_eq!(server.seen(method::INITIALIZE).len(), 2, "one re-handshake for all five");
    let stats = c.session_stats();
    assert_eq!((stats.rehandshakes, stats.not_found, stats.resent), (1, 5, 5));
}

#[tokio::test(start_paused = true)]
async fn a_second_session_not_found_is_returned() {
    let server = SessionServer::new(ServerConfig { always_not_found: true, ..ServerConfig::default() });
    let c = client(&server, ClientConfig::default());
    let err = call(&c).await.unwrap_err();
    assert!(matches!(&err, CallError::Protocol(e) if e.code() == ErrorCode::SESSION_NOT_FOUND), "{err:?}");
    assert_eq!(server.seen(method::TOOLS_CALL).len(), 2, "sent, then resent once");
    assert_eq!(server.seen(method::INITIALIZE).len(), 2);
    assert_eq!(c.session_stats(), stats(2, 0, 1, 2, 1));
}

#[tokio::test(start_paused = true)]
async fn the_naive_profile_surfaces_not_found_and_keeps_the_session() {
    let server = SessionServer::new(ServerConfig::default());
    let c = client(&server, ClientConfig { profile: GatewayProfile::Naive, ..ClientConfig::default() });
    call(&c).await.unwrap();
    server.drop_sessions();
    for _ in 0..2 {
        let err = call(&c).await.unwrap_err();
        assert!(matches!(&err, CallError::Protocol(e) if e.code() == ErrorCode::SESSION_NOT_FOUND), "{err:?}");
    }
    assert_eq!(ids(&server.seen(method::TOOLS_CALL)), vec![Some("s-0".into()); 3]);
    assert_eq!(server.seen(method::INITIALIZE).len(), 1);
    assert_eq!(c.session_stats(), stats(1, 0, 0, 2, 0));
}

/// Calls every 30 s for 20 minutes against a 600 s TTL, the client's wall clock 3 minutes behind the server's.
async fn three_minute_skew(profile: GatewayProfile) -> (usize, SessionStats) {
    let server = SessionServer::new(ServerConfig { wall: steady_wall(SERVER_WALL), ..ServerConfig::default() });
    let c = client(&server, ClientConfig { profile, ..ClientConfig::default() })
        .with_clock(Arc::new(TokioClock::new(SERVER_WALL - 180_000)));
    let t0 = Instant::now();
    let mut failed = 0;
    for i in 0..40 {
        sleep_until(t0 + secs(30.0 * f64::from(i))).await;
        failed += usize::from(call(&c).await.is_err());
    }
    (failed, c.session_stats())
}

#[tokio::test(start_paused = true)]
async fn a_three_minute_skew_breaks_the_naive_profile_only() {
    let (naive_failures, naive) = three_minute_skew(GatewayProfile::Naive).await;
    // The server expires s-0 at 600 s; the naive client believes it until its own clock reads that, 180 s later.
    assert_eq!(naive_failures, 6, "calls at 600..780 s fail");
    assert_eq!((naive.renewed, naive.not_found), (0, 6));
    let (failures, default) = three_minute_skew(GatewayProfile::Default).await;
    assert_eq!(failures, 0);
    assert_eq!((default.not_found, default.rehandshakes), (0, 0));
    assert!(default.renewed >= 3, "{default:?}");
}

#[tokio::test(start_paused = true)]
async fn a_forced_renewal_returns_the_fresh_grant_or_the_refusal() {
    let server = SessionServer::new(ServerConfig::default());
    let c = client(&server, ClientConfig::default());
    let t0 = Instant::now();
    call(&c).await.unwrap();
    sleep_until(t0 + secs(10.0)).await;
    let grant = c.renew_session().await.unwrap().unwrap();
    assert_eq!((grant.id.as_str(), grant.ttl_ms, grant.expires_at_ms), ("s-0", 600_000, Some(SERVER_WALL + 610_000)));
    assert_eq!(c.session_stats().renewed, 1);
    let plain = SessionServer::new(ServerConfig { ttl: None, ..ServerConfig::default() });
    assert_eq!(client(&plain, ClientConfig::default()).renew_session().await, Ok(None));
    assert!(plain.seen(RENEW).is_empty());
    let refusing = SessionServer::new(ServerConfig { renew: false, ..ServerConfig::default() });
    let r = client(&refusing, ClientConfig::default());
    let err = r.renew_session().await.unwrap_err();
    assert!(matches!(&err, CallError::Protocol(e) if e.code() == ErrorCode::METHOD_NOT_FOUND), "{err:?}");
    call(&r).await.unwrap();
    assert_eq!(r.session_stats().rehandshakes, 1, "the refusal marked the session for replacement");
}

#[tokio::test(start_paused = true)]
async fn a_modern_server_grants_in_discover_and_a_new_session_asks_again() {
    let server = SessionServer::new(ServerConfig { modern: true, ..ServerConfig::default() });
    let c = McpClient::new(
        "srv",
        Arc::new(server.clone()),
        ClientConfig { lifecycle_retries: 0, ..ClientConfig::default() },
        mcpstorm_core::SeededRng::new(0),
    );
    call(&c).await.unwrap();
    assert_eq!(c.session().await.unwrap().era, Era::Modern);
    server.drop_sessions();
    call(&c).await.unwrap();
    // The era is cached, but the cached discover result's grant is stale: the new connection probes again.
    assert_eq!(server.seen(DISCOVER).len(), 2);
    assert!(server.seen(method::INITIALIZE).is_empty());
    let calls = server.seen(method::TOOLS_CALL);
    assert_eq!(ids(&calls), vec![Some("s-0".into()), Some("s-0".into()), Some("s-1".into())]);
    assert_eq!(c.session_stats(), stats(2, 0, 1, 1, 1));
}

const SECRET_BEARER: &str = "bearer-s3cr3t-value";
const SECRET_JWT: &str = "jwt-s3cr3t-value";
const SECRET_KEY: &str = "apikey-s3cr3t-value";

fn credentials() -> Vec<Credential> {
    vec![
        Credential { scheme: AuthScheme::Bearer, secret: Secret::new(SECRET_BEARER) },
        Credential { scheme: AuthScheme::Jwt, secret: Secret::new(SECRET_JWT) },
    ]
}

#[tokio::test(start_paused = true)]
async fn no_matching_credential_fails_before_anything_is_sent() {
    let server =
        SessionServer::new(ServerConfig { schemes: Some(vec![AuthScheme::ApiKey]), ..ServerConfig::default() });
    let c = client(&server, ClientConfig { credentials: credentials(), ..ClientConfig::default() });
    let err = call(&c).await.unwrap_err();
    let expected =
        AuthError::Mismatch { accepted: vec![AuthScheme::ApiKey], offered: vec![AuthScheme::Bearer, AuthScheme::Jwt] };
    assert_eq!(err, CallError::Auth(expected));
    assert_eq!((err.class(), err.retry_allowed(true), err.closes_connection()), (ErrorClass::Auth, false, false));
    let methods: Vec<String> = server.log().into_iter().map(|s| s.method).collect();
    assert_eq!(methods, [method::INITIALIZE], "no tools/list, no tools/call");
    assert_eq!(c.session_stats().auth_mismatches, 1);
}

#[tokio::test(start_paused = true)]
async fn declared_schemes_and_no_credentials_at_all_is_a_clean_mismatch() {
    let server = SessionServer::new(ServerConfig { schemes: Some(vec![AuthScheme::Jwt]), ..ServerConfig::default() });
    let c = client(&server, ClientConfig::default());
    let err = call(&c).await.unwrap_err();
    assert_eq!(err, CallError::Auth(AuthError::Mismatch { accepted: vec![AuthScheme::Jwt], offered: vec![] }));
    // An empty declaration asks for nothing: no authorization is sent, and the server accepts.
    let open = SessionServer::new(ServerConfig { schemes: Some(vec![]), ..ServerConfig::default() });
    call(&client(&open, ClientConfig { credentials: credentials(), ..ClientConfig::default() })).await.unwrap();
    assert!(open.log().iter().all(|s| s.authorization.is_none()));
}

/// The rotation scenario: bearer accepted, then the server rotates to jwt mid-run.
async fn rotation(observer: Arc<Recording>) -> (SessionServer, McpClient, Vec<Result<CallToolResult, CallError>>) {
    let server =
        SessionServer::new(ServerConfig { schemes: Some(vec![AuthScheme::Bearer]), ..ServerConfig::default() });
    let c = client(&server, ClientConfig { credentials: credentials(), ..ClientConfig::default() })
        .with_observer(observer)
        .with_history(16);
    let mut outcomes = vec![call(&c).await];
    server.rotate_schemes(vec![AuthScheme::Jwt]);
    outcomes.push(call(&c).await);
    server.rotate_schemes(vec![AuthScheme::ApiKey]);
    outcomes.push(call(&c).await);
    (server, c, outcomes)
}

#[tokio::test(start_paused = true)]
async fn auth_rotation_rehandshakes_once_and_uses_another_credential() {
    let (server, c, outcomes) = rotation(Arc::default()).await;
    assert!(outcomes[0].is_ok() && outcomes[1].is_ok(), "{outcomes:?}");
    let schemes: Vec<_> = server
        .seen(method::TOOLS_CALL)
        .iter()
        .map(|s| (s.authorization.as_ref().map(|a| a["scheme"].clone()), s.verdict))
        .collect();
    assert_eq!(
        schemes[..3],
        [
            (Some(json!("bearer")), Verdict::Ok),
            (Some(json!("bearer")), Verdict::AuthMismatch),
            (Some(json!("mcp-jwt")), Verdict::Ok)
        ]
    );
    // Rotated to a scheme we hold no credential for: one re-handshake learns it, then the call fails unsent.
    let last = outcomes[2].as_ref().unwrap_err();
    assert_eq!(
        *last,
        CallError::Auth(AuthError::Mismatch {
            accepted: vec![AuthScheme::ApiKey],
            offered: vec![AuthScheme::Bearer, AuthScheme::Jwt]
        })
    );
    assert_eq!(server.seen(method::TOOLS_CALL).len(), 4, "the last call's resend was never sent");
    assert_eq!(server.seen(method::INITIALIZE).len(), 3);
    let s = c.session_stats();
    assert_eq!((s.rehandshakes, s.resent, s.auth_mismatches), (2, 2, 3));
}

#[tokio::test(start_paused = true)]
async fn secrets_never_reach_errors_events_snapshots_or_history() {
    let observer = Arc::new(Recording::default());
    let (server, c, outcomes) = rotation(observer.clone()).await;
    // The secrets did go on the wire (so their absence below means something).
    let wire: Vec<String> =
        server.log().iter().filter_map(|s| s.authorization.as_ref().map(|a| a.to_string())).collect();
    assert!(wire.iter().any(|a| a.contains(SECRET_BEARER)) && wire.iter().any(|a| a.contains(SECRET_JWT)));
    let mut texts: Vec<String> = observer.0.lock().unwrap().clone();
    for o in &outcomes {
        texts.push(format!("{o:?}"));
        if let Err(e) = o {
            texts.push(e.to_string());
        }
    }
    texts.push(format!("{c:?}"));
    texts.push(serde_json::to_string(&c.snapshot().await).unwrap());
    texts.push(c.history(|h| serde_json::to_string(h).unwrap()).unwrap());
    texts.push(format!("{:?}", c.attribute_failure()));
    texts.push(format!("{:?}", ClientConfig { credentials: credentials(), ..ClientConfig::default() }));
    assert!(texts.iter().any(|t| t.contains("AuthMismatch")), "events were recorded");
    for secret in [SECRET_BEARER, SECRET_JWT, SECRET_KEY] {
        for t in &texts {
            assert!(!t.contains(secret), "{secret} leaked into {t}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn snapshot_through_json_resumes_on_the_same_session() {
    let server = SessionServer::new(ServerConfig::default());
    let first = client(&server, ClientConfig::default()).with_history(8);
    call(&first).await.unwrap();
    let saved = serde_json::to_string(&first.snapshot().await).unwrap();
    drop(first);
    let snapshot: SessionSnapshot = serde_json::from_str(&saved).unwrap();
    assert_eq!((snapshot.session_id.as_deref(), snapshot.remaining_ttl_ms), (Some("s-0"), Some(600_000)));
    assert!(snapshot.capabilities_hash.is_some());
    let resumed = client(&server, ClientConfig::default()).resume(snapshot).unwrap();
    call(&resumed).await.unwrap();
    let calls = server.seen(method::TOOLS_CALL);
    assert_eq!(ids(&calls), vec![Some("s-0".into()), Some("s-0".into())]);
    assert!(calls.iter().all(|s| s.verdict == Verdict::Ok));
    assert_eq!(resumed.history(|h| h.len()), Some(2), "the saved history continues");
    assert_eq!(server.seen(method::INITIALIZE).len(), 2, "the resumed client connected once, without discovery");
}

#[tokio::test(start_paused = true)]
async fn resume_after_the_server_dropped_the_session_rehandshakes_once() {
    let server = SessionServer::new(ServerConfig::default());
    let first = client(&server, ClientConfig::default());
    call(&first).await.unwrap();
    let snapshot = first.snapshot().await;
    server.drop_sessions();
    let resumed = client(&server, ClientConfig::default()).resume(snapshot).unwrap();
    call(&resumed).await.unwrap();
    // The resumed connection (granted s-1, left unused) first asked for the tool list on s-0: refused, so one
    // re-handshake got s-2, on which the list and the call went out.
    let refused: Vec<_> = server.log().into_iter().filter(|s| s.verdict != Verdict::Ok).collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!((refused[0].method.as_str(), refused[0].session.as_deref()), (method::TOOLS_LIST, Some("s-0")));
    assert_eq!(ids(&server.seen(method::TOOLS_CALL)), vec![Some("s-0".into()), Some("s-2".into())]);
    let s = resumed.session_stats();
    assert_eq!((s.rehandshakes, s.not_found, s.resent), (1, 1, 1));
}

#[tokio::test(start_paused = true)]
async fn history_keeps_one_row_per_attempt() {
    let server = SessionServer::new(ServerConfig::default());
    let c = client(&server, ClientConfig::default()).with_history(16);
    call(&c).await.unwrap();
    server.drop_sessions();
    call(&c).await.unwrap();
    let unknown = c.call_tool("nope", json!({}), CallOptions::default()).await;
    assert!(unknown.is_err());
    let rows =
        c.history(|h| h.records().map(|r| (r.tool.clone(), r.status, r.code.clone(), r.retries)).collect::<Vec<_>>());
    assert_eq!(
        rows.unwrap(),
        vec![
            ("echo".to_owned(), CallStatus::Success, None, 0),
            ("echo".to_owned(), CallStatus::Error, Some(CallCode::Rpc(-32001)), 0),
            ("echo".to_owned(), CallStatus::Success, None, 1),
            ("nope".to_owned(), CallStatus::Rejected, Some(CallCode::Label("unknown_tool".into())), 0),
        ]
    );
    let blamed = c.attribute_failure().unwrap();
    assert_eq!((blamed.tool(), blamed.status()), ("nope", CallStatus::Rejected));
}

#[tokio::test(start_paused = true)]
async fn the_idempotency_cache_answers_read_only_repeats_without_sending() {
    let server = SessionServer::new(ServerConfig::default());
    let c =
        client(&server, ClientConfig::default()).with_idempotency_cache(IdempotencyConfig::default()).with_history(8);
    for _ in 0..3 {
        c.call_tool("lookup", json!({"q": 1}), CallOptions::default()).await.unwrap();
        c.call_tool("echo", json!({"q": 1}), CallOptions::default()).await.unwrap();
    }
    assert_eq!(server.seen(method::TOOLS_CALL).len(), 4, "lookup once, echo three times");
    assert_eq!(c.idempotency_stats().map(|s| s.hits), Some(2));
    assert_eq!(c.history(|h| h.len()), Some(4), "cache hits are not server calls");
}
