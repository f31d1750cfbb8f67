//! The gateway end to end over loopback TCP, against fake MCP servers: routing by formula and by the capability
//! matrix, a clear error when no replica qualifies, the router's in-flight accounting on every way a call can end,
//! and active health checks taking a dead replica out of rotation through the gateway's own clients.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mcpstorm_core::client::{ClientConfig, McpClient};
use mcpstorm_core::gateway::{Connector, Gateway, GatewayConfig, ToolCall};
use mcpstorm_core::router::{
    ExclusionReason, FormulaSpec, Requirement, RouteError, Router, RouterConfig, ServerSpec, StaticRegistry,
};
use mcpstorm_core::rt::{SeededRng, TcpDialer, TokioClock};
use mcpstorm_core::{CallError, CancelToken, LocalError};
use mcpstorm_fake::{FakeServer, FakeServerConfig};
use serde_json::json;
use tokio::net::TcpListener;

/// Endpoint name → loopback address.
#[derive(Debug)]
struct Loopback(BTreeMap<String, String>);

impl Connector for Loopback {
    fn connect(&self, _server: &str, endpoint: &str) -> Arc<McpClient> {
        let addr = self.0.get(endpoint).cloned().unwrap_or_else(|| "127.0.0.1:9".into());
        let mut config = ClientConfig { lifecycle_retries: 0, ..ClientConfig::default() };
        config.connect_timeout = Duration::from_millis(300);
        Arc::new(McpClient::new(endpoint, Arc::new(TcpDialer { addr }), config, SeededRng::new(0)))
    }
}

async fn serve(config: FakeServerConfig) -> (FakeServer, String) {
    let server = FakeServer::new(config).expect("valid fake config");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
    let addr = listener.local_addr().expect("bound address").to_string();
    let serving = server.clone();
    tokio::spawn(async move { serving.serve(listener).await });
    (server, addr)
}

fn gateway(servers: Vec<ServerSpec>, addrs: BTreeMap<String, String>, formula: &str, config: RouterConfig) -> Gateway {
    let clock = Arc::new(TokioClock::new(0));
    let spec: FormulaSpec = formula.parse().expect("a built-in formula");
    let router = Router::new(config, spec.build(), SeededRng::new(7), tokio::time::Instant::now());
    let gw_config = GatewayConfig {
        refresh_every: Duration::from_millis(20),
        requirement_rules: vec![("language".into(), "language_support".into())],
        ..GatewayConfig::default()
    };
    let registry = Box::new(StaticRegistry::new(servers));
    Gateway::new(router, registry, Arc::new(Loopback(addrs)), clock, gw_config, SeededRng::new(11))
}

/// Two servers offering `echo`: `py` reviews python only, `multi` python and rust. Round robin alternates between
/// the eligible replicas; a rust request only ever reaches `multi`; a go request has no candidate and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_by_formula_and_capability_matrix() {
    let (_py, py_addr) = serve(FakeServerConfig::builtin()).await;
    let (_multi, multi_addr) = serve(FakeServerConfig::builtin()).await;
    let servers = vec![
        ServerSpec::new("py", ["py-0"]).with_tools(["echo"]).with_support("language_support", ["python"]),
        ServerSpec::new("multi", ["multi-0"]).with_tools(["echo"]).with_support("language_support", ["python", "rust"]),
    ];
    let addrs = BTreeMap::from([("py-0".into(), py_addr), ("multi-0".into(), multi_addr)]);
    let gw = gateway(servers, addrs, "round_robin", RouterConfig::default());

    let mut served = BTreeMap::<String, u32>::new();
    for i in 0..10 {
        let a =
            gw.call_unprotected(ToolCall::new("echo", json!({"message": format!("m{i}"), "language": "python"}))).await;
        let a = a.expect("a candidate");
        assert_eq!(a.outcome.expect("echo works").joined_text(), format!("m{i}"));
        *served.entry(a.endpoint.to_string()).or_default() += 1;
    }
    assert_eq!(served, BTreeMap::from([("multi-0".into(), 5), ("py-0".into(), 5)]), "round robin alternates");

    for _ in 0..4 {
        let a = gw.call_unprotected(ToolCall::new("echo", json!({"message": "x", "language": "rust"}))).await.unwrap();
        assert_eq!(&*a.endpoint, "multi-0", "a rust request reached a server without rust");
    }
    match gw.call_unprotected(ToolCall::new("echo", json!({"message": "x", "language": "go"}))).await {
        Err(RouteError::NoCandidate { tool, excluded }) => {
            assert_eq!(tool, "echo");
            assert_eq!(excluded.len(), 2);
            assert!(excluded.iter().all(|e| matches!(&e.reason, ExclusionReason::Unmet(_))), "{excluded:?}");
            let text = RouteError::NoCandidate { tool, excluded }.to_string();
            assert!(text.contains("language_support ∋ go"), "{text}");
        }
        other => panic!("expected no candidate, got {other:?}"),
    }
    assert!(matches!(gw.call_unprotected(ToolCall::new("nope", json!({}))).await, Err(RouteError::UnknownTool { .. })));
}

