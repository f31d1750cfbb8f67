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
