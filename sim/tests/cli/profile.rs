//! `mcpstorm profile` against servers whose behaviour is known: a fake with a fixed latency and four workers must
//! come out as such, and the scenario written must validate and run; the Python SDK's server is profiled into a
//! scenario that keeps its declared schemas. And what it refuses: a non-loopback target, a server with no
//! read-only tool, an existing --out.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::common::{mcpstorm, scratch_in, sim, summary, text};
use crate::servers::Fake;

/// A fake whose `work` tool takes 20 ms and whose four workers queue everything beyond them.
const FOUR_WORKERS: &str = r#"
name = "four-workers"
workers = 4

[[tools]]
name = "work"
annotations = { readOnlyHint = true }
latency = { dist = "fixed", ms = 20 }

[[tools]]
name = "write"
latency = { dist = "fixed", ms = 1 }
"#;

fn profile(target: &[&str], out: &Path, extra: &[&str]) -> Output {
    let out = out.to_string_lossy();
    let mut args = vec!["profile"];
    args.extend(target);
    args.extend(["--out", out.as_ref(), "--json"]);
    args.extend(extra);
    mcpstorm(&args)
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("--json output ({e}): {}", text(o)))
}

#[test]
fn a_fixed_latency_and_four_workers_are_measured_as_such_and_the_scenario_runs() {
    let fake = Fake::start(Some(FOUR_WORKERS));
    let dir = scratch_in("profile", "four-workers");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let file = dir.join("four.toml");
    let o =
        profile(&["--tcp", &fake.addr], &file, &["--calls", "30", "--max-concurrency", "16", "--sweep-calls", "40"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let m = json(&o);
    // Only the read-only tool is called; the other is named as not measured.
    assert_eq!(m["tools"].as_array().map(Vec::len), Some(1), "{m}");
    assert_eq!(m["skipped"], serde_json::json!(["write"]));
    let p50 = m["tools"][0]["p50_ms"].as_f64().expect("p50");
    assert!((19.0..60.0).contains(&p50), "a 20 ms tool measured at {p50} ms");
    let workers = m["knee"]["workers"].as_u64().expect("a knee within 16 in flight");
    assert!((3..=6).contains(&workers), "four workers measured as {workers}: {m}");

    let written = std::fs::read_to_string(&file).expect("scenario written");
    assert!(written.contains(&format!("workers = {workers}")), "{written}");
    assert!(written.contains("readOnlyHint = true"), "the declared annotations are kept: {written}");
    let run = dir.join("run");
    let o = sim(&file, &run, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let s = summary(&run);
    let server = &s["servers"]["four-workers"];
    assert_eq!(server["ok"].as_u64(), Some(30), "the load repeats the 30 measured calls: {s}");
}

#[test]
fn the_python_sdks_server_becomes_a_scenario_with_its_declared_schemas() {
    let Some(peer) = crate::diagnose::python_peer() else { return };
    let dir = scratch_in("profile", "python");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let file = dir.join("py.toml");
    let o = profile(&["--stdio", &peer], &file, &["--tool", "echo", "--calls", "20", "--max-concurrency", "4"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let m = json(&o);
    assert_eq!(m["tools"][0]["tool"], "echo");
    assert_eq!(m["tools"][0]["errors"]["unanswered"], 0, "{m}");
    let written = std::fs::read_to_string(&file).expect("scenario written");
    assert!(written.contains("title = \"echoArguments\""), "the SDK's inputSchema is copied: {written}");
    assert!(written.contains("structured_content = true"), "an outputSchema means structured results: {written}");
    let o = mcpstorm(&["validate", &file.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let run = dir.join("run");
    let o = sim(&file, &run, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn what_profile_refuses_is_bad_input() {
    let dir = scratch_in("profile", "refused");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let file = dir.join("x.toml");
    // Not on this machine: refused before anything is sent (192.0.2.0/24 is reserved for documentation).
    let o = profile(&["--tcp", "192.0.2.1:9"], &file, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--i-own-this-server"), "{}", text(&o));

    let fake = Fake::start(Some("name = \"rw\"\n[[tools]]\nname = \"write\"\n"));
    let o = profile(&["--tcp", &fake.addr], &file, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("marks no tool readOnlyHint") && text(&o).contains("write"), "{}", text(&o));
    let o = profile(&["--tcp", &fake.addr], &file, &["--tool", "nope"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("has no tool \"nope\""), "{}", text(&o));
    assert!(!file.exists(), "nothing is written on bad input");

    std::fs::write(&file, "kept").expect("write");
    let o = profile(&["--tcp", &fake.addr], &file, &["--tool", "write"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--force"), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&file).ok().as_deref(), Some("kept"));
}

/// With `--tool`, a tool left out was not named, whatever its annotations: `work` is read-only, and the console, the
/// JSON and the scenario's comment say it was not named, not that it lacks readOnlyHint.
#[test]
fn with_tool_the_others_are_left_out_for_not_being_named() {
    let fake = Fake::start(Some(FOUR_WORKERS));
    let dir = scratch_in("profile", "named");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let file = dir.join("named.toml");
    let _ = std::fs::remove_file(&file);
    let o = profile(&["--tcp", &fake.addr], &file, &["--tool", "write", "--calls", "5", "--max-concurrency", "0"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let m = json(&o);
    assert_eq!(m["skipped"], serde_json::json!(["work"]), "{m}");
    assert_eq!(m["skipped_why"], "not named by --tool", "{m}");
    let written = std::fs::read_to_string(&file).expect("scenario written");
    assert!(written.contains("# Not measured (not named by --tool): work"), "{written}");
}

/// A Python SDK server whose tool sleeps 8 ms: the simulator run of the scenario `profile` writes has the measured
/// P50, within 10% (issue 48 item 4: 6.9 ms measured became 9.0 ms simulated, since the simulator adds a tick to a
/// call's round trip and ends the tool's time at the next whole millisecond). The comparison is of the measurement
/// with its own simulation, so a loaded machine that slows the live calls slows the simulated ones alike.
#[test]
fn the_simulated_p50_of_a_profiled_server_is_the_measured_one() {
    if crate::diagnose::python_peer().is_none() {
        return;
    }
    let peer = format!("{} tests/peers/py_workers_server.py 8 4", crate::diagnose::python());
    let dir = scratch_in("profile", "p50");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let file = dir.join("p50.toml");
    let o = profile(&["--stdio", &peer], &file, &["--calls", "100", "--max-concurrency", "0", "--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let measured = json(&o)["tools"][0]["p50_ms"].as_f64().expect("p50");
    assert!(measured >= 8.0, "an 8 ms sleep measured at {measured} ms");
    let run = dir.join("run");
    let o = sim(&file, &run, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let simulated = summary(&run)["totals"]["p50_ms"].as_f64().expect("p50");
    let ratio = simulated / measured;
    assert!((0.9..=1.1).contains(&ratio), "P50 measured {measured:.2} ms, simulated {simulated:.2} ms");
}

/// A Python SDK server whose tool takes 40 ms on one of 4 workers: `profile` finds the 4 workers, and the simulator
/// run of the sweep it writes (`*.knee.toml`) repeats the live sweep, step by step: ok calls per second within 10%,
/// P50 and P99 within 15% (or 3 ms: the simulator keeps whole milliseconds). A live P99 of 80 calls is their
/// slowest but one, and a loaded machine (the tests run in parallel) can stall one of them: a failed comparison is
/// measured again, up to three times, before it counts.
#[test]
fn the_simulated_knee_of_a_profiled_python_server_matches_the_live_one() {
    if crate::diagnose::python_peer().is_none() {
        return;
    }
    let mut misses = Vec::new();
    for attempt in 0..3 {
        misses = knee_misses(attempt);
        if misses.is_empty() {
            return;
        }
        eprintln!("attempt {attempt}: {misses:#?}");
    }
    panic!("the simulated sweep does not repeat the live one: {misses:#?}");
}

/// Profiles the workers server and compares the simulator's sweep with the live one: what is out of tolerance.
fn knee_misses(attempt: usize) -> Vec<String> {
    let peer = format!("{} tests/peers/py_workers_server.py 40 4", crate::diagnose::python());
    let dir = scratch_in("profile", &format!("knee-{attempt}"));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let file = dir.join("workers.toml");
    let o = profile(&["--stdio", &peer], &file, &["--calls", "40", "--max-concurrency", "16", "--sweep-calls", "80"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let m = json(&o);
    let knee = dir.join("workers.knee.toml");
    assert_eq!(m["knee_scenario"].as_str(), Some(knee.to_string_lossy().as_ref()));
    let run = dir.join("knee-run");
    let o = sim(&knee, &run, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let mut misses = Vec::new();
    if m["knee"]["workers"].as_u64() != Some(4) {
        misses.push(format!("4 workers measured as {}", m["knee"]["workers"]));
    }
    let rows = std::fs::read_to_string(run.join("sweep.csv")).expect("sweep.csv");
    let mut lines = rows.lines();
    let head: Vec<&str> = lines.next().expect("header").split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no {name} in {head:?}"));
    let (value, qps, p50, p99) = (col("value"), col("ok_per_s"), col("p50_ms"), col("p99_ms"));
    let live = m["knee"]["steps"].as_array().expect("steps");
    let mut compared = 0;
    for line in lines {
        let cells: Vec<f64> = line.split(',').map(|c| c.parse().unwrap_or(f64::NAN)).collect();
        let step = live.iter().find(|s| s["concurrency"].as_f64() == Some(cells[value])).expect("a live step per row");
        let l = |k: &str| step[k].as_f64().expect("number");
        for (what, sim, live, share, floor) in [
            ("ok/s", cells[qps], l("throughput"), 0.10, 0.0),
            ("P50", cells[p50], l("p50_ms"), 0.15, 3.0),
            ("P99", cells[p99], l("p99_ms"), 0.15, 3.0),
        ] {
            if (sim - live).abs() > (live * share).max(floor) {
                misses.push(format!("{what} at {} in flight: sim {sim:.1}, live {live:.1}", cells[value]));
            }
        }
        compared += 1;
    }
    assert!(compared >= 4, "the sweep reached 8 in flight: {m}");
    misses
}

/// Over Streamable HTTP the written server speaks HTTP too, and the simulator runs it.
#[test]
fn a_server_profiled_over_http_is_simulated_over_http() {
    let fake = Fake::start_http(Some(FOUR_WORKERS));
    let dir = scratch_in("profile", "http");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let file = dir.join("http.toml");
    let o = profile(&["--http", &fake.url()], &file, &["--calls", "10", "--max-concurrency", "0"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let m = json(&o);
    assert!(m["knee"].is_null() && m["knee_scenario"].is_null(), "--max-concurrency 0 sweeps nothing: {m}");
    let written = std::fs::read_to_string(&file).expect("scenario written");
    assert!(written.contains("transport = \"http\""), "{written}");
    let run = dir.join("run");
    let o = sim(&file, &run, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(summary(&run)["servers"]["four-workers"]["ok"].as_u64(), Some(10));
}
