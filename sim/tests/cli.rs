//! The `mcpstorm` command's contract: exit 0 on success, 1 when a scenario's checks fail, 2 on bad input, with a
//! message that names where the problem is.

use std::path::PathBuf;

mod common;
use common::mcpstorm;

fn scratch(name: &str) -> String {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli").join(name).to_string_lossy().into_owned()
}

#[test]
fn sim_passes_and_prints_the_reproduce_command() {
    let out = scratch("pass");
    let o = mcpstorm(&["sim", "scenarios/smoke.toml", "--out", &out]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("reproduce: mcpstorm sim scenarios/smoke.toml --seed 1"), "{stdout}");
    assert!(PathBuf::from(&out).join("report.png").exists());
}

#[test]
fn failed_checks_exit_1() {
    let out = scratch("fail");
    let o = mcpstorm(&["sim", "scenarios/smoke.toml", "--out", &out, "--set", "checks.p99_ms=0.001"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("FAIL"));
    // The report is still written: a failed run is exactly the one to look at.
    assert!(PathBuf::from(&out).join("summary.json").exists());
}

#[test]
fn bad_scenarios_exit_2_with_file_line_column() {
    let dir = PathBuf::from(scratch("bad"));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let bad = dir.join("bad.toml");
    let smoke = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/smoke.toml");
    let text = std::fs::read_to_string(smoke).expect("smoke.toml");
    std::fs::write(&bad, text.replacen("[load]", "[load]\nsesions = 3", 1)).expect("write bad.toml");
    let bad = bad.to_string_lossy().into_owned();
    for cmd in [vec!["validate", bad.as_str()], vec!["sim", bad.as_str(), "--out", &scratch("bad-out")]] {
        let o = mcpstorm(&cmd);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{cmd:?}: {stderr}");
        assert!(stderr.contains("bad.toml:") && stderr.contains("load.sesions"), "{stderr}");
    }
    let o = mcpstorm(&["sim", "scenarios/does-not-exist.toml"]);
    assert_eq!(o.status.code(), Some(2));
    let o = mcpstorm(&["sim", "scenarios/smoke.toml", "--set", "load.sessions=-3"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--set load.sessions=-3"));
}
