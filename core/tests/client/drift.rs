//! Schema drift end to end, against a hand-played server over loopback TCP whose tool changes under the client:
//! a required parameter appears, with or without `notifications/tools/list_changed`, rejected the TypeScript SDK's
//! way (-32602) or the Python SDK's way (an `isError` "Input validation error" result); a version stamp changes;
//! a modern `ttlMs` runs out. The server counts every `tools/call` it receives and every one it rejects as stale, so
//! the tests can say exactly what reached the wire.

use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use mcpstorm_core::CallOptions;
use mcpstorm_core::mcp::CallToolResult;
use mcpstorm_core::observe::RefetchReason;
use mcpstorm_core::session::EraMode;
use mcpstorm_core::session::GatewayProfile;
use mcpstorm_core::{ByteStream, DialFuture, Dialer, TcpDialer};
use mcpstorm_core::{CallError, LocalError};
use mcpstorm_core::{ClientConfig, McpClient, capabilities::DriftStats};
use mcpstorm_fake::doubles::line_server::serve_lines;
use proptest::prelude::*;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// How the server rejects a call that fails its current schema.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Reject {
    InvalidParams,
    ToolErrorText,
}

#[derive(Debug)]
struct State {
    version: String,
    /// Required properties of `query` beyond `q`.
    extra_required: Vec<String>,
    reject: Reject,
    /// `ttlMs` put on tools/list results (0: none).
    ttl_ms: u64,
    /// Reject the next call even if it is valid (a validator briefly stricter than the published schema).
    reject_next: bool,
    calls: u64,
    stale: u64,
    lists: u64,
}

#[derive(Clone)]
struct Drifting {
    addr: String,
    state: Arc<Mutex<State>>,
    announce: Arc<Notify>,
}

impl Drifting {
    async fn start(reject: Reject) -> Drifting {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
        let addr = listener.local_addr().expect("bound address").to_string();
        let state = State {
            version: "1.0".into(),
            extra_required: Vec::new(),
            reject,
            ttl_ms: 0,
            reject_next: false,
            calls: 0,
            stale: 0,
            lists: 0,
        };
        let server = Drifting { addr, state: Arc::new(Mutex::new(state)), announce: Arc::new(Notify::new()) };
        let s = server.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(s.clone().serve(stream));
            }
        });
        server
    }

    /// A server reached through an in-memory pipe (see its `Dialer`): no sockets, so tokio's paused time applies.
    fn in_memory(reject: Reject, ttl_ms: u64) -> Drifting {
        let state = State {
            version: "1.0".into(),
            extra_required: Vec::new(),
            reject,
            ttl_ms,
            reject_next: false,
            calls: 0,
            stale: 0,
            lists: 0,
        };
        Drifting { addr: String::new(), state: Arc::new(Mutex::new(state)), announce: Arc::new(Notify::new()) }
    }

    fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        f(&mut self.state.lock().expect("not poisoned"))
    }

    /// `query` now also requires `region` (which has a default an agent can read).
    fn add_required(&self, version: &str) {
        self.with(|s| {
            s.extra_required.push("region".into());
            s.version = version.into();
        });
    }

    fn counts(&self) -> (u64, u64, u64) {
        self.with(|s| (s.calls, s.stale, s.lists))
    }

    fn tools(&self) -> Value {
        self.with(|s| {
            let mut required = vec![json!("q")];
            required.extend(s.extra_required.iter().map(|r| json!(r)));
            json!([{"name": "query", "inputSchema": {"type": "object", "properties": {
                "q": {"type": "string"}, "region": {"type": "string", "default": "eu"}}, "required": required}}])
        })
    }

    /// The answer to a `tools/call`: validated against the current schema first, as real servers do.
    fn call(&self, args: &Value) -> Result<Value, Value> {
        self.with(|s| {
            s.calls += 1;
            let missing = s.extra_required.iter().find(|r| args.get(r.as_str()).is_none()).cloned();
            let forced = std::mem::take(&mut s.reject_next);
            let stamp = json!({"io.modelcontextprotocol/serverInfo": {"name": "drifting", "version": s.version}});
            match (missing, forced) {
                (None, false) => Ok(json!({"content": [{"type": "text", "text": "rows"}], "_meta": stamp})),
                (missing, _) => {
                    s.stale += 1;
                    let why = missing.map_or("rejected".to_owned(), |m| format!("'{m}' is a required property"));
                    match s.reject {
                        Reject::InvalidParams => {
                            Err(json!({"code": -32602, "message": format!("Invalid arguments: {why}")}))
                        }
                        Reject::ToolErrorText => Ok(json!({"isError": true,
                            "content": [{"type": "text", "text": format!("Input validation error: {why}")}]})),
                    }
                }
            }
        })
    }

    async fn serve<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + 'static>(self, stream: S) {
        let announce = self.announce.clone();
        serve_lines(stream, announce, |msg| match msg["method"].as_str() {
            Some("initialize") => Ok(json!({"protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {"listChanged": true}},
                "serverInfo": {"name": "drifting", "version": self.with(|s| s.version.clone())}})),
            Some("tools/list") => {
                let ttl = self.with(|s| {
                    s.lists += 1;
                    s.ttl_ms
                });
                Ok(json!({"tools": self.tools(), "ttlMs": ttl}))
            }
            Some("tools/call") => self.call(&msg["params"]["arguments"]),
            _ => Err(json!({"code": -32601, "message": "method not found"})),
        })
        .await;
    }
}