/// A call's extra requirements (`ToolCall::requires`, e.g. the simulator's `server:<name>` tag pinning a mix entry
/// to one server) narrow the candidates on top of the argument rules.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extra_requirements_pin_a_call_to_tagged_servers() {
    let (_a, a_addr) = serve(FakeServerConfig::builtin()).await;
    let (_b, b_addr) = serve(FakeServerConfig::builtin()).await;
    let mut b = ServerSpec::new("b", ["b-0"]).with_tools(["echo"]);
    b.tags.insert("server:b".into());
    let servers = vec![ServerSpec::new("a", ["a-0"]).with_tools(["echo"]), b];
    let addrs = BTreeMap::from([("a-0".into(), a_addr), ("b-0".into(), b_addr)]);
    let gw = gateway(servers, addrs, "round_robin", RouterConfig::default());
    let pin = [Requirement::Tag("server:b".into())];
    for _ in 0..4 {
        let call = ToolCall { requires: &pin, ..ToolCall::new("echo", json!({"message": "x"})) };
        assert_eq!(&*gw.call_unprotected(call).await.expect("b qualifies").endpoint, "b-0");
    }
    let none = [Requirement::Tag("server:c".into())];
    let call = ToolCall { requires: &none, ..ToolCall::new("echo", json!({"message": "x"})) };
    match gw.call_unprotected(call).await {
        Err(e @ RouteError::NoCandidate { .. }) => assert!(e.to_string().contains("tag server:c"), "{e}"),
        other => panic!("expected no candidate, got {other:?}"),
    }
}

/// `call_tool_prepared` hands the chosen replica's client to the agent's argument builder and sends what it returns;
/// routing read the arguments as given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_arguments_come_from_the_chosen_replica() {
    let (_a, a_addr) = serve(FakeServerConfig::builtin()).await;
    let (_b, b_addr) = serve(FakeServerConfig::builtin()).await;
    let servers = vec![
        ServerSpec::new("a", ["a-0"]).with_tools(["echo"]).with_support("language_support", ["python"]),
        ServerSpec::new("b", ["b-0"]).with_tools(["echo"]).with_support("language_support", ["rust"]),
    ];
    let addrs = BTreeMap::from([("a-0".into(), a_addr), ("b-0".into(), b_addr)]);
    let gw = gateway(servers, addrs, "round_robin", RouterConfig::default());
    for _ in 0..3 {
        let call = ToolCall::new("echo", json!({"message": "x", "language": "rust"}));
        let attempt = gw
            .call_unprotected_prepared(call, |client, mut args| async move {
                let caps = client.capabilities().await.expect("the chosen replica answers");
                assert!(caps.tool("echo").is_some());
                args["message"] = json!(format!("from {}", client.server()));
                args
            })
            .await
            .expect("b qualifies");
        assert_eq!(&*attempt.endpoint, "b-0");
        assert_eq!(attempt.outcome.expect("echo works").joined_text(), "from b-0");
    }
}

