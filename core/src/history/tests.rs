use std::time::Duration;

use serde_json::json;
use tokio::time::advance;

use super::*;
use crate::error::{LocalError, TransportError};
use crate::jsonrpc::{ErrorCode, ErrorObject};
use crate::rt::TokioClock;

const WALL: u64 = 1_735_689_600_000;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A record built directly: start offset and duration in ms, for tests that need exact timing.
fn rec(
    server: &str,
    tool: &str,
    q: &str,
    start: u64,
    dur: u64,
    status: CallStatus,
    code: Option<CallCode>,
) -> ServerCallRecord {
    let output = (status == CallStatus::Success).then(|| ContentHash::of(&json!(q)));
    ServerCallRecord {
        seq: 0,
        timestamp_ms: WALL + start,
        start_offset: ms(start),
        server: server.into(),
        tool: tool.into(),
        input_sha256: ContentHash::of(&json!({ "q": q })),
        output_sha256: output,
        duration: ms(dur),
        status,
        code,
        retries: 0,
    }
}

fn ok(server: &str, q: &str, start: u64, dur: u64) -> ServerCallRecord {
    rec(server, "t", q, start, dur, CallStatus::Success, None)
}

fn failed(server: &str, q: &str, start: u64, dur: u64, status: CallStatus, code: CallCode) -> ServerCallRecord {
    rec(server, "t", q, start, dur, status, Some(code))
}

fn input(q: &str) -> ContentHash {
    ContentHash::of(&json!({ "q": q }))
}

#[tokio::test(start_paused = true)]
async fn begin_and_record_use_the_clock_seam() {
    let clock = TokioClock::new(WALL);
    let mut h = CallHistory::new(10);
    advance(ms(100)).await;
    let s1 = h.begin(&clock);
    assert_eq!((s1.wall_ms, s1.offset), (WALL + 100, Duration::ZERO), "the origin is the first begin");
    advance(ms(40)).await;
    let s2 = h.begin(&clock);
    assert_eq!((s2.wall_ms, s2.offset), (WALL + 140, ms(40)));
    advance(ms(25)).await;
    let result = CallToolResult::text("row", false);
    let seq = h.record(s1, CallKey::new("db", "get", &json!({"key": 1})), Ok(&result), 0);
    let err = CallError::Transport(TransportError::Closed);
    let seq2 = h.record(s2, CallKey::new("db", "get", &json!({"key": 2})), Err(&err), 1);
    assert_eq!((seq, seq2), (0, 1));
    let r: Vec<_> = h.records().collect();
    assert_eq!((r[0].duration, r[0].status, r[0].timestamp_ms), (ms(65), CallStatus::Success, WALL + 100));
    assert_eq!(r[0].output_sha256, Some(result_hash(&result)));
    assert_eq!((r[1].duration, r[1].status, r[1].retries), (ms(25), CallStatus::Error, 1));
    assert_eq!(r[1].code, Some(CallCode::Label("closed".into())));
    assert_eq!(r[1].output_sha256, None);
}

#[test]
fn ring_keeps_capacity_and_counts_drops() {
    let mut h = CallHistory::new(3);
    for i in 0..7u64 {
        assert_eq!(h.push(ok("s", &format!("q{i}"), i * 10, 1)), i);
        assert!(h.len() <= 3);
    }
    assert_eq!((h.len(), h.dropped(), h.total(), h.capacity()), (3, 4, 7, 3));
    let seqs: Vec<u64> = h.records().map(|r| r.seq).collect();
    assert_eq!(seqs, [4, 5, 6], "the oldest are dropped");
    assert!(h.get(3).is_none() && h.get(7).is_none());
    assert_eq!(h.get(5).map(|r| r.start_offset), Some(ms(50)));
    // Capacity 0 is clamped to 1: a history always holds the latest call.
    let mut one = CallHistory::new(0);
    one.push(ok("s", "a", 0, 1));
    one.push(ok("s", "b", 1, 1));
    assert_eq!((one.len(), one.dropped()), (1, 1));
}

