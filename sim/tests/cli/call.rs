//! `mcpstorm call` against `mcpstorm serve-fake`: arguments that fail the tool's inputSchema are bad input (exit 2)
//! and the message names the JSON pointer of each failing value. `tools` and `call` against a hostile server: what
//! it sends reaches the terminal escaped and bounded.

use std::process::Output;

use serde_json::Value;

use crate::common::{command, mcpstorm};
use crate::servers::Fake;
use crate::servers::hostile::{self, DESCRIPTION, TOOL};

fn call(fake: &Fake, tool: &str, args: &str) -> Output {
    mcpstorm(&["call", "--tcp", &fake.addr, tool, args])
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

/// `tools` against `tests/peers/hostile.py` in `mode` (see that file), with `extra` flags.
fn hostile_stdio(mode: &str, extra: &[&str]) -> Output {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/peers/hostile.py");
    let stdio = format!("python3 {script} {mode}");
    command().args(["tools", "--stdio", &stdio]).args(extra).output().expect("run mcpstorm tools")
}

/// A server that floods the client with 123,456 each of responses to ids never issued, notifications past the
/// queue and lines that are not JSON gets a handful of log lines (the 1st, 10th, 100th, ... of each, and the
/// totals), not 300,000: before, this wrote about 40 MB to stderr.
#[test]
fn a_flooding_server_gets_a_few_log_lines_not_one_per_event() {
    let o = hostile_stdio("flood 123456", &[]);
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
        let o = hostile_stdio(mode, &[]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{mode}: {stderr}");
        assert!(stderr.contains("--max-tools") && stderr.contains("raise the limit"), "{mode}: {stderr}");
        assert!(o.stdout.is_empty(), "{mode}: nothing listed");
    }
    // The flag the message names raises the limit.
    let o = hostile_stdio("tools 12000", &["--max-tools", "20000"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("hostile 1 (protocol "), "the listing was accepted");
}

/// `mcpstorm args...` against a server, with its stdout and stderr as text.
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let o = mcpstorm(args);
    (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// What no human-mode output may carry: an escape that reaches the terminal, a right-to-left override.
fn assert_inert(what: &str, text: &str) {
    assert!(!text.contains('\x1b') && !text.contains('\u{202e}'), "{what} carries a raw escape: {text:?}");
}

/// A server that puts terminal escapes in its name, version, tool names and description, and answers with a
/// megabyte of escape-laden lines: the text commands escape and bound all of it and say what they cut; `--json`
/// carries it exactly.
#[test]
fn hostile_server_text_is_escaped_and_bounded_but_exact_in_json() {
    let addr = crate::servers::hostile_server();
    let big = hostile::big_text();

    let (code, stdout, stderr) = run(&["tools", "--tcp", &addr]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_inert("tools", &stdout);
    assert_eq!(stdout.lines().count(), 4, "a header and one line per tool: {stdout}");
    assert!(stdout.starts_with(r"evil\x1b]0;pwned\x07\x1b[2J 6.6.6\x1b[31m\u{202e} (protocol 2025-11-25): 3 tools"));
    assert!(stdout.contains(r"t\x1b[1;32mALL CHECKS PASS\x1b[0m"), "{stdout}");
    assert!(stdout.contains(r"\x1b[2J\x1b[Hok: 8 passed"), "only the description's first line: {stdout}");
    let (_, json, _) = run(&["tools", "--tcp", &addr, "--json"]);
    let tools: Value = serde_json::from_str(&json).expect("tools --json");
    assert_eq!((tools[0]["name"].as_str(), tools[0]["description"].as_str()), (Some(TOOL), Some(DESCRIPTION)));

    // An isError result of 10,000 lines of 109 bytes, each shown in 118 characters (an escaped ESC takes 4): the
    // 4,000-character bound keeps 33 lines and 106 characters (97 bytes) of the 34th, and counts the rest.
    let (code, stdout, stderr) = run(&["call", "--tcp", &addr, hostile::BIG]);
    assert_eq!(code, Some(1), "{stderr}");
    assert_inert("call", &stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 34, "{stdout}");
    assert_eq!(lines[0], format!(r"line 00000 \x1b[2K\x1b[31mred\x1b[0m {}", "x".repeat(80)));
    let cut = big.len() - 33 * 109 - 97;
    assert_eq!(cut, 1_086_306);
    let last = format!(
        r"line 00033 \x1b[2K\x1b[31mred\x1b[0m {}… [1,086,306 more bytes cut; --json prints it whole]",
        "x".repeat(69)
    );
    assert_eq!(lines[33], last);
    let (code, json, _) = run(&["call", "--tcp", &addr, hostile::BIG, "--json"]);
    assert_eq!(code, Some(1));
    let result: Value = serde_json::from_str(&json).expect("call --json");
    assert_eq!(result["content"][0]["text"].as_str(), Some(big.as_str()), "--json is exact");

    // A JSON-RPC error whose message is the megabyte: one line on stderr.
    let (code, stdout, stderr) = run(&["call", "--tcp", &addr, hostile::FAIL]);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(stdout, "");
    assert_inert("the error", &stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with(&format!("mcpstorm: tcp {addr}: ")), "{stderr}");
    assert!(stderr.contains(r"line 00000 \x1b[2K\x1b[31mred\x1b[0m"), "{stderr}");
    assert!(stderr.trim_end().ends_with(" more bytes cut]") && stderr.len() < 1_100, "{stderr}");
}
