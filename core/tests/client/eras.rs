//! Era detection against a scripted server: the exact frames the client sends in each era, the fallback on any
//! error or silence, the re-probe after a late probe answer, and which era errors invalidate the cache.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcpstorm_core::CallOptions;
use mcpstorm_core::jsonrpc::{ErrorCode, ErrorObject, Message, Request};
use mcpstorm_core::mcp::method;
use mcpstorm_core::session::{Era, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION};
use mcpstorm_core::{ByteStream, DialFuture, Dialer};
use mcpstorm_core::{CallError, error::LifecycleError};
use mcpstorm_core::{ClientConfig, McpClient};
use mcpstorm_fake::doubles::peer::Peer;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

const MODERN: &str = "2026-07-28";

/// Hands the server side of every dialed connection to the test.
#[derive(Debug)]
struct ScriptDialer {
    peers: mpsc::Sender<Peer>,
    dials: Arc<AtomicUsize>,
}

impl Dialer for ScriptDialer {
    fn dial(&self) -> DialFuture<'_> {
        Box::pin(async move {
            self.dials.fetch_add(1, Ordering::Relaxed);
            let (ours, theirs) = tokio::io::duplex(1 << 16);
            self.peers.send(Peer::new(theirs)).await.expect("the test is listening");
            let (reader, writer) = tokio::io::split(ours);
            Ok(ByteStream { reader: Box::new(reader), writer: Box::new(writer), guard: None })
        })
    }

    fn describe(&self) -> String {
        "script".into()
    }
}

struct Script {
    client: Arc<McpClient>,
    peers: mpsc::Receiver<Peer>,
    dials: Arc<AtomicUsize>,
}

fn script(config: ClientConfig) -> Script {
    let (tx, peers) = mpsc::channel(4);
    let dials = Arc::new(AtomicUsize::new(0));
    let dialer = ScriptDialer { peers: tx, dials: dials.clone() };
    let config = ClientConfig { lifecycle_retries: 0, ..config };
    Script {
        client: Arc::new(McpClient::new("srv", Arc::new(dialer), config, mcpstorm_core::SeededRng::new(0))),
        peers,
        dials,
    }
}

impl Script {
    async fn next_peer(&mut self) -> Peer {
        within("a dial", self.peers.recv()).await.expect("the dialer is alive")
    }

    /// Runs `f` on the client in the background.
    fn spawn<T, F>(&self, f: impl FnOnce(Arc<McpClient>) -> F) -> JoinHandle<T>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        tokio::spawn(f(self.client.clone()))
    }
}

/// Paused time jumps straight to the limit when nothing else can happen, so a wait that would hang fails instead.
async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(600), fut).await.unwrap_or_else(|_| panic!("no {what} within 600 s"))
}

async fn request(peer: &mut Peer) -> Request {
    within("request", peer.request()).await
}

async fn notification(peer: &mut Peer) -> mcpstorm_core::jsonrpc::Notification {
    within("notification", peer.notification()).await
}

fn meta(r: &Request) -> &Value {
    r.params.as_ref().and_then(|p| p.get("_meta")).unwrap_or(&Value::Null)
}

fn discover_result() -> Value {
    json!({"supportedVersions": [MODERN], "capabilities": {"tools": {"listChanged": true}}, "ttlMs": 60000,
           "cacheScope": "public", "resultType": "complete", "instructions": "be nice",
           "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "3"}}})
}

fn init_result(version: &str) -> Value {
    json!({"protocolVersion": version, "capabilities": {}, "serverInfo": {"name": "scripted", "version": "2"}})
}

fn error(code: i64, data: Option<Value>) -> ErrorObject {
    let mut e = ErrorObject::new(ErrorCode(code), format!("scripted {code}"));
    e.data = data;
    e
}

async fn reply_error(peer: &mut Peer, r: &Request, e: ErrorObject) {
    peer.send(Message::error(Some(r.id.clone()), e)).await;
}

/// Answers one `tools/list` with an empty list (so that `call_tool` fails locally afterwards, sending nothing).
async fn answer_tools_list(peer: &mut Peer) -> Request {
    let r = request(peer).await;
    assert_eq!(r.method, method::TOOLS_LIST);
    peer.respond(r.id.clone(), json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]})).await;
    r
}

