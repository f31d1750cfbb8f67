//! `traces.otlp.json` through the real `mcpstorm sim`: byte-identical per seed, one trace per kept call with its
//! agent, gateway, attempt and server spans parented as docs/traces.md says, decoded by OpenTelemetry's own protobuf
//! definitions (Python's `opentelemetry-proto`, `tests/peers/py_trace_check.py`; skipped loudly when missing unless
//! `MCPSTORM_REQUIRE_PEERS=1`), and absent unless asked for.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{repo_root, scratch_in, sim_ok};

const TRACES: &str = "traces.otlp.json";

/// retry_storm shortened as the determinism test does, without its contrast run (the primary's file is the one
/// checked): its breakers still open and answer degraded during the spike.
const STORM: [&str; 3] = ["load.rate=300.0", "report.contrast=\"none\"", "report.traces=\"failed\""];

fn require_peers() -> bool {
    std::env::var("MCPSTORM_REQUIRE_PEERS").is_ok_and(|v| v == "1")
}

fn python() -> String {
    std::env::var("MCPSTORM_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Every span of the file (a JSON line per call) with its resource's `service.name`.
fn spans(file: &Path) -> Vec<(String, Value)> {
    let text = std::fs::read_to_string(file).expect("traces.otlp.json");
    let mut out = Vec::new();
    for line in text.lines() {
        let doc: Value = serde_json::from_str(line).expect("each line is JSON");
        for rs in doc["resourceSpans"].as_array().expect("resourceSpans") {
            let service = rs["resource"]["attributes"]
                .as_array()
                .and_then(|a| a.iter().find(|kv| kv["key"] == "service.name"))
                .and_then(|kv| kv["value"]["stringValue"].as_str())
                .expect("service.name")
                .to_owned();
            for ss in rs["scopeSpans"].as_array().expect("scopeSpans") {
                for span in ss["spans"].as_array().expect("spans") {
                    out.push((service.clone(), span.clone()));
                }
            }
        }
    }
    out
}

fn attribute<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"].as_array()?.iter().find(|kv| kv["key"] == key).map(|kv| &kv["value"])
}

#[test]
fn retry_storm_failed_calls_are_deterministic_parented_traces() {
    let root = repo_root();
    let storm = root.join("scenarios/retry_storm.toml");
    let (a, b) = (scratch_in("traces", "a"), scratch_in("traces", "b"));
    sim_ok(&storm, &a, &STORM);
    sim_ok(&storm, &b, &STORM);
    let (x, y) = (std::fs::read(a.join(TRACES)).expect("a's file"), std::fs::read(b.join(TRACES)).expect("b's file"));
    assert!(x == y, "{TRACES} differs between two runs of the same seed");
    // The page's waterfalls are drawn from the same kind of spans: byte-identical too, and there.
    let page = |d: &Path| std::fs::read_to_string(d.join("report.html")).expect("report.html");
    let (pa, pb) = (page(&a), page(&b));
    assert!(pa == pb, "report.html differs between two runs of the same seed");
    for pick in ["the slowest call:", "a failed call:", "a call answered degraded:"] {
        assert!(pa.contains(pick), "report.html shows no waterfall of {pick:?}");
    }
    assert!(pa.contains("gateway call 1") && pa.contains("declined, breaker_open"), "a breaker's decline is drawn");

    let spans = spans(&a.join(TRACES));
    let mut traces: BTreeMap<&str, BTreeMap<&str, (&str, &Value)>> = BTreeMap::new();
    for (service, span) in &spans {
        let trace = span["traceId"].as_str().expect("traceId");
        let id = span["spanId"].as_str().expect("spanId");
        assert!(trace.len() == 32 && id.len() == 16, "hex ids: {span}");
        assert!(span["startTimeUnixNano"].is_string() && span["endTimeUnixNano"].is_string());
        assert!(traces.entry(trace).or_default().insert(id, (service.as_str(), span)).is_none(), "a span id twice");
    }
    assert!(traces.len() >= 10, "failed calls of the storm kept: {}", traces.len());
    let mut decisions = BTreeSet::new();
    for spans in traces.values() {
        let roots: Vec<_> = spans.values().filter(|(_, s)| s.get("parentSpanId").is_none()).collect();
        assert_eq!(roots.len(), 1, "one agent span per trace");
        let (service, root) = roots[0];
        assert_eq!(*service, "agent");
        assert_ne!(attribute(root, "mcpstorm.call.outcome").and_then(|v| v["stringValue"].as_str()), Some("ok"));
        assert!(attribute(root, "error.type").is_some(), "a failed call carries error.type");
        for (service, span) in spans.values() {
            assert_eq!(span["name"].as_str().map(|n| n.starts_with("tools/call ")), Some(true));
            let Some(parent) = span["parentSpanId"].as_str() else { continue };
            let (parent_service, parent_span) = spans.get(parent).expect("the parent is in the trace");
            if let Some(d) = attribute(span, "mcpstorm.breaker.decision") {
                decisions.insert(d["stringValue"].as_str().unwrap_or_default().to_owned());
            }
            if attribute(span, "mcpstorm.attempt.replica").is_some() {
                assert_eq!((*parent_service, parent_span["kind"].as_i64()), ("mcpstorm-gateway", Some(2)));
            } else if *service == "mcpstorm-gateway" {
                assert!(parent_span.get("parentSpanId").is_none(), "a gateway call is a child of the agent's span");
            } else {
                assert!(attribute(parent_span, "mcpstorm.attempt.replica").is_some(), "a server span's parent");
            }
        }
    }
    assert!(decisions.contains("breaker_open"), "a breaker answered some call degraded: {decisions:?}");
    decode_with_opentelemetry_proto(&a.join(TRACES), true);
}

/// OpenTelemetry's own definitions read the file and find the same parenting (and a breaker's decline, with
/// `declines`).
fn decode_with_opentelemetry_proto(file: &Path, declines: bool) {
    let script = repo_root().join("tests/peers/py_trace_check.py");
    let probe = Command::new(python()).args(["-c", "import opentelemetry.proto, google.protobuf"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        let how = "python3 -m pip install -r tests/peers/requirements.txt";
        assert!(!require_peers(), "interop peer missing: Python's opentelemetry-proto. Install it with: {how}");
        eprintln!("\n*** SKIPPING: interop peer missing: Python's opentelemetry-proto. Install it with: {how} ***\n");
        return;
    }
    let out = Command::new(python()).arg(&script).arg(file).output().expect("run py_trace_check.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "py_trace_check.py: {stdout}{}", String::from_utf8_lossy(&out.stderr));
    let summary: Value = serde_json::from_str(stdout.trim()).expect("its summary");
    assert!(summary["traces"].as_u64().is_some_and(|n| n >= 10), "{summary}");
    if declines {
        assert!(summary["decision breaker_open"].as_u64().is_some_and(|n| n > 0), "{summary}");
    } else {
        assert!(summary["server"].as_u64().is_some_and(|n| n > 0), "{summary}");
    }
}

/// A healthy run's ok calls, every one of them with `"all"` (a short run writes every attempt): the agent's span, the
/// gateway's, one attempt admitted by its breaker, and the echo server's answer below it, in time order.
#[test]
fn an_ok_call_reaches_the_servers_span() {
    let smoke = repo_root().join("scenarios/smoke.toml");
    let out = scratch_in("traces", "smoke");
    sim_ok(&smoke, &out, &["report.traces=\"all\""]);
    let spans = spans(&out.join(TRACES));
    let agents = spans.iter().filter(|(s, _)| s == "agent").count();
    let summary = crate::common::summary(&out);
    assert_eq!(agents as u64, summary["totals"]["completed"].as_u64().expect("completed"), "a trace per call");
    let nanos = |v: &Value| v.as_str().and_then(|s| s.parse::<u128>().ok()).expect("nanos");
    let mut servers = 0;
    for (service, span) in &spans {
        if !service.starts_with("echo") {
            continue;
        }
        servers += 1;
        let parent = span["parentSpanId"].as_str().expect("a parent");
        let (_, attempt) = spans.iter().find(|(_, s)| s["spanId"] == parent).expect("its attempt");
        assert_eq!(
            attribute(attempt, "mcpstorm.breaker.decision").and_then(|v| v["stringValue"].as_str()),
            Some("admitted")
        );
        assert!(nanos(&span["startTimeUnixNano"]) <= nanos(&span["endTimeUnixNano"]));
    }
    assert!(servers >= agents, "every ok call was answered by a replica: {servers} server spans, {agents} calls");
    decode_with_opentelemetry_proto(&out.join(TRACES), false);
}

#[test]
fn a_run_writes_no_traces_unless_asked() {
    let smoke = repo_root().join("scenarios/smoke.toml");
    let out: PathBuf = scratch_in("traces", "off");
    sim_ok(&smoke, &out, &["duration=\"5s\""]);
    assert!(!out.join(TRACES).exists(), "traces default to off");
    assert!(out.join("timeseries.csv").exists());
}