#[test]
fn completed_finds_successes_only_while_held() {
    let mut h = CallHistory::new(4);
    h.push(ok("s1", "a", 0, 5));
    h.push(failed("s1", "b", 1, 5, CallStatus::Timeout, CallCode::Label("deadline_exceeded".into())));
    h.push(rec("s1", "t", "c", 2, 5, CallStatus::Error, Some(CallCode::TOOL_ERROR)));
    assert_eq!(h.completed(&input("a"), "t", "s1").map(|r| r.seq), Some(0));
    assert!(h.completed(&input("a"), "t", "s2").is_none(), "another server");
    assert!(h.completed(&input("a"), "other", "s1").is_none(), "another tool");
    assert!(h.completed(&input("b"), "t", "s1").is_none(), "timed out: not completed");
    assert!(h.completed(&input("c"), "t", "s1").is_none(), "isError: not completed");
    // A retry that succeeds completes it; the latest success wins.
    h.push(ok("s1", "b", 3, 5));
    assert_eq!(h.completed(&input("b"), "t", "s1").map(|r| r.seq), Some(3));
    h.push(ok("s1", "a", 4, 5));
    assert_eq!(h.completed(&input("a"), "t", "s1").map(|r| r.seq), Some(4));
    // seq 0 was dropped but "a" is still completed through seq 4; then push "a" out too.
    for i in 0..4 {
        h.push(ok("s2", &format!("x{i}"), 10 + i, 1));
    }
    assert!(h.completed(&input("a"), "t", "s1").is_none(), "dropped from the ring");
    assert!(h.completed(&input("b"), "t", "s1").is_none());
    assert_eq!(h.completed(&input("x3"), "t", "s2").map(|r| r.seq), Some(8));
}

#[test]
fn attribution_picks_the_last_failure_and_its_servers_window() {
    let code503 = CallCode::Rpc(-32003);
    let mut h = CallHistory::new(100).with_attribution_window(ms(1_000));
    // Outside the window (more than 1 s before the failure): ignored.
    h.push(failed("db", "old", 0, 900, CallStatus::Error, code503.clone()));
    // In the window, same server.
    for i in 0..18u64 {
        h.push(ok("db", &format!("q{i}"), 1_500 + i * 10, 10 + i));
    }
    h.push(failed("db", "slow", 1_700, 800, CallStatus::Timeout, CallCode::Label("first_response_timeout".into())));
    h.push(failed("db", "q", 1_800, 5, CallStatus::Error, code503.clone()));
    // Another server's failure, earlier in recording order.
    h.push(failed("search", "q", 1_900, 5, CallStatus::Rejected, CallCode::Label("queue_timeout".into())));
    // The last failure: db, at 2.0 s.
    h.push(failed("db", "last", 2_000, 50, CallStatus::Error, code503.clone()));
    // Recorded after it: successes only, and one db call that started later (outside "before").
    h.push(ok("search", "z", 2_100, 3));
    h.push(ok("db", "later", 2_010, 3_000));

    let a = h.attribute_failure().unwrap();
    assert_eq!((a.server(), a.tool(), a.status()), ("db", "t", CallStatus::Error));
    assert_eq!(a.code(), Some(&code503));
    assert_eq!(a.record.seq, 22);
    assert_eq!(a.window, ms(1_000));
    let m = &a.server_metrics;
    assert_eq!((m.calls, m.errors), (21, 3), "18 ok + timeout + 2 errors (the failure itself included)");
    assert_eq!(
        m.by_status,
        vec![(CallStatus::Success, 18), (CallStatus::Timeout, 1), (CallStatus::Error, 2), (CallStatus::Rejected, 0)]
    );
    // Durations: 10..=27 ms, 800, 5, 50 -> 21 values; nearest rank ceil(0.95 * 21) = 20th = 50 ms.
    assert_eq!(m.p95_duration, ms(50));
    assert_eq!(m.codes, vec![(code503, 2), (CallCode::Label("first_response_timeout".into()), 1)]);

    // A narrower window sees less; same input, same output.
    let narrow = h.attribute_failure_within(ms(300)).unwrap();
    assert_eq!((narrow.server_metrics.calls, narrow.server_metrics.errors), (3, 3), "1.7 s to 2.0 s");
    assert_eq!(h.attribute_failure_within(ms(300)), Some(narrow));
    assert_eq!(h.attribute_failure_within(ms(150)).unwrap().server_metrics.calls, 1, "only the failure itself");
}

#[test]
fn attribution_ties_order_codes_deterministically() {
    let mut h = CallHistory::new(10);
    h.push(failed("s", "a", 0, 1, CallStatus::Error, CallCode::Label("stalled".into())));
    h.push(failed("s", "b", 1, 1, CallStatus::Error, CallCode::Rpc(-32603)));
    h.push(failed("s", "c", 2, 1, CallStatus::Error, CallCode::Label("closed".into())));
    let codes = h.attribute_failure().unwrap().server_metrics.codes;
    // Equal counts: numbers before labels, labels alphabetically.
    assert_eq!(
        codes,
        vec![(CallCode::Rpc(-32603), 1), (CallCode::Label("closed".into()), 1), (CallCode::Label("stalled".into()), 1)]
    );
}