/// In-flight counts return to zero whatever happened: success, a caller's invalid arguments (no verdict on the
/// replica: its error rate stays 0), and a call future dropped mid-way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_flight_accounting_survives_every_ending() {
    let (_s, addr) = serve(FakeServerConfig::builtin()).await;
    let servers = vec![ServerSpec::new("s", ["s-0"]).with_tools(["echo", "sleep_ms"])];
    let gw =
        Arc::new(gateway(servers, BTreeMap::from([("s-0".into(), addr)]), "p2c_peak_ewma", RouterConfig::default()));
    let in_flight = |gw: &Gateway| gw.with_router(|r| r.stats(r.replica_id("s-0").unwrap()).unwrap().in_flight);

    gw.call_unprotected(ToolCall::new("echo", json!({"message": "a"}))).await.unwrap().outcome.unwrap();
    let bad = gw.call_unprotected(ToolCall::new("echo", json!({"message": 3}))).await.unwrap();
    assert!(matches!(bad.outcome, Err(CallError::Local(LocalError::InvalidArguments(_)))));
    assert_eq!(in_flight(&gw), 0.0);

    let slow = {
        let gw = gw.clone();
        tokio::spawn(
            async move { gw.call_unprotected(ToolCall::new("sleep_ms", json!({"ms": 5000}))).await.map(|_| ()) },
        )
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while in_flight(&gw) < 1.0 {
        assert!(tokio::time::Instant::now() < deadline, "the slow call never started");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    slow.abort();
    let _ = slow.await;
    assert_eq!(in_flight(&gw), 0.0, "a dropped call kept its in-flight slot");
    gw.with_router(|r| r.refresh(tokio::time::Instant::now()));
    let stats = gw.with_router(|r| r.stats(r.replica_id("s-0").unwrap()).unwrap());
    assert_eq!(stats.error_rate, 0.0, "the caller's invalid arguments counted against the replica");
}

/// A replica whose server is gone fails its pings; after three strikes the router stops sending calls there,
/// through the gateway's background task and its own clients.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_checks_take_a_dead_replica_out() {
    let (_live, live_addr) = serve(FakeServerConfig::builtin()).await;
    let dead_addr = {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        l.local_addr().unwrap().to_string()
    };
    let servers = vec![ServerSpec::new("s", ["live", "dead"]).with_tools(["echo"])];
    let addrs = BTreeMap::from([("live".into(), live_addr), ("dead".into(), dead_addr)]);
    let config = RouterConfig { check_interval: Duration::from_millis(30), ..RouterConfig::default() };
    let gw = Arc::new(gateway(servers, addrs, "round_robin", config));
    let cancel = CancelToken::new();
    let background = tokio::spawn(gw.clone().run_background(cancel.clone()));

    // Before the strikes, round robin sends every other call to the dead replica (and fails it); after them,
    // eight calls in a row all land on the live one.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let mut all_live = true;
        for _ in 0..8 {
            let a = gw.call_unprotected(ToolCall::new("echo", json!({"message": "x"}))).await.unwrap();
            all_live &= &*a.endpoint == "live" && a.outcome.is_ok();
        }
        if all_live {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the dead replica was never taken out");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let dead = gw.with_router(|r| r.replica_id("dead").unwrap());
    match gw
        .call_unprotected(ToolCall {
            tried: &[gw.with_router(|r| r.replica_id("live").unwrap())],
            ..ToolCall::new("echo", json!({"message": "x"}))
        })
        .await
    {
        Ok(a) => assert_ne!(a.replica, dead, "a retry avoiding the live replica still must not get the dead one"),
        Err(e) => panic!("{e}"),
    }
    cancel.cancel("test over");
    background.await.unwrap();
}

// ---- the protected path: breakers, retries, budgets, degraded results ----

use mcpstorm_core::gateway::{ResilienceConfig, Routed};
use mcpstorm_core::observe::{Event, Observer};
use mcpstorm_core::resilience::backoff::Backoff;
use mcpstorm_core::resilience::breaker::{BreakerConfig, State, WindowConfig};
use mcpstorm_core::resilience::budget::BudgetConfig;
use mcpstorm_core::resilience::degraded::DegradedReason;
use mcpstorm_core::resilience::retry::RetryPolicy;
use std::sync::Mutex;

/// `echo` (read-only, idempotent) and `write` (no annotations: not idempotent), failing with a JSON-RPC -32603 when
/// the test injects errors.
fn failing_config() -> FakeServerConfig {
    FakeServerConfig::from_toml_str(
        r#"
name = "s"
[[tools]]
name = "echo"
input_schema = { type = "object", properties = { message = { type = "string" } }, required = ["message"] }
annotations = { readOnlyHint = true, idempotentHint = true }
reply = "{arg:message}"
error_kind = "jsonrpc"
[[tools]]
name = "write"
input_schema = { type = "object" }
reply = "written"
error_kind = "jsonrpc"
"#,
    )
    .expect("valid fake config")
}

/// Breaker transitions and degraded decisions, as the observer sees them.
#[derive(Debug, Default)]
struct Seen(Mutex<Vec<String>>);

impl Observer for Seen {
    fn event(&self, event: &Event<'_>) {
        let line = match event {
            Event::Breaker { replica, tool, transition, .. } => {
                format!("breaker {replica}/{tool} {:?}->{:?}", transition.from, transition.to)
            }
            Event::Degraded { tool, reason } => format!("degraded {tool} {}", reason.as_str()),
            _ => return,
        };
        self.0.lock().expect("not poisoned").push(line);
    }
}

fn protected(
    servers: Vec<ServerSpec>,
    addrs: BTreeMap<String, String>,
    resilience: ResilienceConfig,
) -> (Gateway, Arc<Seen>) {
    let clock = Arc::new(TokioClock::new(0));
    let router = Router::new(
        RouterConfig::default(),
        FormulaSpec::RoundRobin.build(),
        SeededRng::new(3),
        tokio::time::Instant::now(),
    );
    let config = GatewayConfig { resilience, ..GatewayConfig::default() };
    let seen = Arc::new(Seen::default());
    let registry = Box::new(StaticRegistry::new(servers));
    let gw = Gateway::new(router, registry, Arc::new(Loopback(addrs)), clock, config, SeededRng::new(11))
        .with_observer(seen.clone());
    (gw, seen)
}

fn fast_retries(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        backoff: Backoff::FullJitter { base: Duration::from_millis(1), cap: Duration::from_millis(5) },
    }
}

