//! Property tests for the wire layer and the connection core.
//!
//! - The JSON-RPC codec round-trips every message and always fits the newline framing.
//! - The line framing delivers a message sequence intact whatever the read splits, and survives arbitrary garbage:
//!   no panic, bounded frames, termination, resynchronisation on the next newline.
//! - A connection driven by a random script (calls, answers, errors, late and unknown responses, progress, cancels,
//!   time jumps, garbage, disconnects) resolves every call exactly once, never to another caller, and drains its
//!   pending table and permits to zero.
//! - Sessions under an arbitrary server clock (offset, linear drift, step jumps) and random call gaps: no call goes
//!   out on a session the server already considers expired, except the one that discovers it (then resent once).
//!
//! Case counts default per test and follow `PROPTEST_CASES` when set. Every async case runs on its own paused
//! current-thread runtime, so a case is deterministic and a failure shrinks to a minimal script.
//!
//! The regression tests at the end are minimised counter-examples this property once found in the core (fixed).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use mcpstorm_core::client::{ClientConfig, McpClient, SessionStats};
use mcpstorm_core::conn::{CallOptions, Connection, ConnectionConfig, Lane};
use mcpstorm_core::jsonrpc::{ErrorObject, Message, Notification, Request, RequestId, Response, ResponseBody};
use mcpstorm_core::mcp::{ProgressParams, method};
use mcpstorm_core::session::EraMode;
use mcpstorm_core::transport::{FrameError, LineSink, LineSource, MessageSink, MessageSource};
use mcpstorm_core::{CallError, CancelToken, LocalError, TransportError};
use mcpstorm_fake::doubles::peer::{self, Peer};
use mcpstorm_fake::doubles::session_server::{self as ext_server, ServerConfig, SessionServer, Verdict, WallFn};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, DuplexStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// `PROPTEST_CASES` wins; otherwise each test's own default keeps the debug-build run to a few seconds.
fn config(default_cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default_cases);
    let persistence = proptest::test_runner::FileFailurePersistence::WithSource("proptest-regressions");
    ProptestConfig { cases, failure_persistence: Some(Box::new(persistence)), ..ProptestConfig::default() }
}

/// A paused current-thread runtime: virtual time only moves when every task is idle (or we move it), so a case
/// replays identically and a hang shows up as a timeout firing in virtual time instead of a stuck test.
fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().expect("tokio runtime")
}

/// Virtual time after which an await that should complete without time passing counts as a hang.
const HANG: Duration = Duration::from_secs(3600);

// ---------------------------------------------------------------------------------------------------------------
// Strategies: JSON and JSON-RPC messages
// ---------------------------------------------------------------------------------------------------------------

/// Strings that stress the encoder: any char (controls, quotes, backslashes, surrogates' neighbours, emoji).
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::collection::vec(any::<char>(), 0..12).prop_map(String::from_iter),
        2 => "[\"\\\\\n\r\t\u{0}\u{1}\u{1f}\u{7f}\u{85}\u{2028}\u{2029}\u{feff}é😀/ a]{0,12}",
        1 => "[a-z/_]{0,16}",
    ]
}

/// Finite floats that serde_json (built without `float_roundtrip`) parses back to the same bits' value.
fn json_float() -> impl Strategy<Value = Value> {
    use prop::num::f64::{NEGATIVE, NORMAL, POSITIVE, SUBNORMAL, ZERO};
    (POSITIVE | NEGATIVE | NORMAL | SUBNORMAL | ZERO).prop_map(|f| {
        let text = serde_json::to_string(&f).unwrap_or_default();
        match serde_json::from_str::<f64>(&text) {
            Ok(back) if back == f => json!(f),
            // Best-effort float parsing can be one ulp off; keep the case with an integer instead of rejecting it.
            _ => json!(f.trunc() as i64),
        }
    })
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        json_float(),
        text().prop_map(Value::String),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(text(), inner, 0..6).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn json_object() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(text(), json_value(), 0..5).prop_map(|m| Value::Object(m.into_iter().collect()))
}

fn json_array() -> impl Strategy<Value = Value> {
    prop::collection::vec(json_value(), 0..5).prop_map(Value::Array)
}

fn request_id() -> impl Strategy<Value = RequestId> {
    prop_oneof![
        any::<i64>().prop_map(RequestId::Number),
        (-3i64..1000).prop_map(RequestId::Number),
        text().prop_map(RequestId::String),
    ]
}

fn method_name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            method::TOOLS_CALL,
            method::PING,
            method::PROGRESS,
            method::CANCELLED,
            method::INITIALIZE
        ])
        .prop_map(str::to_owned),
        text(),
    ]
}

/// Params as MCP allows them: absent, an object or an array (a JSON-RPC `params` is never a scalar or null).
fn params() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![Just(None), json_object().prop_map(Some), json_array().prop_map(Some)]
}

/// `data: Some(null)` is excluded: it decodes as `None` (see `error_data_null_is_not_preserved`).
fn error_object() -> impl Strategy<Value = ErrorObject> {
    let data = prop::option::of(json_value().prop_filter("data: null", |v| !v.is_null()));
    (any::<i64>(), text(), data).prop_map(|(code, message, data)| ErrorObject { code, message, data })
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (request_id(), method_name(), params()).prop_map(|(id, method, params)| Message::Request(Request {
            id,
            method,
            params
        })),
        (method_name(), params()).prop_map(|(method, params)| Message::Notification(Notification { method, params })),
        (request_id(), json_value()).prop_map(|(id, result)| Message::result(id, result)),
        (prop::option::of(request_id()), error_object()).prop_map(|(id, e)| Message::error(id, e)),
    ]
}

/// JSON floats re-parsed from text may move by an ulp; everything else must match exactly.
fn json_approx_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y || ((x - y).abs() <= f64::EPSILON * 4.0 * x.abs().max(y.abs())),
            _ => false,
        },
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_approx_eq(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_approx_eq(v, w)))
        }
        _ => a == b,
    }
}

