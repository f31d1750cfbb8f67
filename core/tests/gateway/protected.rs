//! The protected path: breakers, retries, budgets, bulkheads and degraded results, per replica.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpstorm_core::CallError;
use mcpstorm_core::resilience::Backoff;
use mcpstorm_core::resilience::BudgetConfig;
use mcpstorm_core::resilience::DegradedReason;
use mcpstorm_core::resilience::RetryPolicy;
use mcpstorm_core::resilience::{BreakerConfig, BreakerState, WindowConfig};
use mcpstorm_core::router::{FormulaSpec, Router, RouterConfig, ServerEntry, StaticRegistry};
use mcpstorm_core::{Event, Observer};
use mcpstorm_core::{Gateway, GatewayConfig, ResilienceConfig, Routed, ToolCall};
use mcpstorm_core::{SeededRng, TokioClock};
use mcpstorm_fake::{FakeServer, FakeServerConfig};
use serde_json::json;

use super::{Pipes, SharedPipes, fake, settle};

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
            Event::Degraded { tool, reason } => format!("degraded {tool} {}", <&str>::from(reason)),
            _ => return,
        };
        self.0.lock().expect("not poisoned").push(line);
    }
}

fn protected(
    servers: Vec<ServerEntry>,
    fakes: BTreeMap<String, FakeServer>,
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
    let gw = Gateway::new(router, registry, Arc::new(Pipes(fakes)), clock, config, SeededRng::new(11))
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

/// A breaker that opens after four calls in a count window of ten, for 30 s.
fn opens_after_four() -> BreakerConfig {
    BreakerConfig {
        window: WindowConfig::Count { size: 10 },
        minimum_calls: 4,
        open: Duration::from_secs(30),
        ..BreakerConfig::default()
    }
}

/// A one-replica server that fails every call, behind a gateway whose only layer is `breaker`.
fn failing_behind_a_breaker(breaker: BreakerConfig) -> (FakeServer, Gateway, Arc<Seen>) {
    let server = fake(failing_config());
    server.control().set_error_rate(Some(1.0));
    let resilience = ResilienceConfig { breaker: Some(breaker), ..ResilienceConfig::default() };
    let (gw, seen) = protected(
        vec![ServerEntry::new("s", ["s-0"]).with_tools(["echo"])],
        BTreeMap::from([("s-0".into(), server.clone())]),
        resilience,
    );
    (server, gw, seen)
}

/// A failing server trips its (replica, tool) breaker after the minimum number of calls; from then on the gateway
/// answers with a degraded result naming the reason, without sending anything (probing switched off: see the next
/// test for what probes do).
#[tokio::test(start_paused = true)]
async fn an_open_breaker_answers_degraded_without_calling() {
    let (server, gw, seen) = failing_behind_a_breaker(BreakerConfig { probe_interval: None, ..opens_after_four() });
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
    assert_eq!(gw.breakers()[0].1.state(), BreakerState::Open);
    let seen = seen.0.lock().unwrap().clone();
    assert_eq!(seen, ["breaker s-0/echo Closed->Open", "degraded echo breaker_open"]);
}

/// An open breaker lets one call through per probe interval, and only that one: the rest are degraded without being
/// sent. Once the server answers again, the first probe after that moves the breaker to half-open and the next
/// successes close it, long before its 30 s open period ends.
#[tokio::test(start_paused = true)]
async fn an_open_breaker_probes_once_per_interval_and_closes_when_the_server_answers() {
    let probing =
        BreakerConfig { probe_interval: Some(Duration::from_millis(50)), half_open_probes: 2, ..opens_after_four() };
    let (server, gw, seen) = failing_behind_a_breaker(probing);
    for _ in 0..4 {
        let _ = gw.call(ToolCall::new("echo", json!({"message": "x"}))).await;
    }
    assert_eq!(gw.breakers()[0].1.state(), BreakerState::Open);
    // Within one interval: one probe is sent (and fails), the other calls are degraded unsent.
    let received = server.control().stats().received;
    let rounds: Vec<_> = calls_now(&gw, 5).await;
    assert_eq!(rounds.iter().filter(|r| r.degraded().is_none()).count(), 1, "one probe per interval");
    assert_eq!(server.control().stats().received, received + 1);
    // The server is well again; the next interval's probe succeeds and closes the breaker (2 probes: it and one more).
    server.control().set_error_rate(None);
    tokio::time::sleep(Duration::from_millis(60)).await;
    for _ in 0..2 {
        let r = gw.call(ToolCall::new("echo", json!({"message": "y"}))).await;
        assert!(r.degraded().is_none() && r.outcome().is_ok_and(|r| !r.is_error), "{r:?}");
    }
    assert_eq!(gw.breakers()[0].1.state(), BreakerState::Closed);
    let seen = seen.0.lock().unwrap().clone();
    assert!(seen.contains(&"breaker s-0/echo Open->HalfOpen".to_owned()), "{seen:?}");
}

/// `n` calls one after the other (no simulated time passes between them: the fake answers at once).
async fn calls_now(gw: &Gateway, n: usize) -> Vec<Routed> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(gw.call(ToolCall::new("echo", json!({"message": "x"}))).await);
    }
    out
}

