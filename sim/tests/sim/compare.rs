//! `mcpstorm compare`: paired runs of one scenario under several variants. A repeated comparison gives identical
//! tables and plots (whatever order the worker threads finish in), the variants really differ where they should,
//! and bad input exits 2 before anything runs.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{command, mcpstorm};

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
    let names =
        ["compare.csv", "compare.json", "compare.md", "compare.png", "compare.svg", "compare_p99.png", "report.html"];
    for name in names {
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
    // The page: every table says which way is better, the fault-window figures are there, the overlay is inline.
    let page = std::fs::read_to_string(a.join("report.html")).expect("report.html");
    for needle in [
        "<h3>P99 latency — lower is better</h3>",
        "<h3>Goodput (ok calls per simulated second) — higher is better</h3>",
        "<h3>During the faults: P99 latency of the calls completed inside a fault window — lower is better</h3>",
        "<th>Δ vs 5 (paired)</th>",
        "<td>40</td>",
        "<svg role=\"img\"",
        "mcpstorm compare scenarios/smoke.toml --vary load.sessions --values 5,40",
    ] {
        assert!(page.contains(needle), "report.html lacks {needle:?}");
    }
    assert!(!page.contains("http") && !page.contains("src=") && !page.contains("<script"), "not self-contained");
}

/// A variant that fails the scenario's checks makes `compare` exit 1 and name the failed checks on the console (the
/// rule `compare --help` states), as `sim` exits 1 when its checks fail.
#[test]
fn failed_checks_exit_1_and_are_named() {
    let out = scratch("failing");
    let _ = std::fs::remove_dir_all(&out);
    let o = smoke_compare("5,40", &out, &["--set", "checks.p99_ms=0.001"], &[]);
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("checks failed:\n  5: failed on 5 of 5 seeds: p99_ms (seeds "), "{stdout}");
    assert!(stdout.contains("  40: failed on 5 of 5 seeds: p99_ms (seeds "), "{stdout}");
    assert!(stderr.contains("2 of 2 variants failed the scenario's checks on some seed"), "{stderr}");
    let page = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    let failed_rows = page.lines().filter(|l| l.starts_with("<tr class=\"failed\">")).collect::<Vec<_>>();
    assert_eq!(failed_rows.len(), 2, "{failed_rows:?}");
    for row in failed_rows {
        assert!(row.contains(">FAIL<") && row.contains("failed on 5 of 5 seeds: p99_ms (seeds "), "{row}");
    }
    let help = mcpstorm(&["compare", "--help"]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("1 when any variant failed any check on any seed"));
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

/// `compare` of the smoke scenario on 5 seeds, with `extra` arguments and environment variables.
fn smoke_compare(values: &str, out: &Path, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = command();
    cmd.args(["compare", "scenarios/smoke.toml", "--vary", "load.sessions", "--values", values, "--seeds", "5"])
        .args(["--set", "duration=3s", "--jobs", "2", "--out"])
        .arg(out)
        .args(extra)
        .env_remove("JOB_COMPLETION_INDEX")
        .env_remove("MCPSTORM_SHARD_COUNT")
        .envs(env.iter().copied());
    cmd.output().expect("run mcpstorm")
}

fn ok(o: Output) -> String {
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
    stdout.into_owned()
}

/// The stderr of a command that must exit 2.
fn refused(o: Output) -> String {
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    stderr
}

fn merge(inputs: &[&Path], out: &Path) -> Output {
    let mut args: Vec<String> = vec!["merge".into()];
    args.extend(inputs.iter().map(|p| p.to_string_lossy().into_owned()));
    args.extend(["--out".into(), out.to_string_lossy().into_owned()]);
    mcpstorm(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// The names and bytes of every file in `dir`, in name order.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .expect("report dir")
        .map(|e| e.expect("entry").path())
        .map(|p| (p.file_name().expect("name").to_string_lossy().into_owned(), std::fs::read(&p).expect("read")))
        .collect();
    files.sort();
    files
}

/// A comparison split into 3 shards (the third told by a Kubernetes Indexed Job's environment) and merged writes
/// every file of the unsharded report byte for byte; merge refuses a missing shard, a shard given twice, a shard of
/// another plan and a file that is no shard, each by name and with exit 2.
#[test]
fn shards_merge_into_the_unsharded_report() {
    let dir = |name: &str| {
        let d = scratch("shards").join(name);
        let _ = std::fs::remove_dir_all(&d);
        d
    };
    let (whole, merged, s1, s2, s3) = (dir("whole"), dir("merged"), dir("s1"), dir("s2"), dir("s3"));
    ok(smoke_compare("5,40", &whole, &[], &[]));
    ok(smoke_compare("5,40", &s1, &["--shard", "1/3"], &[]));
    ok(smoke_compare("5,40", &s2, &["--shard-count", "3"], &[("JOB_COMPLETION_INDEX", "1")]));
    let said = ok(smoke_compare("5,40", &s3, &[], &[("JOB_COMPLETION_INDEX", "2"), ("MCPSTORM_SHARD_COUNT", "3")]));
    assert!(said.contains("shard 3/3, 1 of 5 seeds"), "{said}");
    // A shard writes its partial result and nothing else; the environment picked the right shard.
    for (d, k) in [(&s1, 1), (&s2, 2), (&s3, 3)] {
        let names: Vec<String> = files(d).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, [format!("shard-{k}-of-3.json")]);
    }
    let stdout = ok(merge(&[&s3, &s1, &s2], &merged));
    assert!(stdout.contains("reproduce: mcpstorm compare scenarios/smoke.toml --vary load.sessions"), "{stdout}");
    let (a, b) = (files(&whole), files(&merged));
    assert_eq!(a.iter().map(|f| &f.0).collect::<Vec<_>>(), b.iter().map(|f| &f.0).collect::<Vec<_>>());
    assert!(a.len() >= 11, "{} files", a.len());
    for ((name, x), (_, y)) in a.iter().zip(&b) {
        assert!(x == y, "{name} differs between the unsharded and the merged report");
    }

    let nowhere = dir("refused");
    let err = refused(merge(&[&s1, &s3], &nowhere));
    assert!(err.contains("shard 2/3 is missing"), "{err}");
    let err = refused(merge(&[&s1, &s2, &s1, &s3], &nowhere));
    assert!(err.contains("shard 1/3 is given twice"), "{err}");
    let other = dir("other");
    ok(smoke_compare("5,41", &other, &["--shard", "3/3"], &[]));
    let err = refused(merge(&[&s1, &s2, &other], &nowhere));
    assert!(err.contains("different comparisons (their variants differ)"), "{err}");
    let err = refused(merge(&[&s1, &s2, &whole.join("compare.json")], &nowhere));
    assert!(err.contains("compare.json is not a compare shard result"), "{err}");
    let err = refused(merge(&[&whole], &nowhere));
    assert!(err.contains("holds no shard-K-of-N.json"), "{err}");
    assert!(!nowhere.exists(), "a refused merge still wrote a report");
}