fn message_approx_eq(a: &Message, b: &Message) -> bool {
    let opt = |x: &Option<Value>, y: &Option<Value>| match (x, y) {
        (Some(x), Some(y)) => json_approx_eq(x, y),
        (None, None) => true,
        _ => false,
    };
    match (a, b) {
        (Message::Request(x), Message::Request(y)) => x.id == y.id && x.method == y.method && opt(&x.params, &y.params),
        (Message::Notification(x), Message::Notification(y)) => x.method == y.method && opt(&x.params, &y.params),
        (Message::Response(x), Message::Response(y)) => {
            x.id == y.id
                && match (&x.body, &y.body) {
                    (ResponseBody::Result(x), ResponseBody::Result(y)) => json_approx_eq(x, y),
                    (ResponseBody::Error(x), ResponseBody::Error(y)) => {
                        x.code == y.code && x.message == y.message && opt(&x.data, &y.data)
                    }
                    _ => false,
                }
        }
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Strategies: garbage
// ---------------------------------------------------------------------------------------------------------------

/// Objects that are almost JSON-RPC messages: every field present or not, each with a right or wrong type. These
/// reach the decoder's deeper branches, which uniformly random bytes almost never do.
fn near_message() -> impl Strategy<Value = Vec<u8>> {
    let jsonrpc = prop_oneof![Just(json!("2.0")), Just(json!("1.0")), Just(json!(2.0)), Just(Value::Null)];
    let id = prop_oneof![
        any::<i64>().prop_map(Value::from),
        Just(json!(u64::MAX)),
        Just(json!(1.5)),
        Just(json!(3.0)),
        text().prop_map(Value::String),
        Just(Value::Null),
        Just(json!(true)),
        Just(json!({"id": 1})),
    ];
    let method = prop_oneof![method_name().prop_map(Value::String), Just(json!(7)), Just(Value::Null)];
    let params = prop_oneof![json_object(), json_array(), Just(Value::Null), Just(json!("p")), Just(json!(1))];
    let error = prop_oneof![
        error_object().prop_map(|e| serde_json::to_value(e).unwrap_or_default()),
        Just(json!({"code": 1})),
        Just(json!({"code": 1.5, "message": "m"})),
        Just(json!({"code": "1", "message": "m"})),
        Just(json!("boom")),
        Just(Value::Null),
        Just(json!({"code": -32600, "message": "m", "data": null})),
    ];
    (
        prop::option::of(jsonrpc),
        prop::option::of(id),
        prop::option::of(method),
        prop::option::of(params),
        prop::option::of(json_value()),
        prop::option::of(error),
    )
        .prop_map(|(jsonrpc, id, method, params, result, error)| {
            let mut map = serde_json::Map::new();
            let fields = [("jsonrpc", jsonrpc), ("id", id), ("method", method), ("params", params)];
            for (k, v) in fields.into_iter().chain([("result", result), ("error", error)]) {
                if let Some(v) = v {
                    map.insert(k.to_owned(), v);
                }
            }
            serde_json::to_vec(&Value::Object(map)).unwrap_or_default()
        })
}

/// A valid encoding with a few bytes deleted, inserted, flipped, or the tail cut.
fn mutated_message() -> impl Strategy<Value = Vec<u8>> {
    let edit = (any::<prop::sample::Index>(), any::<u8>(), 0u8..4);
    (message(), prop::collection::vec(edit, 1..4)).prop_map(|(m, edits)| {
        let mut bytes = m.encode();
        for (at, byte, kind) in edits {
            if bytes.is_empty() {
                bytes.push(byte);
                continue;
            }
            let i = at.index(bytes.len());
            match kind {
                0 => {
                    bytes.remove(i);
                }
                1 => bytes.insert(i, byte),
                2 => bytes[i] ^= byte | 1,
                _ => bytes.truncate(i),
            }
        }
        bytes
    })
}

fn token_soup() -> impl Strategy<Value = Vec<u8>> {
    const TOKENS: &[&str] = &[
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
        "\"jsonrpc\"",
        "\"2.0\"",
        "\"id\"",
        "\"method\"",
        "\"params\"",
        "\"result\"",
        "\"error\"",
        "\"code\"",
        "\"message\"",
        "\"data\"",
        "null",
        "true",
        "1",
        "-1",
        "1.5",
        "1e400",
        "-0",
        "18446744073709551616",
        "\"x\"",
        "\"\\ud800\"",
        "\"\\u0000\"",
        " ",
        "\t",
    ];
    prop::collection::vec(prop::sample::select(TOKENS), 0..32).prop_map(|t| t.concat().into_bytes())
}

fn junk_frame() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => prop::collection::vec(any::<u8>(), 0..256),
        3 => near_message(),
        2 => mutated_message(),
        2 => token_soup(),
    ]
}

/// A byte stream of garbage for the framing layer: newlines, CRs, invalid UTF-8, near-messages and long lines.
fn junk_stream() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        4 => junk_frame(),
        2 => Just(b"\n".to_vec()),
        1 => Just(b"\r\n".to_vec()),
        1 => Just(b"\r".to_vec()),
        1 => Just(b" \t \x0c".to_vec()),
        1 => Just(b"\xff\xfe\xc3\x28\xed\xa0\x80".to_vec()),
        1 => (1usize..3000).prop_map(|n| vec![b'x'; n]),
        1 => message().prop_map(|m| m.encode()),
    ];
    prop::collection::vec(piece, 0..12).prop_map(|p| p.concat())
}

// ---------------------------------------------------------------------------------------------------------------
// 1. Codec round-trip
// ---------------------------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(512))]

    /// `decode(encode(m)) == m` for every message, and the encoding is one line.
    #[test]
    fn codec_round_trips_every_message(msg in message()) {
        let bytes = msg.encode();
        prop_assert!(!bytes.contains(&b'\n'), "raw newline in {:?}", String::from_utf8_lossy(&bytes));
        prop_assert!(!bytes.contains(&b'\r'), "raw CR in {:?}", String::from_utf8_lossy(&bytes));
        prop_assert!(std::str::from_utf8(&bytes).is_ok());
        prop_assert_eq!(Message::decode(&bytes), Ok(msg));
    }
}

proptest! {
    #![proptest_config(config(128))]

    /// A sequence of messages through `LineSink` -> a tiny duplex pipe (frames split across reads) -> `LineSource`
    /// arrives complete and in order; a frame exactly at `max_frame` is accepted.
    #[test]
    fn line_framing_delivers_every_message_in_order(
        msgs in prop::collection::vec(message(), 0..12),
        pipe in 1usize..64,
        flush_each in any::<bool>(),
        slack in 0usize..3,
    ) {
        let max_frame = msgs.iter().map(|m| m.encode().len()).max().unwrap_or(1) + slack;
        let got = paused_runtime().block_on(async {
            let (ours, theirs) = tokio::io::duplex(pipe);
            let to_send = msgs.clone();
            let writer = tokio::spawn(async move {
                let mut sink = LineSink::new(ours);
                for m in &to_send {
                    sink.feed(m).await?;
                    if flush_each {
                        sink.flush().await?;
                    }
                }
                sink.close().await;
                Ok::<_, mcpstorm_core::TransportError>(())
            });
            let mut source = LineSource::new(theirs, max_frame);
            let mut got = Vec::new();
            loop {
                match tokio::time::timeout(HANG, source.recv()).await {
                    Err(_) => return Err(TestCaseError::fail("LineSource hung before end of stream")),
                    Ok(None) => break,
                    Ok(Some(item)) => got.push(item),
                }
            }
            match writer.await {
                Ok(Ok(())) => Ok(got),
                other => Err(TestCaseError::fail(format!("writer failed: {other:?}"))),
            }
        })?;
        let want: Vec<_> = msgs.into_iter().map(Ok).collect();
        prop_assert_eq!(got, want);
    }
}

#[test]
fn error_data_null_is_not_preserved() {
    // Documents a lossy corner of the codec rather than asserting it is right: `data: null` is encoded (the field
    // is `Some`) but decodes as `None`, so this one `ErrorObject` does not round-trip. JSON-RPC gives `data` no
    // null semantics, so nothing downstream can tell the two apart; the generator above excludes it.
    let m = Message::error(
        Some(RequestId::Number(1)),
        ErrorObject { code: 1, message: "m".into(), data: Some(Value::Null) },
    );
    let bytes = m.encode();
    assert_eq!(bytes, br#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":null}}"#);
    let back = Message::decode(&bytes).expect("decodes");
    assert_eq!(
        back,
        Message::error(Some(RequestId::Number(1)), ErrorObject { code: 1, message: "m".into(), data: None })
    );
}

// ---------------------------------------------------------------------------------------------------------------
// 2. Garbage never panics; the framing stays bounded and resynchronises
// ---------------------------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(1024))]

    /// Any bytes decode to `Ok` or `Err`, never a panic; whatever decodes re-encodes to one line that decodes to
    /// the same message (decoding normalises, it never produces a message the encoder cannot carry).
    #[test]
    fn decode_never_panics_and_what_decodes_round_trips(bytes in junk_frame()) {
        if let Ok(m) = Message::decode(&bytes) {
            let again = m.encode();
            prop_assert!(!again.contains(&b'\n'));
            let back = Message::decode(&again);
            prop_assert!(
                back.as_ref().is_ok_and(|b| message_approx_eq(b, &m)),
                "{:?} decoded to {:?}, re-encoded as {:?}, decoded to {:?}",
                String::from_utf8_lossy(&bytes), m, String::from_utf8_lossy(&again), back
            );
        }
    }
}

