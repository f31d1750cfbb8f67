//! `mcpstorm` run to completion from the repository root, and what its runs write: shared by the test binaries that
//! run the command (`cli`, `sim`).

// Each binary includes this module and uses its own subset of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_mcpstorm");

/// Runs `mcpstorm args...` from the repository root (so `scenarios/...` paths resolve) and returns its output.
pub fn mcpstorm(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."))
        .output()
        .expect("run mcpstorm")
}

/// A fresh scratch directory `group/name` under the test target directory.
pub fn scratch_in(group: &str, name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(group).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// `mcpstorm sim SCENARIO --out OUT --set ...` (a relative scenario path is from the repository root).
pub fn sim(scenario: &Path, out: &Path, sets: &[&str]) -> Output {
    let (scenario, out) = (scenario.to_string_lossy(), out.to_string_lossy());
    let mut args = vec!["sim", scenario.as_ref(), "--out", out.as_ref()];
    for s in sets {
        args.extend(["--set", s]);
    }
    mcpstorm(&args)
}

/// A run directory's `summary.json`.
pub fn summary(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("summary.json")).expect("summary.json");
    serde_json::from_str(&text).expect("summary.json is JSON")
}

/// The names of the checks that failed.
pub fn failed(summary: &Value) -> Vec<String> {
    let checks = summary["checks"].as_array().cloned().unwrap_or_default();
    checks
        .iter()
        .filter(|c| c["passed"] == Value::Bool(false))
        .filter_map(|c| c["name"].as_str().map(String::from))
        .collect()
}

/// A command's stdout and stderr, for assertion messages.
pub fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}