fn endpoints(r: &Routed) -> Vec<String> {
    r.attempts().map(|a| a.endpoint.to_string()).collect()
}

/// A failing server trips its (replica, tool) breaker after the minimum number of calls; from then on the gateway
/// answers with a degraded result naming the reason, without sending anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_breaker_answers_degraded_without_calling() {
    let (server, addr) = serve(failing_config()).await;
    server.control().set_error_rate(Some(1.0));
    let breaker = BreakerConfig {
        window: WindowConfig::Count { size: 10 },
        minimum_calls: 4,
        open_base: Duration::from_secs(30),
        ..BreakerConfig::default()
    };
    let resilience = ResilienceConfig { breaker: Some(breaker), ..ResilienceConfig::default() };
    let (gw, seen) = protected(
        vec![ServerSpec::new("s", ["s-0"]).with_tools(["echo"])],
        BTreeMap::from([("s-0".into(), addr)]),
        resilience,
    );
    for _ in 0..4 {
        let r = gw.call(ToolCall::new("echo", json!({"message": "x"}))).await;
        assert!(r.degraded().is_none() && r.attempts().count() == 1 && r.outcome().is_err(), "{r:?}");
    }
    let received = server.control().stats().received;
    let r = gw.call(ToolCall::new("echo", json!({"message": "x"}))).await;
    let degraded = r.degraded().expect("degraded");
    assert_eq!(degraded.reason, DegradedReason::BreakerOpen);
    assert_eq!(r.attempts().count(), 0);
    let result = r.outcome().unwrap();
    assert!(result.is_error && result.joined_text().contains("Do not retry"), "{result:?}");
    assert_eq!(result.structured_content.as_ref().unwrap()["reason"], "breaker_open");
    assert!(result.structured_content.as_ref().unwrap()["retryAfterMs"].as_u64().is_some_and(|ms| ms > 20_000));
    assert_eq!(server.control().stats().received, received, "a call went through an open breaker");
    assert_eq!(gw.breakers()[0].1.state(), State::Open);
    let seen = seen.0.lock().unwrap().clone();
    assert_eq!(seen, ["breaker s-0/echo Closed->Open", "degraded echo breaker_open"]);
}