impl std::fmt::Debug for Drifting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Drifting").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl Dialer for Drifting {
    fn dial(&self) -> DialFuture<'_> {
        Box::pin(async move {
            let (ours, theirs) = tokio::io::duplex(1 << 16);
            tokio::spawn(self.clone().serve(theirs));
            let (reader, writer) = tokio::io::split(ours);
            Ok(ByteStream { reader: Box::new(reader), writer: Box::new(writer), guard: None })
        })
    }

    fn describe(&self) -> String {
        "drifting (in memory)".into()
    }
}

fn client(server: &Drifting, profile: GatewayProfile) -> McpClient {
    let config = ClientConfig { era_mode: EraMode::Legacy, lifecycle_retries: 0, profile, ..ClientConfig::default() };
    McpClient::new(
        "drifting",
        Arc::new(TcpDialer { addr: server.addr.clone() }),
        config,
        mcpstorm_core::SeededRng::new(0),
    )
}

async fn query(c: &McpClient, args: Value) -> Result<CallToolResult, CallError> {
    c.call_tool("query", args, CallOptions::default()).await
}

fn missing_region(outcome: Result<CallToolResult, CallError>) {
    match outcome {
        Err(CallError::Local(LocalError::InvalidArguments(e))) => {
            assert_eq!(e.violations.len(), 1, "{e}");
            assert_eq!((e.violations[0].pointer.as_str(), e.violations[0].keyword.as_str()), ("", "required"));
            assert!(e.to_string().contains("region"), "{e}");
        }
        other => panic!("expected a local invalid-arguments error, got {other:?}"),
    }
}

fn refetches(stats: DriftStats, reason: RefetchReason) -> u64 {
    stats.refetched(reason)
}

/// Silent drift: a required field appears and nobody says so. The first stale call is rejected by the server
/// (either way real SDKs reject), the client re-fetches once, and from then on the same arguments fail locally
/// naming the missing property: one stale call reached the wire, not one per call. Arguments that satisfy the new
/// schema go through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_new_required_parameter_costs_one_stale_call() {
    for (reject, reason) in
        [(Reject::InvalidParams, RefetchReason::InvalidParams), (Reject::ToolErrorText, RefetchReason::ToolErrorText)]
    {
        let server = Drifting::start(reject).await;
        let c = client(&server, GatewayProfile::Default);
        assert!(!query(&c, json!({"q": "a"})).await.unwrap().is_error);
        server.add_required("1.0");

        missing_region(query(&c, json!({"q": "a"})).await);
        assert_eq!(server.counts(), (2, 1, 2), "{reject:?}: calls, stale calls, listings");
        for _ in 0..5 {
            missing_region(query(&c, json!({"q": "a"})).await);
        }
        assert_eq!(server.counts(), (2, 1, 2), "{reject:?}: a known-stale call reached the server");
        let ok = query(&c, json!({"q": "a", "region": "eu"})).await.unwrap();
        assert!(!ok.is_error, "{reject:?}: {ok:?}");
        let stats = c.drift_stats();
        assert_eq!((refetches(stats, reason), stats.total_refetches(), stats.stopped, stats.resent), (1, 1, 1, 0));
    }
}

