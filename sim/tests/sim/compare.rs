//! `mcpstorm compare`: paired runs of one scenario under several variants. A repeated comparison gives identical
//! tables and plots (whatever order the worker threads finish in), the variants really differ where they should,
//! and bad input exits 2 before anything runs.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::mcpstorm;

fn scratch(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("compare").join(name)
}

fn compare(out: &Path, jobs: &str) -> Output {
    let out = out.to_string_lossy();
    let args = [
        "compare",
        "scenarios/smoke.toml",
        "--vary",
        "load.sessions",
        "--values",
        "5,40",
        "--seeds",
        "3",
        "--set",
        "duration=3s",
        "--jobs",
        jobs,
        "--out",
        &out,
    ];
    let o = mcpstorm(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

#[test]
fn a_repeated_comparison_is_identical_and_shows_the_difference() {
    let (a, b) = (scratch("a"), scratch("b"));
    compare(&a, "2");
    let stdout = String::from_utf8_lossy(&compare(&b, "1").stdout).into_owned();
    for name in ["compare.csv", "compare.json", "compare.md", "compare.png", "compare.svg", "compare_p99.png"] {
        let (x, y) = (std::fs::read(a.join(name)).expect(name), std::fs::read(b.join(name)).expect(name));
        assert!(x == y, "{name} differs between two runs (2 jobs vs 1)");
    }
    // 3 seeds × 2 variants, in variant-then-seed order.
    let csv = std::fs::read_to_string(a.join("compare.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().skip(1).map(|l| l.split(',').collect()).collect();
    let keys: Vec<(&str, &str)> = rows.iter().map(|r| (r[0], r[1])).collect();
    assert_eq!(keys, [("5", "1"), ("5", "2"), ("5", "3"), ("40", "1"), ("40", "2"), ("40", "3")]);
    // Eight times the sessions in a closed loop: far more calls offered on every seed.
    for s in 0..3 {
        let (few, many) = (rows[s][2].parse::<u64>().unwrap(), rows[s + 3][2].parse::<u64>().unwrap());
        assert!(many > 4 * few, "seed {}: {few} vs {many}", s + 1);
    }
    assert!(stdout.contains("| 40 |") && stdout.contains("Δ vs 5 (paired)"), "{stdout}");
    assert!(stdout.contains("reproduce: mcpstorm compare scenarios/smoke.toml --vary load.sessions --values 5,40"));
}

#[test]
fn bad_input_exits_2_before_running() {
    let out = scratch("bad").to_string_lossy().into_owned();
    let cases: [(&[&str], &str); 3] = [
        (&["--vary", "load.sessions", "--values", "5"], "at least two variants"),
        (&["--vary", "load.sesions", "--values", "5,6"], "load.sesions"),
        (&["--vary", "load.sessions", "--values", "5,5"], "appears twice"),
    ];
    for (extra, needle) in cases {
        let mut args = vec!["compare", "scenarios/smoke.toml", "--out", &out];
        args.extend_from_slice(extra);
        let o = mcpstorm(&args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains(needle), "{extra:?}: {stderr}");
    }
    assert!(!PathBuf::from(out).exists(), "bad input still wrote a report");
}

/// `--formulas` is `--vary gateway.formula`: a bad name is refused up front, naming it, and it cannot be combined
/// with `--vary`.
#[test]
fn formulas_are_checked_before_anything_runs() {
    let o = mcpstorm(&["compare", "scenarios/smoke.toml", "--formulas", "round_robin,fastest", "--seeds", "2"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("\"fastest\"") && err.contains("p2c_peak_ewma"), "{err}");
    let o = mcpstorm(&["compare", "scenarios/smoke.toml", "--formulas", "round_robin", "--vary", "x", "--values", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn formulas_compare_routing_formulas() {
    let out = scratch("formulas");
    let out_arg = out.to_string_lossy().into_owned();
    let args = [
        "compare",
        "scenarios/latency_spike.toml",
        "--formulas",
        "round_robin,p2c_peak_ewma",
        "--seeds",
        "2",
        "--set",
        "duration=20s",
        "--set",
        "faults[0].start=5s",
        "--set",
        "faults[0].duration=10s",
        "--set",
        "load.rate=40.0",
        "--out",
        &out_arg,
    ];
    let o = mcpstorm(&args);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(out.join("compare.csv")).expect("compare.csv");
    let labels: Vec<&str> = csv.lines().skip(1).filter_map(|l| l.split(',').next()).collect();
    assert_eq!(labels, ["round_robin", "round_robin", "p2c_peak_ewma", "p2c_peak_ewma"]);
    let md = std::fs::read_to_string(out.join("compare.md")).expect("compare.md");
    assert!(md.contains("--formulas 'round_robin,p2c_peak_ewma'"), "{md}");
}
