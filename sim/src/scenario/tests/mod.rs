//! Scenario loading: every kind of bad input gives its message at the right `line:column`, problems are collected,
//! `--set` and sweeps work, the shipped scenarios load, the schema file is current, and no input panics. One module
//! per topic; the scenario texts and helpers they share are here.

use std::path::{Path, PathBuf};

use mcpstorm_core::session::GatewayProfile;

use super::*;

mod crash_rules;
mod gateway_config;
mod gateway_file;
mod idp;
mod key_ranges;
mod no_panic;
mod nodes_rules;
mod parsing;
mod recovery;
mod replay_rules;
mod rules;
mod run_cost;
mod set_and_sweep;
mod shipped;
mod sync_rules;

const BASE: &str = r#"name = "t"
duration = "10s"

[[servers]]
name = "a"
replicas = 2

[[servers.tools]]
name = "echo"
latency = { dist = "lognormal", p50_ms = 5, p99_ms = 40 }

[[servers]]
name = "b"

[[servers.tools]]
name = "get"

[load]
mode = "closed"
sessions = 10

[[load.mix]]
server = "a"
tool = "echo"

[[faults]]
kind = "latency_spike"
target = "a"
start = "1s"
duration = "2s"
extra = "100ms"
"#;

/// The fault of [`BASE`], whole.
const FAULT: &str = "kind = \"latency_spike\"\ntarget = \"a\"\nstart = \"1s\"\nduration = \"2s\"\nextra = \"100ms\"";

fn edit(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{from:?} is not in the text");
    text.replacen(from, to, 1)
}

fn load(text: &str, sets: &[&str]) -> Result<Scenario, ScenarioError> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    load_str(text, "t.toml", &sets)
}

fn problems(text: &str, sets: &[&str]) -> Vec<Problem> {
    match load(text, sets) {
        Ok(s) => panic!("expected problems, loaded {s:?}"),
        Err(e) => e.problems().to_vec(),
    }
}

/// 1-based line and column of the `|` in `needle` (which is matched without the `|`).
fn pos(text: &str, needle: &str) -> (usize, usize) {
    let bar = needle.find('|').unwrap_or(0);
    let plain = needle.replacen('|', "", 1);
    let at = text.find(&plain).unwrap_or_else(|| panic!("{plain:?} is not in the text")) + bar;
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, column)
}

/// Exactly one problem, about `key`, at the `|` of `at` in `text`, whose message contains `fragment`.
#[track_caller]
fn expect_one(text: &str, sets: &[&str], key: &str, at: &str, fragment: &str) {
    let found = problems(text, sets);
    assert_eq!(found.len(), 1, "expected one problem, got:\n{}", ScenarioError::Invalid(found.clone()));
    let p = &found[0];
    assert_eq!(p.key.as_deref(), Some(key), "{p}");
    assert!(p.message.contains(fragment), "{p}\ndoes not contain {fragment:?}");
    if at.is_empty() {
        assert_eq!(p.location, Location::Origin { origin: "t.toml".into() }, "{p}");
    } else {
        assert_eq!(p.line_column(), Some(pos(text, at)), "{p}");
    }
    let (line, column) = p.line_column().unwrap_or((0, 0));
    if line > 0 {
        assert!(p.to_string().starts_with(&format!("t.toml:{line}:{column}: {key}: ")), "{p}");
    }
}

/// BASE with `sets` applied.
fn set(sets: &[&str]) -> Scenario {
    load(BASE, sets).unwrap_or_else(|e| panic!("{sets:?}: {e}"))
}

/// The workspace root.
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The shipped scenario files, in name order.
fn shipped() -> Vec<PathBuf> {
    let dir = workspace().join("scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("scenarios/ exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}

#[test]
fn base_is_valid() {
    let s = load(BASE, &[]).expect("BASE is valid");
    assert_eq!((s.servers.len(), s.faults.len(), s.load.sessions), (2, 1, Some(10)));
    assert_eq!(s.checks.lost, Some(0), "lost = 0 is checked by default");
}