/// An idempotent tool that fails on one replica is retried on the other; a tool without idempotency annotations is
/// not retried at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotent_calls_retry_on_another_replica_and_others_do_not() {
    let (bad, bad_addr) = serve(failing_config()).await;
    let (_good, good_addr) = serve(failing_config()).await;
    bad.control().set_error_rate(Some(1.0));
    let resilience = ResilienceConfig { retry: Some(fast_retries(3)), ..ResilienceConfig::default() };
    let (gw, _) = protected(
        vec![ServerSpec::new("s", ["bad", "good"]).with_tools(["echo", "write"])],
        BTreeMap::from([("bad".into(), bad_addr), ("good".into(), good_addr)]),
        resilience,
    );
    // Round robin starts on `bad`.
    let r = gw.call(ToolCall::new("echo", json!({"message": "x"}))).await;
    assert_eq!(endpoints(&r), ["bad", "good"]);
    assert_eq!(r.into_outcome().unwrap().joined_text(), "x");
    // Next on `bad` again (round robin), a non-idempotent tool: one attempt, its error returned.
    let r = gw.call(ToolCall::new("write", json!({}))).await;
    assert_eq!(endpoints(&r), ["bad"]);
    assert!(r.degraded().is_none() && matches!(r.into_outcome(), Err(CallError::Protocol(_))));
}

/// A spent retry budget ends the call with a degraded result rather than more retries; without any layer (the naive
/// gateway) a failure is simply returned after one attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spent_budget_degrades_and_the_naive_gateway_just_fails() {
    let (server, addr) = serve(failing_config()).await;
    server.control().set_error_rate(Some(1.0));
    let spec = || vec![ServerSpec::new("s", ["s-0"]).with_tools(["echo"])];
    let addrs = || BTreeMap::from([("s-0".into(), addr.clone())]);
    let empty = BudgetConfig { ratio: 0.0, min_per_sec: 0.0, ..BudgetConfig::default() };
    let resilience =
        ResilienceConfig { retry: Some(fast_retries(5)), budget: Some(empty), ..ResilienceConfig::default() };
    let (gw, _) = protected(spec(), addrs(), resilience);
    // Warm the client's tool list so the first failure can tell the tool is idempotent.
    gw.call_unprotected(ToolCall::new("echo", json!({"message": "warm"}))).await.unwrap();
    let r = gw.call(ToolCall::new("echo", json!({"message": "x"}))).await;
    assert_eq!(r.attempts().count(), 1);
    assert_eq!(r.degraded().map(|d| d.reason), Some(DegradedReason::BudgetExhausted));

    let (naive, _) = protected(spec(), addrs(), ResilienceConfig::default());
    let r = naive.call(ToolCall::new("echo", json!({"message": "x"}))).await;
    assert_eq!(r.attempts().count(), 1);
    assert!(r.degraded().is_none() && matches!(r.into_outcome(), Err(CallError::Protocol(_))));
}

/// A hung server fills only its own bulkhead: its next callers get a degraded `bulkhead_full` after the queue wait,
/// while calls to a healthy server are admitted and answered as if the hung one did not exist.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_server_fills_only_its_own_bulkhead() {
    use mcpstorm_core::resilience::bulkhead::BulkheadConfig;
    let (hung, hung_addr) = serve(failing_config()).await;
    let (_ok, ok_addr) = serve(failing_config()).await;
    let bulkhead = BulkheadConfig { default_max: Some(2), queue_wait: Duration::from_millis(50), ..Default::default() };
    let resilience = ResilienceConfig { bulkhead: Some(bulkhead), ..ResilienceConfig::default() };
    let (gw, seen) = protected(
        vec![
            ServerSpec::new("hung", ["h-0"]).with_tools(["write"]),
            ServerSpec::new("ok", ["o-0"]).with_tools(["echo"]),
        ],
        BTreeMap::from([("h-0".into(), hung_addr), ("o-0".into(), ok_addr)]),
        resilience,
    );
    let gw = Arc::new(gw);
    // Warm the hung server's connection, then hang it and park two calls on it: its whole quota.
    gw.call(ToolCall::new("write", json!({}))).await.into_outcome().unwrap();
    hung.control().set_hung(true);
    let parked: Vec<_> = (0..2)
        .map(|_| {
            let gw = gw.clone();
            tokio::spawn(async move { gw.call(ToolCall::new("write", json!({}))).await })
        })
        .collect();
    while hung.control().stats().received < 3 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let r = gw.call(ToolCall::new("write", json!({}))).await;
    assert_eq!(r.degraded().map(|d| d.reason), Some(DegradedReason::BulkheadFull), "{r:?}");
    assert_eq!(r.attempts().count(), 0);
    for i in 0..5 {
        let r = gw.call(ToolCall::new("echo", json!({"message": format!("m{i}")}))).await;
        assert_eq!(r.into_outcome().unwrap().joined_text(), format!("m{i}"));
    }
    assert!(seen.0.lock().unwrap().contains(&"degraded write bulkhead_full".to_owned()));
    for p in parked {
        p.abort();
    }
}

