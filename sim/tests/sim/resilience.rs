//! The resilience scenarios through the real `mcpstorm sim` command, shortened for a debug build: with the default
//! gateway the named checks pass, with the naive profile they fail (exit 1); agents honour degraded results unless
//! they are `stubborn`; breaker openings spread between gateways through Redis, and a partition of Redis leaves
//! each gateway protecting itself.

use std::path::{Path, PathBuf};

use crate::common::{failed, scratch_in, sim, summary, text};
use serde_json::Value;

fn scratch(name: &str) -> PathBuf {
    scratch_in("resilience", name)
}

/// retry_storm at a fifth of its rate, its fault unchanged; no contrast run (each test runs the profile it checks).
const SHORT_STORM: &[&str] = &["load.rate=300.0", "report={}"];
/// bulkhead with a shorter hang, earlier.
const SHORT_BULKHEAD: &[&str] =
    &["duration=\"16s\"", "faults[0].start=\"5s\"", "faults[0].duration=\"8s\"", "report={}"];

/// Runs the shortened retry_storm with `extra` overrides: exit code, summary, output, run directory.
fn storm(name: &str, extra: &[&str]) -> (Option<i32>, Value, String, PathBuf) {
    let out = scratch(name);
    let sets: Vec<&str> = SHORT_STORM.iter().chain(extra).copied().collect();
    let o = sim(Path::new("scenarios/retry_storm.toml"), &out, &sets);
    (o.status.code(), summary(&out), text(&o), out)
}

#[test]
fn retry_storm_is_contained_by_the_default_gateway_and_not_by_the_naive_one() {
    let (code, s, out, _) = storm("storm-default", &[]);
    assert_eq!(code, Some(0), "{out}");
    let t = &s["totals"];
    assert!(t["amplification_during_fault"].as_f64().unwrap_or(9.0) <= 1.2, "{t}");
    assert!(t["breaker_opens"].as_u64().unwrap_or(0) >= 1, "{t}");
    assert!(t["degraded"]["breaker_open"].as_u64().unwrap_or(0) > 0, "{t}");

    let (code, s, out, _) = storm("storm-naive", &["gateway.profile=naive"]);
    assert_eq!(code, Some(1), "{out}");
    let failed = failed(&s);
    assert_eq!(failed, ["amplification_during_fault", "healthy_p99_ratio"]);
    assert!(s["totals"]["amplification_during_fault"].as_f64().unwrap_or(0.0) > 2.0, "{}", s["totals"]);
    assert_eq!(s["totals"]["breaker_opens"], 0);
}

/// Each logical call ends once, so an agent that stops at a degraded result ends exactly one call with each: the
/// calls counted under `err_degraded` (their own class, not `tool`) are the degraded results. A stubborn agent
/// retries them, up to six per call.
#[test]
fn only_stubborn_agents_retry_degraded_results() {
    let degraded =
        |s: &Value| s["totals"]["degraded"].as_object().map_or(0, |m| m.values().filter_map(Value::as_u64).sum());
    for (mode, stubborn) in [("naive", false), ("reflective", false), ("polite", false), ("stubborn", true)] {
        let (_, s, out, dir) = storm(&format!("storm-{mode}"), &[&format!("agent.retry={mode}")]);
        let (d, e) = (degraded(&s), column_sum(&dir, "err_degraded"));
        assert!(d > 0, "{mode}: no degraded results\n{out}");
        assert_eq!(s["totals"]["errors_by_class"]["degraded"].as_u64(), Some(e), "{mode}: {}", s["totals"]);
        if stubborn {
            assert!(d > 2 * e && e > 0, "{mode}: {d} degraded results for {e} calls ending in one");
        } else {
            assert_eq!(d, e, "{mode}: {d} degraded results, {e} calls ending in one: some were retried or misfiled");
            assert_eq!(column_sum(&dir, "err_tool"), 0, "{mode}: a degraded result filed under tool\n{out}");
        }
    }
}

