//! The tests' support, shared by the test binaries that run the command (`cli`, `sim`): `mcpstorm` run from the
//! repository root, what its runs write, and the TOML the tests give it ([`fixtures`]).

// Each binary includes this module and uses its own subset of it.
#![allow(dead_code)]

pub mod fixtures;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_mcpstorm");

/// The repository root, where `scenarios/...` paths resolve.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `mcpstorm`, to be run from the repository root: for a test that spawns it, pipes it or changes its environment.
pub fn command() -> Command {
    let mut command = Command::new(BIN);
    command.current_dir(repo_root());
    command
}

/// Runs `mcpstorm args...` from the repository root and returns its output.
pub fn mcpstorm(args: &[&str]) -> Output {
    mcpstorm_env(args, &[])
}

/// [`mcpstorm`] with the environment variables `env` set.
pub fn mcpstorm_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    command().args(args).envs(env.iter().copied()).output().expect("run mcpstorm")
}

/// Every file below `dir`, as paths relative to it, sorted.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(dir).expect("under dir").to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// A fresh scratch directory `group/name` under the test target directory.
pub fn scratch_in(group: &str, name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(group).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// `mcpstorm sim SCENARIO --out OUT --set ...` (a relative scenario path is from the repository root).
pub fn sim(scenario: &Path, out: &Path, sets: &[&str]) -> Output {
    run_scenario("sim", scenario, out, sets)
}

/// `mcpstorm COMMAND SCENARIO --out OUT --set ...`: `sim`, `live` or `fidelity`.
pub fn run_scenario(command: &str, scenario: &Path, out: &Path, sets: &[&str]) -> Output {
    let (scenario, out) = (scenario.to_string_lossy(), out.to_string_lossy());
    let mut args = vec![command, scenario.as_ref(), "--out", out.as_ref()];
    for s in sets {
        args.extend(["--set", s]);
    }
    mcpstorm(&args)
}

/// [`sim`], which must exit 0: its stdout.
pub fn sim_ok(scenario: &Path, out: &Path, sets: &[&str]) -> String {
    let o = sim(scenario, out, sets);
    assert!(o.status.success(), "mcpstorm sim {} failed: {}", scenario.display(), text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
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