/// Arguments, environment variables, and what the error must say.
type Case = (&'static [&'static str], &'static [(&'static str, &'static str)], &'static str);

/// A bad shard, on the command line or from the environment, exits 2 before anything runs.
#[test]
fn bad_shards_exit_2() {
    let out = scratch("bad-shard");
    let cases: [Case; 5] = [
        (&["--shard", "0/4"], &[], "K counts from 1 to N"),
        (&["--shard", "a/b"], &[], "whole numbers"),
        (&["--shard", "4"], &[], "expected K/N"),
        (&["--shard-count", "4"], &[("JOB_COMPLETION_INDEX", "4")], "JOB_COMPLETION_INDEX=\"4\""),
        (&[], &[("JOB_COMPLETION_INDEX", "1")], "shard count"),
    ];
    for (args, env, needle) in cases {
        let err = refused(smoke_compare("5,40", &out, args, env));
        assert!(err.contains(needle), "{args:?} {env:?}: {err}");
    }
    assert!(!out.exists(), "a bad shard still wrote a report");
}

/// Variants that change nothing the run does tie on every seed: a tie is no one's win (seeds won 0%, seeds tied
/// 100%, not a share each). The calls that completed inside the fault windows have their own paired tables, and
/// every table says which way is better.
#[test]
fn ties_are_ties_and_the_fault_windows_have_their_own_figures() {
    let out = scratch("ties");
    let _ = std::fs::remove_dir_all(&out);
    let out_arg = out.to_string_lossy();
    let o = mcpstorm(
        &[
            &["compare", "scenarios/smoke.toml", "--vary", "report.calls", "--values", "all,off", "--seeds", "3"][..],
            &["--set", "duration=3s", "--jobs", "2", "--out", &out_arg],
        ]
        .concat(),
    );
    let stdout = ok(o);
    let md = std::fs::read_to_string(out.join("compare.md")).expect("compare.md");
    // The metric tables' rows (eight cells), not the checks table's.
    let variant = |l: &&str| l.starts_with("| all |") || l.starts_with("| off |");
    let rows: Vec<&str> = md.lines().filter(variant).filter(|l| l.matches('|').count() == 8).collect();
    assert_eq!(rows.len(), 2 * 8, "two rows in each of the 8 tables (the fault-window ones included):\n{md}");
    for row in rows {
        assert!(row.ends_with("| 0% | 100% |"), "a tie counted as a win: {row}");
    }
    for heading in [
        "## P99 latency — lower is better",
        "## Goodput (ok calls per simulated second) — higher is better",
        "## During the faults: ok calls (completed inside a fault window) — higher is better",
        "## During the faults: P99 latency of the calls completed inside a fault window — lower is better",
        "## During the faults: error rate (failed / completed inside a fault window) — lower is better",
    ] {
        assert!(md.contains(heading), "no {heading:?}:\n{md}");
    }
    assert!(stdout.contains("fault_p99_ms (calls completed inside the fault windows):"), "{stdout}");
    assert!(stdout.contains("| mean (lower is better) |"), "{stdout}");
    let csv = std::fs::read_to_string(out.join("compare.csv")).expect("compare.csv");
    assert!(csv.starts_with("variant,seed,") && csv.lines().next().is_some_and(|h| h.contains(",fault_p99_ms,")));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("compare.json")).expect("json")).expect("parses");
    let fault_p99 = json["metrics"].as_array().and_then(|m| m.iter().find(|m| m["metric"] == "fault_p99_ms"));
    let whole_p99 = json["metrics"].as_array().and_then(|m| m.iter().find(|m| m["metric"] == "p99_ms"));
    // The spike (100 ms more for 1 s) is diluted over the whole run, not inside its window.
    let mean = |m: Option<&serde_json::Value>| m.and_then(|m| m["estimates"][0]["mean"].as_f64()).unwrap_or(0.0);
    assert!(mean(fault_p99) > 100.0 && mean(fault_p99) >= mean(whole_p99), "{fault_p99:?} vs {whole_p99:?}");
}
