//! `mcpstorm scenarios`: the shipped scenarios as an installed binary has them, and the line it prints works.

use std::path::PathBuf;

use crate::common::{mcpstorm, text};

#[test]
fn the_list_names_every_scenario_and_a_printed_one_runs_outside_the_checkout() {
    let o = mcpstorm(&["scenarios"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.lines().any(|l| l.starts_with("retry_storm ") && l.contains("calls/s")), "{stdout}");
    assert!(stdout.contains("mcpstorm scenarios NAME > NAME.toml && mcpstorm sim NAME.toml"), "{stdout}");

    // What the footer says, done: print one into a directory with nothing else in it, and validate it there.
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("scenarios-printed");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let printed = mcpstorm(&["scenarios", "smoke"]);
    assert_eq!(printed.status.code(), Some(0), "{}", text(&printed));
    let file = dir.join("smoke.toml");
    std::fs::write(&file, &printed.stdout).expect("write");
    let v = mcpstorm(&["validate", &file.to_string_lossy()]);
    assert_eq!(v.status.code(), Some(0), "{}", text(&v));
    assert!(String::from_utf8_lossy(&v.stdout).starts_with("ok: smoke"), "{}", text(&v));

    let bad = mcpstorm(&["scenarios", "retry_strom"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    assert!(text(&bad).contains("did you mean `retry_storm`?"), "{}", text(&bad));
}
