//! Swarm testing: the planted defect is found and shrunk, and the example property test users copy.

use mcpstorm_sim::scenario::{Scenario, SwarmSpec, load_file, load_str};
use mcpstorm_sim::swarm::shrink::shrink;
use mcpstorm_sim::swarm::strategy::fault_timeline;
use mcpstorm_sim::swarm::{Options, check, invariants, run_seed};
use proptest::prelude::*;

use crate::common::fixtures;

/// Small and short: two servers (one with two replicas), 40 calls/s for 14 s; faults between 2 s and 7 s, 4 s left
/// for recovery.
fn small() -> Scenario {
    let get = [
        "annotations = { readOnlyHint = true, idempotentHint = true }",
        &fixtures::fixed(5),
        "error_kind = \"jsonrpc\"",
    ];
    let text = fixtures::scenario("swarm_small", "14s")
        .server("api", &["replicas = 2"])
        .tool("get", &get)
        .server("db", &[])
        .tool("query", &[&fixtures::fixed(5)])
        .open(40.0, &[])
        .mix(Some("api"), "get")
        .mix(Some("db"), "query")
        .table("[swarm]\nwarmup = \"2s\"\nmin_fault = \"500ms\"\nmax_fault = \"3s\"\nrecovery_within = \"4s\"")
        .build();
    load_str(&text, "swarm_small.toml", &[]).expect("valid scenario")
}

/// The core's planted defect (a bulkhead permit kept per failed call, settable only from code) breaks the `leaked`
/// invariant on some seed of the first few, and shrinking keeps that invariant while cutting the timeline to at
/// most two faults; shrinking the same failure again gives the same scenario.
#[test]
fn the_planted_leak_is_found_and_shrunk() {
    let mut scenario = small();
    scenario.planted_leak = true;
    scenario.swarm =
        Some(SwarmSpec { kinds: vec![mcpstorm_sim::scenario::FaultKind::ErrorBurst], ..small().swarm.unwrap() });
    let options = Options { differential: false, checks: false };
    let found = (1..=5)
        .map(|seed| check(&mcpstorm_sim::swarm::case(&scenario, seed).expect("room to draw"), options))
        .find(|run| run.violations.iter().any(|v| v.invariant == "leaked"))
        .expect("some seed finds the leak");
    let violation = found.violations.iter().find(|v| v.invariant == "leaked").unwrap().clone();
    assert!(violation.detail.contains("bulkhead permits"), "{violation:?}");
    let shrunk = shrink(&found.scenario, &violation, options, 25);
    assert_eq!(shrunk.violation.invariant, "leaked");
    assert!(shrunk.scenario.faults.len() <= 2, "{:?}", shrunk.scenario.faults);
    assert!(shrunk.runs > 0 && shrunk.scenario.duration.0 <= found.scenario.duration.0);
    let again = shrink(&found.scenario, &violation, options, 25);
    assert_eq!((again.scenario, again.runs), (shrunk.scenario.clone(), shrunk.runs), "shrinking is deterministic");
    // Without the defect, the shrunk timeline holds every safety invariant.
    let mut fixed = shrunk.scenario;
    fixed.planted_leak = false;
    let run = check(&fixed, options);
    assert!(invariants::safety(&fixed, run.run.as_ref().unwrap()).is_empty(), "{:?}", run.violations);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3, failure_persistence: None, ..ProptestConfig::default() })]

    /// The example to copy: any fault timeline the strategy draws over the scenario's servers leaves the gateway
    /// safe (every call one outcome, nothing leaked) and live (goodput back within `recovery_within`).
    #[test]
    fn any_fault_timeline_is_survived(faults in fault_timeline(&small(), small().swarm.unwrap())) {
        let mut scenario = small();
        scenario.faults = faults;
        let run = check(&scenario, Options { differential: false, checks: false });
        prop_assert!(run.passed(), "{:?} under {:?}", run.violations, scenario.faults);
    }
}

/// The timeline the property test above once failed on (a partition of both `api` replicas wedged their streams for
/// 7 s, and `db` stalled behind their calls), kept as `scenarios/regressions/`: `small()` with its three faults. It
/// is survived, and the default profile is not worse than naive on it.
#[test]
fn a_partition_of_every_replica_is_survived() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/regressions/partition_of_every_replica_wedges_the_server.toml");
    let scenario = load_file(&path, &[]).expect("valid regression");
    assert_eq!((scenario.servers.len(), scenario.faults.len()), (small().servers.len(), 3));
    let run = check(&scenario, Options { differential: true, checks: false });
    assert!(run.passed(), "{:?}", run.violations);
}

/// Each crash mode, on one replica of `api` (an idempotent tool, a sibling left) and on `db` (one replica, a tool
/// without annotations), is survived: every call one outcome, nothing leaked, goodput back, and the default profile
/// no worse than naive wherever the rule judges.
#[test]
fn every_crash_mode_is_survived() {
    for mode in ["refuse", "hang", "reset"] {
        let mut scenario = small();
        for target in ["api#1", "db"] {
            let fault = format!(
                "kind = \"crash\"\nmode = \"{mode}\"\ntarget = \"{target}\"\nstart = \"3s\"\nduration = \"2s\""
            );
            scenario.faults.push(toml::from_str(&fault).expect("a crash"));
        }
        let run = check(&scenario, Options { differential: true, checks: false });
        assert!(run.passed(), "{mode}: {:?}", run.violations);
    }
}

/// `run_seed` draws the seed's timeline and runs both profiles: the baseline is there for the differential checks.
#[test]
fn run_seed_runs_the_naive_baseline_too() {
    let run = run_seed(&small(), 3).expect("room to draw");
    assert_eq!(run.simulations, 2);
    assert_eq!(run.naive.as_ref().map(|n| n.profile.as_str()), Some("naive"));
    assert_eq!(run.scenario.seed, 3);
    assert!(!run.scenario.faults.is_empty());
}
