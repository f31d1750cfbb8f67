//! The same scenario and seed give byte-identical output files: every shipped scenario runs twice through the real
//! `mcpstorm sim` command and every CSV, JSON, SVG and PNG is compared byte for byte (`summary.md` carries wall-clock
//! time and is the one file allowed to differ).

use std::path::PathBuf;

use crate::common::{files_under, repo_root, sim_ok};

/// Overrides that keep each shipped scenario short enough for a debug-build test while keeping its faults.
fn shortening(name: &str) -> &'static [&'static str] {
    match name {
        "retry_storm" => &["load.rate=300.0"],
        "cascading_failure" => &["load.rate=450.0", "duration=\"25s\""],
        "bulkhead" => &["duration=\"16s\"", "faults[0].start=\"5s\"", "faults[0].duration=\"8s\""],
        "concurrency_knee" => &["sweep.values=[1, 50, 500]", "load.calls=100"],
        "schema_drift" => &["load.sessions=5"],
        "clock_skew" => &["load.sessions=2", "load.think_time=500ms", "tick=10ms"],
        "latency_spike" => &["duration=20s", "faults[0].start=5s", "faults[0].duration=10s", "load.rate=40.0"],
        "capability_routing" => &["load.rate=20.0"],
        "token_storm" => &["load.rate=100.0"],
        "replica_killed" => &["duration=\"24s\"", "faults[0].start=\"8s\"", "faults[0].duration=\"8s\""],
        "gateway_nodes" => {
            // Shortened, the cut is a larger share of the run: its P99 is the cut node's first timeouts.
            &[
                "load.rate=150.0",
                "duration=\"12s\"",
                "faults[0].start=\"3s\"",
                "faults[0].duration=\"6s\"",
                "checks.p99_ms=1000.0",
            ]
        }
        _ => &[],
    }
}

#[test]
fn every_shipped_scenario_is_byte_identical_across_runs() {
    let root = repo_root();
    let scratch = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("determinism");
    let _ = std::fs::remove_dir_all(&scratch);
    let mut scenarios: Vec<PathBuf> = std::fs::read_dir(root.join("scenarios"))
        .expect("scenarios/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    scenarios.sort();
    assert!(scenarios.len() >= 3, "expected the shipped scenarios, found {scenarios:?}");
    for scenario in &scenarios {
        let name = scenario.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        let (a, b) = (scratch.join(name).join("a"), scratch.join(name).join("b"));
        sim_ok(scenario, &a, shortening(name));
        sim_ok(scenario, &b, shortening(name));
        let (fa, fb) = (files_under(&a), files_under(&b));
        assert_eq!(fa, fb, "{name}: the two runs wrote different files");
        assert!(fa.iter().any(|f| f.ends_with("timeseries.csv")), "{name}: no timeseries.csv in {fa:?}");
        for f in fa.iter().filter(|f| !f.ends_with("summary.md")) {
            let (x, y) = (std::fs::read(a.join(f)).expect("read a"), std::fs::read(b.join(f)).expect("read b"));
            assert!(x == y, "{name}: {} differs between two runs with the same seed", f.display());
        }
    }
}

#[test]
fn a_different_seed_gives_a_different_run() {
    let root = repo_root();
    let scratch = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("determinism-seed");
    let smoke = root.join("scenarios/smoke.toml");
    sim_ok(&smoke, &scratch.join("s1"), &["seed=1"]);
    sim_ok(&smoke, &scratch.join("s2"), &["seed=2"]);
    let read = |d: &str| std::fs::read(scratch.join(d).join("timeseries.csv")).expect("timeseries");
    assert_ne!(read("s1"), read("s2"), "the seed must drive the run");
}
