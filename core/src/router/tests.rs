//! The router end to end: discovery, exclusions, retries, health and the call path together.

use std::time::Duration;

use tokio::time::Instant;

use super::*;

fn router(formula: &str, servers: Vec<ServerEntry>) -> (Router, Instant) {
    let start = Instant::now();
    let spec: FormulaSpec = formula.parse().unwrap();
    let mut r = Router::new(RouterConfig::default(), spec.build(), SeededRng::new(7), start);
    r.sync(&mut StaticRegistry::new(servers), start);
    (r, start)
}

fn review_servers() -> Vec<ServerEntry> {
    vec![
        ServerEntry::new("py", ["py-1", "py-2"]).with_tools(["review"]).with_support("language_support", ["python"]),
        ServerEntry::new("rs", ["rs-1"]).with_tools(["review", "lint"]).with_support("language_support", ["rust"]),
    ]
}

#[test]
fn requirements_route_only_to_capable_servers() {
    let (mut r, _) = router("random", review_servers());
    let rust = [Requirement::supports("language_support", "rust")];
    for _ in 0..50 {
        let id = r.route(&RouteRequest { tool: "review", requirements: &rust, tried: &[] }).unwrap();
        assert_eq!(r.endpoint(id), Some("rs-1"));
    }
}

#[test]
fn an_empty_set_is_a_typed_error_naming_the_exclusions() {
    let (mut r, _) = router("health_weighted", review_servers());
    let go = [Requirement::supports("language_support", "go")];
    let err = r.route(&RouteRequest { tool: "review", requirements: &go, tried: &[] }).unwrap_err();
    let RouteError::NoCandidate { tool, excluded } = &err else { panic!("{err:?}") };
    assert_eq!(tool, "review");
    assert_eq!(excluded.len(), 3, "every replica is named: {err}");
    assert!(err.to_string().contains("py/py-2: does not meet language_support ∋ go"), "{err}");
    assert_eq!(r.route(&RouteRequest::new("deploy")).unwrap_err(), RouteError::UnknownTool { tool: "deploy".into() });
}

#[test]
fn a_retry_avoids_tried_replicas_while_others_remain() {
    let (mut r, _) = router("best_score", review_servers());
    let first = r.route(&RouteRequest::new("review")).unwrap();
    for _ in 0..20 {
        let again = r.route(&RouteRequest { tool: "review", requirements: &[], tried: &[first] }).unwrap();
        assert_ne!(again, first);
    }
    let all = r.replicas_for("review").to_vec();
    assert!(r.route(&RouteRequest { tool: "review", requirements: &[], tried: &all }).is_ok(), "all tried: reuse one");
}

#[test]
fn three_failed_checks_zero_a_replica_and_one_success_restores_it() {
    let (mut r, start) = router("round_robin", review_servers());
    let mut probes = Vec::new();
    let mut t = start;
    let rs1 = r.replica_id("rs-1").unwrap();
    for round in 0..3 {
        probes.clear();
        r.due_checks(t, &mut probes);
        assert_eq!(probes.len(), 3, "one ping per replica every interval (round {round})");
        let probe = probes.iter().find(|p| p.replica == "rs-1").unwrap();
        assert_eq!(probe.check, HealthCheck::ping());
        r.record_check(probe.id, false, t);
        t += r.config().check_interval;
    }
    let err = r.route(&RouteRequest::new("lint")).unwrap_err();
    assert!(err.to_string().contains("rs/rs-1: unhealthy (3 failed health checks in a row)"), "{err}");
    for _ in 0..10 {
        assert_ne!(r.route(&RouteRequest::new("review")).unwrap(), rs1);
    }
    r.record_check(ProbeId { replica: rs1, check: 0 }, true, t);
    assert_eq!(r.route(&RouteRequest::new("lint")).unwrap(), rs1);
    r.refresh(t);
    assert!((r.stats(rs1).unwrap().uptime - 0.25).abs() < 1e-12, "1 of 4 checks succeeded");
}

#[test]
fn a_capability_check_zeroes_only_its_tool() {
    let mut rs = ServerEntry::new("rs", ["rs-1"]).with_tools(["review", "lint"]);
    rs.checks = vec![HealthCheck::tool("review", "review_health", serde_json::json!({"code": ""}))];
    let (mut r, start) = router("random", vec![rs]);
    let mut probes = Vec::new();
    for i in 0..3 {
        probes.clear();
        let t = start + r.config().check_interval * i;
        r.due_checks(t, &mut probes);
        assert_eq!(probes[0].check.tool.as_deref(), Some("review_health"));
        r.record_check(probes[0].id, false, t);
    }
    assert!(matches!(r.route(&RouteRequest::new("review")), Err(RouteError::NoCandidate { .. })));
    assert!(r.route(&RouteRequest::new("lint")).is_ok(), "the process is fine; only review is broken");
}