#[tokio::test(start_paused = true)]
async fn the_probe_and_every_modern_request_carry_the_envelope() {
    let mut s = script(ClientConfig::default());
    let session = s.spawn(|c| async move { c.session().await });
    let mut peer = s.next_peer().await;
    let probe = request(&mut peer).await;
    assert_eq!(probe.method, "server/discover");
    let m = meta(&probe);
    assert_eq!((&m[META_PROTOCOL_VERSION], &m[META_CLIENT_CAPABILITIES]), (&json!(MODERN), &json!({})));
    assert_eq!(m[META_CLIENT_INFO]["name"], "mcpstorm");
    peer.respond(probe.id.clone(), discover_result()).await;
    let session = session.await.unwrap().expect("modern session");
    assert_eq!(session.era, Era::Modern);
    let init = &session.init;
    assert_eq!((init.protocol_version.as_str(), init.server_info.name.as_str()), (MODERN, "scripted"));
    assert_eq!((init.instructions.as_deref(), &init.extra["ttlMs"]), (Some("be nice"), &json!(60000)));
    assert!(init.tools_list_changed());
    // No handshake follows: the next frame is the caller's own request, enveloped; and so is the modern "ping".
    let list = s.spawn(|c| async move { c.list_tools().await });
    let r = answer_tools_list(&mut peer).await;
    assert_eq!(meta(&r)[META_PROTOCOL_VERSION], MODERN);
    list.await.unwrap().expect("tools");
    let ping = s.spawn(|c| async move { c.ping().await });
    let r = request(&mut peer).await;
    assert_eq!((r.method.as_str(), &meta(&r)[META_PROTOCOL_VERSION]), ("server/discover", &json!(MODERN)));
    peer.respond(r.id.clone(), discover_result()).await;
    ping.await.unwrap().expect("ping");
    // tools/call keeps its progress token beside the envelope.
    let call = s.spawn(|c| async move { c.call_tool("t", json!({}), CallOptions::default()).await });
    let r = request(&mut peer).await;
    assert_eq!(r.method, method::TOOLS_CALL);
    assert_eq!((&meta(&r)[META_PROTOCOL_VERSION], meta(&r)["progressToken"].is_number()), (&json!(MODERN), true));
    peer.respond(r.id.clone(), json!({"content": [], "resultType": "complete"})).await;
    call.await.unwrap().expect("call");
}

#[tokio::test(start_paused = true)]
async fn any_error_or_unusable_answer_falls_back_to_a_plain_handshake() {
    let answers = [
        Err(error(-32601, None)),
        Err(error(-32602, None)),
        Err(error(-32000, Some(json!("implementation-defined")))),
        Err(error(-32022, Some(json!({"supported": ["2025-11-25"], "requested": MODERN})))),
        Ok(json!({"unexpected": true})),
        Ok(json!({"supportedVersions": ["2025-11-25"], "capabilities": {}, "ttlMs": 0, "cacheScope": "private"})),
    ];
    for answer in answers {
        let mut s = script(ClientConfig::default());
        let session = s.spawn(|c| async move { c.session().await });
        let mut peer = s.next_peer().await;
        let probe = request(&mut peer).await;
        match &answer {
            Ok(v) => peer.respond(probe.id.clone(), v.clone()).await,
            Err(e) => reply_error(&mut peer, &probe, e.clone()).await,
        }
        let init = request(&mut peer).await;
        assert_eq!(init.method, method::INITIALIZE, "{answer:?}");
        assert!(meta(&init).is_null(), "the handshake carries no envelope: {init:?}");
        peer.respond(init.id.clone(), init_result("2025-11-25")).await;
        assert_eq!(notification(&mut peer).await.method, method::INITIALIZED);
        let session = session.await.unwrap().expect("legacy session");
        assert_eq!(session.era, Era::Legacy, "{answer:?}");
        assert_eq!(s.client.era_cache().era("srv"), Some(Era::Legacy));
        // Legacy requests carry no envelope.
        let list = s.spawn(|c| async move { c.list_tools().await });
        let r = answer_tools_list(&mut peer).await;
        assert!(meta(&r).is_null(), "{r:?}");
        list.await.unwrap().expect("tools");
    }
}

#[tokio::test(start_paused = true)]
async fn a_probe_answered_too_late_makes_the_handshake_refused_and_is_sent_once_more() {
    let config = ClientConfig { discover_timeout: Duration::from_secs(3), ..ClientConfig::default() };
    let mut s = script(config);
    let started = Instant::now();
    let session = s.spawn(|c| async move { c.session().await });
    let mut peer = s.next_peer().await;
    let probe = request(&mut peer).await;
    // Silence: after the timeout the client cancels the probe and tries the handshake.
    let cancel = notification(&mut peer).await;
    assert_eq!((cancel.method.as_str(), started.elapsed()), (method::CANCELLED, Duration::from_secs(3)));
    assert_eq!(cancel.params.as_ref().map(|p| &p["requestId"]), Some(&json!(probe.id)));
    let init = request(&mut peer).await;
    assert_eq!(init.method, method::INITIALIZE);
    // The server had taken the probe after all and now serves the connection as modern.
    let supported = json!({"supported": [MODERN], "requested": "2025-11-25"});
    reply_error(&mut peer, &init, error(-32022, Some(supported))).await;
    let again = request(&mut peer).await;
    assert_eq!((again.method.as_str(), &meta(&again)[META_PROTOCOL_VERSION]), ("server/discover", &json!(MODERN)));
    peer.respond(again.id.clone(), discover_result()).await;
    let session = session.await.unwrap().expect("modern after all");
    assert_eq!(session.era, Era::Modern);
    assert_eq!(started.elapsed(), Duration::from_secs(3));
    assert_eq!(s.dials.load(Ordering::Relaxed), 1, "all on one connection");
}

