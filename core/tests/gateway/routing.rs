//! Routing through the gateway: formulas and the capability matrix, extra requirements, prepared arguments, in-flight
//! accounting, and active health checks.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mcpstorm_core::router::{
    ExclusionReason, FormulaSpec, Requirement, RouteError, Router, RouterConfig, ServerEntry, StaticRegistry,
};
use mcpstorm_core::{CallError, CancelToken, LocalError};
use mcpstorm_core::{Gateway, GatewayConfig, ToolCall};
use mcpstorm_core::{SeededRng, TokioClock};
use mcpstorm_fake::{FakeServer, FakeServerConfig};
use serde_json::json;

use super::{Pipes, fake, settle};

fn gateway(
    servers: Vec<ServerEntry>,
    fakes: BTreeMap<String, FakeServer>,
    formula: &str,
    config: RouterConfig,
) -> Gateway {
    let clock = Arc::new(TokioClock::new(0));
    let spec: FormulaSpec = formula.parse().expect("a built-in formula");
    let router = Router::new(config, spec.build(), SeededRng::new(7), tokio::time::Instant::now());
    let gw_config = GatewayConfig {
        refresh_every: Duration::from_millis(20),
        requirement_rules: vec![("language".into(), "language_support".into())],
        ..GatewayConfig::default()
    };
    let registry = Box::new(StaticRegistry::new(servers));
    Gateway::new(router, registry, Arc::new(Pipes(fakes)), clock, gw_config, SeededRng::new(11))
}

/// A built-in fake server behind each endpoint.
fn builtin_fakes<const N: usize>(endpoints: [&str; N]) -> BTreeMap<String, FakeServer> {
    endpoints.into_iter().map(|e| (e.to_owned(), fake(FakeServerConfig::builtin()))).collect()
}

/// Two servers offering `echo`: `py` reviews python only, `multi` python and rust. Round robin alternates between
/// the eligible replicas; a rust request only ever reaches `multi`; a go request has no candidate and says why.
#[tokio::test(start_paused = true)]
async fn routes_by_formula_and_capability_matrix() {
    let servers = vec![
        ServerEntry::new("py", ["py-0"]).with_tools(["echo"]).with_support("language_support", ["python"]),
        ServerEntry::new("multi", ["multi-0"])
            .with_tools(["echo"])
            .with_support("language_support", ["python", "rust"]),
    ];
    let fakes = builtin_fakes(["py-0", "multi-0"]);
    let gw = gateway(servers, fakes, "round_robin", RouterConfig::default());

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
#[tokio::test(start_paused = true)]
async fn extra_requirements_pin_a_call_to_tagged_servers() {
    let mut b = ServerEntry::new("b", ["b-0"]).with_tools(["echo"]);
    b.tags.insert("server:b".into());
    let servers = vec![ServerEntry::new("a", ["a-0"]).with_tools(["echo"]), b];
    let fakes = builtin_fakes(["a-0", "b-0"]);
    let gw = gateway(servers, fakes, "round_robin", RouterConfig::default());
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
#[tokio::test(start_paused = true)]
async fn prepared_arguments_come_from_the_chosen_replica() {
    let servers = vec![
        ServerEntry::new("a", ["a-0"]).with_tools(["echo"]).with_support("language_support", ["python"]),
        ServerEntry::new("b", ["b-0"]).with_tools(["echo"]).with_support("language_support", ["rust"]),
    ];
    let fakes = builtin_fakes(["a-0", "b-0"]);
    let gw = gateway(servers, fakes, "round_robin", RouterConfig::default());
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
#[tokio::test(start_paused = true)]
async fn in_flight_accounting_survives_every_ending() {
    let servers = vec![ServerEntry::new("s", ["s-0"]).with_tools(["echo", "sleep_ms"])];
    let gw = Arc::new(gateway(servers, builtin_fakes(["s-0"]), "p2c_peak_ewma", RouterConfig::default()));
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
    // The server answers after 5 s: once the call has gone as far as it can before that, it holds its slot.
    settle().await;
    assert!(in_flight(&gw) >= 1.0, "the slow call never started");
    slow.abort();
    let _ = slow.await;
    assert_eq!(in_flight(&gw), 0.0, "a dropped call kept its in-flight slot");
    gw.with_router(|r| r.refresh(tokio::time::Instant::now()));
    let stats = gw.with_router(|r| r.stats(r.replica_id("s-0").unwrap()).unwrap());
    assert_eq!(stats.error_rate, 0.0, "the caller's invalid arguments counted against the replica");
}

/// A replica whose server is gone fails its pings; after three strikes the router stops sending calls there,
/// through the gateway's background task and its own clients.
#[tokio::test(start_paused = true)]
async fn health_checks_take_a_dead_replica_out() {
    // `dead` has no server: every dial to it is refused.
    let fakes = builtin_fakes(["live"]);
    let servers = vec![ServerEntry::new("s", ["live", "dead"]).with_tools(["echo"])];
    let check_interval = Duration::from_millis(30);
    let config = RouterConfig { check_interval, ..RouterConfig::default() };
    let gw = Arc::new(gateway(servers, fakes, "round_robin", config));
    let cancel = CancelToken::new();
    let background = tokio::spawn(gw.clone().run_background(cancel.clone()));

    // Round robin would send every other call to the dead replica (and fail it); ten check intervals on, its three
    // strikes are in and eight calls in a row all land on the live one.
    tokio::time::sleep(check_interval * 10).await;
    for _ in 0..8 {
        let a = gw.call_unprotected(ToolCall::new("echo", json!({"message": "x"}))).await.unwrap();
        assert!(&*a.endpoint == "live" && a.outcome.is_ok(), "the dead replica was never taken out: {}", a.endpoint);
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
