//! `mcpstorm call` against `mcpstorm serve-fake`: arguments that fail the tool's inputSchema are bad input (exit 2)
//! and the message names the JSON pointer of each failing value.

use std::process::{Command, Output};

mod common;

use common::{BIN, Fake};

fn call(fake: &Fake, tool: &str, args: &str) -> Output {
    Command::new(BIN).args(["call", "--tcp", &fake.addr, tool, args]).output().expect("run mcpstorm call")
}

#[test]
fn invalid_arguments_exit_2_naming_each_pointer() {
    let fake = Fake::start(None);
    let o = call(&fake, "slow_progress", r#"{"steps": "3", "step_ms": -1}"#);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(r#"arguments do not match the inputSchema of "slow_progress":"#), "{stderr}");
    assert!(stderr.contains("  /step_ms: -1 is less than the minimum of 0"), "{stderr}");
    assert!(stderr.contains(r#"  /steps: "3" is not of type "integer""#), "{stderr}");

    let o = call(&fake, "echo", r#"{"message": "fine"}"#);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "fine\n");
}
