//! `calls.csv`: the call history the simulator writes beside the report — one row per attempt, agreeing with
//! `summary.json`, with hashes and timestamps from the core's seams, byte-identical for the same seed.

use std::path::{Path, PathBuf};

use mcpstorm_core::schema::ContentHash;
use mcpstorm_sim::world::EPOCH_SECS;
use serde_json::{Value, json};

use crate::common::{mcpstorm, scratch_in, sim_ok};

/// The smoke scenario with failures and retries: a fifth of echo calls fail with a JSON-RPC error, and agents retry
/// twice at once.
const FAILING: &[&str] = &[
    "servers[0].tools[0].error_rate=0.2",
    "servers[0].tools[0].error_kind=\"jsonrpc\"",
    "agent.retry=\"immediate\"",
    "agent.max_retries=2",
];

/// The smoke scenario with `sets`, which must run.
fn sim(out: &Path, sets: &[&str]) {
    sim_ok(Path::new("scenarios/smoke.toml"), out, sets);
}

fn scratch(name: &str) -> PathBuf {
    scratch_in("calls", name)
}

struct Calls {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Calls {
    fn read(dir: &Path) -> Calls {
        let path = dir.join("calls.csv");
        assert!(path.exists(), "no calls.csv in {}", dir.display());
        let mut r = csv::Reader::from_path(&path).expect("open calls.csv");
        let header = r.headers().expect("header").iter().map(str::to_owned).collect();
        let rows = r.records().map(|rec| rec.expect("row").iter().map(str::to_owned).collect()).collect();
        Calls { header, rows }
    }

    fn col(&self, name: &str) -> usize {
        self.header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}: {:?}", self.header))
    }

    fn count(&self, name: &str, pred: impl Fn(&str) -> bool) -> u64 {
        let c = self.col(name);
        self.rows.iter().filter(|r| pred(&r[c])).count() as u64
    }
}

fn totals(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("summary.json")).expect("summary.json");
    let v: Value = serde_json::from_str(&text).expect("summary.json parses");
    v["totals"].clone()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// Row-level invariants shared by both runs.
fn check_rows(calls: &Calls, totals: &Value) {
    assert_eq!(
        calls.header,
        [
            "seq",
            "start_ms",
            "timestamp_ms",
            "server",
            "tool",
            "input_sha256",
            "output_sha256",
            "duration_ms",
            "status",
            "code",
            "retries",
            "retry_by"
        ]
    );
    assert_eq!(u(&totals["lost"]), 0, "every started attempt finished, so every one has a row");
    assert_eq!(calls.rows.len() as u64, u(&totals["attempts"]), "one row per attempt");
    assert_eq!(calls.count("status", |s| s == "success"), u(&totals["ok"]), "one success per ok logical call");
    assert_eq!(calls.count("retries", |s| s != "0"), u(&totals["retries"]), "rows of retries = retries");
    let (retries, by) = (calls.col("retries"), calls.col("retry_by"));
    for r in &calls.rows {
        let first = r[retries] == "0";
        assert!(if first { r[by].is_empty() } else { r[by] == "agent" || r[by] == "gateway" }, "{r:?}");
    }

    let input = ContentHash::of(&json!({"message": "hello"})).to_hex();
    let epoch_ms = EPOCH_SECS * 1000;
    let (seq, start, ts, server, tool, inp, out, status, code) = (
        calls.col("seq"),
        calls.col("start_ms"),
        calls.col("timestamp_ms"),
        calls.col("server"),
        calls.col("tool"),
        calls.col("input_sha256"),
        calls.col("output_sha256"),
        calls.col("status"),
        calls.col("code"),
    );
    for (i, r) in calls.rows.iter().enumerate() {
        assert_eq!(r[seq], i.to_string(), "seq counts attempts from 0 (nothing dropped under the cap)");
        assert_eq!((r[server].as_str(), r[tool].as_str()), ("echo-0", "echo"));
        assert_eq!(r[inp], input, "the input hash is the canonical JSON's SHA-256");
        // Wall time through the SimClock: the pinned epoch plus simulated time (no skew on the load host).
        let start_ms: f64 = r[start].parse().expect("start_ms");
        let wall: u64 = r[ts].parse().expect("timestamp_ms");
        assert_eq!(wall - epoch_ms, start_ms.floor() as u64, "row {i}: {r:?}");
        match r[status].as_str() {
            "success" => assert!(r[out].len() == 64 && r[code].is_empty(), "row {i}: {r:?}"),
            "error" => assert!(r[out].is_empty() && !r[code].is_empty(), "row {i}: {r:?}"),
            other => panic!("row {i}: unexpected status {other}: {r:?}"),
        }
    }
}

