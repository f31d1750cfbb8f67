//! Every duration and count key has a range, enforced with a message naming the key and the bound.

use std::collections::BTreeSet;

use proptest::prelude::*;

use super::*;

/// Every optional table and array the format has, present once (a second fault for the clock-skew keys), so that
/// every duration and count key exists and can be `--set`.
const FULL: &str = r#"name = "full"
duration = "10s"
tick = "1ms"

[network]
latency = "1ms"
max_latency = "2ms"

[[servers]]
name = "a"
replicas = 2
transport = "http"
require_token = true
workers = 8
page_size = 10
cache_ttl_ms = 1000
session_ttl = "60s"
latency_p95_ms = 100
max_concurrent_requests = 20
join_at = "1s"
leave_at = "9s"

[[servers.tools]]
name = "echo"
latency = { dist = "steps", default_steps = 2, default_step_ms = 5 }
progress_ms = 5

[load]
mode = "closed"
sessions = 10
think_time = "10ms"
calls = 1000
hosts = 2

[[load.mix]]
server = "a"
tool = "echo"
weight = 1

[agent]
retry = "polite"
max_retries = 2
backoff = "100ms"
backoff_cap = "1s"

[client]
max_in_flight = 50
per_connection = 50
queue_wait = "1s"
first_response = "1s"
connect_timeout = "1s"
deadline = "2s"

[[faults]]
kind = "latency_spike"
target = "a"
start = "2s"
duration = "1s"
extra = "10ms"
multiplier = 2.0

[[faults]]
kind = "clock_skew"
target = "a"
start = "3s"
duration = "1s"
offset = "+1m"
jump = "-10s"
reset = true

[[faults]]
kind = "http_status"
target = "a"
start = "2s"
duration = "1s"
status = 429
rate = 0.5
retry_after = "1s"

[[faults]]
kind = "idp_outage"
target = "idp"
start = "2s"
duration = "1s"
extra = "10ms"
status = 503
rate = 0.5

[identity_provider]
token_ttl = "10m"
latency = "10ms"
workers = 4
max_queue = 16

[gateway.router]
check_interval = "15s"
check_timeout = "5s"
failure_threshold = 3
error_window = "5m"
ewma_decay = "10s"
drift_window = "5m"
drift_penalty = "10m"
refresh_every = "1s"

[gateway.breaker]
window = "10s"
window_calls = 20
slow_call = "2s"
minimum_calls = 10
open = "5s"
open_max = "60s"
half_open_probes = 3
half_open_max_wait = "10s"

[gateway.retry]
max_attempts = 3
base = "100ms"
cap = "10s"

[gateway.budget]
ttl = "10s"

[gateway.throttle]
window = "2m"

[gateway.bulkhead]
max_concurrent = 8
per_server = { a = 4 }
queue_wait = "1s"

[gateway.limiter]
kind = "aimd"
initial = 8
min = 1
max = 16
timeout = "5s"

[swarm]
max_faults = 3
max_at_once = 2
warmup = "1s"
min_fault = "1s"
max_fault = "2s"
max_extra = "100ms"
recovery_within = "5s"
error_slack_calls = 5
p99_slack = "20ms"
"#;

/// The patterns the schema gives durations and signed durations (see `Dur` and `SignedDur`).
fn is_duration(node: &serde_json::Value) -> bool {
    node.get("pattern").and_then(|p| p.as_str()).is_some_and(|p| p.contains("(d|h|m|s|ms|us|ns))+$"))
}

/// Every leaf key of the schema, as a path with `[0]` for array entries, with its schema (references resolved).
fn schema_leaves() -> Vec<(String, serde_json::Value)> {
    fn walk(
        root: &serde_json::Value,
        node: &serde_json::Value,
        path: &str,
        depth: usize,
        out: &mut Vec<(String, serde_json::Value)>,
    ) {
        if depth > 16 {
            return;
        }
        if let Some(target) = node.get("$ref").and_then(|r| r.as_str()) {
            let name = target.trim_start_matches("#/definitions/");
            if let Some(def) = root.pointer(&format!("/definitions/{name}")) {
                walk(root, def, path, depth + 1, out);
            }
            return;
        }
        for combined in ["allOf", "oneOf", "anyOf"] {
            for part in node.get(combined).and_then(|a| a.as_array()).into_iter().flatten() {
                walk(root, part, path, depth + 1, out);
            }
        }
        if let Some(items) = node.get("items") {
            walk(root, items, &format!("{path}[0]"), depth + 1, out);
        }
        let props = node.get("properties").and_then(|p| p.as_object());
        for (key, child) in props.into_iter().flatten() {
            let child_path = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
            walk(root, child, &child_path, depth + 1, out);
        }
        let typed = node.get("type").and_then(|t| t.as_str());
        if props.is_none() && node.get("items").is_none() && typed.is_some_and(|t| t != "object") {
            out.push((path.to_owned(), node.clone()));
        }
    }
    let schema = schema::schema();
    let mut out = Vec::new();
    walk(&schema, &schema, "", 0, &mut out);
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out.dedup_by(|a, b| a.0 == b.0);
    out
}