#[test]
fn leave_and_join_change_the_candidates_and_keep_statistics() {
    let (mut r, start) = router("random", review_servers());
    let rs1 = r.replica_id("rs-1").unwrap();
    r.call_started(rs1);
    r.call_finished(rs1, false, Duration::from_millis(5), start);
    r.apply(RegistryEvent::Leave("rs".into()), start);
    assert_eq!(r.route(&RouteRequest::new("lint")), Err(RouteError::UnknownTool { tool: "lint".into() }));
    assert_eq!(r.replicas_for("review").len(), 2);
    r.apply(RegistryEvent::Join(review_servers().remove(1)), start);
    assert_eq!(r.route(&RouteRequest::new("lint")), Ok(rs1), "same id back");
    r.refresh(start);
    assert_eq!(r.stats(rs1).unwrap().error_rate, 1.0, "its statistics survived the absence");
}

#[test]
fn a_replica_dropped_from_its_server_stops_being_a_candidate() {
    let (mut r, start) = router("round_robin", review_servers());
    let py2 = r.replica_id("py-2").unwrap();
    let mut shrunk = review_servers().remove(0);
    shrunk.replicas.pop();
    r.apply(RegistryEvent::Join(shrunk), start);
    let py = [Requirement::supports("language_support", "python")];
    for _ in 0..10 {
        assert_ne!(r.route(&RouteRequest { tool: "review", requirements: &py, tried: &[] }).unwrap(), py2);
    }
}

#[test]
fn a_leaving_server_does_not_take_a_replica_another_server_claimed() {
    let (mut r, start) = router("random", review_servers());
    let moved = ServerEntry::new("rs2", ["rs-1"]).with_tools(["lint"]);
    r.apply(RegistryEvent::Join(moved), start);
    r.apply(RegistryEvent::Leave("rs".into()), start);
    assert_eq!(r.route(&RouteRequest::new("lint")).map(|id| r.server_of(id).unwrap().name.clone()), Ok("rs2".into()));
}

#[test]
fn in_flight_is_live_and_capacity_follows_it() {
    let mut s = ServerEntry::new("a", ["a-1"]).with_tools(["t"]);
    s.hints.max_concurrent_requests = Some(4);
    let (mut r, _) = router("least_outstanding", vec![s]);
    let id = r.replica_id("a-1").unwrap();
    r.call_started(id);
    r.call_started(id);
    assert_eq!(r.stats(id).unwrap().capacity, 0.5, "without a refresh");
}

#[test]
fn p2c_sees_a_latency_spike_on_the_first_slow_response() {
    let servers = vec![ServerEntry::new("a", ["a-1", "a-2"]).with_tools(["t"])];
    let (mut r, start) = router("p2c_peak_ewma", servers);
    let slow = r.replica_id("a-1").unwrap();
    let fast = r.replica_id("a-2").unwrap();
    r.call_finished(fast, true, Duration::from_millis(10), start + Duration::from_secs(30));
    r.call_finished(slow, true, Duration::from_secs(2), start + Duration::from_secs(30));
    for _ in 0..20 {
        assert_eq!(r.route(&RouteRequest::new("t")).unwrap(), fast);
    }
}

/// A checker whose `ping` fails for the endpoints listed, and hangs forever for `hang`.
#[derive(Debug)]
struct FakeChecker {
    failing: Vec<&'static str>,
    hang: &'static str,
}

impl HealthChecker for FakeChecker {
    fn check(&self, probe: &Probe) -> CheckFuture {
        let ok = !self.failing.contains(&probe.replica.as_str());
        let hang = probe.replica == self.hang;
        Box::pin(async move {
            if hang {
                std::future::pending::<()>().await;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            ok
        })
    }
}

#[tokio::test(start_paused = true)]
async fn the_health_task_zeroes_failing_and_hanging_replicas_on_tokio_time() {
    use std::sync::{Arc, Mutex};

    let servers = vec![ServerEntry::new("a", ["a-1", "a-2", "a-3"]).with_tools(["t"])];
    let (r, _) = router("round_robin", servers);
    let router = Arc::new(Mutex::new(r));
    let cancel = crate::CancelToken::new();
    let task = tokio::spawn(run_health_checks(
        router.clone(),
        Arc::new(FakeChecker { failing: vec!["a-1"], hang: "a-2" }),
        Arc::new(crate::rt::TokioClock::new(0)),
        Duration::from_secs(1),
        Arc::new(crate::NoopObserver),
        cancel.clone(),
    ));
    let routed = |router: &Arc<Mutex<Router>>| {
        let mut r = router.lock().unwrap();
        let mut seen: Vec<String> = (0..6)
            .map(|_| {
                let id = r.route(&RouteRequest::new("t")).unwrap();
                r.endpoint(id).unwrap().to_owned()
            })
            .collect();
        seen.sort();
        seen.dedup();
        seen
    };
    // Checks at 0, 15 and 30 s; the third failure lands 20 ms (or, hanging, 5 s) after the third start.
    tokio::time::sleep(Duration::from_secs(29)).await;
    assert_eq!(routed(&router), ["a-1", "a-2", "a-3"], "two strikes are not out");
    tokio::time::sleep(Duration::from_secs(7)).await;
    assert_eq!(routed(&router), ["a-3"], "a failing and a hanging replica are both out after 3 checks");
    cancel.cancel("test over");
    task.await.unwrap();
}