/// An idempotent tool that fails on one replica is retried on the other; a tool without idempotency annotations is
/// not retried at all.
#[tokio::test(start_paused = true)]
async fn idempotent_calls_retry_on_another_replica_and_others_do_not() {
    let bad = fake(failing_config());
    let good = fake(failing_config());
    bad.control().set_error_rate(Some(1.0));
    let resilience = ResilienceConfig { retry: Some(fast_retries(3)), ..ResilienceConfig::default() };
    let (gw, _) = protected(
        vec![ServerEntry::new("s", ["bad", "good"]).with_tools(["echo", "write"])],
        BTreeMap::from([("bad".into(), bad), ("good".into(), good)]),
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
#[tokio::test(start_paused = true)]
async fn a_spent_budget_degrades_and_the_naive_gateway_just_fails() {
    let server = fake(failing_config());
    server.control().set_error_rate(Some(1.0));
    // Two replicas, both failing: a retry on the other would be possible, but the budget is spent.
    let spec = || vec![ServerEntry::new("s", ["s-0", "s-1"]).with_tools(["echo"])];
    let fakes = || BTreeMap::from([("s-0".into(), server.clone()), ("s-1".into(), server.clone())]);
    let empty = BudgetConfig { ratio: 0.0, min_per_second: 0.0, ..BudgetConfig::default() };
    let resilience =
        ResilienceConfig { retry: Some(fast_retries(5)), budget: Some(empty), ..ResilienceConfig::default() };
    let (gw, _) = protected(spec(), fakes(), resilience);
    // Warm the client's tool list so the first failure can tell the tool is idempotent.
    gw.call_unprotected(ToolCall::new("echo", json!({"message": "warm"}))).await.unwrap();
    let r = gw.call(ToolCall::new("echo", json!({"message": "x"}))).await;
    assert_eq!(r.attempts().count(), 1);
    assert_eq!(r.degraded().map(|d| d.reason), Some(DegradedReason::BudgetExhausted));

    let (naive, _) = protected(spec(), fakes(), ResilienceConfig::default());
    let r = naive.call(ToolCall::new("echo", json!({"message": "x"}))).await;
    assert_eq!(r.attempts().count(), 1);
    assert!(r.degraded().is_none() && matches!(r.into_outcome(), Err(CallError::Protocol(_))));
}

/// Warms the connection to `hung` with one `write`, hangs it, and parks `n` more `write`s on it.
/// Warms one connection to each of `hung` (one call each: the router takes turns), hangs them all, then parks `n`
/// calls on them.
async fn park_on_hung(gw: &Arc<Gateway>, hung: &[FakeServer], n: usize) -> Vec<tokio::task::JoinHandle<Routed>> {
    for _ in hung {
        gw.call(ToolCall::new("write", json!({}))).await.into_outcome().expect("the warm-up call is answered");
    }
    hung.iter().for_each(|h| h.control().set_hung(true));
    let parked = (0..n)
        .map(|_| {
            let gw = gw.clone();
            tokio::spawn(async move { gw.call(ToolCall::new("write", json!({}))).await })
        })
        .collect();
    settle().await;
    parked
}

/// A hung server fills only its own bulkhead: its next callers get a degraded `bulkhead_full` after the queue wait,
/// while calls to a healthy server are admitted and answered as if the hung one did not exist.
#[tokio::test(start_paused = true)]
async fn a_hung_server_fills_only_its_own_bulkhead() {
    use mcpstorm_core::resilience::BulkheadConfig;
    let hung = fake(failing_config());
    let bulkhead =
        BulkheadConfig { max_concurrent: Some(2), queue_wait: Some(Duration::from_millis(50)), ..Default::default() };
    let resilience = ResilienceConfig { bulkhead: Some(bulkhead), ..ResilienceConfig::default() };
    let (gw, seen) = protected(
        vec![
            ServerEntry::new("hung", ["h-0"]).with_tools(["write"]),
            ServerEntry::new("ok", ["o-0"]).with_tools(["echo"]),
        ],
        BTreeMap::from([("h-0".into(), hung.clone()), ("o-0".into(), fake(failing_config()))]),
        resilience,
    );
    let gw = Arc::new(gw);
    // Warm the hung server's connection, then hang it and park two calls on it: its whole quota.
    let parked = park_on_hung(&gw, std::slice::from_ref(&hung), 2).await;
    assert!(hung.control().stats().received >= 3, "the parked calls never reached the hung server");
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
#[tokio::test(start_paused = true)]
async fn a_remote_open_is_followed_without_local_failures() {
    use mcpstorm_core::resilience::TransitionReason;
    let server = fake(failing_config());
    let spec = || vec![ServerEntry::new("s", ["s-0"]).with_tools(["echo"])];
    let fakes = || BTreeMap::from([("s-0".into(), server.clone())]);
    // Probing off: the first call after the remote open would otherwise be this node's probe.
    let breaker = BreakerConfig { probe_interval: None, ..BreakerConfig::default() };
    let resilience = ResilienceConfig { breaker: Some(breaker), ..ResilienceConfig::default() };
    let (gw, seen) = protected(spec(), fakes(), resilience);
    let t = gw.follow_remote_open("s-0", "echo", Duration::from_secs(30), false).expect("a transition");
    assert_eq!((t.to, t.reason), (BreakerState::Open, TransitionReason::Remote));
    assert!(gw.follow_remote_open("s-0", "echo", Duration::from_secs(30), false).is_none(), "already open");
    let r = gw.call(ToolCall::new("echo", json!({"message": "x"}))).await;
    assert_eq!(r.degraded().map(|d| d.reason), Some(DegradedReason::BreakerOpen));
    assert_eq!(server.control().stats().received, 0);
    assert_eq!(seen.0.lock().unwrap()[0], "breaker s-0/echo Closed->Open");
    let (naive, _) = protected(spec(), fakes(), ResilienceConfig::default());
    assert!(naive.follow_remote_open("s-0", "echo", Duration::from_secs(30), false).is_none());
}

/// Protection is per replica: a failing replica's breaker opens for it alone, and from then on its calls go to its
/// healthy sibling — answered, not degraded. Only when every replica's breaker is open is the answer degraded.
#[tokio::test(start_paused = true)]
async fn an_open_breaker_on_one_replica_sends_calls_to_its_sibling() {
    let bad = fake(failing_config());
    let good = fake(failing_config());
    bad.control().set_error_rate(Some(1.0));
    let breaker = BreakerConfig {
        window: WindowConfig::Count { size: 10 },
        minimum_calls: 2,
        open: Duration::from_secs(30),
        ..BreakerConfig::default()
    };
    let resilience = ResilienceConfig { breaker: Some(breaker), ..ResilienceConfig::default() };
    let (gw, seen) = protected(
        vec![ServerEntry::new("s", ["bad", "good"]).with_tools(["write"])],
        BTreeMap::from([("bad".into(), bad.clone()), ("good".into(), good.clone())]),
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
        // Once both are open, the first call is the server's probe (to either replica); before, `bad` gets none.
        let both_open = gw.breakers().iter().all(|(_, g)| g.state() == BreakerState::Open);
        let r = gw.call(ToolCall::new("write", json!({}))).await;
        if r.degraded().is_some() || sent == 10 {
            break r;
        }
        if !both_open {
            assert_eq!(endpoints(&r), ["good"], "{r:?}");
        }
        sent += 1;
    };
    assert_eq!(r.degraded().map(|d| d.reason), Some(DegradedReason::BreakerOpen), "{r:?}");
    assert_eq!(r.attempts().count(), 0);
    assert!(sent >= 1, "good's breaker opened on its own failures");
}

/// A hung replica fills only its own bulkhead: once it holds its quota, calls go to its sibling at once and are
/// answered. With every replica full, a call waits the queue wait and is then degraded `bulkhead_full`.
#[tokio::test(start_paused = true)]
async fn a_full_replica_sends_calls_to_its_sibling_before_anything_is_degraded() {
    use mcpstorm_core::resilience::BulkheadConfig;
    let hung = fake(failing_config());
    let ok = fake(failing_config());
    let bulkhead =
        BulkheadConfig { max_concurrent: Some(2), queue_wait: Some(Duration::from_millis(50)), ..Default::default() };
    let resilience = ResilienceConfig { bulkhead: Some(bulkhead), ..ResilienceConfig::default() };
    let (gw, seen) = protected(
        vec![ServerEntry::new("s", ["h-0", "o-0"]).with_tools(["write"])],
        BTreeMap::from([("h-0".into(), hung.clone()), ("o-0".into(), ok.clone())]),
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
        settle().await;
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
        settle().await;
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
#[tokio::test(start_paused = true)]
async fn the_default_layers_do_not_throttle_a_healthy_server() {
    let server = fake(FakeServerConfig::builtin());
    let (gw, seen) = protected(
        vec![ServerEntry::new("s", ["s-0"]).with_tools(["sleep_ms"])],
        BTreeMap::from([("s-0".into(), server.clone())]),
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

/// After the traffic stops, the gateway holds nothing: no bulkhead permit, no routed call, no pending request. The
/// planted defect (a test-only switch) keeps a permit per failed call, and the snapshot shows it.
#[tokio::test(start_paused = true)]
async fn every_call_gives_back_what_it_took_unless_the_planted_leak_is_on() {
    use mcpstorm_core::gateway::InFlightSnapshot;
    use mcpstorm_core::resilience::BulkheadConfig;
    for leak in [false, true] {
        let server = fake(failing_config());
        let bulkhead = BulkheadConfig { leak_permit_on_replica_failure: leak, ..Default::default() };
        let resilience = ResilienceConfig { bulkhead: Some(bulkhead), ..ResilienceConfig::default() };
        let (gw, _) = protected(
            vec![ServerEntry::new("s", ["s-0"]).with_tools(["echo"])],
            BTreeMap::from([("s-0".into(), server.clone())]),
            resilience,
        );
        for i in 0..6 {
            server.control().set_error_rate((i % 2 == 1).then_some(1.0));
            let _ = gw.call(ToolCall::new("echo", json!({"message": "x"}))).await;
        }
        let snapshot = gw.in_flight_snapshot();
        let expected = InFlightSnapshot { bulkhead_permits: if leak { 3 } else { 0 }, ..InFlightSnapshot::default() };
        assert_eq!(snapshot, expected, "leak = {leak}");
    }
}

/// Clients sharing one in-flight limit: a hung server may borrow every slot but the other server's floor (a quarter
/// of the slots: half of them split between the two servers, kept whole for a server that has not called yet), so
/// the other server's calls still find slots and are answered, and the hung server's extra callers are declined
/// instead of taking the rest. With two replicas (a partition cuts off both at once), their pools share the same
/// borrowed slots.
#[tokio::test(start_paused = true)]
async fn a_hung_server_cannot_hold_every_shared_slot() {
    for replicas in [1, 2] {
        let hung: Vec<FakeServer> = (0..replicas).map(|_| fake(failing_config())).collect();
        let endpoints: Vec<String> = (0..replicas).map(|r| format!("h-{r}")).collect();
        let gw = shared_slots_gateway(&endpoints, &hung);
        let parked = park_on_hung(&gw, &hung, 8).await;
        // The parked calls that found no slot wait the 50 ms queue wait, then are declined.
        tokio::time::sleep(Duration::from_millis(60)).await;
        let per_pool = 6 / replicas;
        let expected: Vec<_> = endpoints.iter().map(|e| (e.clone(), per_pool, 8)).collect();
        assert_eq!(gw.bulkheads(), expected, "all but the other server's floor of two, {replicas} replica(s)");
        // At once (paused time: a call that had to wait for the hung calls' slots would wait for their timeouts).
        for i in 0..5 {
            let call = gw.call(ToolCall::new("echo", json!({"message": format!("m{i}")})));
            let r =
                tokio::time::timeout(Duration::from_millis(100), call).await.expect("not held up by the hung server");
            assert_eq!(r.into_outcome().unwrap().joined_text(), format!("m{i}"), "{replicas} replica(s)");
        }
        parked.into_iter().for_each(|p| p.abort());
    }
}

/// A gateway over a `hung` server (its replicas at `endpoints`) and an `ok` one, whose clients share 8 in-flight
/// slots; bulkheads wait 50 ms for room.
fn shared_slots_gateway(endpoints: &[String], hung: &[FakeServer]) -> Arc<Gateway> {
    use mcpstorm_core::resilience::{BulkheadConfig, InFlightLimit};
    let bulkhead = BulkheadConfig { queue_wait: Some(Duration::from_millis(50)), ..Default::default() };
    let resilience = ResilienceConfig { bulkhead: Some(bulkhead), ..ResilienceConfig::default() };
    let mut fakes: BTreeMap<String, FakeServer> = endpoints.iter().cloned().zip(hung.iter().cloned()).collect();
    fakes.insert("o-0".into(), fake(failing_config()));
    let router = Router::new(
        RouterConfig::default(),
        FormulaSpec::RoundRobin.build(),
        SeededRng::new(3),
        tokio::time::Instant::now(),
    );
    let registry = Box::new(StaticRegistry::new(vec![
        ServerEntry::new("hung", endpoints.iter().map(String::as_str)).with_tools(["write"]),
        ServerEntry::new("ok", ["o-0"]).with_tools(["echo"]),
    ]));
    let connector = Arc::new(SharedPipes(fakes, InFlightLimit::new(8)));
    let config = GatewayConfig { resilience, ..GatewayConfig::default() };
    Arc::new(Gateway::new(router, registry, connector, Arc::new(TokioClock::new(0)), config, SeededRng::new(1)))
}
