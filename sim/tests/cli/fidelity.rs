//! `mcpstorm fidelity` as a user meets it: the `[fidelity]` table's keys (defaults, overrides, bad keys and values
//! named by `file:line:column`), a short scenario judged live against the simulator (the exit code is the verdict),
//! and a scenario live runs cannot do refused before anything runs.

use std::path::PathBuf;

use mcpstorm_sim::scenario::{Dur, FidelitySpec, load_str, load_str_with};

use crate::common::fixtures::{fixed, scenario};
use crate::common::{mcpstorm, scratch_in, text};

fn smoke() -> String {
    std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/smoke.toml"))
        .expect("smoke.toml")
}

/// smoke.toml with `table` appended, written to a scratch file; returns its path and the line `table` starts on.
fn with_table(name: &str, table: &str) -> (String, usize) {
    let dir = scratch_in("fidelity-cli", name);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let text = smoke();
    let line = text.lines().count() + 2;
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, format!("{text}\n{table}")).expect("write");
    (path.to_string_lossy().into_owned(), line)
}

#[test]
fn the_fidelity_table_overrides_the_issue_targets_key_by_key() {
    let s = load_str(&smoke(), "smoke.toml", &[]).expect("valid");
    assert_eq!(s.fidelity, FidelitySpec::default());
    let text = format!("{}\n[fidelity]\nok_calls = 0.2\nonset = \"2s\"\n", smoke());
    let s = load_str_with(&text, "smoke.toml", &["fidelity.recovery=\"3s\"".to_owned()], &Default::default())
        .expect("valid");
    let ms = |n| Dur(std::time::Duration::from_millis(n));
    assert_eq!(
        s.fidelity,
        FidelitySpec { ok_calls: 0.2, onset: ms(2000), recovery: ms(3000), ..FidelitySpec::default() },
        "the keys given, the defaults for the rest"
    );
    assert_eq!((s.fidelity.error_rate, s.fidelity.latency, s.fidelity.latency_floor), (0.01, 0.1, ms(5)));
}

#[test]
fn a_bad_key_or_value_in_the_fidelity_table_exits_2_at_its_line_and_column() {
    let cases = [
        ("key", "ok_callz = 0.1", "fidelity.ok_callz: unknown key", 1),
        ("rate", "error_rate = 1.5", "fidelity.error_rate: must be between 0 and 1, got 1.5", 14),
        ("share", "latency = -0.1", "fidelity.latency: must be a share >= 0", 11),
        ("unit", "onset = \"soon\"", "fidelity.onset:", 9),
        ("long", "recovery = \"8d\"", "fidelity.recovery: must be at most", 12),
    ];
    for (name, line_text, message, column) in cases {
        let (path, line) = with_table(name, &format!("[fidelity]\n{line_text}\n"));
        let at = format!("{path}:{}:{column}: {message}", line + 1);
        for cmd in [vec!["validate", path.as_str()], vec!["fidelity", path.as_str()]] {
            let o = mcpstorm(&cmd);
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{cmd:?}: {}", text(&o));
            assert!(stderr.contains(&at), "{cmd:?}: expected {at:?} in:\n{stderr}");
        }
    }
}

/// A short open-loop scenario (100 calls/s for 3 s, one replica), small enough for a loaded machine in real time.
fn short() -> String {
    scenario("fidelity_short", "3s")
        .seed(3)
        .open(100.0, &[])
        .server("api", &[])
        .tool("lookup", &[&fixed(10)])
        .mix(Some("api"), "lookup")
        .build()
}

#[test]
fn a_live_and_a_simulated_run_are_judged_and_the_exit_code_is_the_verdict() {
    let dir = scratch_in("fidelity-cli", "short");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let path = dir.join("short.toml");
    std::fs::write(&path, short()).expect("write");
    let out = dir.join("report");
    let o = mcpstorm(&["fidelity", &path.to_string_lossy(), "--out", &out.to_string_lossy()]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    // Real time on a shared machine: whichever verdict it is, the exit code, the table and the files agree.
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("fidelity.json")).expect("fidelity.json")).expect("json");
    let passed = json["passed"].as_bool().expect("a verdict");
    assert_eq!(o.status.code(), Some(if passed { 0 } else { 1 }), "{}", text(&o));
    // A failure while the tests load this machine may be a busy host's, not judged; the host's load is read.
    let label = match json["outcome"].as_str() {
        Some("pass") => "PASS",
        Some("fail") => "FAIL",
        Some("not_judged") => "NOT JUDGED",
        other => panic!("outcome {other:?}"),
    };
    assert_eq!(passed, label == "PASS");
    assert!(stdout.contains(&format!("(1 seed(s)) {label}")), "{}", text(&o));
    assert!(json["seeds"][0]["host"]["others"].is_number(), "{}", json["seeds"][0]["host"]);
    for file in ["fidelity.md", "fidelity.svg", "fidelity.png", "report.html"] {
        assert!(out.join(file).is_file(), "{file} written");
    }
    // Both runs happened: the live side served calls, not a placeholder.
    let table = std::fs::read_to_string(out.join("fidelity.md")).expect("fidelity.md");
    assert!(table.contains("ok calls"), "{table}");
}

#[test]
fn a_scenario_live_runs_cannot_do_is_refused_before_anything_runs() {
    let out = scratch_in("fidelity-cli", "fail_rate");
    let o = mcpstorm(&[
        "fidelity",
        "scenarios/smoke.toml",
        "--set",
        "network.fail_rate=0.01",
        "--out",
        &out.to_string_lossy(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(stderr.contains("live runs do not support network.fail_rate"), "{stderr}");
    assert!(!out.exists(), "no report claims a verdict, and no empty directory is left behind");
}
