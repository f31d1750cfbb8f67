//! `[load] mode = "replay"` through the real `mcpstorm sim`: a trace recorded by one run is offered again second by
//! second, at a speed, without its retries; a gateway's history file replays too; bad traces exit 2 naming their
//! line; and a replay is byte-identical run to run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcpstorm_core::history::{CallStatus, ServerCallRecord};
use mcpstorm_core::schema::ContentHash;
use mcpstorm_sim::gateway::history::HistoryFile;
use mcpstorm_sim::scenario::HistorySpec;

use crate::common::{mcpstorm, scratch_in, sim, summary, text};

/// The smoke scenario with two agents, a tenth of calls failing and each retried up to twice: a trace with retries.
const RECORD: &[&str] = &[
    "load.sessions=2",
    "load.think_time=\"40ms\"",
    "servers[0].tools[0].error_rate=0.1",
    "servers[0].tools[0].error_kind=\"jsonrpc\"",
    "agent.retry=\"immediate\"",
    "agent.max_retries=2",
    "report.calls=\"all\"",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// One attempt of a `calls.csv`: (start in µs, wall ms, retries).
fn attempts(calls: &Path) -> Vec<(u64, u64, u32)> {
    let mut r = csv::Reader::from_path(calls).expect("open calls.csv");
    let h = r.headers().expect("header").clone();
    let col = |name: &str| h.iter().position(|c| c == name).expect("column");
    let (start, wall, retries) = (col("start_ms"), col("timestamp_ms"), col("retries"));
    r.records()
        .map(|rec| {
            let rec = rec.expect("row");
            let (ms, us) = rec[start].split_once('.').expect("ms with decimals");
            let us = ms.parse::<u64>().expect("ms") * 1000 + us.parse::<u64>().expect("µs");
            (us, rec[wall].parse().expect("wall ms"), rec[retries].parse().expect("retries"))
        })
        .collect()
}

/// Per-second counts of first attempts, each at its offset from the earliest, divided by `divisor`.
fn expected_per_second(starts: &[u64], divisor: u64) -> BTreeMap<u64, u64> {
    let first = starts.iter().min().copied().unwrap_or(0);
    let mut out = BTreeMap::new();
    for s in starts {
        *out.entry((s - first) / divisor / 1_000_000).or_insert(0) += 1;
    }
    out
}

/// `timeseries.csv`'s offered calls per second, seconds with none left out.
fn offered_per_second(dir: &Path) -> BTreeMap<u64, u64> {
    let mut r = csv::Reader::from_path(dir.join("timeseries.csv")).expect("timeseries.csv");
    let h = r.headers().expect("header").clone();
    let col = |name: &str| h.iter().position(|c| c == name).expect("timeseries column");
    let (t, offered) = (col("t"), col("offered"));
    r.records()
        .map(|rec| rec.expect("row"))
        .map(|rec| (rec[t].parse::<u64>().expect("t"), rec[offered].parse::<u64>().expect("offered")))
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// The smoke scenario replaying `trace` (absolute) at `speed`, written into `dir`; returns its path.
fn replay_scenario(dir: &Path, trace: &Path, speed: &str) -> PathBuf {
    let smoke = std::fs::read_to_string(root().join("scenarios/smoke.toml")).expect("smoke.toml");
    let load = format!("mode = \"replay\"\ntrace = {:?}\nspeed = {speed}\n", trace.display().to_string());
    let text = smoke.replacen("mode = \"closed\"\nsessions = 20\nthink_time = \"10ms\"\n", &load, 1);
    assert!(text.contains("mode = \"replay\""), "smoke.toml's [load] changed");
    std::fs::create_dir_all(dir).expect("scratch");
    let path = dir.join("replay.toml");
    std::fs::write(&path, text).expect("write scenario");
    path
}

/// Records the trace once per test (each test has its own directory).
fn record(name: &str) -> (PathBuf, Vec<(u64, u64, u32)>) {
    let dir = scratch_in("replay", name);
    let o = sim(Path::new("scenarios/smoke.toml"), &dir.join("recorded"), RECORD);
    assert!(o.status.success(), "{}", text(&o));
    let calls = dir.join("recorded/calls.csv");
    let rows = attempts(&calls);
    (calls, rows)
}

fn run_ok(scenario: &Path, out: &Path, sets: &[&str]) {
    let o = sim(scenario, out, sets);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn a_replay_offers_the_traces_first_attempts_second_by_second() {
    let (trace, rows) = record("per-second");
    let firsts: Vec<u64> = rows.iter().filter(|r| r.2 == 0).map(|r| r.0).collect();
    assert!(rows.iter().any(|r| r.2 >= 2), "the trace has second retries");
    let dir = scratch_in("replay", "per-second-run");
    run_ok(&replay_scenario(&dir, &trace, "1.0"), &dir.join("out"), &[]);
    // Exact: each call's intended time is its recorded offset (µs, a whole number of ns), counted in its second.
    assert_eq!(offered_per_second(&dir.join("out")), expected_per_second(&firsts, 1));
    let totals = &summary(&dir.join("out"))["totals"];
    // Retries are not replayed: the replaying agents (smoke's: no retries) make one attempt per call.
    assert_eq!(
        (totals["offered"].as_u64(), totals["attempts"].as_u64()),
        (Some(firsts.len() as u64), Some(firsts.len() as u64))
    );
    assert!(rows.len() > firsts.len());
}

#[test]
fn speed_two_halves_the_span_across_two_load_hosts() {
    let (trace, rows) = record("speed");
    let firsts: Vec<u64> = rows.iter().filter(|r| r.2 == 0).map(|r| r.0).collect();
    let dir = scratch_in("replay", "speed-run");
    // Two load hosts: the calls are dealt between them, and every one is still offered at its time.
    run_ok(&replay_scenario(&dir, &trace, "2.0"), &dir.join("out"), &["load.hosts=2"]);
    let offered = offered_per_second(&dir.join("out"));
    assert_eq!(offered, expected_per_second(&firsts, 2));
    // The recorded 5 s fit in 3 seconds' rows (0, 1, 2).
    assert_eq!(offered.keys().copied().collect::<Vec<_>>(), [0, 1, 2]);
}

#[test]
fn a_gateway_history_file_replays_by_its_wall_clock() {
    let (_, rows) = record("history");
    let dir = scratch_in("replay", "history-run");
    // The trace as a gateway writes it: the core's records, as JSON lines, through the gateway's own file writer.
    let path = dir.join("calls.jsonl");
    let spec = HistorySpec { file: path.display().to_string(), max_bytes: 1 << 30, keep: 1 };
    let mut file = HistoryFile::new(&spec);
    let lines: Vec<String> = rows
        .iter()
        .map(|&(us, wall, retries)| ServerCallRecord {
            seq: 0,
            timestamp_ms: wall,
            start_offset: Duration::from_micros(us),
            server: "echo#0".into(),
            tool: "echo".into(),
            input_sha256: ContentHash::of(&serde_json::json!({})),
            output_sha256: None,
            duration: Duration::from_millis(1),
            status: CallStatus::Success,
            code: None,
            retries,
        })
        .map(|r| serde_json::to_string(&r).expect("json") + "\n")
        .collect();
    file.append(&lines).expect("write history");
    run_ok(&replay_scenario(&dir, &path, "1.0"), &dir.join("out"), &[]);
    let walls: Vec<u64> = rows.iter().filter(|r| r.2 == 0).map(|r| r.1 * 1000).collect();
    assert_eq!(offered_per_second(&dir.join("out")), expected_per_second(&walls, 1));
}

#[test]
fn bad_traces_exit_2_naming_their_line() {
    let (trace, _) = record("bad");
    let dir = scratch_in("replay", "bad-run");
    // Line 4 of the trace names a server the scenario does not have.
    let text_of = std::fs::read_to_string(&trace).expect("trace");
    let bad: Vec<String> = text_of
        .lines()
        .enumerate()
        .map(|(i, l)| if i == 3 { l.replacen("echo-0", "db-0", 1) } else { l.to_owned() })
        .collect();
    let bad_trace = dir.join("bad.csv");
    std::fs::create_dir_all(&dir).expect("scratch");
    std::fs::write(&bad_trace, bad.join("\n") + "\n").expect("write");
    let o = sim(&replay_scenario(&dir, &bad_trace, "1.0"), &dir.join("out"), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let want = format!("{}:4:", bad_trace.display());
    assert!(text(&o).contains(&want) && text(&o).contains("server \"db-0\" is not in the scenario"), "{}", text(&o));
    // A missing trace: the scenario's `trace` key is named.
    let o = sim(&replay_scenario(&dir, &dir.join("missing.csv"), "1.0"), &dir.join("out"), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("load.trace: cannot read the trace"), "{}", text(&o));
    let o = mcpstorm(&["validate", &replay_scenario(&dir, &trace, "0.0").display().to_string()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("load.speed: must be a number > 0"), "{}", text(&o));
}

#[test]
fn a_replay_is_byte_identical_run_to_run() {
    let (trace, _) = record("determinism");
    let dir = scratch_in("replay", "determinism-run");
    let scenario = replay_scenario(&dir, &trace, "1.5");
    run_ok(&scenario, &dir.join("a"), &[]);
    run_ok(&scenario, &dir.join("b"), &[]);
    let mut names: Vec<_> =
        std::fs::read_dir(dir.join("a")).expect("a").map(|e| e.expect("entry").file_name()).collect();
    names.sort();
    for name in names.into_iter().filter(|n| n != "summary.md") {
        let (a, b) = (std::fs::read(dir.join("a").join(&name)), std::fs::read(dir.join("b").join(&name)));
        assert!(a.expect("a") == b.expect("b"), "{name:?} differs between two runs");
    }
}

#[test]
fn the_shipped_example_runs_from_the_repository_root() {
    let out = scratch_in("replay", "example");
    let o = sim(Path::new("examples/replay.toml"), &out, &[]);
    assert!(o.status.success(), "{}", text(&o));
    // 163 first attempts of 186 recorded, all offered, at twice the speed.
    assert_eq!(summary(&out)["totals"]["offered"].as_u64(), Some(163));
}