#[test]
fn calls_csv_has_one_row_per_attempt() {
    let dir = scratch("smoke");
    sim(&dir, &[]);
    let calls = Calls::read(&dir);
    let t = totals(&dir);
    assert!(u(&t["attempts"]) > 100, "a smoke run makes hundreds of calls: {t}");
    check_rows(&calls, &t);
    assert_eq!(calls.count("status", |s| s != "success"), 0);
    // The echo tool answers the same text every time, so every output hash is the same.
    let out = calls.col("output_sha256");
    let first = &calls.rows[0][out];
    assert!(calls.rows.iter().all(|r| &r[out] == first));
}

#[test]
fn failures_and_retries_are_recorded_and_byte_identical_across_runs() {
    let (a, b) = (scratch("failing-a"), scratch("failing-b"));
    sim(&a, FAILING);
    sim(&b, FAILING);
    let calls = Calls::read(&a);
    let t = totals(&a);
    check_rows(&calls, &t);
    let errors = calls.count("code", |c| c == "-32603");
    assert!(errors > 10 && u(&t["retries"]) > 10, "a fifth of calls fail and are retried: {errors} errors, {t}");
    assert_eq!(calls.count("status", |s| s == "error"), errors, "every failure is the injected internal error");
    let retries = calls.col("retries");
    assert!(calls.rows.iter().any(|r| r[retries] == "2"), "some calls reach their second retry");
    // One replica and no gateway retry of a JSON-RPC error: every retry is the agent's, and none repeats a call the
    // server may have run unseen (it answered each).
    assert_eq!(calls.count("retry_by", |b| b == "agent"), u(&t["retries"]));
    assert_eq!(u(&t["possible_duplicates"]), 0, "{t}");
    let bytes = |d: &Path| std::fs::read(d.join("calls.csv")).expect("calls.csv");
    assert!(bytes(&a) == bytes(&b), "calls.csv differs between two runs with the same seed");
}

fn text(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{}: {e}", dir.join(file).display()))
}

/// `summary.json` without the reproduce command (which names the `--set` that differs).
fn summary_without_reproduce(dir: &Path) -> Value {
    let mut v: Value = serde_json::from_str(&text(dir, "summary.json")).expect("summary.json parses");
    v.as_object_mut().expect("an object").remove("reproduce");
    v
}

#[test]
fn calls_off_writes_no_file_and_changes_nothing_else() {
    let (all, off) = (scratch("mode-all"), scratch("mode-off"));
    sim(&all, FAILING);
    sim(&off, &[FAILING, &["report.calls=\"off\""]].concat());
    assert!(all.join("calls.csv").exists());
    assert!(!off.join("calls.csv").exists(), "calls = \"off\" wrote calls.csv");
    for file in ["timeseries.csv", "events.csv"] {
        assert!(text(&all, file) == text(&off, file), "{file} differs with calls = \"off\"");
    }
    assert_eq!(summary_without_reproduce(&all), summary_without_reproduce(&off));
}

#[test]
fn calls_sample_writes_every_attempt_of_one_call_in_a_hundred() {
    let (all, a, b) = (scratch("sample-all"), scratch("sample-a"), scratch("sample-b"));
    let sets = [FAILING, &["report.calls=\"sample\""]].concat();
    sim(&all, FAILING);
    sim(&a, &sets);
    sim(&b, &sets);
    let bytes = |d: &Path| std::fs::read(d.join("calls.csv")).expect("calls.csv");
    assert!(bytes(&a) == bytes(&b), "a sampled calls.csv differs between two runs with the same seed");

    let (every, sample) = (Calls::read(&all), Calls::read(&a));
    assert_eq!(sample.header, every.header);
    let t = totals(&a);
    let offered = u(&t["offered"]);
    assert!(offered > 300, "enough calls for a few samples: {t}");
    // One first attempt per sampled logical call: calls 0, 100, 200, ... of those offered.
    assert_eq!(sample.count("retries", |r| r == "0"), offered.div_ceil(100));
    // Each sampled row is the full history's row of the same attempt (`seq` keeps its number among all).
    let seq = every.col("seq");
    for row in &sample.rows {
        let n: usize = row[seq].parse().expect("seq");
        assert_eq!(row, &every.rows[n], "sampled attempt {n}");
    }
    // All attempts of a sampled call: each retry of one is there, so retries k+1 never outnumber retries k, and some
    // sampled call was retried (a fifth of attempts fail).
    let at = |k: u32| sample.count("retries", |r| r == k.to_string());
    assert!(at(1) > 0 && at(1) <= at(0) && at(2) <= at(1), "retries 0/1/2: {}/{}/{}", at(0), at(1), at(2));
}