/// `servers[3].tools[12].x` as `servers[0].tools[0].x`: the schema's shape of a path.
fn first_entries(path: &str) -> String {
    let mut out = String::new();
    let mut in_index = false;
    for ch in path.chars() {
        match ch {
            '[' => {
                in_index = true;
                out.push_str("[0]");
            }
            ']' => in_index = false,
            _ if in_index => {}
            _ => out.push(ch),
        }
    }
    out
}

/// FULL with `sets` applied, without cost limits: only the ranges apply.
fn load_full(sets: &[&str]) -> Result<Scenario, ScenarioError> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    load_str_with(FULL, "full.toml", &sets, &Limits::NONE)
}

fn full(sets: &[&str]) -> Scenario {
    load_full(sets).unwrap_or_else(|e| panic!("{sets:?}:\n{e}"))
}

#[test]
fn every_duration_key_of_the_schema_has_a_range() {
    let s = full(&[]);
    let schema: BTreeSet<String> =
        schema_leaves().into_iter().filter(|(_, node)| is_duration(node)).map(|(path, _)| path).collect();
    let ranged: BTreeSet<String> = validate::ranges(&s).durations.iter().map(|k| first_entries(&k.path)).collect();
    assert!(schema.len() >= 35, "the walk found the durations: {schema:?}");
    assert_eq!(ranged, schema, "every duration key has a range (validate::ranges) and nothing else does");
    for key in validate::ranges(&s).durations {
        assert!(key.value <= key.upper.of(s.duration.0), "FULL is in range: {key:?}");
        assert!(key.upper.of(s.duration.0) <= ranges::MAX_DURATION, "{key:?}");
    }
}

/// The integer keys that need no maximum: the seed (any u64 seeds a run) and the checks' thresholds (only compared
/// with the run's figures, never computed with).
fn unbounded(path: &str) -> bool {
    path == "seed" || path.starts_with("checks.")
}

/// Sets `key` to `value` in FULL (no cost limits) and returns the problems at `key` that are about a maximum.
fn over_the_top(key: &str, value: &str) -> Vec<Problem> {
    match load_full(&[&format!("{key}={value}")]) {
        Ok(_) => Vec::new(),
        Err(e) => e
            .problems()
            .iter()
            .filter(|p| p.key.as_deref() == Some(key) && p.message.starts_with("must be at most"))
            .cloned()
            .collect(),
    }
}

#[test]
fn every_count_of_the_schema_has_a_maximum_that_validation_enforces() {
    let leaves = schema_leaves();
    let mut checked = Vec::new();
    for (path, node) in &leaves {
        let integer = node.get("type").and_then(|t| t.as_str()) == Some("integer");
        let max = node.get("maximum").and_then(|m| m.as_f64());
        if !integer && max.is_none() || unbounded(path) {
            continue;
        }
        let Some(max) = max else { panic!("{path}: an integer key without a maximum in the schema") };
        let (at_max, beyond) = if integer {
            (format!("{}", max as u64), format!("{}", max as u64 + 1))
        } else {
            (format!("{max:?}"), format!("{:?}", max * 1.5))
        };
        let beyond_found = over_the_top(path, &beyond);
        assert!(!beyond_found.is_empty(), "{path} = {beyond} (above the schema's maximum) is accepted");
        // The scenario's own rules group digits; the fake server's (tools) print them plain.
        let message = &beyond_found[0].message;
        assert!(message.contains(&ranges::number(max)) || message.contains(&at_max), "{}", beyond_found[0]);
        assert!(over_the_top(path, &at_max).is_empty(), "{path} = {at_max} (the schema's maximum) is refused");
        checked.push(path.clone());
    }
    // The walk reached the tables: servers, tools' latency, load, the gateway's layers.
    for key in [
        "servers[0].replicas",
        "servers[0].tools[0].latency.default_steps",
        "servers[0].tools[0].progress_ms",
        "load.sessions",
        "load.rate",
        "gateway.breaker.window_calls",
        "gateway.limiter.warmup",
    ] {
        assert!(checked.iter().any(|c| c == key), "{key} was not checked: {checked:?}");
    }
}