/// With `list_changed` the client re-lists before the next call, so not even one stale call is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_announced_change_costs_no_stale_call() {
    let server = Drifting::start(Reject::InvalidParams).await;
    let c = client(&server, GatewayProfile::Default);
    query(&c, json!({"q": "a"})).await.unwrap();
    server.add_required("1.1");
    server.announce.notify_one();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        // Wait for the re-listing without calling the tool: any call before it would be a stale one.
        let caps = c.capabilities().await.unwrap();
        if caps
            .tool("query")
            .is_some_and(|t| t.tool().input_schema["required"].as_array().is_some_and(|r| r.len() == 2))
        {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "list_changed did not lead to a re-listing");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    missing_region(query(&c, json!({"q": "a"})).await);
    assert_eq!(server.counts().1, 0, "a stale call was sent after list_changed");
    assert_eq!(refetches(c.drift_stats(), RefetchReason::ListChanged), 1);
}

/// A rejection whose re-fetched schema the call *does* pass (the server's validator was briefly stricter than
/// what it published) is resent once and succeeds; one with an unchanged list is returned as the server said.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_valid_under_the_fresh_schema_is_resent_once() {
    let server = Drifting::start(Reject::InvalidParams).await;
    let c = client(&server, GatewayProfile::Default);
    query(&c, json!({"q": "a"})).await.unwrap();
    server.add_required("1.0");
    server.with(|s| s.reject_next = true);
    let ok = query(&c, json!({"q": "a", "region": "us"})).await.unwrap();
    assert!(!ok.is_error);
    assert_eq!(server.counts(), (3, 1, 2));
    assert_eq!((c.drift_stats().resent, c.drift_stats().stopped), (1, 0));

    // Nothing changed this time: the rejection stands, no resend.
    server.with(|s| s.reject_next = true);
    match query(&c, json!({"q": "a", "region": "us"})).await {
        Err(CallError::Protocol(e)) => assert_eq!(e.code, -32602),
        other => panic!("expected the server's rejection, got {other:?}"),
    }
    assert_eq!(server.counts(), (4, 2, 3), "one re-listing, no resend");
    assert_eq!(c.drift_stats().resent, 1);
}

/// A result stamped with a new server version re-lists once (the call itself stands); later results with the same
/// version do not re-list again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_version_stamp_relists_once() {
    let server = Drifting::start(Reject::InvalidParams).await;
    let c = client(&server, GatewayProfile::Default);
    query(&c, json!({"q": "a"})).await.unwrap();
    server.with(|s| s.version = "2.0".into());
    for _ in 0..3 {
        assert!(!query(&c, json!({"q": "a"})).await.unwrap().is_error);
    }
    assert_eq!(server.counts(), (4, 0, 2));
    assert_eq!(c.capabilities().await.unwrap().server().version, "2.0");
    assert_eq!(refetches(c.drift_stats(), RefetchReason::ServerVersion), 1);
}

/// A list with a `ttlMs` is listed again once it runs out, before the next call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_ttl_is_honoured() {
    let server = Drifting::start(Reject::InvalidParams).await;
    server.with(|s| s.ttl_ms = 1000);
    let c = client(&server, GatewayProfile::Default);
    query(&c, json!({"q": "a"})).await.unwrap();
    query(&c, json!({"q": "a"})).await.unwrap();
    assert_eq!(server.counts().2, 1, "listed again within the ttl");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    query(&c, json!({"q": "a"})).await.unwrap();
    assert_eq!(server.counts().2, 2);
    assert_eq!(refetches(c.drift_stats(), RefetchReason::Ttl), 1);
}

/// The naive profile caches the first list forever: deaf to list_changed and to rejections, it sends every stale
/// call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_naive_profile_keeps_sending_stale_calls() {
    let server = Drifting::start(Reject::InvalidParams).await;
    let c = client(&server, GatewayProfile::Naive);
    query(&c, json!({"q": "a"})).await.unwrap();
    server.add_required("1.1");
    server.announce.notify_one();
    tokio::time::sleep(Duration::from_millis(50)).await;
    for _ in 0..5 {
        assert!(matches!(query(&c, json!({"q": "a"})).await, Err(CallError::Protocol(_))));
    }
    assert_eq!(server.counts(), (6, 5, 1));
    assert_eq!(c.drift_stats().total_refetches(), 0);
}

