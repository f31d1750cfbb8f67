//! `mcpstorm fidelity`'s comparison on real simulator runs: a run against itself passes every row, a latency change
//! fails the latency rows, a fault moved by 3 s fails its onset; and the files it writes are byte-identical for the
//! same runs.

use std::path::Path;
use std::time::Duration;

use mcpstorm_sim::fidelity::{self, Comparison, FidelityData, Figure, HostGauge, Verdict};
use mcpstorm_sim::report;
use mcpstorm_sim::run::RunData;
use mcpstorm_sim::scenario::{Limits, Scenario, load_str_with};
use mcpstorm_sim::world;

use crate::common::fixtures::{self, fixed};
use crate::common::scratch_in;

/// An open loop of 200 calls/s on one server whose tool takes 20 ms; every call fails from 5 s to 8 s.
fn burst() -> String {
    fixtures::scenario("fidelity_burst", "14s")
        .server("api", &[])
        .tool("get", &[&fixed(20)])
        .open(200.0, &[])
        .mix(Some("api"), "get")
        .table("[[faults]]\nkind = \"error_burst\"\ntarget = \"api\"\nstart = \"5s\"\nduration = \"3s\"\nrate = 1.0")
        .build()
}

fn scenario(sets: &[&str]) -> Scenario {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    load_str_with(&burst(), "fidelity_burst.toml", &sets, &Limits::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn simulate(s: &Scenario) -> RunData {
    world::run(s, String::new(), None, &mut |_: Duration, _: Duration| {}).expect("the run completes").0
}

fn row<'a>(c: &'a Comparison, name: &str) -> &'a fidelity::Row {
    c.rows.iter().find(|r| r.name == name).unwrap_or_else(|| panic!("no row {name:?} in {:#?}", c.rows))
}

fn verdicts(c: &Comparison) -> Vec<(String, Verdict)> {
    c.rows.iter().map(|r| (r.name.clone(), r.verdict)).collect()
}

#[test]
fn the_same_scenario_and_seed_on_both_sides_passes_every_row() {
    let s = scenario(&[]);
    let c = fidelity::compare(&s, &simulate(&s), &simulate(&s));
    assert!(c.passed(), "{:#?}", verdicts(&c));
    // The rows are there and the fault was seen: a comparison of nothing would pass too.
    for name in ["ok calls", "error rate", "P50", "P99", "onset: error_burst api", "recovery: error_burst api"] {
        assert_eq!(row(&c, name).verdict, Verdict::Pass, "{name}");
    }
    assert_eq!(row(&c, "onset: error_burst api").sim, Figure::Num(5.0));
    assert!(matches!(row(&c, "recovery: error_burst api").sim, Figure::Num(t) if (8.0..=9.0).contains(&t)));
    assert!(c.rows.iter().any(|r| r.verdict == Verdict::Info), "the per-second summaries are shown");
    assert!(c.seconds.len() >= 14, "every second of the load, and the drain: {}", c.seconds.len());
}

#[test]
fn a_latency_change_on_one_side_fails_the_latency_rows_only() {
    let s = scenario(&[]);
    let slower = scenario(&["servers[0].tools[0].latency.ms=40"]);
    let c = fidelity::compare(&s, &simulate(&s), &simulate(&slower));
    assert_eq!(row(&c, "P50").verdict, Verdict::Fail, "{:#?}", row(&c, "P50"));
    assert_eq!(row(&c, "P99").verdict, Verdict::Fail, "{:#?}", row(&c, "P99"));
    assert_eq!(row(&c, "ok calls").verdict, Verdict::Pass, "{:#?}", row(&c, "ok calls"));
    assert_eq!(c.failed(), vec!["P50", "P99"]);
    // sim − live: the simulator is 20 ms faster than the (slower) live side.
    assert!(row(&c, "P50").difference.is_some_and(|d| (d + 20.0).abs() < 2.0), "{:#?}", row(&c, "P50"));
    // A looser [fidelity] table lets the same difference pass.
    let loose = scenario(&["fidelity.latency=1.5"]);
    assert!(fidelity::compare(&loose, &simulate(&s), &simulate(&slower)).passed());
}

#[test]
fn an_error_burst_moved_by_three_seconds_fails_its_onset() {
    let s = scenario(&[]);
    let later = scenario(&["faults[0].start=\"8s\""]);
    let c = fidelity::compare(&s, &simulate(&s), &simulate(&later));
    let onset = row(&c, "onset: error_burst api");
    assert_eq!(onset.verdict, Verdict::Fail, "{onset:#?}");
    assert_eq!(onset.sim, Figure::Num(5.0));
    assert!(!c.passed());
    // One second apart is inside the default tolerance.
    let close = scenario(&["faults[0].start=\"6s\""]);
    let near = fidelity::compare(&close, &simulate(&close), &simulate(&s));
    assert_eq!(row(&near, "onset: error_burst api").verdict, Verdict::Pass, "{:#?}", verdicts(&near));
}

fn write(dir: &Path, data: &FidelityData) -> Vec<(String, Vec<u8>)> {
    let paths = report::write_fidelity(dir, data).expect("written");
    paths
        .iter()
        .map(|p| (p.file_name().expect("a file").to_string_lossy().into_owned(), std::fs::read(p).expect("read back")))
        .collect()
}

#[test]
fn the_files_are_byte_identical_for_the_same_runs() {
    let s = scenario(&["faults[0].start=\"6s\""]);
    let live = |s: &Scenario| Ok(simulate(s));
    let data = fidelity::run(&s, &[3, 4], &live, HostGauge::Off, "mcpstorm fidelity x.toml".into(), &mut |_, _| {})
        .expect("runs");
    assert_eq!(data.seeds.iter().map(|c| c.seed).collect::<Vec<_>>(), vec![3, 4]);
    let (a, b) = (scratch_in("fidelity", "bytes-a"), scratch_in("fidelity", "bytes-b"));
    let (first, second) = (write(&a, &data), write(&b, &data));
    let names: Vec<&str> = first.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["fidelity.md", "fidelity.json", "fidelity.svg", "fidelity.png", "report.html"]);
    assert_eq!(first, second, "the same runs give the same bytes");
    let html = String::from_utf8(first[4].1.clone()).expect("utf-8");
    assert!(!html.contains("<script") && !html.contains("http://") && html.contains("PASS"), "self-contained");
    let json: serde_json::Value = serde_json::from_slice(&first[1].1).expect("JSON");
    assert_eq!(json["passed"], serde_json::Value::Bool(true));
    assert_eq!(json["seeds"][0]["rows"][0]["name"], "ok calls");
    assert_eq!(json["tolerances"]["onset"], "1s");
    // A second comparison of the same runs gives the same data, so the same files.
    let again = fidelity::run(&s, &[3, 4], &live, HostGauge::Off, "mcpstorm fidelity x.toml".into(), &mut |_, _| {})
        .expect("runs");
    assert_eq!(write(&a, &again), first);
}

#[test]
fn a_live_runner_that_fails_gives_no_verdict() {
    let s = scenario(&[]);
    let live = |_: &Scenario| Err("no live here".to_owned());
    let e = fidelity::run(&s, &[1], &live, HostGauge::Off, String::new(), &mut |_, _| {}).unwrap_err().to_string();
    assert_eq!(e, "seed 1: the live run failed: no live here");
}
