//! The gateway and the fake servers over Streamable HTTP in the simulator, through the real `mcpstorm sim`: each HTTP
//! fault reaches the gateway as a real deployment's would, and `http_pool` contrasts the profiles.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{scratch_in, sim, summary, text};

/// `http_pool` shortened to 15 s, its spike replaced by `faults`, no contrast run and no checks.
fn run(name: &str, faults: &str, extra: &[&str]) -> (Value, PathBuf) {
    let out = scratch_in("http", name);
    let faults = format!("faults={faults}");
    let mut sets = vec!["duration=\"15s\"", faults.as_str(), "report={}", "checks={}"];
    sets.extend_from_slice(extra);
    let o = sim(Path::new("scenarios/http_pool.toml"), &out, &sets);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    (summary(&out)["totals"].clone(), out)
}

fn count(totals: &Value, key: &str) -> u64 {
    totals[key].as_u64().unwrap_or_else(|| panic!("no {key} in {totals}"))
}

/// How many attempts in `calls.csv` ended with this error code.
fn attempts_with_code(dir: &Path, code: &str) -> usize {
    let text = std::fs::read_to_string(dir.join("calls.csv")).expect("calls.csv");
    text.lines().filter(|l| l.split(',').nth(9) == Some(code)).count()
}

/// A 429 burst with `Retry-After` on one replica: the default gateway's breaker opens for the server's wait and
/// routes to the siblings; the naive gateway passes every 429 to its callers.
#[test]
fn a_429_burst_with_retry_after_opens_the_breaker_of_that_replica_only() {
    let burst = r#"[{ kind = "http_status", target = "docs#0", start = "5s", duration = "5s", status = 429, retry_after = "2s" }]"#;
    let (default, _) = run("429-default", burst, &[]);
    let (naive, _) = run("429-naive", burst, &["gateway.profile=naive"]);
    assert_eq!(count(&default, "lost"), 0, "{default}");
    assert!(count(&default, "breaker_opens") >= 1, "{default}");
    assert!(count(&naive, "errors") > 100, "a third of 5 s of calls get 429: {naive}");
    assert!(count(&default, "errors") * 10 < count(&naive, "errors"), "default {default}\nnaive {naive}");
}

/// 2025-11-25 sessions over HTTP: a server that forgets them answers 404, and the client starts a new session and
/// resends the call once, so no call fails. A cut SSE stream is resumed with `Last-Event-ID`.
#[test]
fn legacy_sessions_and_streams_survive_a_forgetful_server_and_cut_streams() {
    let legacy = "servers[0].eras=[\"legacy\"]";
    let (forgot, dir) = run("forget", r#"[{ kind = "session_expiry", target = "docs", start = "5s" }]"#, &[legacy]);
    assert_eq!((count(&forgot, "errors"), count(&forgot, "lost")), (0, 0), "{forgot}");
    assert!(count(&forgot, "rehandshakes") >= 3, "one new session per replica: {forgot}");
    let events = std::fs::read_to_string(dir.join("events.csv")).expect("events.csv");
    assert!(events.contains("session,docs-0,not_found") && events.contains("session,docs-0,resent"), "{events}");

    let cut = r#"[{ kind = "stream_reset", target = "docs#1", start = "5s", duration = "5s", rate = 0.5 }]"#;
    let (resumed, _) = run("reset-legacy", cut, &[legacy]);
    assert_eq!((count(&resumed, "errors"), count(&resumed, "lost")), (0, 0), "{resumed}");
    // 2026-07-28 streams cannot be resumed: a cut one fails its call (the agent may retry it).
    let (modern, dir) = run("reset-modern", cut, &["servers[0].eras=[\"modern\"]"]);
    assert!(count(&modern, "errors") > 0, "{modern}");
    assert_eq!(attempts_with_code(&dir, "closed") as u64, count(&modern, "errors"), "{modern}");
}

/// A replica whose status lines wait 3 s: the naive gateway's callers wait with it; the default gateway's breaker
/// (slow calls) and bulkhead move the calls to its siblings.
#[test]
fn slow_response_headers_hold_the_naive_gateway_only() {
    let slow = r#"[{ kind = "slow_headers", target = "docs#2", start = "5s", duration = "5s", extra = "3s" }]"#;
    let (default, _) = run("slow-default", slow, &[]);
    let (naive, _) = run("slow-naive", slow, &["gateway.profile=naive"]);
    let p99 = |t: &Value| t["p99_ms"].as_f64().unwrap_or(0.0);
    assert!(p99(&naive) > 2_000.0, "{naive}");
    assert!(p99(&default) < 500.0, "{default}");
}