/// What a client of the drifting server does between calls, for the property below.
#[derive(Debug, Clone)]
enum Op {
    /// `query {"q": "a"}` — valid until `region` becomes required.
    Call,
    /// `region` becomes required, nobody is told.
    SilentDrift,
    /// `region` becomes required and `tools/list_changed` goes out.
    AnnouncedDrift,
    /// The server's version changes, nothing else.
    Bump,
    /// Time passes (whole seconds; the list TTLs end on half seconds, so no boundary is ambiguous).
    Wait(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Call),
        1 => Just(Op::SilentDrift),
        1 => Just(Op::AnnouncedDrift),
        1 => Just(Op::Bump),
        2 => (1u64..4).prop_map(Op::Wait),
    ]
}

/// The client's capability record as a model: whether its schema requires `region`, the server version it last
/// saw, when it was fetched, and whether a `list_changed` is pending.
#[derive(Debug, Default)]
struct Model {
    fetches: u64,
    fetched_at: u64,
    knows_required: bool,
    version: u32,
    stale: bool,
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// The capability cache re-fetches exactly when it must: on the first use, after `list_changed`, when a
    /// `ttlMs` ran out, when a call is refused for a schema it did not know, and when a result shows a new server
    /// version — and at no other time. A reference model predicts the server's count of `tools/list` requests after
    /// every step of a random history.
    #[test]
    fn the_capability_cache_refetches_exactly_when_it_must(
        ttl_ms in prop_oneof![Just(0u64), (1u64..5).prop_map(|s| s * 1000 + 500)],
        ops in proptest::collection::vec(op(), 0..24),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
        runtime.block_on(async move {
            let server = Drifting::in_memory(Reject::InvalidParams, ttl_ms);
            let config = ClientConfig { era_mode: EraMode::Legacy, lifecycle_retries: 0, ..ClientConfig::default() };
            let c = McpClient::new("drifting", Arc::new(server.clone()), config, mcpstorm_core::SeededRng::new(0));
            let start = tokio::time::Instant::now();
            let now_ms = || start.elapsed().as_millis() as u64;
            let (mut m, mut server_required, mut server_version) = (Model::default(), false, 0u32);
            // The first call makes the connection (a notification can only reach an open one).
            for (step, op) in std::iter::once(Op::Call).chain(ops).enumerate() {
                match op {
                    Op::Call => {
                        let now = now_ms();
                        let expired = ttl_ms > 0 && now >= m.fetched_at + ttl_ms;
                        if m.fetches == 0 || m.stale || expired {
                            (m.fetches, m.fetched_at, m.knows_required, m.stale) = (m.fetches + 1, now, server_required, false);
                        }
                        let outcome = query(&c, json!({"q": "a"})).await;
                        if m.knows_required {
                            prop_assert!(matches!(outcome, Err(CallError::Local(LocalError::InvalidArguments(_)))), "{outcome:?}");
                        } else if server_required {
                            // Refused, re-fetched, and stopped locally by the fresh schema.
                            (m.fetches, m.fetched_at, m.knows_required) = (m.fetches + 1, now, true);
                            prop_assert!(matches!(outcome, Err(CallError::Local(LocalError::InvalidArguments(_)))), "{outcome:?}");
                        } else {
                            prop_assert!(outcome.is_ok(), "{outcome:?}");
                            if m.version != server_version {
                                (m.fetches, m.fetched_at, m.version) = (m.fetches + 1, now, server_version);
                            }
                        }
                    }
                    Op::SilentDrift | Op::AnnouncedDrift => {
                        if !server_required {
                            server.with(|s| s.extra_required.push("region".into()));
                            server_required = true;
                        }
                        if matches!(op, Op::AnnouncedDrift) {
                            server.announce.notify_one();
                            m.stale = true;
                            // Let the notification cross the pipe and reach the client's handler, without time passing.
                            for _ in 0..64 {
                                tokio::task::yield_now().await;
                            }
                        }
                    }
                    Op::Bump => {
                        server_version += 1;
                        server.with(|s| s.version = format!("1.{server_version}"));
                    }
                    Op::Wait(secs) => tokio::time::sleep(Duration::from_secs(secs)).await,
                }
                prop_assert_eq!(server.counts().2, m.fetches, "tools/list requests after step {} ({:?})", step, m);
            }
            Ok(())
        })?;
    }
}