#[test]
fn range_messages_name_the_key_and_the_bound() {
    let shown = |sets: &[&str]| load_full(sets).map_or_else(|e| e.to_string(), |_| panic!("{sets:?} accepted"));
    assert_eq!(
        shown(&["client.deadline=\"18446744073709551615s\""]),
        "--set client.deadline=\"18446744073709551615s\": client.deadline: must be at most 7d (a week), got \
         18446744073709551615s"
    );
    assert!(shown(&["network.latency=\"11s\""]).contains("must be at most the run's duration (10s), got 11s"));
    assert!(shown(&["load.think_time=\"1h\""]).contains("load.think_time: must be at most the run's duration"));
    assert!(shown(&["faults[1].offset=\"-8d\""]).contains("faults[1].offset: must be at most 7d (a week), got 8d"));
    assert!(
        shown(&[
            "duration=\"500ms\"",
            "tick=\"600ms\"",
            "faults=[]",
            "servers[0].join_at=\"1ms\"",
            "servers[0].leave_at=\"2ms\""
        ])
        .contains("tick: must be at most the run's duration (500ms), got 600ms")
    );
    assert!(shown(&["servers[0].tools[0].latency.default_step_ms=1e12"]).contains("at most 86400000 (one day)"));
    // The tops and bottoms of the ranges are accepted: a week either way, and a 1 ms tick.
    full(&["client.deadline=\"7d\"", "tick=\"1ms\"", "faults[1].jump=\"+7d\""]);
    // A finer tick is refused: the hosts' timers count whole milliseconds, so their clocks would run ahead.
    assert!(
        shown(&["tick=\"100us\""]).contains("tick: must be at least 1ms: the hosts' timers count whole milliseconds")
    );
}

/// What `--set key=value` on FULL does, as a property: loading succeeds with the value inside its range, or fails
/// with every problem located (at a line of the file or at the `--set`), and a value above a week is named.
fn set_duration(key: &ranges::DurationKey, value: &str) -> Result<(), TestCaseError> {
    let sets = [format!("{}=\"{value}\"", key.path)];
    let parsed = super::super::units::parse_duration(value.trim_start_matches(['+', '-'])).ok();
    match load_str(FULL, "full.toml", &sets) {
        Ok(s) => {
            let now = validate::ranges(&s).durations.into_iter().find(|k| k.path == key.path);
            let now = now.ok_or_else(|| TestCaseError::fail(format!("{} vanished", key.path)))?;
            prop_assert!(now.value <= now.upper.of(s.duration.0), "{} = {value} accepted out of range", key.path);
            prop_assert!(now.value <= ranges::MAX_DURATION);
        }
        Err(e) => {
            for p in e.problems() {
                prop_assert!(matches!(p.location, Location::File { .. } | Location::Set { .. }), "unlocated: {p}");
            }
            if parsed.is_some_and(|d| d > ranges::MAX_DURATION) {
                // A fault's window and join/leave are reported by their own rules, somewhere in their table.
                let table = key.path.rsplit_once('.').map_or("", |(t, _)| t);
                let named = e
                    .problems()
                    .iter()
                    .filter_map(|p| p.key.as_deref())
                    .any(|k| k == key.path || (key.upper == ranges::Upper::RunByOwnRule && k.starts_with(table)));
                prop_assert!(named, "{} = {value} refused without naming it:\n{e}", key.path);
            }
        }
    }
    Ok(())
}

fn duration_text() -> impl Strategy<Value = String> {
    let unit = prop_oneof![
        Just("ns"),
        Just("us"),
        Just("ms"),
        Just("s"),
        Just("m"),
        Just("h"),
        Just("d"),
        Just("w"),
        Just("y")
    ];
    let sign = prop_oneof![Just(""), Just("+"), Just("-")];
    let number = prop_oneof![
        any::<u64>().prop_map(|n| n.to_string()),
        (0..10_000u64).prop_map(|n| n.to_string()),
        "[0-9]{19,30}",
        Just("18446744073709551615".to_owned()),
        Just("604800".to_owned()),
    ];
    (sign, number, unit).prop_map(|(sign, n, unit)| format!("{sign}{n}{unit}"))
}

proptest! {
    #[test]
    fn any_duration_set_on_any_key_is_in_range_or_refused_where_it_was_given(
        index in any::<prop::sample::Index>(),
        value in duration_text(),
    ) {
        let keys = validate::ranges(&full(&[])).durations;
        set_duration(&keys[index.index(keys.len())], &value)?;
    }
}

#[test]
fn every_duration_key_refuses_the_largest_duration() {
    for key in validate::ranges(&full(&[])).durations {
        set_duration(&key, "18446744073709551615s").unwrap_or_else(|e| panic!("{}: {e}", key.path));
        set_duration(&key, "7d").unwrap_or_else(|e| panic!("{}: {e}", key.path));
    }
}

/// Found by `any_duration_set_on_any_key_is_in_range_or_refused_where_it_was_given` (`duration = "604800ns"`): the
/// `[fidelity]` tolerances were bounded by the run's duration, so a run shorter than their defaults (5 ms, 1 s) was
/// refused at keys it never set, with no location.
#[test]
fn a_run_shorter_than_the_fidelity_defaults_is_not_refused_for_them() {
    let text = "name = \"short\"\nduration = \"500ms\"\n[[servers]]\nname = \"api\"\n[[servers.tools]]\nname = \"t\"\n\
                [load]\nmode = \"open\"\nrate = 10.0\n[[load.mix]]\ntool = \"t\"\n";
    let s = load_str(text, "short.toml", &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.fidelity, crate::scenario::FidelitySpec::default());
}
