//! `mcpstorm fidelity` as a user meets it: the `[fidelity]` table's keys (defaults, overrides, bad keys and values
//! named by `file:line:column`), and a build without live runs that says so instead of giving a verdict.

use std::path::PathBuf;

use mcpstorm_sim::scenario::{Dur, FidelitySpec, load_str, load_str_with};

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
        ("long", "recovery = \"1h\"", "fidelity.recovery: must be at most", 12),
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

#[test]
fn without_a_live_runner_built_in_it_says_so_and_gives_no_verdict() {
    let out = scratch_in("fidelity-cli", "no-live");
    let o = mcpstorm(&["fidelity", "scenarios/smoke.toml", "--out", &out.to_string_lossy()]);
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(stderr.contains("live runs are not built in this build"), "{stderr}");
    assert!(!stdout.contains("PASS") && !stdout.contains("FAIL") && !stderr.contains("PASS"), "{}", text(&o));
    assert!(!out.exists(), "no report claims a verdict, and no empty directory is left behind");
}