#[tokio::test(start_paused = true)]
async fn a_second_refusal_of_the_handshake_is_returned_not_looped_on() {
    let config = ClientConfig { discover_timeout: Duration::from_secs(1), ..ClientConfig::default() };
    let mut s = script(config);
    let session = s.spawn(|c| async move { c.session().await });
    let mut peer = s.next_peer().await;
    let _probe = request(&mut peer).await;
    let _cancel = notification(&mut peer).await;
    let init = request(&mut peer).await;
    let refusal = error(-32022, Some(json!({"supported": [MODERN], "requested": "2025-11-25"})));
    reply_error(&mut peer, &init, refusal.clone()).await;
    let again = request(&mut peer).await;
    assert_eq!(again.method, "server/discover");
    reply_error(&mut peer, &again, error(-32603, None)).await;
    // Neither probe settled it: the handshake's refusal is the answer, and no third probe or handshake is sent.
    let err = session.await.unwrap().expect_err("no era");
    assert_eq!(err, CallError::Lifecycle(LifecycleError::InitializeRefused(refusal)));
    assert!(s.client.era_cache().is_empty());
}

#[tokio::test(start_paused = true)]
async fn unsupported_version_and_header_mismatch_invalidate_the_era_but_a_missing_capability_does_not() {
    for (code, invalidates) in [(-32021, false), (-32020, true), (-32022, true)] {
        let mut s = script(ClientConfig::default());
        let session = s.spawn(|c| async move { c.session().await });
        let mut peer = s.next_peer().await;
        let probe = request(&mut peer).await;
        peer.respond(probe.id.clone(), discover_result()).await;
        session.await.unwrap().expect("modern");
        let list = s.spawn(|c| async move { c.list_tools().await });
        let r = request(&mut peer).await;
        let data = (code == -32021).then(|| json!({"requiredCapabilities": {"sampling": {}}}));
        reply_error(&mut peer, &r, error(code, data)).await;
        match list.await.unwrap() {
            Err(CallError::Protocol(e)) => assert_eq!(e.code, code),
            other => panic!("expected the server's {code}, got {other:?}"),
        }
        let list = s.spawn(|c| async move { c.list_tools().await });
        if invalidates {
            // A new connection, and the era is detected again from scratch.
            let mut fresh = s.next_peer().await;
            let probe = request(&mut fresh).await;
            assert_eq!(probe.method, "server/discover", "{code}");
            fresh.respond(probe.id.clone(), discover_result()).await;
            answer_tools_list(&mut fresh).await;
            assert_eq!(s.dials.load(Ordering::Relaxed), 2, "{code}");
        } else {
            answer_tools_list(&mut peer).await;
            assert_eq!(s.dials.load(Ordering::Relaxed), 1, "{code}");
        }
        list.await.unwrap().expect("tools");
        assert_eq!(s.client.era_cache().era("srv"), Some(Era::Modern));
    }
}

#[tokio::test(start_paused = true)]
async fn a_reconnect_to_a_modern_server_sends_nothing_before_the_first_request() {
    let mut s = script(ClientConfig::default());
    let session = s.spawn(|c| async move { c.session().await });
    let mut peer = s.next_peer().await;
    let probe = request(&mut peer).await;
    peer.respond(probe.id.clone(), discover_result()).await;
    let first = session.await.unwrap().expect("modern");
    peer.hang_up();
    // The connection fails; the next call reconnects from the cache: its first frame is the call itself.
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert!(!first.conn.is_open());
    let list = s.spawn(|c| async move { c.list_tools().await });
    let mut peer = s.next_peer().await;
    let r = answer_tools_list(&mut peer).await;
    assert_eq!(meta(&r)[META_PROTOCOL_VERSION], MODERN);
    list.await.unwrap().expect("tools");
    let session = s.client.session().await.expect("cached");
    assert_eq!((session.era, session.init.server_info.name.as_str()), (Era::Modern, "scripted"));
}