/// The sum of one `timeseries.csv` column.
fn column_sum(dir: &Path, name: &str) -> u64 {
    let text = std::fs::read_to_string(dir.join("timeseries.csv")).expect("timeseries.csv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let col = header.iter().position(|h| *h == name).expect("the column exists");
    lines.filter_map(|l| l.split(',').nth(col)?.parse::<u64>().ok()).sum()
}

#[test]
fn a_hung_server_does_not_slow_the_others_behind_bulkheads() {
    let out = scratch("bulkhead-default");
    let o = sim(Path::new("scenarios/bulkhead.toml"), &out, SHORT_BULKHEAD);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(summary(&out)["totals"]["degraded"]["bulkhead_full"].as_u64().unwrap_or(0) > 0);

    let out = scratch("bulkhead-naive");
    let naive: Vec<&str> = SHORT_BULKHEAD.iter().copied().chain(["gateway.profile=naive"]).collect();
    let o = sim(Path::new("scenarios/bulkhead.toml"), &out, &naive);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(failed(&summary(&out)), ["healthy_p99_ratio"]);
}

fn breaker_events(dir: &Path) -> Vec<String> {
    let events = std::fs::read_to_string(dir.join("events.csv")).expect("events.csv");
    events.lines().filter(|l| l.contains(",breaker,") && l.contains("-> open")).map(str::to_owned).collect()
}

#[test]
fn sync_spreads_an_opening_and_a_partition_of_redis_leaves_each_gateway_protecting_itself() {
    let scenario = Path::new("scenarios/breaker_sync.toml");
    let out = scratch("sync");
    let o = sim(scenario, &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let opens = breaker_events(&out);
    assert_eq!(opens.len(), 3, "{opens:?}");
    assert_eq!(opens.iter().filter(|l| l.contains("(remote)")).count(), 2, "two followers: {opens:?}");
    let incidents = summary(&out)["totals"]["convergence"].clone();
    assert!(incidents[0]["converged_ms"].as_u64().is_some(), "every gateway followed: {incidents}");

    let out = scratch("sync-partitioned");
    let cut = "faults=[{kind=\"error_burst\",target=\"db\",start=\"4s\",duration=\"6s\",rate=1.0},\
               {kind=\"partition\",target=\"redis\",start=\"1s\",duration=\"10s\"}]";
    let o = sim(scenario, &out, &[cut]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let opens = breaker_events(&out);
    assert_eq!(opens.len(), 3, "every gateway still opens: {opens:?}");
    assert!(opens.iter().all(|l| l.contains("(failure_rate)")), "each on its own evidence: {opens:?}");
    let degraded = summary(&out)["totals"]["degraded"]["breaker_open"].as_u64().unwrap_or(0);
    assert!(degraded > 0);
}

#[test]
fn an_overload_spreads_to_the_healthy_server_only_without_protection() {
    let scenario = Path::new("scenarios/cascading_failure.toml");
    let short = ["load.rate=450.0", "duration=\"25s\"", "report={}"];
    let out = scratch("cascading-default");
    let o = sim(scenario, &out, &short);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    let out = scratch("cascading-naive");
    let naive: Vec<&str> = short.iter().copied().chain(["gateway.profile=naive"]).collect();
    let o = sim(scenario, &out, &naive);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let s = summary(&out);
    assert_eq!(failed(&s), ["healthy_p99_ratio"]);
    assert!(s["totals"]["amplification_during_fault"].as_f64().unwrap_or(0.0) > 1.5, "{}", s["totals"]);
}

/// replica_killed shortened: ledger#1 down from 3 s to 8 s, in `mode`, under `profile`; every attempt recorded.
fn killed(mode: &str, profile: &str) -> (Option<i32>, PathBuf) {
    let out = scratch(&format!("killed-{mode}-{profile}"));
    let (mode, profile) = (format!("faults[0].mode=\"{mode}\""), format!("gateway.profile={profile}"));
    let sets = ["duration=\"12s\"", "faults[0].start=\"3s\"", "faults[0].duration=\"5s\"", "report.calls=\"all\""];
    let sets: Vec<&str> = sets.into_iter().chain(["report.contrast=\"none\"", &mode, &profile]).collect();
    let o = sim(Path::new("scenarios/replica_killed.toml"), &out, &sets);
    (o.status.code(), out)
}

/// The failed attempts on ledger-1 started inside its window, by `code`, and the attempts there that were retries
/// (on any replica).
fn failed_on_the_killed_replica(dir: &Path) -> (std::collections::BTreeMap<String, u64>, u64) {
    let calls = std::fs::read_to_string(dir.join("calls.csv")).expect("calls.csv");
    let (mut codes, mut retries) = (std::collections::BTreeMap::new(), 0);
    for row in calls.lines().skip(1).map(|r| r.split(',').collect::<Vec<&str>>()) {
        if !(3_000.0..8_000.0).contains(&row[1].parse::<f64>().expect("start_ms")) {
            continue;
        }
        retries += u64::from(row[10] != "0");
        if row[3] == "ledger-1" && row[8] != "success" {
            *codes.entry(row[9].to_owned()).or_insert(0) += 1;
        }
    }
    (codes, retries)
}

/// Each crash mode shows its callers what the real failure does: a killed process refuses the connect, a vanished
/// host lets it time out, a resetting process closes the connection after the request went out. With the naive
/// gateway (no failover) every call routed to ledger-1 meanwhile fails so; with the default one, a refused call is
/// failed over, and a reset one (it may have reached ledger-1, and `deposit` is not idempotent) is never repeated.
#[test]
fn each_crash_mode_fails_its_callers_as_the_real_failure_does() {
    for (mode, code) in [("refuse", "connect_failed"), ("hang", "connect_timeout"), ("reset", "closed")] {
        let (_, out) = killed(mode, "naive");
        let (codes, _) = failed_on_the_killed_replica(&out);
        let (ours, others): (Vec<_>, Vec<_>) = codes.iter().partition(|(c, _)| c.as_str() == code);
        assert!(ours.first().is_some_and(|(_, n)| **n > 100), "{mode}: {codes:?}");
        // A call that waited out its deadline behind the dead replica ends as a timeout, whatever the mode.
        assert!(others.iter().all(|(c, n)| c.as_str() == "deadline_exceeded" && **n <= 2), "{mode}: {codes:?}");
    }
    let (code, out) = killed("refuse", "default");
    assert_eq!(code, Some(0), "the default passes replica_killed's checks");
    let (codes, retried) = failed_on_the_killed_replica(&out);
    assert!(codes.get("connect_failed").is_some_and(|n| *n == retried), "each refused call failed over: {codes:?}");
    let (_, out) = killed("reset", "default");
    let (codes, retried) = failed_on_the_killed_replica(&out);
    assert!(codes.get("closed").is_some_and(|n| *n > 0) && retried == 0, "never repeated: {codes:?}, {retried}");
}
