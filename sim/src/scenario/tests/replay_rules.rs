//! `[load] mode = "replay"`: its keys' rules, and the trace read with the scenario (both formats, first attempts
//! only, servers and tools checked against the scenario with `trace:line:column`).

use std::time::Duration;

use mcpstorm_core::history::{CallStatus, ServerCallRecord};
use mcpstorm_core::schema::ContentHash;
use serde_json::json;

use super::*;

const HEADER: &str =
    "seq,start_ms,timestamp_ms,server,tool,input_sha256,output_sha256,duration_ms,status,code,retries\n";

/// BASE replaying `trace.csv` at `speed`.
fn replaying(speed: &str) -> String {
    edit(
        BASE,
        "mode = \"closed\"\nsessions = 10",
        &format!("mode = \"replay\"\ntrace = \"trace.csv\"\nspeed = {speed}"),
    )
}

/// A scratch directory holding `trace.csv` with `body` (after the header); returns the scenario's origin in it.
fn with_trace(name: &str, body: &str) -> String {
    let dir = std::env::temp_dir().join(format!("mcpstorm-replay-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    std::fs::write(dir.join("trace.csv"), format!("{HEADER}{body}")).expect("write trace");
    dir.join("t.toml").display().to_string()
}

fn row(seq: u64, start_ms: &str, server: &str, tool: &str, retries: u32) -> String {
    let h = ContentHash::of(&json!({})).to_hex();
    format!("{seq},{start_ms},1735689600000,{server},{tool},{h},,1.000,success,,{retries}\n")
}

fn problems_at(text: &str, origin: &str) -> Vec<Problem> {
    match load_str(text, origin, &[]) {
        Ok(_) => panic!("expected problems"),
        Err(e) => e.problems().to_vec(),
    }
}

#[test]
fn speed_must_be_a_positive_number() {
    let text = replaying("1.0");
    for bad in ["0.0", "-1.5", "nan"] {
        let text = edit(&text, "speed = 1.0", &format!("speed = {bad}"));
        expect_one(&text, &[], "load.speed", "speed = |", "must be a number > 0");
    }
}

#[test]
fn replay_needs_a_trace_and_refuses_the_other_modes_keys() {
    let no_trace = edit(&replaying("1.0"), "trace = \"trace.csv\"\n", "");
    expect_one(&no_trace, &[], "load.trace", "|[load]", "is required when mode = \"replay\"");
    let rate = edit(&replaying("1.0"), "speed = 1.0", "speed = 1.0\nrate = 5.0");
    expect_one(&rate, &[], "load.rate", "rate = |5.0", "applies only to mode = \"open\"");
    let sessions = edit(&replaying("1.0"), "speed = 1.0", "speed = 1.0\nsessions = 3");
    expect_one(&sessions, &[], "load.sessions", "sessions = |3", "applies only to mode = \"closed\"");
    let closed = edit(BASE, "sessions = 10", "sessions = 10\ntrace = \"x.csv\"");
    expect_one(&closed, &[], "load.trace", "trace = |\"x.csv\"", "applies only to mode = \"replay\"");
    let closed = edit(BASE, "sessions = 10", "sessions = 10\nspeed = 2.0");
    expect_one(&closed, &[], "load.speed", "speed = |2.0", "applies only to mode = \"replay\"");
}

#[test]
fn a_missing_trace_is_reported_at_its_key() {
    let text = replaying("1.0");
    let found = problems_at(&text, "/nonexistent-dir/t.toml");
    assert_eq!(found.len(), 1, "{}", ScenarioError::Invalid(found.clone()));
    assert_eq!(found[0].key.as_deref(), Some("load.trace"));
    assert_eq!(found[0].line_column(), Some(pos(&text, "trace = |\"trace.csv\"")));
    assert!(found[0].message.contains("cannot read the trace /nonexistent-dir/trace.csv"), "{}", found[0]);
}

#[test]
fn first_attempts_are_replayed_sorted_from_the_earliest() {
    // Attempts as they finished: a retry of call 0 (not replayed), replicas named as the simulator names them.
    let body = [
        row(0, "1500.250", "a-1", "echo", 0),
        row(1, "1000.000", "a-0", "echo", 0),
        row(2, "1700.000", "a-0", "echo", 1),
        row(3, "3000.001", "b", "get", 0),
    ]
    .concat();
    let origin = with_trace("sorted", &body);
    let s = load_str(&replaying("2.0"), &origin, &[]).unwrap_or_else(|e| panic!("{e}"));
    let trace = s.load.replay.as_ref().expect("attached");
    assert_eq!(trace.format, TraceFormat::CallsCsv);
    assert_eq!(trace.retries_skipped, 1);
    let calls: Vec<(Duration, usize, usize)> = trace.calls.iter().map(|c| (c.offset, c.entry, c.line)).collect();
    // `b`'s `get` is not in the mix: an entry is added for it (entry 1), pinned to `b`.
    assert_eq!(
        calls,
        [(Duration::ZERO, 0, 3), (Duration::from_micros(500_250), 0, 2), (Duration::from_micros(2_000_001), 1, 5)]
    );
    assert_eq!((s.load.mix[1].server.as_deref(), s.load.mix[1].tool.as_str()), (Some("b"), "get"));
    assert_eq!(s.load.speed(), 2.0);
}

#[test]
fn an_unknown_server_or_tool_is_reported_at_its_trace_line() {
    let body =
        [row(0, "1.000", "a-0", "echo", 0), row(1, "2.000", "nope-0", "echo", 0), row(2, "3.000", "b", "put", 0)]
            .concat();
    let origin = with_trace("unknown", &body);
    let trace = Path::new(&origin).with_file_name("trace.csv").display().to_string();
    let found = problems_at(&replaying("1.0"), &origin);
    let shown: Vec<String> = found.iter().map(ToString::to_string).collect();
    assert_eq!(shown.len(), 2, "{shown:?}");
    assert!(shown[0].starts_with(&format!("{trace}:3:")), "{shown:?}");
    assert!(shown[0].contains("server \"nope-0\" is not in the scenario"), "{shown:?}");
    // The tool is the fifth field: after `2,3.000,1735689600000,b,`.
    assert!(shown[1].starts_with(&format!("{trace}:4:25: server \"b\" has no tool \"put\"")), "{shown:?}");
}

#[test]
fn bad_rows_and_unknown_formats_are_refused_with_their_place() {
    let origin =
        with_trace("bad", &format!("{}0,soon,0,a-0,echo,h,,1,success,,0\n", row(0, "1.000", "a-0", "echo", 0)));
    let trace = Path::new(&origin).with_file_name("trace.csv").display().to_string();
    let found = problems_at(&replaying("1.0"), &origin);
    assert_eq!(found.len(), 1);
    assert_eq!(
        found[0].to_string(),
        format!("{trace}:3:3: start_ms \"soon\" is not a number of ms (at most 3 decimals)")
    );
    std::fs::write(Path::new(&origin).with_file_name("trace.csv"), "when,what\n1,2\n").expect("write");
    let found = problems_at(&replaying("1.0"), &origin);
    assert!(found[0].to_string().starts_with(&format!("{trace}:1:1: not a trace")), "{}", found[0]);
}

#[test]
fn a_gateway_history_is_a_trace_by_its_wall_clock() {
    let record = |server: &str, ms: u64, retries: u32| ServerCallRecord {
        seq: 0,
        timestamp_ms: ms,
        start_offset: Duration::from_secs(99),
        server: server.into(),
        tool: "echo".into(),
        input_sha256: ContentHash::of(&json!({})),
        output_sha256: None,
        duration: Duration::from_millis(3),
        status: CallStatus::Success,
        code: None,
        retries,
    };
    let lines = [
        serde_json::to_string(&record("a#1", 5_250, 0)).expect("json"),
        json!({ "replica": "a#0", "lost_records": 3 }).to_string(),
        serde_json::to_string(&record("a#0", 5_000, 0)).expect("json"),
        serde_json::to_string(&record("a#0", 5_100, 1)).expect("json"),
    ];
    let origin = with_trace("history", "");
    std::fs::write(Path::new(&origin).with_file_name("trace.csv"), lines.join("\n") + "\n").expect("write");
    let s = load_str(&replaying("1.0"), &origin, &[]).unwrap_or_else(|e| panic!("{e}"));
    let trace = s.load.replay.as_ref().expect("attached");
    assert_eq!(trace.format, TraceFormat::GatewayHistory);
    let calls: Vec<(Duration, usize)> = trace.calls.iter().map(|c| (c.offset, c.line)).collect();
    assert_eq!(calls, [(Duration::ZERO, 3), (Duration::from_millis(250), 1)]);
    assert_eq!(trace.retries_skipped, 1);
}