/// What the framing must yield for `input`: one item per newline-terminated line (oversize lines as errors, blank
/// lines skipped, one trailing CR stripped), then the unterminated tail, if any, separately.
#[derive(Debug)]
struct ExpectedFrames {
    lines: Vec<Expect>,
    tail: Vec<u8>,
}

#[derive(Debug)]
enum Expect {
    Frame(Vec<u8>),
    TooLarge,
    /// Over the limit only by its trailing CR. The implementation counts the CR (checking the size before stripping
    /// it) and rejects the line; accepting the stripped frame (or skipping it, if blank) would be right as well.
    CrAtLimit(Vec<u8>),
}

fn expected_frames(input: &[u8], max: usize) -> ExpectedFrames {
    let mut parts: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
    let tail = parts.pop().unwrap_or_default().to_vec();
    let mut lines = Vec::new();
    for line in parts {
        let stripped = line.strip_suffix(b"\r").unwrap_or(line);
        if stripped.len() > max {
            lines.push(Expect::TooLarge);
        } else if line.len() > max {
            lines.push(Expect::CrAtLimit(stripped.to_vec()));
        } else if !stripped.iter().all(u8::is_ascii_whitespace) {
            lines.push(Expect::Frame(stripped.to_vec()));
        }
    }
    ExpectedFrames { lines, tail }
}

/// A reader that yields `input` through a pipe of `pipe` bytes, in write chunks of `chunk`, then end of stream.
fn trickle(input: Vec<u8>, pipe: usize, chunk: usize) -> DuplexStream {
    let (mut ours, theirs) = tokio::io::duplex(pipe);
    tokio::spawn(async move {
        for part in input.chunks(chunk.max(1)) {
            if ours.write_all(part).await.is_err() {
                return;
            }
        }
    });
    theirs
}

fn small_message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (0i64..10_000, "[a-z/]{1,12}").prop_map(|(id, m)| Message::request(id, m, None)),
        "[a-z/]{1,12}".prop_map(|m| Message::notification(m, Some(json!({"k": 1})))),
        (0i64..10_000, any::<i32>()).prop_map(|(id, v)| Message::result(RequestId::Number(id), json!(v))),
    ]
}

