//! Helpers shared by the CLI tests: `mcpstorm` run to completion from the repository root, and `mcpstorm
//! serve-fake` as a child process.

// Each test file includes this module and uses its own subset of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};

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

/// `mcpstorm serve-fake` on a free loopback port; killed (by its own handle) when dropped.
pub struct Fake {
    child: Child,
    pub addr: String,
}

impl Fake {
    /// The built-in fake (`None`) or one configured by `config` (TOML text).
    pub fn start(config: Option<&str>) -> Fake {
        let mut cmd = Command::new(BIN);
        cmd.arg("serve-fake");
        if let Some(toml) = config {
            static SEQ: AtomicUsize = AtomicUsize::new(0);
            let dir = std::env::temp_dir().join(format!("mcpstorm-fake-{}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("temp dir");
            let path = dir.join(format!("fake-{}.toml", SEQ.fetch_add(1, Ordering::Relaxed)));
            std::fs::write(&path, toml).expect("write fake config");
            cmd.arg(path);
        }
        let mut child = cmd
            .args(["--listen", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start serve-fake");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped stdout")).read_line(&mut line).expect("read address");
        let addr = line.trim().strip_prefix("listening on ").expect("listening on <addr>").to_owned();
        Fake { child, addr }
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