#[test]
fn no_failure_no_attribution() {
    let mut h = CallHistory::new(10);
    assert!(h.attribute_failure().is_none());
    h.push(ok("s", "a", 0, 1));
    assert!(h.attribute_failure().is_none());
}

#[tokio::test(start_paused = true)]
async fn serde_round_trip_restores_everything_and_resumes_offsets() {
    let clock = TokioClock::new(WALL);
    let mut h = CallHistory::new(3).with_attribution_window(ms(5_000));
    let rpc = CallError::Protocol(ErrorObject::new(ErrorCode::INVALID_PARAMS, "bad q"));
    let queue = CallError::Local(LocalError::QueueTimeout(ms(100)));
    let answer = CallToolResult::text("ok", false);
    for i in 0..5u64 {
        let start = h.begin(&clock);
        advance(ms(10 + i)).await;
        let key = CallKey::new("api", "search", &json!({ "q": i }));
        let outcome = match i {
            1 => Err(&rpc),
            3 => Err(&queue),
            _ => Ok(&answer),
        };
        h.record(start, key, outcome, i as u32 % 2);
    }
    let text = serde_json::to_string(&h).unwrap();
    let back: CallHistory = serde_json::from_str(&text).unwrap();
    assert_eq!(serde_json::to_string(&back).unwrap(), text, "byte-identical after a round trip");
    assert_eq!(back.records().cloned().collect::<Vec<_>>(), h.records().cloned().collect::<Vec<_>>());
    assert_eq!((back.dropped(), back.total(), back.capacity(), back.len()), (2, 5, 3, 3));
    assert_eq!(back.attribute_failure(), h.attribute_failure());
    let q4 = ContentHash::of(&json!({"q": 4}));
    assert_eq!(back.completed(&q4, "search", "api").map(|r| r.seq), Some(4));
    let saved: serde_json::Value = serde_json::from_str(&text).unwrap();
    // Held: seq 2 (ok), 3 (queue timeout), 4 (ok).
    assert_eq!(saved["records"][1]["code"], json!("queue_timeout"));
    assert_eq!(saved["records"][1]["status"], json!("rejected"));
    assert_eq!(saved["records"][1]["output_sha256"], json!(null));
    assert_eq!(saved["records"][0]["input_sha256"].as_str().map(str::len), Some(64));
    assert_eq!(saved["records"][0]["output_sha256"], json!(result_hash(&answer).to_hex()));
    assert_eq!(saved["records"][0]["duration_ns"], json!(12_000_000));

    // Resumed in a "new process": offsets continue after the last saved call instead of restarting at 0.
    let mut back = back;
    let last_end = back.records().map(|r| r.end_offset()).max().unwrap();
    advance(ms(60_000)).await;
    let start = back.begin(&clock);
    assert_eq!(start.offset, last_end);
    advance(ms(7)).await;
    let seq = back.record(start, CallKey::new("api", "search", &json!({"q": 5})), Ok(&answer), 0);
    assert_eq!(seq, 5);
    assert_eq!(back.get(5).map(|r| (r.start_offset, r.duration)), Some((last_end, ms(7))));
}

#[test]
fn tampered_state_is_refused_with_a_clear_error() {
    let mut h = CallHistory::new(2);
    for i in 0..3 {
        h.push(ok("s", &format!("q{i}"), i, 1));
    }
    let good: serde_json::Value = serde_json::to_value(&h).unwrap();
    let cases: [(&str, serde_json::Value, &str); 4] = [
        ("/version", json!(99), "version 99"),
        ("/capacity", json!(1), "more than its capacity"),
        ("/dropped", json!(0), "do not add up"),
        ("/records/1/seq", json!(7), "has seq 7, expected 2"),
    ];
    for (pointer, value, message) in cases {
        let mut bad = good.clone();
        *bad.pointer_mut(pointer).unwrap() = value;
        let err = serde_json::from_value::<CallHistory>(bad).unwrap_err().to_string();
        assert!(err.contains(message), "{pointer}: {err}");
    }
    let mut bad = good.clone();
    bad["records"][0]["input_sha256"] = json!("xyz");
    assert!(serde_json::from_value::<CallHistory>(bad).unwrap_err().to_string().contains("64 hex digits"));
    assert!(serde_json::from_value::<CallHistory>(good).is_ok());
}