proptest! {
    #![proptest_config(config(256))]

    /// `LineSource` fed garbage with a random `max_frame`: no panic, no frame over the limit, exactly the frames the
    /// framing rules give, end of stream reached, and a valid frame after the garbage and a newline always arrives
    /// last (resynchronisation), both as a raw frame and as a decoded message.
    #[test]
    fn line_source_survives_garbage_and_resynchronises(
        garbage in junk_stream(),
        max_frame in prop_oneof![1usize..=512, 64usize..=512],
        pipe in 1usize..128,
        chunk in 1usize..200,
        valid in prop::option::of(small_message()),
    ) {
        let mut input = garbage;
        let valid_frame = valid.as_ref().map(Message::encode);
        if let Some(frame) = &valid_frame {
            input.push(b'\n');
            input.extend_from_slice(frame);
            input.push(b'\n');
        }
        let expected = expected_frames(&input, max_frame);
        let (frames, messages) = paused_runtime().block_on(async {
            let mut source = LineSource::new(trickle(input.clone(), pipe, chunk), max_frame);
            let mut frames = Vec::new();
            loop {
                match tokio::time::timeout(HANG, source.next_frame()).await {
                    Err(_) => return Err(TestCaseError::fail("next_frame hung before end of stream")),
                    Ok(None) => break,
                    Ok(Some(f)) => frames.push(f),
                }
            }
            let mut source = LineSource::new(trickle(input.clone(), pipe, chunk), max_frame);
            let mut messages = Vec::new();
            loop {
                match tokio::time::timeout(HANG, source.recv()).await {
                    Err(_) => return Err(TestCaseError::fail("recv hung before end of stream")),
                    Ok(None) => break,
                    Ok(Some(m)) => messages.push(m),
                }
            }
            Ok((frames, messages))
        })?;

        for f in &frames {
            match f {
                Ok(frame) => {
                    prop_assert!(frame.len() <= max_frame, "frame of {} bytes over {max_frame}", frame.len());
                    prop_assert!(!frame.contains(&b'\n'));
                }
                Err(FrameError::TooLarge { len, max }) => {
                    prop_assert!(*len > max_frame && *max == max_frame, "TooLarge {len} {max} for {max_frame}")
                }
                Err(e) => prop_assert!(false, "next_frame returned {e:?}"),
            }
        }
        // Newline-terminated lines: exactly as the rules say (oversize length is only "at least", so not compared).
        let mut n = 0;
        for want in &expected.lines {
            let got = frames.get(n);
            let too_large = matches!(got, Some(Err(FrameError::TooLarge { .. })));
            let consumed = match want {
                Expect::Frame(w) => got == Some(&Ok(w.clone())),
                Expect::TooLarge => too_large,
                Expect::CrAtLimit(w) => too_large || got == Some(&Ok(w.clone())),
            };
            let skipped = matches!(want, Expect::CrAtLimit(w) if w.iter().all(u8::is_ascii_whitespace));
            prop_assert!(consumed || skipped, "frame {n}: got {:?}, want {:?}", got, want);
            n += usize::from(consumed);
        }
        prop_assert!(frames.len() <= n + 1, "{} frames, expected {n} (+ tail)", frames.len());
        // The unterminated tail: an oversize one is one error; otherwise a frame (raw or CR-stripped), or nothing
        // when it is empty or blank.
        let tail = &expected.tail;
        match frames.get(n) {
            None => prop_assert!(tail.iter().all(u8::is_ascii_whitespace) && tail.len() <= max_frame),
            Some(Err(FrameError::TooLarge { .. })) => prop_assert!(tail.len() > max_frame),
            Some(Ok(f)) => prop_assert!(f == tail || Some(f.as_slice()) == tail.strip_suffix(b"\r")),
            Some(other) => prop_assert!(false, "tail gave {other:?}"),
        }
        prop_assert_eq!(messages.len(), frames.len(), "recv and next_frame disagree on the item count");
        if let (Some(valid), Some(frame)) = (&valid, &valid_frame) {
            if frame.len() <= max_frame {
                prop_assert_eq!(frames.last(), Some(&Ok(frame.clone())));
                prop_assert_eq!(messages.last(), Some(&Ok(valid.clone())));
            } else {
                let too_large = matches!(frames.last(), Some(Err(FrameError::TooLarge { .. })));
                prop_assert!(too_large, "oversize valid frame: last item {:?}", frames.last());
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// 3. Every call resolves exactly once; the pending table drains
// ---------------------------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Setup {
    calls: usize,
    first_ms: u64,
    idle_ms: u64,
    deadline_ms: u64,
    queue_ms: u64,
    probe_ms: u64,
    max_in_flight: usize,
    pipe: usize,
}

impl Setup {
    fn config(&self) -> ConnectionConfig {
        ConnectionConfig {
            max_in_flight: self.max_in_flight,
            queue_wait: Duration::from_millis(self.queue_ms),
            first_response: Duration::from_millis(self.first_ms),
            stream_idle: Duration::from_millis(self.idle_ms),
            call_deadline: Duration::from_millis(self.deadline_ms),
            stall_probe: Duration::from_millis(self.probe_ms),
            ..ConnectionConfig::default()
        }
    }
}

fn setup() -> impl Strategy<Value = Setup> {
    (
        1usize..=30,
        200u64..=5000,
        200u64..=4000,
        1000u64..=20_000,
        100u64..=5000,
        100u64..=2000,
        1usize..=8,
        prop::sample::select(vec![64usize, 512, 1 << 16]),
    )
        .prop_map(|(calls, first_ms, idle_ms, deadline_ms, queue_ms, probe_ms, max_in_flight, pipe)| Setup {
            calls,
            first_ms,
            idle_ms,
            deadline_ms,
            queue_ms,
            probe_ms,
            max_in_flight,
            pipe,
        })
}

/// Frames the peer can send that the client must reject (or ignore) without harm: (bytes, frames rejected).
const GARBAGE: &[(&[u8], u64)] = &[
    (b"{not json\n", 1),
    (b"[1,2]\n", 1),
    (b"\xff\xfe\n", 1),
    (b"{\"foo\":1}\n", 1),
    (b"42\n", 1),
    (b"\n\r\n \t \n", 0),
    (b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n", 0),
    (b"{\"jsonrpc\":\"2.0\",\"id\":1000000,\"error\":\"boom\"}\n", 1),
];

#[derive(Debug, Clone)]
enum UnknownId {
    Large(i64),
    NonPositive(i64),
    Text(String),
    Null,
}

/// Whose progress token a progress notification names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ProgressTo {
    /// A request the peer has not answered: keeps a live call streaming.
    Unanswered,
    /// Any request ever seen, live or finished (stray progress after a cancel or timeout).
    AnySeen,
    NeverIssued,
}

#[derive(Debug, Clone)]
enum Op {
    /// Start the next call (ignored once `Setup::calls` have started).
    Start {
        cancel: bool,
        deadline_ms: Option<u64>,
        progress: bool,
        priority: bool,
        tool: bool,
    },
    /// Answer a request the peer has not answered yet, with a result naming its id and call.
    Respond(usize),
    RespondError(usize, i64),
    /// A frame naming an unanswered request's id but malformed: that call fails with `MalformedResponse`.
    RespondMalformed(usize),
    /// Answer a request whose call already finished (or that was already answered).
    Late(usize),
    Unknown(UnknownId),
    Progress(usize, ProgressTo),
    Cancel(usize),
    Advance(u64),
    Garbage(usize),
    ServerPing,
    /// Drops a call's future (its task is aborted) while it may still be waiting.
    Abort(usize),
    /// A frame over the client's `max_frame`: the connection fails with `FrameTooLarge`. Only with a pipe big
    /// enough to take the whole frame at once (the scripted peer's writes panic once the client's end is gone).
    Oversize(usize),
    /// The peer stops reading (the client's writer backs up on the pipe) or starts again.
    ToggleReading,
    /// The peer drops the pipe. `script()` places at most one of this, `Oversize` or `Shutdown`, anywhere or nowhere.
    Disconnect,
    /// The client shuts the connection down (`Connection::shutdown`).
    Shutdown,
}

fn op() -> impl Strategy<Value = Op> {
    let index = || 0usize..64;
    let unknown = prop_oneof![
        (1_000_000i64..i64::MAX).prop_map(UnknownId::Large),
        (i64::MIN..=0).prop_map(UnknownId::NonPositive),
        prop_oneof![Just("1".to_owned()), text()].prop_map(UnknownId::Text),
        Just(UnknownId::Null),
    ];
    prop_oneof![
        8 => (any::<bool>(), prop::option::of(0u64..3000), any::<bool>(), prop::bool::weighted(0.2), any::<bool>())
            .prop_map(|(cancel, deadline_ms, progress, priority, tool)| Op::Start {
                cancel, deadline_ms, progress, priority, tool
            }),
        5 => index().prop_map(Op::Respond),
        1 => (index(), any::<i64>()).prop_map(|(i, c)| Op::RespondError(i, c)),
        1 => index().prop_map(Op::RespondMalformed),
        1 => index().prop_map(Op::Late),
        1 => unknown.prop_map(Op::Unknown),
        3 => (index(), prop::sample::select(vec![ProgressTo::Unanswered, ProgressTo::Unanswered, ProgressTo::AnySeen, ProgressTo::NeverIssued]))
            .prop_map(|(i, to)| Op::Progress(i, to)),
        2 => index().prop_map(Op::Cancel),
        4 => prop_oneof![0u64..100, 0u64..7000].prop_map(Op::Advance),
        1 => index().prop_map(Op::Garbage),
        1 => Just(Op::ServerPing),
        1 => Just(Op::ToggleReading),
        1 => index().prop_map(Op::Abort),
    ]
}

/// Ops, with at most one connection failure (in half the scripts) at a random point: the peer hangs up, the peer
/// sends an oversize frame, or the client shuts the connection down.
fn script() -> impl Strategy<Value = Vec<Op>> {
    let failure = prop_oneof![
        3 => Just(Op::Disconnect),
        1 => (0usize..64).prop_map(Op::Oversize),
        1 => Just(Op::Shutdown),
    ];
    (prop::collection::vec(op(), 1..60), prop::option::of((0usize..64, failure))).prop_map(|(mut ops, failure)| {
        if let Some((at, op)) = failure {
            let i = at % (ops.len() + 1);
            ops.insert(i, op);
        }
        ops
    })
}

/// How one call ended, as its task saw it.
#[derive(Debug)]
struct Outcome {
    result: Result<Value, CallError>,
    at: Instant,
    /// Progress notifications the call's channel received.
    progress: Vec<ProgressParams>,
}

#[derive(Debug)]
struct CallRec {
    handle: JoinHandle<Outcome>,
    started: Instant,
    deadline: Instant,
    priority: bool,
    token: Option<CancelToken>,
    /// When the test cancelled the token while the call was still running.
    cancelled_at: Option<Instant>,
    /// The request id, once the peer has read the request.
    id: Option<i64>,
    /// Set when the connection failed (peer hang-up, oversize frame, shutdown) while this call was unresolved: when,
    /// and whether the peer's end of the pipe is gone (so a blocked writer is released too).
    outstanding_at_failure: Option<(Instant, bool)>,
    /// Its task was aborted while unresolved.
    aborted: bool,
}

/// What the peer sent for one request id.
#[derive(Debug, Clone, PartialEq)]
enum Answer {
    Result(Instant),
    Error(Instant, i64),
    Malformed(Instant),
    Progress,
}

/// One request the peer read.
#[derive(Debug, Default)]
struct Seen {
    call: Option<usize>,
    answered: bool,
    answers: Vec<Answer>,
}

struct Harness {
    setup: Setup,
    conn: Connection,
    peer: Option<Peer>,
    /// The client closed its side (the peer read end of stream).
    peer_eof: bool,
    /// Whether the peer drains what the client writes.
    reading: bool,
    calls: Vec<CallRec>,
    seen: BTreeMap<i64, Seen>,
    /// Requests the peer sent the client and has not seen answered yet; `server_pings_sent` names the next one.
    server_pings: BTreeSet<String>,
    server_pings_sent: u64,
    cancels_seen: Vec<i64>,
    unknown_sent: u64,
    rejected_sent: u64,
    /// A violation noticed while the script runs (reported after it).
    violation: Option<String>,
}

impl Harness {
    fn fail(&mut self, msg: String) {
        self.violation.get_or_insert(msg);
    }

    /// Lets every task run to quiescence at the current instant (yields never move paused time), reading whatever
    /// the client wrote so its writer is never stuck on a full pipe for long.
    async fn settle(&mut self) {
        for _ in 0..1000 {
            for _ in 0..32 {
                tokio::task::yield_now().await;
            }
            if !self.read_available().await {
                return;
            }
        }
        self.fail("settle: the client never stopped writing".into());
    }

    /// Reads every message already in the pipe without waiting; true if anything was read.
    async fn read_available(&mut self) -> bool {
        let mut any = false;
        loop {
            let Some(peer) = self.peer.as_mut().filter(|_| self.reading && !self.peer_eof) else { return any };
            let next = tokio::select! {
                biased;
                m = peer.recv() => Some(m),
                _ = std::future::ready(()) => None,
            };
            match next {
                None => return any,
                Some(None) => {
                    self.peer_eof = true;
                    return any;
                }
                Some(Some(m)) => {
                    any = true;
                    self.on_client_message(m);
                }
            }
        }
    }

    fn on_client_message(&mut self, m: Result<Message, FrameError>) {
        match m {
            Ok(Message::Request(r)) => {
                let Some(id) = r.id.as_number() else {
                    return self.fail(format!("client sent a non-integer request id: {r:?}"));
                };
                if self.seen.contains_key(&id) {
                    return self.fail(format!("request id {id} reused: {r:?}"));
                }
                let call = r.params.as_ref().and_then(|p| p.get("call")).and_then(Value::as_u64).map(|c| c as usize);
                match call {
                    Some(c) if c < self.calls.len() => {
                        self.calls[c].id = Some(id);
                        if r.method == method::TOOLS_CALL {
                            let token = r.params.as_ref().and_then(|p| p.pointer("/_meta/progressToken"));
                            if token != Some(&json!(id)) {
                                self.fail(format!("tools/call {id} carries progress token {token:?}"));
                            }
                        }
                    }
                    Some(c) => return self.fail(format!("request names call {c}, never started")),
                    None if r.method == method::PING => {} // the stall probe
                    None => return self.fail(format!("unexpected request {r:?}")),
                }
                self.seen.insert(id, Seen { call, ..Seen::default() });
            }
            Ok(Message::Notification(n)) if n.method == method::CANCELLED => {
                let id = n.params.as_ref().and_then(|p| p.get("requestId")).and_then(Value::as_i64);
                match id {
                    Some(id) if self.seen.contains_key(&id) => self.cancels_seen.push(id),
                    _ => self.fail(format!("cancellation for a request the peer never read: {n:?}")),
                }
            }
            Ok(Message::Response(Response { id: Some(RequestId::String(s)), .. })) if self.server_pings.remove(&s) => {}
            // A connection torn down mid-write (local shutdown, or failure while the writer was blocked) may leave a
            // truncated last frame: the writer stops at once rather than wait on a peer that may never read.
            Err(FrameError::Decode(mcpstorm_core::jsonrpc::DecodeError::NotJson(_)))
                if self.conn.closed().is_some() => {}
            other => self.fail(format!("unexpected frame from the client: {other:?}")),
        }
    }

    /// Peer writes happen only while the connection is open: once it failed, the client's end of the pipe goes away
    /// and the scripted peer's writes (which panic on error, as a test helper should) would fail.
    fn writable(&self) -> bool {
        self.peer.is_some() && self.conn.is_open()
    }

    async fn send(&mut self, msg: Message) {
        let Some(peer) = self.peer.as_mut() else { return };
        if tokio::time::timeout(HANG, peer.send(msg)).await.is_err() {
            self.fail("peer write blocked: the client's reader stopped reading".into());
        }
    }

    async fn send_raw(&mut self, bytes: &[u8]) {
        let Some(peer) = self.peer.as_mut() else { return };
        if tokio::time::timeout(HANG, peer.send_raw(bytes)).await.is_err() {
            self.fail("peer raw write blocked: the client's reader stopped reading".into());
        }
    }

    fn unanswered(&self, pick: usize) -> Option<i64> {
        let ids: Vec<i64> = self.seen.iter().filter(|(_, s)| !s.answered).map(|(id, _)| *id).collect();
        (!ids.is_empty()).then(|| ids[pick % ids.len()])
    }

    fn start(&mut self, cancel: bool, deadline_ms: Option<u64>, progress: bool, priority: bool, tool: bool) {
        let i = self.calls.len();
        let now = Instant::now();
        let token = cancel.then(CancelToken::new);
        let deadline = deadline_ms.map(|ms| now + Duration::from_millis(ms));
        let (tx, rx) = if progress {
            let (tx, rx) = mpsc::channel(4);
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        let opts = CallOptions {
            deadline,
            cancel: token.clone(),
            lane: if priority { Lane::Priority } else { Lane::Normal },
            progress: tx,
            first_response: None,
        };
        let conn = self.conn.clone();
        let method_name = if tool { method::TOOLS_CALL } else { "test/echo" };
        let handle = tokio::spawn(async move {
            let mut rx = rx;
            let result = conn.request(method_name, Some(json!({"call": i})), opts).await;
            let at = Instant::now();
            let mut progress = Vec::new();
            if let Some(rx) = rx.as_mut() {
                while let Ok(p) = rx.try_recv() {
                    progress.push(p);
                }
            }
            Outcome { result, at, progress }
        });
        self.calls.push(CallRec {
            handle,
            started: now,
            deadline: deadline.unwrap_or(now + Duration::from_millis(self.setup.deadline_ms)),
            priority,
            token,
            cancelled_at: None,
            id: None,
            outstanding_at_failure: None,
            aborted: false,
        });
    }

    async fn apply(&mut self, op: &Op) {
        match op {
            Op::Start { cancel, deadline_ms, progress, priority, tool } => {
                if self.calls.len() < self.setup.calls {
                    self.start(*cancel, *deadline_ms, *progress, *priority, *tool);
                }
            }
            Op::Respond(pick) => {
                if let (true, Some(id)) = (self.writable(), self.unanswered(*pick)) {
                    let call = self.seen[&id].call;
                    self.answer(id, Answer::Result(Instant::now()));
                    self.send(Message::result(RequestId::Number(id), json!({"id": id, "call": call}))).await;
                }
            }
            Op::RespondError(pick, code) => {
                if let (true, Some(id)) = (self.writable(), self.unanswered(*pick)) {
                    self.answer(id, Answer::Error(Instant::now(), *code));
                    let err = ErrorObject { code: *code, message: format!("error for {id}"), data: Some(json!(id)) };
                    self.send(Message::error(Some(RequestId::Number(id)), err)).await;
                }
            }
            Op::RespondMalformed(pick) => {
                if let (true, Some(id)) = (self.writable(), self.unanswered(*pick)) {
                    self.answer(id, Answer::Malformed(Instant::now()));
                    self.rejected_sent += 1;
                    let frame = format!(
                        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":1,\"error\":{{\"code\":1,\"message\":\"both\"}}}}\n"
                    );
                    self.send_raw(frame.as_bytes()).await;
                }
            }
            Op::Late(pick) => {
                let done: Vec<i64> = self
                    .seen
                    .iter()
                    .filter(|(_, s)| s.answered || s.call.is_some_and(|c| self.calls[c].handle.is_finished()))
                    .map(|(id, _)| *id)
                    .collect();
                if self.writable() && !done.is_empty() {
                    let id = done[pick % done.len()];
                    let call = self.seen[&id].call;
                    self.send(Message::result(RequestId::Number(id), json!({"id": id, "call": call, "late": true})))
                        .await;
                }
            }
            Op::Unknown(kind) => {
                if self.writable() {
                    let (id, body) = match kind {
                        UnknownId::Large(n) | UnknownId::NonPositive(n) => {
                            (Some(RequestId::Number(*n)), json!({"unknown": n}))
                        }
                        UnknownId::Text(s) => (Some(RequestId::String(s.clone())), json!({"unknown": s})),
                        UnknownId::Null => (None, Value::Null),
                    };
                    self.unknown_sent += 1;
                    let msg = match (id, body) {
                        (Some(id), body) => Message::result(id, body),
                        (None, _) => Message::error(
                            None,
                            ErrorObject { code: -32700, message: "parse error".into(), data: None },
                        ),
                    };
                    self.send(msg).await;
                }
            }
            Op::Progress(pick, to) => {
                let ids: Vec<i64> = match to {
                    ProgressTo::Unanswered => {
                        self.seen.iter().filter(|(_, s)| !s.answered).map(|(id, _)| *id).collect()
                    }
                    ProgressTo::AnySeen => self.seen.keys().copied().collect(),
                    ProgressTo::NeverIssued => Vec::new(),
                };
                if self.writable() && (*to == ProgressTo::NeverIssued || !ids.is_empty()) {
                    let token = if ids.is_empty() {
                        json!(2_000_000 + pick % 1000)
                    } else {
                        let id = ids[pick % ids.len()];
                        if let Some(s) = self.seen.get_mut(&id) {
                            s.answers.push(Answer::Progress);
                        }
                        json!(id)
                    };
                    let params = json!({"progressToken": token, "progress": 1, "total": 2});
                    self.send(Message::notification(method::PROGRESS, Some(params))).await;
                }
            }
            Op::Cancel(pick) => {
                let live: Vec<usize> = (0..self.calls.len())
                    .filter(|&c| self.calls[c].token.as_ref().is_some_and(|t| !t.is_cancelled()))
                    .collect();
                if !live.is_empty() {
                    let c = live[pick % live.len()];
                    let call = &mut self.calls[c];
                    if !call.handle.is_finished() {
                        call.cancelled_at = Some(Instant::now());
                    }
                    if let Some(t) = &call.token {
                        t.cancel(format!("stop {c}"));
                    }
                }
            }
            Op::Advance(ms) => tokio::time::sleep(Duration::from_millis(*ms)).await,
            Op::Garbage(pick) => {
                if self.writable() {
                    let (bytes, rejected) = GARBAGE[pick % GARBAGE.len()];
                    self.rejected_sent += rejected;
                    self.send_raw(bytes).await;
                }
            }
            Op::ServerPing => {
                if self.writable() {
                    self.server_pings_sent += 1;
                    let id = format!("s{}", self.server_pings_sent);
                    self.server_pings.insert(id.clone());
                    self.send(Message::request(RequestId::String(id), method::PING, None)).await;
                }
            }
            Op::ToggleReading => self.reading = !self.reading,
            Op::Abort(pick) => {
                let live: Vec<usize> = (0..self.calls.len()).filter(|&c| !self.calls[c].handle.is_finished()).collect();
                if !live.is_empty() {
                    let call = &mut self.calls[live[pick % live.len()]];
                    call.aborted = true;
                    call.handle.abort();
                }
            }
            Op::Oversize(pick) => {
                if self.writable() && self.setup.pipe >= 2 * MAX_FRAME {
                    self.mark_outstanding(false);
                    self.rejected_sent += 1;
                    let id = self.unanswered(*pick).unwrap_or(1_000_000);
                    self.send(Message::result(RequestId::Number(id), json!("x".repeat(MAX_FRAME)))).await;
                }
            }
            Op::Shutdown => {
                self.mark_outstanding(false);
                self.conn.shutdown();
            }
            Op::Disconnect => {
                if let Some(peer) = self.peer.take() {
                    self.mark_outstanding(true);
                    peer.hang_up();
                }
            }
        }
        self.settle().await;
    }

    /// The connection is about to fail because of the peer: every unresolved call must fail at this instant.
    fn mark_outstanding(&mut self, peer_gone: bool) {
        if !self.conn.is_open() {
            return;
        }
        let now = Instant::now();
        for call in &mut self.calls {
            if !call.handle.is_finished() {
                call.outstanding_at_failure = Some((now, peer_gone));
            }
        }
    }

    fn answer(&mut self, id: i64, answer: Answer) {
        if let Some(s) = self.seen.get_mut(&id) {
            s.answered = true;
            s.answers.push(answer);
        }
    }

    /// Checks one finished call's outcome against what the script did to it.
    fn check_call(&self, i: usize, out: &Outcome) -> Result<(), String> {
        let call = &self.calls[i];
        let seen = call.id.and_then(|id| self.seen.get(&id));
        let answers: &[Answer] = seen.map_or(&[], |s| &s.answers);
        let ms = Duration::from_millis(1);
        let cfg = self.setup.config();
        if out.at < call.started || out.at > call.deadline + ms {
            return Err(format!("resolved at {:?} outside [start, deadline]", out.at - call.started));
        }
        if let Some((t, _peer_gone)) = call.outstanding_at_failure {
            let at_once = matches!(out.result, Err(CallError::Transport(_))) && out.at == t;
            if !at_once {
                return Err(format!("outstanding when the connection failed ({t:?}) but resolved with {out:?}"));
            }
        }
        if let Some(t) = call.cancelled_at {
            // A cancel resolves at once, with the caller's reason.
            let ok =
                matches!(&out.result, Err(CallError::Local(LocalError::Cancelled(r))) if *r == format!("stop {i}"));
            if !ok || out.at != t {
                return Err(format!("cancelled at {t:?} but resolved with {out:?}"));
            }
        }
        for p in &out.progress {
            if call.id.is_none_or(|id| p.progress_token != json!(id)) {
                return Err(format!("progress {p:?} delivered to call {i} (request id {:?})", call.id));
            }
        }
        match &out.result {
            Ok(v) => {
                let Some(id) = call.id else { return Err(format!("succeeded with {v} but its request never arrived")) };
                if *v != json!({"id": id, "call": i}) {
                    return Err(format!("call {i} (request id {id}) got someone else's result {v}"));
                }
                if !answers.contains(&Answer::Result(out.at)) {
                    return Err(format!("result resolved at {:?}, not when the peer answered: {answers:?}", out.at));
                }
            }
            Err(CallError::Protocol(e)) => {
                let Some(id) = call.id else { return Err(format!("protocol error {e:?} without a request")) };
                if e.message != format!("error for {id}") || e.data != Some(json!(id)) {
                    return Err(format!("call {i} (request id {id}) got someone else's error {e:?}"));
                }
                if !answers.contains(&Answer::Error(out.at, e.code)) {
                    return Err(format!("error resolved at {:?}, not when the peer answered: {answers:?}", out.at));
                }
            }
            Err(CallError::MalformedResponse(_)) => {
                if !answers.contains(&Answer::Malformed(out.at)) {
                    return Err(format!("malformed response without a malformed frame for it: {answers:?}"));
                }
            }
            Err(CallError::Local(LocalError::Cancelled(_))) => {
                if call.cancelled_at.is_none() {
                    return Err("cancelled without its token being cancelled while it ran".into());
                }
            }
            Err(CallError::Local(LocalError::DeadlineExceeded)) => {
                if out.at < call.deadline {
                    return Err(format!("deadline exceeded {:?} early", call.deadline - out.at));
                }
            }
            Err(CallError::Local(LocalError::QueueTimeout(d))) => {
                if *d != cfg.queue_wait || call.priority || out.at != call.started + cfg.queue_wait {
                    return Err(format!("queue timeout {d:?} at {:?}", out.at - call.started));
                }
            }
            Err(CallError::Local(LocalError::FirstResponseTimeout(d))) => {
                if *d != cfg.first_response || out.at < call.started + *d {
                    return Err(format!("first-response timeout {d:?} at {:?}", out.at - call.started));
                }
            }
            Err(CallError::Local(LocalError::IdleTimeout(d))) => {
                // Only a call that saw progress is streaming.
                if *d != cfg.stream_idle || !answers.contains(&Answer::Progress) {
                    return Err(format!("idle timeout {d:?} for a call without progress ({answers:?})"));
                }
            }
            Err(CallError::Transport(e)) => {
                if self.conn.closed().as_ref() != Some(e) {
                    return Err(format!(
                        "transport error {e:?} but the connection closed with {:?}",
                        self.conn.closed()
                    ));
                }
            }
            Err(other) => return Err(format!("unexpected error class: {other:?}")),
        }
        Ok(())
    }

    /// After the script: let every phase run out, then check every call and the connection's books.
    async fn finish(mut self) -> Result<(), String> {
        // Every deadline (explicit ones are under 3 s) and every stall probe ends within this.
        let horizon = self.setup.deadline_ms.max(3000) + self.setup.probe_ms + 1000;
        tokio::time::sleep(Duration::from_millis(horizon)).await;
        self.settle().await;
        if let Some(v) = self.violation.take() {
            return Err(v);
        }
        let calls = std::mem::take(&mut self.calls);
        let mut outcomes = Vec::new();
        for (i, call) in calls.iter().enumerate() {
            if !call.handle.is_finished() {
                return Err(format!("call {i} never resolved ({call:?})"));
            }
        }
        let mut records = Vec::new();
        for (i, mut call) in calls.into_iter().enumerate() {
            let handle = &mut call.handle;
            match tokio::time::timeout(HANG, handle).await {
                Ok(Ok(out)) => outcomes.push(Some(out)),
                Ok(Err(e)) if e.is_cancelled() && call.aborted => outcomes.push(None),
                Ok(Err(e)) => return Err(format!("call {i}'s task failed: {e}")),
                Err(_) => return Err(format!("call {i} never resolved")),
            }
            records.push(call);
        }
        self.calls = records;
        for (i, out) in outcomes.iter().enumerate() {
            let Some(out) = out else { continue };
            self.check_call(i, out).map_err(|e| format!("call {i}: {e}"))?;
        }
        let stats = self.conn.stats();
        if self.conn.pending() != 0 || stats.pending != 0 || stats.in_flight != 0 {
            return Err(format!("books not drained: pending {} stats {stats:?}", self.conn.pending()));
        }
        if stats.unknown_responses != self.unknown_sent {
            return Err(format!("sent {} unknown-id responses, client counted {stats:?}", self.unknown_sent));
        }
        if stats.rejected_frames != self.rejected_sent {
            return Err(format!("sent {} bad frames, client rejected {stats:?}", self.rejected_sent));
        }
        Ok(())
    }
}

/// The client's frame limit in the connection scripts: far above any scripted frame but the oversize one.
const MAX_FRAME: usize = 4096;

async fn run_script(setup: Setup, ops: Vec<Op>) -> Result<(), String> {
    let (conn, peer) = peer::connect_with(setup.config(), setup.pipe, None, MAX_FRAME);
    let mut h = Harness {
        setup,
        conn,
        peer: Some(peer),
        peer_eof: false,
        reading: true,
        calls: Vec::new(),
        seen: BTreeMap::new(),
        server_pings: BTreeSet::new(),
        server_pings_sent: 0,
        cancels_seen: Vec::new(),
        unknown_sent: 0,
        rejected_sent: 0,
        violation: None,
    };
    for op in &ops {
        h.apply(op).await;
    }
    h.finish().await
}

proptest! {
    #![proptest_config(config(96))]

    /// A random script over up to 30 calls on one connection: every call resolves exactly once, to its own
    /// response (or an error the script explains, at the instant the script explains), the pending table and the
    /// permits drain to zero, and a disconnect fails every outstanding call at that same instant.
    #[test]
    fn every_call_resolves_once_and_the_pending_table_drains(
        setup in setup(),
        ops in script(),
    ) {
        let outcome = paused_runtime().block_on(run_script(setup, ops));
        prop_assert!(outcome.is_ok(), "{}", outcome.err().unwrap_or_default());
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Sessions under clock skew: the server's expiry runs on its own (offset, drifting, jumping) wall clock
// ---------------------------------------------------------------------------------------------------------------

/// A server wall clock: a constant offset, a linear drift (parts per million of elapsed time) and step jumps.
#[derive(Debug, Clone)]
struct SkewSchedule {
    offset_ms: i64,
    drift_ppm: i64,
    /// (at, by): from `at` seconds of elapsed time on, the clock reads `by` ms more.
    jumps: Vec<(u64, i64)>,
}

impl SkewSchedule {
    fn wall(&self) -> WallFn {
        let s = self.clone();
        Arc::new(move |elapsed: Duration| {
            let ms = elapsed.as_millis() as i64;
            let jumped: i64 = s.jumps.iter().filter(|(at, _)| elapsed.as_secs() >= *at).map(|(_, by)| by).sum();
            (1_700_000_000_000 + s.offset_ms + ms + ms * s.drift_ppm / 1_000_000 + jumped) as u64
        })
    }

    /// Whether the server's clock never runs far enough ahead of ours to expire a session inside our margin: no
    /// forward jump, and a drift the margin absorbs (`ttl / (1 + drift)` outlasts `ttl - margin`, with 1 s slack).
    fn within_margin(&self, ttl: Duration) -> bool {
        let margin = (ttl / 5).min(Duration::from_secs(30));
        let server_life = ttl.as_secs_f64() / (1.0 + self.drift_ppm as f64 / 1e6);
        self.jumps.iter().all(|(_, by)| *by <= 0) && server_life > (ttl - margin).as_secs_f64() + 1.0
    }
}

fn skew_schedule() -> impl Strategy<Value = SkewSchedule> {
    (-600_000i64..600_000, -50_000i64..50_000, prop::collection::vec((0u64..20_000, -600_000i64..900_000), 0..4))
        .prop_map(|(offset_ms, drift_ppm, jumps)| SkewSchedule { offset_ms, drift_ppm, jumps })
}

/// Sequential calls at the given gaps (per mille of the TTL); what the server saw, and every call's outcome.
async fn calls_under_skew(
    ttl: Duration,
    skew: &SkewSchedule,
    gaps: &[u32],
) -> (Vec<ext_server::Seen>, Vec<bool>, SessionStats) {
    let server = SessionServer::new(ServerConfig { ttl: Some(ttl), wall: skew.wall(), ..ServerConfig::default() });
    let config = ClientConfig { era_mode: EraMode::Legacy, lifecycle_retries: 0, ..ClientConfig::default() };
    let client = McpClient::new("srv", Arc::new(server.clone()), config, mcpstorm_core::rt::SeededRng::new(0));
    let mut ok = Vec::new();
    for gap in gaps {
        tokio::time::sleep(ttl.mul_f64(f64::from(*gap) / 1000.0)).await;
        ok.push(client.call_tool("echo", json!({}), CallOptions::default()).await.is_ok());
        // Let a renewal the call started finish, as it would during any real gap between calls.
        tokio::task::yield_now().await;
    }
    (server.log(), ok, client.session_stats())
}

proptest! {
    #![proptest_config(config(64))]

    /// Whatever the server's clock does, on the default profile: every call succeeds; a session the server has
    /// expired receives at most one call (the one that discovers it), which is resent at once on a new session that
    /// succeeds; and when the skew stays inside the renewal margin, not even that one happens.
    #[test]
    fn no_call_goes_out_on_a_session_the_server_considers_expired(
        ttl_s in prop::sample::select(vec![20u64, 60, 100, 600, 3600]),
        skew in skew_schedule(),
        gaps in prop::collection::vec(0u32..2000, 1..30),
    ) {
        let ttl = Duration::from_secs(ttl_s);
        let (log, ok, stats) = paused_runtime().block_on(calls_under_skew(ttl, &skew, &gaps));
        prop_assert!(ok.iter().all(|ok| *ok), "{ok:?}");
        let calls: Vec<&ext_server::Seen> = log.iter().filter(|s| s.method == method::TOOLS_CALL).collect();
        let mut refused_per_session: BTreeMap<String, usize> = BTreeMap::new();
        for (i, call) in calls.iter().enumerate() {
            if call.verdict == Verdict::Ok {
                continue;
            }
            prop_assert!(matches!(call.verdict, Verdict::Expired | Verdict::UnknownSession), "{call:?}");
            let id = call.session.clone().unwrap_or_default();
            *refused_per_session.entry(id.clone()).or_default() += 1;
            let resend = calls.get(i + 1);
            prop_assert!(
                resend.is_some_and(|r| r.verdict == Verdict::Ok && r.session.as_deref() != Some(id.as_str())),
                "call {i} on {id} refused, then {resend:?}"
            );
        }
        prop_assert!(refused_per_session.values().all(|n| *n == 1), "{refused_per_session:?}");
        let refused = refused_per_session.len() as u64;
        prop_assert_eq!((stats.resent, calls.len() as u64), (refused, gaps.len() as u64 + refused));
        if skew.within_margin(ttl) {
            prop_assert_eq!(refused, 0, "skew inside the margin, yet the server refused: {:?}", log);
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Regressions: minimised counter-examples the connection property found in the core (all fixed)
// ---------------------------------------------------------------------------------------------------------------

/// One connection permit, a 64-byte pipe the peer never reads: call A's request blocks the writer; B queues in the
/// normal lane and gives up (its permit comes back, its message stays); C takes the permit, registers, and waits for
/// lane space. Returns C's task, started at `t0`.
async fn call_stuck_on_the_normal_lane(conn: &Connection) -> JoinHandle<(Result<Value, CallError>, Instant)> {
    let settle = || async {
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
    };
    let spawn = |cancel: Option<CancelToken>| {
        let conn = conn.clone();
        tokio::spawn(async move {
            let opts = CallOptions { cancel, ..CallOptions::default() };
            let r = conn.request("test/echo", Some(json!({"pad": "x".repeat(100)})), opts).await;
            (r, Instant::now())
        })
    };
    let (a, b) = (CancelToken::new(), CancelToken::new());
    let _a = spawn(Some(a.clone()));
    settle().await; // A is written: the writer is stuck flushing into the full pipe
    a.cancel("a");
    let _b = spawn(Some(b.clone()));
    settle().await; // B's request waits in the normal lane (capacity = max_in_flight = 1)
    b.cancel("b");
    settle().await; // B gave up; its message still fills the lane
    let c = spawn(None);
    settle().await;
    assert_eq!((conn.pending(), conn.stats().in_flight), (1, 1), "C registered and holds the permit");
    c
}

fn one_permit() -> ConnectionConfig {
    ConnectionConfig { max_in_flight: 1, call_deadline: Duration::from_secs(60), ..ConnectionConfig::default() }
}

#[test]
fn stalled_connection_fails_a_call_waiting_for_lane_space_at_once() {
    paused_runtime().block_on(async {
        let (conn, _peer) = peer::connect(one_permit(), 64);
        let c = call_stuck_on_the_normal_lane(&conn).await;
        // A ping on the priority lane times out (5 s), the stall probe goes unanswered (2 s): the stream is declared
        // dead at t0 + 7 s and every pending call must fail then with `Stalled`.
        let t0 = Instant::now();
        let ping = conn.request(method::PING, None, CallOptions { lane: Lane::Priority, ..CallOptions::default() });
        assert!(matches!(ping.await, Err(CallError::Local(LocalError::FirstResponseTimeout(_)))));
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert!(matches!(conn.closed(), Some(TransportError::Stalled(_))), "{:?}", conn.closed());
        let (result, at) = c.await.expect("task");
        // Before the fix: Err(Local(DeadlineExceeded)) at t0 + 60 s, the call's deadline.
        assert!(matches!(result, Err(CallError::Transport(TransportError::Stalled(_)))), "{result:?}");
        assert_eq!(at - t0, Duration::from_secs(7));
    });
}

#[test]
fn shutdown_fails_a_call_waiting_for_lane_space_at_once() {
    paused_runtime().block_on(async {
        let (conn, _peer) = peer::connect(one_permit(), 64);
        let c = call_stuck_on_the_normal_lane(&conn).await;
        let t0 = Instant::now();
        conn.shutdown();
        let (result, at) = c.await.expect("task");
        // Before the fix: Err(Local(DeadlineExceeded)) at t0 + 60 s.
        assert_eq!((result, at - t0), (Err(CallError::Transport(TransportError::Shutdown)), Duration::ZERO));
    });
}

#[test]
fn hang_up_fails_a_call_waiting_for_lane_space_with_the_connections_reason() {
    paused_runtime().block_on(async {
        let (conn, peer) = peer::connect(one_permit(), 64);
        let c = call_stuck_on_the_normal_lane(&conn).await;
        let t0 = Instant::now();
        peer.hang_up();
        let (result, at) = c.await.expect("task");
        assert_eq!(conn.closed(), Some(TransportError::Closed));
        // Before the fix: Err(Transport(Shutdown)) ("connection shut down locally"): the writer's exit closed the lane.
        assert_eq!((result, at - t0), (Err(CallError::Transport(TransportError::Closed)), Duration::ZERO));
    });
}

#[test]
fn writer_blocked_in_a_write_stops_at_shutdown_and_releases_the_guard() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use mcpstorm_core::conn::ConnectionParts;
    use mcpstorm_core::observe::{ConnId, NoopObserver};

    /// Stands in for what `ConnectionParts::guard` really holds, e.g. a stdio server's child process.
    struct Guard(Arc<AtomicBool>);
    impl Drop for Guard {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    paused_runtime().block_on(async {
        let released = Arc::new(AtomicBool::new(false));
        let (ours, _theirs) = tokio::io::duplex(64);
        let (read, write) = tokio::io::split(ours);
        let (sink, source) = mcpstorm_core::transport::line_transport(read, write, 1 << 20);
        let parts = ConnectionParts {
            id: ConnId(0),
            server: "peer".into(),
            config: ConnectionConfig::default(),
            observer: Arc::new(NoopObserver),
            global: None,
            on_notification: None,
            guard: Some(Box::new(Guard(released.clone()))),
        };
        let conn = Connection::start(sink, source, parts);
        // A request larger than the pipe: the writer blocks in its flush, and the peer never reads.
        let call = tokio::spawn({
            let conn = conn.clone();
            async move { conn.request("test/echo", Some(json!({"pad": "x".repeat(200)})), CallOptions::default()).await }
        });
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        conn.shutdown();
        assert_eq!(call.await.expect("task"), Err(CallError::Transport(TransportError::Shutdown)));
        drop(conn);
        tokio::time::sleep(Duration::from_secs(3600)).await;
        // Before the fix: still held an hour later; released only when the peer reads or closes its end.
        assert!(released.load(Ordering::SeqCst), "the connection's tasks still hold the guard");
    });
}

#[test]
fn progress_before_the_first_response_timeout_starts_the_idle_phase() {
    // With `stream_idle` shorter than `first_response`, progress at 0.5 s starts the idle phase and the call ends at
    // 1.5 s with `IdleTimeout`. Before the fix it ended with `FirstResponseTimeout(5s)` at 5 s, because the progress
    // time was only read when the first-response timer fired.
    paused_runtime().block_on(async {
        let cfg = ConnectionConfig {
            first_response: Duration::from_secs(5),
            stream_idle: Duration::from_secs(1),
            ..ConnectionConfig::default()
        };
        let (conn, mut peer) = peer::connect(cfg, 1 << 16);
        let t0 = Instant::now();
        let call = tokio::spawn({
            let conn = conn.clone();
            async move { (conn.request(method::TOOLS_CALL, Some(json!({})), CallOptions::default()).await, Instant::now()) }
        });
        let req = peer.request().await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let params = json!({"progressToken": req.id.as_number(), "progress": 1});
        peer.send(Message::notification(method::PROGRESS, Some(params))).await;
        let (result, at) = call.await.expect("task");
        assert_eq!(
            (result, at - t0),
            (Err(CallError::Local(LocalError::IdleTimeout(Duration::from_secs(1)))), Duration::from_millis(1500))
        );
    });
}
