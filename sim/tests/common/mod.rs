//! Helpers shared by the CLI tests: `mcpstorm` run to completion from the repository root, and `mcpstorm
//! serve-fake` as a child process.

// Each test file includes this module and uses its own subset of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
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