/// A breaker opened on another gateway node is followed here: the next call is degraded without being sent, and the
/// observer sees the transition with reason `remote`. Without breakers there is nothing to follow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_open_is_followed_without_local_failures() {
    use mcpstorm_core::resilience::breaker::Reason;
    let (server, addr) = serve(failing_config()).await;
    let spec = || vec![ServerSpec::new("s", ["s-0"]).with_tools(["echo"])];
    let addrs = || BTreeMap::from([("s-0".into(), addr.clone())]);
    let resilience = ResilienceConfig { breaker: Some(BreakerConfig::default()), ..ResilienceConfig::default() };
    let (gw, seen) = protected(spec(), addrs(), resilience);
    let t = gw.follow_remote_open("s-0", "echo", Duration::from_secs(30)).expect("a transition");
    assert_eq!((t.to, t.reason), (State::Open, Reason::Remote));
    assert!(gw.follow_remote_open("s-0", "echo", Duration::from_secs(30)).is_none(), "already open");
    let r = gw.call(ToolCall::new("echo", json!({"message": "x"}))).await;
    assert_eq!(r.degraded().map(|d| d.reason), Some(DegradedReason::BreakerOpen));
    assert_eq!(server.control().stats().received, 0);
    assert_eq!(seen.0.lock().unwrap()[0], "breaker s-0/echo Closed->Open");
    let (naive, _) = protected(spec(), addrs(), ResilienceConfig::default());
    assert!(naive.follow_remote_open("s-0", "echo", Duration::from_secs(30)).is_none());
}

/// Protection is per replica: a failing replica's breaker opens for it alone, and from then on its calls go to its
/// healthy sibling — answered, not degraded. Only when every replica's breaker is open is the answer degraded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_breaker_on_one_replica_sends_calls_to_its_sibling() {
    let (bad, bad_addr) = serve(failing_config()).await;
    let (good, good_addr) = serve(failing_config()).await;
    bad.control().set_error_rate(Some(1.0));
    let breaker = BreakerConfig {
        window: WindowConfig::Count { size: 10 },
        minimum_calls: 2,
        open_base: Duration::from_secs(30),
        ..BreakerConfig::default()
    };
    let resilience = ResilienceConfig { breaker: Some(breaker), ..ResilienceConfig::default() };
    let (gw, seen) = protected(
        vec![ServerSpec::new("s", ["bad", "good"]).with_tools(["write"])],
        BTreeMap::from([("bad".into(), bad_addr), ("good".into(), good_addr)]),
        resilience,
    );
    // Round robin alternates: two failures on `bad` open its breaker, `good` answers its share.
    for _ in 0..4 {
        gw.call(ToolCall::new("write", json!({}))).await;
    }
    assert_eq!(seen.0.lock().unwrap().clone(), ["breaker bad/write Closed->Open"]);
    let bad_received = bad.control().stats().received;
    for _ in 0..6 {
        let r = gw.call(ToolCall::new("write", json!({}))).await;
        assert_eq!(endpoints(&r), ["good"], "{r:?}");
        assert!(r.degraded().is_none() && r.outcome().is_ok_and(|r| !r.is_error), "{r:?}");
    }
    assert_eq!(bad.control().stats().received, bad_received, "nothing more reached the open replica");
    // Now `good` fails too: its calls are sent (and fail) until its own breaker opens, and only then is the server's
    // answer degraded.
    good.control().set_error_rate(Some(1.0));
    let mut sent = 0;
    let r = loop {
        let r = gw.call(ToolCall::new("write", json!({}))).await;
        if r.degraded().is_some() || sent == 10 {
            break r;
        }
        assert_eq!(endpoints(&r), ["good"], "{r:?}");
        sent += 1;
    };
    assert_eq!(r.degraded().map(|d| d.reason), Some(DegradedReason::BreakerOpen), "{r:?}");
    assert_eq!(r.attempts().count(), 0);
    assert!(sent >= 1, "good's breaker opened on its own failures");
}