/// A run estimated above 20,000 logical calls writes a sample unless the scenario or `--calls` asks for every
/// attempt, and says on the console what calls.csv holds and how to get all of it. Nothing else changes: every
/// figure is computed from all the calls either way.
#[test]
fn a_large_run_writes_a_sample_unless_asked() {
    let big: &[&str] = &["load.sessions=100", "duration=\"4s\""];
    let run = |out: &Path, extra: &[&str]| {
        let out = out.to_string_lossy();
        let mut args = [&["sim", "scenarios/smoke.toml", "--out", &out], extra].concat();
        for s in big {
            args.extend(["--set", s]);
        }
        let o = mcpstorm(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let (default, flag, set) = (scratch("large-default"), scratch("large-flag"), scratch("large-set"));
    let said = run(&default, &[]);
    assert!(
        said.contains("calls.csv: a sample, every attempt of one logical call in 100 (the full history: --calls all)")
    );
    assert!(run(&flag, &["--calls", "all"]).contains("(calls.csv: every attempt)"));
    run(&set, &["--set", "report.calls=\"all\""]);
    let (sample, every) = (Calls::read(&default), Calls::read(&flag));
    assert!(sample.rows.len() * 50 < every.rows.len(), "{} of {}", sample.rows.len(), every.rows.len());
    assert!(text(&set, "calls.csv") == text(&flag, "calls.csv"), "report.calls = \"all\" is asked, not defaulted");
    assert!(text(&default, "summary.md").contains("the full history: --calls all"));
    for file in ["timeseries.csv", "summary.json"] {
        assert!(text(&default, file) == text(&flag, file), "{file} depends on what calls.csv keeps");
    }
}

/// The smoke scenario with its replica resetting every connection once a request arrived (the caller cannot tell
/// whether the tool ran) for a second, and agents that retry at once.
const RESETTING: &[&str] = &[
    "faults=[{ kind = \"crash\", mode = \"reset\", target = \"echo\", start = \"1s\", duration = \"1s\" }]",
    "agent.retry=\"immediate\"",
    "agent.max_retries=2",
];

#[test]
fn retries_after_an_attempt_that_may_have_run_are_possible_duplicates_unless_the_tool_is_idempotent() {
    let dir = scratch("resetting");
    sim(&dir, RESETTING);
    let t = totals(&dir);
    let calls = Calls::read(&dir);
    check_rows_origin(&calls, &t);
    let dups = u(&t["possible_duplicates"]);
    assert!(dups > 0, "the echo tool declares no annotations, so a retry after a reset may repeat it: {t}");
    assert_eq!(t["possible_duplicates_by"]["agent"], dups, "one replica: only the agents retry: {t}");
    assert!(dups <= u(&t["retries"]), "a possible duplicate is a retry: {t}");
    assert!(text(&dir, "summary.md").contains(&format!(
        "| possible duplicates (retries that may have run a tool twice) | {dups} (agent {dups}) |"
    )));

    // The same run with the tool marked idempotent: the same retries, none of them a possible duplicate.
    let safe = scratch("resetting-idempotent");
    let mut sets = RESETTING.to_vec();
    sets.push("servers[0].tools[0].annotations={ idempotentHint = true }");
    sim(&safe, &sets);
    let s = totals(&safe);
    assert!(u(&s["retries"]) > 0 && u(&s["possible_duplicates"]) == 0, "{s}");

    // As a check: a maximum, exit 1 above it.
    let checked = scratch("resetting-checked");
    let mut sets = RESETTING.to_vec();
    sets.push("checks.possible_duplicates=0");
    let o = crate::common::sim(Path::new("scenarios/smoke.toml"), &checked, &sets);
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stdout));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains(&format!("FAIL  possible_duplicates: actual {dups}, limit 0")), "{stdout}");
    assert!(stdout.contains(&format!("possible duplicates {dups} (agent {dups})")), "{stdout}");
}

/// Every retry names who sent it; a first attempt names no one.
fn check_rows_origin(calls: &Calls, totals: &Value) {
    assert_eq!(calls.count("retry_by", |b| !b.is_empty()), u(&totals["retries"]), "a retry_by per retry");
    assert_eq!(calls.count("retry_by", str::is_empty), calls.count("retries", |r| r == "0"));
}
