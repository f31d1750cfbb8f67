//! Routing in the simulator: load hosts route through the core's gateway. Calls that need a capability reach only
//! servers that have it (and a gateway without the requirement rule is caught by the independent misroute count),
//! and on the latency-spike experiment p2c routes around the slow replica that round robin keeps feeding.

use std::path::PathBuf;

use serde_json::Value;

use crate::common::mcpstorm;

fn scratch(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("routing").join(name)
}

/// Runs a scenario into a scratch directory: the exit code and `summary.json`.
fn sim(scenario: &str, name: &str, sets: &[&str]) -> (Option<i32>, Value) {
    let out = scratch(name);
    let out_arg = out.to_string_lossy().into_owned();
    let mut args = vec!["sim", scenario, "--out", &out_arg];
    for s in sets {
        args.extend(["--set", s]);
    }
    let o = mcpstorm(&args);
    let text = std::fs::read_to_string(out.join("summary.json"))
        .unwrap_or_else(|e| panic!("{name}: no summary.json ({e}): {}", String::from_utf8_lossy(&o.stderr)));
    (o.status.code(), serde_json::from_str(&text).expect("summary.json parses"))
}

fn failed(summary: &Value) -> Vec<String> {
    summary["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["passed"] == false)
        .filter_map(|c| c["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn capability_routing_has_no_misroutes_and_a_gateway_without_the_rule_fails_its_check() {
    let (code, good) = sim("scenarios/capability_routing.toml", "capability", &[]);
    assert_eq!(code, Some(0), "{good}");
    assert_eq!(good["totals"]["misroutes"], 0, "{good}");
    assert_eq!(good["formula"], "health_weighted");
    let calls = good["totals"]["replica_calls"].as_object().expect("per-replica counts");
    // Every server served (go-review after it joined, poly-review before it left), all six replicas.
    for replica in ["py-review-0", "py-review-1", "rust-review-0", "rust-review-1", "poly-review-0", "go-review-0"] {
        assert!(calls.get(replica).and_then(Value::as_u64).is_some_and(|n| n > 0), "{replica} idle: {calls:?}");
    }
    let total: u64 = calls.values().filter_map(Value::as_u64).sum();
    assert_eq!(total, good["totals"]["attempts"].as_u64().unwrap(), "every attempt is counted on one replica");

    // The same story with a gateway that was never told `language` is a requirement.
    let (code, bad) = sim("scenarios/capability_routing.toml", "capability-no-rule", &["gateway.requirements=[]"]);
    assert_eq!(code, Some(1), "{bad}");
    assert!(bad["totals"]["misroutes"].as_u64().is_some_and(|m| m > 100), "{bad}");
    assert_eq!(failed(&bad), ["misroutes"], "{bad}");
}

/// A pinned mix entry (`server = ...`) stays on its server: the misroute count would show a `lint` call on
/// `poly-review`, which offers `lint` too.
#[test]
fn a_mix_entry_naming_a_server_stays_on_it() {
    let sets = ["load.mix[0].weight=0.01", "load.mix[1].weight=0.01", "load.mix[2].weight=0.01", "load.rate=20.0"];
    let (code, s) = sim("scenarios/capability_routing.toml", "pinned", &sets);
    assert_eq!(code, Some(0), "{s}");
    assert_eq!(s["totals"]["misroutes"], 0, "{s}");
    let calls = s["totals"]["replica_calls"].as_object().expect("per-replica counts");
    let py: u64 = ["py-review-0", "py-review-1"].iter().filter_map(|r| calls.get(*r)?.as_u64()).sum();
    assert!(py as f64 > 0.9 * s["totals"]["attempts"].as_f64().unwrap(), "{calls:?}");
}

/// The Linkerd experiment, shortened: one replica of ten gets +2 s for 15 s of 40.
const SHORT_SPIKE: [&str; 4] = ["duration=40s", "faults[0].start=10s", "faults[0].duration=15s", "load.rate=50.0"];

/// Routing alone (the naive profile: no breaker or bulkhead steers calls away). Round robin sends the slow replica a
/// tenth of the calls, so more than 1% of the run takes 2 s; p2c_peak_ewma sees the first slow answers and routes
/// around it. Simulated time is deterministic, so this is a behavioural assertion on a fixed seed, not a timing one.
#[test]
fn p2c_holds_the_p99_that_round_robin_loses_to_a_slow_replica() {
    let alone = ["gateway.profile=naive", "report={}", "checks={}"];
    let short: Vec<&str> = SHORT_SPIKE.iter().chain(&alone).copied().collect();
    let run = |formula: &str| {
        let set = format!("gateway.formula={formula}");
        let sets: Vec<&str> = short.iter().copied().chain([set.as_str()]).collect();
        let (code, s) = sim("scenarios/latency_spike.toml", formula, &sets);
        assert_eq!(code, Some(0), "{s}");
        assert_eq!(s["formula"], formula);
        s
    };
    let (rr, p2c) = (run("round_robin"), run("p2c_peak_ewma"));
    let p99 = |s: &Value| s["totals"]["p99_ms"].as_f64().unwrap();
    assert!(p99(&rr) > 2000.0, "round robin's P99 should be the spike: {}", p99(&rr));
    assert!(p99(&p2c) < 200.0, "p2c's P99 should stay near the healthy replicas': {}", p99(&p2c));
    let share = |s: &Value| {
        let calls = s["totals"]["replica_calls"].as_object().unwrap();
        calls["api-3"].as_f64().unwrap() / calls.values().filter_map(Value::as_f64).sum::<f64>()
    };
    assert!((share(&rr) - 0.1).abs() < 0.01, "round robin gives every replica a tenth: {}", share(&rr));
    assert!(share(&p2c) < 0.08, "p2c starves the slow replica: {}", share(&p2c));
}

/// Protection per replica: under the default gateway, the formulas that send the slow replica its share anyway
/// (round robin, and the linear health score) answer nothing degraded and keep the P99 no higher than the naive
/// gateway's on the same seed: the scenario's own checks (`degraded = 0`, `contrast_p99_ratio = 1.0`, against its
/// `[report] contrast = "naive"` run) pass. The health score is asked for by its old name, which still loads and is
/// reported under the canonical one.
#[test]
fn the_default_gateway_never_does_worse_than_naive_on_one_slow_replica() {
    for (formula, reported) in [("round_robin", "round_robin"), ("seed_weighted", "health_weighted")] {
        let set = format!("gateway.formula={formula}");
        let sets: Vec<&str> = SHORT_SPIKE.iter().copied().chain([set.as_str()]).collect();
        let (code, s) = sim("scenarios/latency_spike.toml", &format!("protected-{formula}"), &sets);
        assert_eq!(code, Some(0), "{formula}: {s}");
        assert_eq!(s["formula"], reported);
        let checks: Vec<&str> = s["checks"].as_array().unwrap().iter().filter_map(|c| c["name"].as_str()).collect();
        assert_eq!(checks, ["lost", "degraded", "contrast_p99_ratio"], "{formula}");
        assert!(s["totals"]["breaker_opens"].as_u64().unwrap() >= 1, "{formula}: api-3's breaker opened: {s}");
    }
}

/// A scenario's membership is the node's: go-review (`join_at = "10s"`) is out of rotation until then, and
/// poly-review (`leave_at = "20s"`) is forgotten at once when it leaves, in every attempt `calls.csv` records.
#[test]
fn servers_join_and_leave_the_gateways_rotation_on_time() {
    let (code, summary) = sim("scenarios/capability_routing.toml", "membership", &["report.calls=\"all\""]);
    assert_eq!(code, Some(0), "{summary}");
    let calls = std::fs::read_to_string(scratch("membership").join("calls.csv")).expect("calls.csv");
    let mut starts: std::collections::BTreeMap<&str, Vec<f64>> = Default::default();
    for row in calls.lines().skip(1) {
        let fields: Vec<&str> = row.split(',').collect();
        let server = fields[3].rsplit_once('-').map_or(fields[3], |(server, _)| server);
        starts.entry(server).or_default().push(fields[1].parse().expect("start_ms"));
    }
    let go = &starts["go-review"];
    assert!(!go.is_empty() && go.iter().all(|&ms| ms >= 10_000.0), "go-review before its join: {:?}", go.first());
    let poly = &starts["poly-review"];
    assert!(!poly.is_empty() && poly.iter().all(|&ms| ms < 20_000.0), "poly-review after it left: {:?}", poly.last());
}