/// A hung replica fills only its own bulkhead: once it holds its quota, calls go to its sibling at once and are
/// answered. With every replica full, a call waits the queue wait and is then degraded `bulkhead_full`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_replica_sends_calls_to_its_sibling_before_anything_is_degraded() {
    use mcpstorm_core::resilience::bulkhead::BulkheadConfig;
    let (hung, hung_addr) = serve(failing_config()).await;
    let (ok, ok_addr) = serve(failing_config()).await;
    let bulkhead = BulkheadConfig { default_max: Some(2), queue_wait: Duration::from_millis(50), ..Default::default() };
    let resilience = ResilienceConfig { bulkhead: Some(bulkhead), ..ResilienceConfig::default() };
    let (gw, seen) = protected(
        vec![ServerSpec::new("s", ["h-0", "o-0"]).with_tools(["write"])],
        BTreeMap::from([("h-0".into(), hung_addr), ("o-0".into(), ok_addr)]),
        resilience,
    );
    let gw = Arc::new(gw);
    // Warm both connections (round robin: h-0, then o-0), then hang h-0 and park calls on it until it is full.
    for _ in 0..2 {
        gw.call(ToolCall::new("write", json!({}))).await.into_outcome().unwrap();
    }
    hung.control().set_hung(true);
    let mut parked = Vec::new();
    let in_flight = |gw: &Gateway, pool: &str| gw.bulkheads().iter().find(|p| p.0 == pool).map_or(0, |p| p.1);
    while in_flight(&gw, "h-0") < 2 {
        let gw = gw.clone();
        parked.push(tokio::spawn(async move { gw.call(ToolCall::new("write", json!({}))).await }));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // h-0 holds its two permits: every further call is answered by o-0, however the router turns.
    for _ in 0..6 {
        let r = gw.call(ToolCall::new("write", json!({}))).await;
        assert_eq!(endpoints(&r), ["o-0"], "{r:?}");
        assert!(r.outcome().is_ok_and(|r| !r.is_error), "{r:?}");
    }
    assert!(seen.0.lock().unwrap().is_empty(), "nothing degraded while o-0 had room");
    // Hang o-0 too and fill it: now no replica has room, and the answer is degraded after the queue wait.
    ok.control().set_hung(true);
    while in_flight(&gw, "o-0") < 2 {
        let gw = gw.clone();
        parked.push(tokio::spawn(async move { gw.call(ToolCall::new("write", json!({}))).await }));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let r = gw.call(ToolCall::new("write", json!({}))).await;
    assert_eq!(r.degraded().map(|d| d.reason), Some(DegradedReason::BulkheadFull), "{r:?}");
    assert_eq!(r.attempts().count(), 0);
    assert_eq!(gw.bulkheads(), vec![("h-0".to_owned(), 2, 2), ("o-0".to_owned(), 2, 2)]);
    for p in parked {
        p.abort();
    }
}

/// Every layer on with its defaults must not throttle a healthy server: 120 concurrent calls to one replica (more
/// than the old fixed cap of 32) are all answered, none degraded, and the bulkhead's limit is the client's cap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_layers_do_not_throttle_a_healthy_server() {
    let (server, addr) = serve(FakeServerConfig::builtin()).await;
    let (gw, seen) = protected(
        vec![ServerSpec::new("s", ["s-0"]).with_tools(["sleep_ms"])],
        BTreeMap::from([("s-0".into(), addr)]),
        ResilienceConfig::protective(),
    );
    let gw = Arc::new(gw);
    let calls: Vec<_> = (0..120)
        .map(|_| {
            let gw = gw.clone();
            tokio::spawn(async move { gw.call(ToolCall::new("sleep_ms", json!({"ms": 300}))).await })
        })
        .collect();
    for c in calls {
        let r = c.await.expect("no panic");
        assert!(r.degraded().is_none() && r.outcome().is_ok_and(|r| !r.is_error), "{r:?}");
    }
    assert!(seen.0.lock().unwrap().is_empty(), "no breaker moved, nothing degraded");
    let cap = mcpstorm_core::ConnectionConfig::default().max_in_flight;
    assert_eq!(gw.bulkheads(), vec![("s-0".to_owned(), 0, cap)]);
    assert!(server.control().stats().received >= 120, "every call reached the server");
}
