//! `mcpstorm call` against `mcpstorm serve-fake`: arguments that fail the tool's inputSchema are bad input (exit 2)
//! and the message names the JSON pointer of each failing value.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_mcpstorm");

/// The fake server as a child process; killed (by its own handle) when dropped.
struct Fake {
    child: Child,
    addr: String,
}

impl Fake {
    fn start() -> Fake {
        let mut child = Command::new(BIN)
            .args(["serve-fake", "--listen", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start serve-fake");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped stdout")).read_line(&mut line).expect("read address");
        let addr = line.trim().strip_prefix("listening on ").expect("listening on <addr>").to_owned();
        Fake { child, addr }
    }

    fn call(&self, tool: &str, args: &str) -> Output {
        Command::new(BIN).args(["call", "--tcp", &self.addr, tool, args]).output().expect("run mcpstorm call")
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn invalid_arguments_exit_2_naming_each_pointer() {
    let fake = Fake::start();
    let o = fake.call("slow_progress", r#"{"steps": "3", "step_ms": -1}"#);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(r#"arguments do not match the inputSchema of "slow_progress":"#), "{stderr}");
    assert!(stderr.contains("  /step_ms: -1 is less than the minimum of 0"), "{stderr}");
    assert!(stderr.contains(r#"  /steps: "3" is not of type "integer""#), "{stderr}");

    let o = fake.call("echo", r#"{"message": "fine"}"#);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "fine\n");
}
