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

/// `tools` against `tests/peers/hostile.py` in `mode` (see that file).
fn hostile(mode: &str) -> Output {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/peers/hostile.py");
    let stdio = format!("python3 {script} {mode}");
    Command::new(BIN).args(["tools", "--stdio", &stdio]).output().expect("run mcpstorm tools")
}

/// A server that floods the client with 123,456 each of responses to ids never issued, notifications past the
/// queue and lines that are not JSON gets a handful of log lines (the 1st, 10th, 100th, ... of each, and the
/// totals), not 300,000: before, this wrote about 40 MB to stderr.
#[test]
fn a_flooding_server_gets_a_few_log_lines_not_one_per_event() {
    let o = hostile("flood 123456");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("t0"), "the listing still arrived");
    assert!(o.stderr.len() < 8_000, "{} bytes of log", o.stderr.len());
    for what in ["malformed frames rejected in all: 123456", "never issued dropped in all: 123456"] {
        assert!(stderr.contains(what), "{what}: {stderr}");
    }
}

/// A tool list past the limits is refused with an error naming the limit, whether it comes as one 11 MB page of
/// 100,000 tools or as pages of 5,000 that never end (before: about 1 GB of memory for the first, unbounded for the
/// second).
#[test]
fn a_tool_list_past_the_limits_is_refused_naming_the_limit() {
    for mode in ["tools 100000", "pages 5000"] {
        let o = hostile(mode);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{mode}: {stderr}");
        assert!(stderr.contains("ClientConfig::max_tools") && stderr.contains("raise the limit"), "{mode}: {stderr}");
        assert!(o.stdout.is_empty(), "{mode}: nothing listed");
    }
}
