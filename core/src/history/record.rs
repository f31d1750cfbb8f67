//! One call as the history keeps it, and how a call's outcome maps to a status and a code.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use crate::error::{AuthError, CallError, LifecycleError, LocalError, TransportError};
use crate::mcp::CallToolResult;
use crate::rt::Clock;
use crate::schema::ContentHash;

/// How a call ended, in four words.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum CallStatus {
    /// A result without `isError`.
    Success,
    /// A local timer fired: first response, stream idle, or the call's deadline.
    Timeout,
    /// The server, the session or the connection failed the call, or the tool answered `isError: true`.
    Error,
    /// Refused on this side before or instead of the server's word: no permit in time, a full queue, arguments
    /// that fail the tool's schema, a schema that cannot be compiled, an unknown tool, a cancellation.
    Rejected,
}

impl CallStatus {
    /// The status of a call that failed with `e`.
    ///
    /// Every variant is named (no `_` arm), so a new error variant does not compile until someone decides its
    /// status. Transport timeouts (connect, handshake, a stalled stream) are `Error`: they say the connection
    /// failed, not that the call ran out of time, and their code tells them apart.
    pub fn of_error(e: &CallError) -> CallStatus {
        match e {
            CallError::Protocol(_) | CallError::MalformedResponse(_) => CallStatus::Error,
            CallError::Lifecycle(_) | CallError::Transport(_) => CallStatus::Error,
            // Decided here before sending with a credential the server would refuse.
            CallError::Auth(_) => CallStatus::Rejected,
            CallError::Local(l) => match l {
                LocalError::FirstResponseTimeout(_) | LocalError::IdleTimeout(_) | LocalError::DeadlineExceeded => {
                    CallStatus::Timeout
                }
                LocalError::QueueTimeout(_)
                | LocalError::QueueFull
                | LocalError::Cancelled(_)
                | LocalError::InvalidArguments(_)
                | LocalError::UnknownTool(_)
                | LocalError::UnusableSchema(_) => CallStatus::Rejected,
            },
        }
    }

    /// The status of a finished call: `isError` results are errors.
    pub fn of_outcome(outcome: Result<&CallToolResult, &CallError>) -> CallStatus {
        match outcome {
            Ok(r) if r.is_error => CallStatus::Error,
            Ok(_) => CallStatus::Success,
            Err(e) => CallStatus::of_error(e),
        }
    }
}

impl fmt::Display for CallStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.into())
    }
}

/// Why a call did not succeed: the server's JSON-RPC code for protocol errors, a stable snake_case label otherwise.
///
/// Serialised untagged: a number or a string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CallCode {
    Rpc(i64),
    Label(Cow<'static, str>),
}

impl CallCode {
    /// The label of a tool result with `isError: true`.
    pub const TOOL_ERROR: CallCode = CallCode::Label(Cow::Borrowed("tool_error"));

    fn label(s: &'static str) -> CallCode {
        CallCode::Label(Cow::Borrowed(s))
    }

    /// The code of a call that failed with `e`. Every variant is named, as in [`CallStatus::of_error`].
    pub fn of_error(e: &CallError) -> CallCode {
        match e {
            CallError::Protocol(obj) => CallCode::Rpc(obj.code),
            CallError::MalformedResponse(_) => Self::label("malformed_response"),
            CallError::Lifecycle(l) => Self::label(match l {
                LifecycleError::InitializeRefused(_) => "initialize_refused",
                LifecycleError::VersionMismatch { .. } => "version_mismatch",
                LifecycleError::MalformedInitialize(_) => "malformed_initialize",
                LifecycleError::NotInitialized => "not_initialized",
            }),
            CallError::Transport(t) => Self::label(match t {
                TransportError::Io { .. } => "io",
                TransportError::Closed => "closed",
                TransportError::ConnectTimeout(_) => "connect_timeout",
                TransportError::ConnectFailed(_) => "connect_failed",
                TransportError::SpawnFailed(_) => "spawn_failed",
                TransportError::Config(_) => "config",
                TransportError::HandshakeTimeout(_) => "handshake_timeout",
                TransportError::FrameTooLarge { .. } => "frame_too_large",
                TransportError::Stalled(_) => "stalled",
                TransportError::Shutdown => "shutdown",
                TransportError::NotWritten => "not_written",
                TransportError::Http(_) => "http",
            }),
            CallError::Local(l) => Self::label(match l {
                LocalError::QueueTimeout(_) => "queue_timeout",
                LocalError::QueueFull => "queue_full",
                LocalError::FirstResponseTimeout(_) => "first_response_timeout",
                LocalError::IdleTimeout(_) => "idle_timeout",
                LocalError::DeadlineExceeded => "deadline_exceeded",
                LocalError::Cancelled(_) => "cancelled",
                LocalError::InvalidArguments(_) => "invalid_arguments",
                LocalError::UnknownTool(_) => "unknown_tool",
                LocalError::UnusableSchema(_) => "unusable_schema",
            }),
            CallError::Auth(AuthError::Mismatch { .. }) => Self::label("auth_mismatch"),
            CallError::Auth(AuthError::TokenUnavailable(_)) => Self::label("token_unavailable"),
            CallError::Auth(AuthError::TokenRefused(_)) => Self::label("token_refused"),
        }
    }

    /// The code of a finished call: `None` for a success.
    pub fn of_outcome(outcome: Result<&CallToolResult, &CallError>) -> Option<CallCode> {
        match outcome {
            Ok(r) if r.is_error => Some(CallCode::TOOL_ERROR),
            Ok(_) => None,
            Err(e) => Some(CallCode::of_error(e)),
        }
    }
}

impl fmt::Display for CallCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallCode::Rpc(c) => write!(f, "{c}"),
            CallCode::Label(l) => f.write_str(l),
        }
    }
}

/// What a call was: the server asked, the tool, and the hash of the arguments. The key of resume and idempotency.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallKey {
    pub server: String,
    pub tool: String,
    pub input: ContentHash,
}

impl CallKey {
    /// Hashes `arguments` (canonical JSON, so key order does not matter).
    pub fn new(server: impl Into<String>, tool: impl Into<String>, arguments: &Value) -> CallKey {
        CallKey { server: server.into(), tool: tool.into(), input: ContentHash::of(arguments) }
    }

    /// With an input hash computed earlier (a caller that sends the same arguments many times hashes them once).
    pub fn with_hash(server: impl Into<String>, tool: impl Into<String>, input: ContentHash) -> CallKey {
        CallKey { server: server.into(), tool: tool.into(), input }
    }

    /// One digest of all three parts, for compact indexes.
    pub(crate) fn digest(server: &str, tool: &str, input: &ContentHash) -> [u8; 32] {
        let mut h = Sha256::new();
        for part in [server.as_bytes(), tool.as_bytes(), input.as_bytes()] {
            // Length-prefixed, so ("ab", "c") and ("a", "bc") differ.
            h.update((part.len() as u64).to_le_bytes());
            h.update(part);
        }
        h.finalize().into()
    }
}

/// SHA-256 of a tool result's canonical JSON: `content`, `structuredContent`, `isError` and unknown fields, keys
/// sorted (so a server that reorders keys gives the same hash).
pub fn result_hash(result: &CallToolResult) -> ContentHash {
    // Cannot fail: every map in `CallToolResult` has string keys.
    ContentHash::of(&serde_json::to_value(result).unwrap_or(Value::Null))
}

/// When a call started, read before it is sent. See [`super::CallHistory::begin`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallStart {
    /// Wall time from the [`Clock`] seam, ms since the Unix epoch (for people; may be skewed).
    pub wall_ms: u64,
    /// Monotonic offset from the history's origin (for windows and ordering; never skewed).
    pub offset: Duration,
    /// Monotonic start, for the duration.
    pub at: Instant,
}

impl CallStart {
    /// A start whose monotonic offset the embedder measured itself (the simulator uses its global simulated time:
    /// tokio instants from different hosts' runtimes are not comparable).
    pub fn new(wall_ms: u64, offset: Duration, at: Instant) -> CallStart {
        CallStart { wall_ms, offset, at }
    }

    pub(crate) fn from_clock(clock: &dyn Clock, origin: Instant, base: Duration) -> CallStart {
        let at = clock.now();
        CallStart { wall_ms: clock.wall_ms(), offset: base + at.saturating_duration_since(origin), at }
    }
}

/// One call to one server, as the history keeps it (one row of `calls.csv`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerCallRecord {
    /// Position in the history: 0 for the first call ever recorded, counting calls dropped from the ring.
    pub seq: u64,
    /// Wall time the call started, ms since the Unix epoch, from the [`Clock`] seam.
    pub timestamp_ms: u64,
    /// Monotonic start, from the history's origin.
    #[serde(rename = "start_offset_ns", with = "nanos")]
    pub start_offset: Duration,
    pub server: String,
    pub tool: String,
    /// SHA-256 of the arguments' canonical JSON.
    pub input_sha256: ContentHash,
    /// SHA-256 of the result's canonical JSON; `None` when no result came back (an `isError` result has one).
    pub output_sha256: Option<ContentHash>,
    #[serde(rename = "duration_ns", with = "nanos")]
    pub duration: Duration,
    pub status: CallStatus,
    pub code: Option<CallCode>,
    /// Attempts of the same logical call before this one (0 for a first attempt).
    pub retries: u32,
}

impl ServerCallRecord {
    /// The record of a call that started at `start` and just ended with `outcome`. `seq` is set by the history.
    pub fn new(
        start: CallStart,
        key: CallKey,
        outcome: Result<&CallToolResult, &CallError>,
        retries: u32,
    ) -> ServerCallRecord {
        ServerCallRecord {
            seq: 0,
            timestamp_ms: start.wall_ms,
            start_offset: start.offset,
            server: key.server,
            tool: key.tool,
            input_sha256: key.input,
            output_sha256: outcome.ok().map(result_hash),
            duration: start.at.elapsed(),
            status: CallStatus::of_outcome(outcome),
            code: CallCode::of_outcome(outcome),
            retries,
        }
    }

    pub fn is_success(&self) -> bool {
        self.status == CallStatus::Success
    }

    /// The monotonic offset at which the call ended.
    pub fn end_offset(&self) -> Duration {
        self.start_offset.saturating_add(self.duration)
    }

    pub(crate) fn key_digest(&self) -> [u8; 32] {
        CallKey::digest(&self.server, &self.tool, &self.input_sha256)
    }
}

/// Durations as whole nanoseconds (u64: 584 years), so a saved history restores exactly.
mod nanos {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_nanos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::{ErrorCode, ErrorObject};
    use crate::schema::{ArgumentError, SchemaError, SchemaKind};
    use serde_json::json;

    fn d() -> Duration {
        Duration::from_secs(1)
    }

    /// Every `CallError` variant, with the status and code the history must give it.
    fn table() -> Vec<(CallError, CallStatus, CallCode)> {
        use CallStatus::*;
        let l = |s: &'static str| CallCode::Label(Cow::Borrowed(s));
        let obj = ErrorObject::new(ErrorCode::INVALID_PARAMS, "bad");
        vec![
            (CallError::Protocol(obj.clone()), Error, CallCode::Rpc(-32602)),
            (CallError::Protocol(ErrorObject::new(ErrorCode(-32042), "custom")), Error, CallCode::Rpc(-32042)),
            (CallError::MalformedResponse("x".into()), Error, l("malformed_response")),
            (LifecycleError::InitializeRefused(obj).into(), Error, l("initialize_refused")),
            (
                LifecycleError::VersionMismatch { ours: vec!["a".into()], theirs: "b".into() }.into(),
                Error,
                l("version_mismatch"),
            ),
            (LifecycleError::MalformedInitialize("x".into()).into(), Error, l("malformed_initialize")),
            (LifecycleError::NotInitialized.into(), Error, l("not_initialized")),
            (
                TransportError::Io { op: "read", kind: std::io::ErrorKind::Other, message: "x".into() }.into(),
                Error,
                l("io"),
            ),
            (TransportError::Closed.into(), Error, l("closed")),
            (TransportError::ConnectTimeout(d()).into(), Error, l("connect_timeout")),
            (TransportError::ConnectFailed("x".into()).into(), Error, l("connect_failed")),
            (TransportError::SpawnFailed("x".into()).into(), Error, l("spawn_failed")),
            (TransportError::Config("x".into()).into(), Error, l("config")),
            (TransportError::HandshakeTimeout(d()).into(), Error, l("handshake_timeout")),
            (TransportError::FrameTooLarge { max: 1 }.into(), Error, l("frame_too_large")),
            (TransportError::Stalled(d()).into(), Error, l("stalled")),
            (TransportError::Shutdown.into(), Error, l("shutdown")),
            (TransportError::NotWritten.into(), Error, l("not_written")),
            (LocalError::QueueTimeout(d()).into(), Rejected, l("queue_timeout")),
            (LocalError::QueueFull.into(), Rejected, l("queue_full")),
            (LocalError::FirstResponseTimeout(d()).into(), Timeout, l("first_response_timeout")),
            (LocalError::IdleTimeout(d()).into(), Timeout, l("idle_timeout")),
            (LocalError::DeadlineExceeded.into(), Timeout, l("deadline_exceeded")),
            (LocalError::Cancelled("user".into()).into(), Rejected, l("cancelled")),
            (
                LocalError::InvalidArguments(ArgumentError::not_an_object("t", &json!([1]))).into(),
                Rejected,
                l("invalid_arguments"),
            ),
            (LocalError::UnknownTool("t".into()).into(), Rejected, l("unknown_tool")),
            (
                LocalError::UnusableSchema(SchemaError {
                    tool: "t".into(),
                    schema: SchemaKind::Input,
                    message: "/type: not a type".into(),
                })
                .into(),
                Rejected,
                l("unusable_schema"),
            ),
        ]
    }

    #[test]
    fn every_call_error_variant_maps_to_its_status_and_code() {
        let rows = table();
        for (e, status, code) in &rows {
            assert_eq!(CallStatus::of_error(e), *status, "{e:?}");
            assert_eq!(CallStatus::of_outcome(Err(e)), *status, "{e:?}");
            assert_eq!(CallCode::of_error(e), *code, "{e:?}");
            assert_eq!(CallCode::of_outcome(Err(e)).as_ref(), Some(code), "{e:?}");
        }
        // Labels are distinct, so a code alone tells which failure it was.
        let mut labels: Vec<String> = rows.iter().map(|(_, _, c)| c.to_string()).collect();
        labels.sort();
        let n = labels.len();
        labels.dedup();
        assert_eq!(labels.len(), n, "duplicate labels: {labels:?}");
    }

    #[test]
    fn results_map_by_is_error() {
        let ok = CallToolResult::text("fine", false);
        let bad = CallToolResult::text("tool failed", true);
        assert_eq!(CallStatus::of_outcome(Ok(&ok)), CallStatus::Success);
        assert_eq!(CallCode::of_outcome(Ok(&ok)), None);
        assert_eq!(CallStatus::of_outcome(Ok(&bad)), CallStatus::Error);
        assert_eq!(CallCode::of_outcome(Ok(&bad)), Some(CallCode::TOOL_ERROR));
    }

    #[test]
    fn codes_serialise_as_a_number_or_a_string() {
        assert_eq!(serde_json::to_value(CallCode::Rpc(-32602)).unwrap(), json!(-32602));
        assert_eq!(serde_json::to_value(CallCode::TOOL_ERROR).unwrap(), json!("tool_error"));
        assert_eq!(serde_json::from_value::<CallCode>(json!(-32001)).unwrap(), CallCode::Rpc(-32001));
        assert_eq!(serde_json::from_value::<CallCode>(json!("stalled")).unwrap(), CallCode::label("stalled"));
        assert_eq!(serde_json::to_value(CallStatus::Rejected).unwrap(), json!("rejected"));
    }

    #[test]
    fn input_hash_ignores_key_order_at_every_depth() {
        let a: Value = serde_json::from_str(r#"{"b": 1, "a": {"y": [1, {"q": 2, "p": 3}], "x": null}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a": {"x": null, "y": [1, {"p": 3, "q": 2}]}, "b": 1}"#).unwrap();
        assert_eq!(CallKey::new("s", "t", &a), CallKey::new("s", "t", &b));
        // Built by inserting keys in the other order, whatever map type serde_json was built with.
        let mut m = serde_json::Map::new();
        m.insert("b".into(), json!(1));
        m.insert("a".into(), json!({"y": [1, {"q": 2, "p": 3}], "x": null}));
        assert_eq!(CallKey::new("s", "t", &Value::Object(m)).input, CallKey::new("s", "t", &a).input);
        // sha256 of the two bytes `{}`: the hash is of the canonical text itself.
        assert_eq!(
            CallKey::new("s", "t", &json!({})).input.to_hex(),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
        // Different values, array orders and number spellings are different inputs.
        let base = CallKey::new("s", "t", &json!({"q": "mcp"})).input;
        assert_ne!(base, CallKey::new("s", "t", &json!({"q": "mcp "})).input);
        assert_ne!(base, CallKey::new("s", "t", &json!({"Q": "mcp"})).input);
        assert_ne!(ContentHash::of(&json!([1, 2])), ContentHash::of(&json!([2, 1])));
        assert_ne!(ContentHash::of(&json!(1)), ContentHash::of(&json!(1.0)));
    }

    #[test]
    fn result_hash_ignores_key_order_but_not_is_error() {
        let a: CallToolResult =
            serde_json::from_value(json!({"content": [], "structuredContent": {"a": 1, "b": 2}})).unwrap();
        let b: CallToolResult =
            serde_json::from_value(json!({"structuredContent": {"b": 2, "a": 1}, "content": []})).unwrap();
        assert_eq!(result_hash(&a), result_hash(&b));
        let err = CallToolResult { is_error: true, ..a.clone() };
        assert_ne!(result_hash(&a), result_hash(&err));
    }

    #[test]
    fn key_digest_separates_its_parts() {
        let h = ContentHash::of(&json!({}));
        assert_ne!(CallKey::digest("ab", "c", &h), CallKey::digest("a", "bc", &h));
        assert_eq!(CallKey::digest("a", "bc", &h), CallKey::digest("a", "bc", &h));
    }

    #[tokio::test(start_paused = true)]
    async fn record_of_an_outcome() {
        let key = CallKey::new("db-0", "get", &json!({"key": "user:42"}));
        let start = CallStart::new(1_000, Duration::from_millis(5), Instant::now());
        tokio::time::advance(Duration::from_millis(30)).await;
        let ok = CallToolResult::text("row", false);
        let r = ServerCallRecord::new(start, key.clone(), Ok(&ok), 0);
        assert_eq!(
            (r.timestamp_ms, r.start_offset, r.duration),
            (1_000, Duration::from_millis(5), Duration::from_millis(30))
        );
        assert_eq!(r.output_sha256, Some(result_hash(&ok)));
        assert_eq!(r.input_sha256, ContentHash::of(&json!({"key": "user:42"})));
        assert!(r.is_success() && r.code.is_none());
        assert_eq!(r.end_offset(), Duration::from_millis(35));

        let e = CallError::Local(LocalError::DeadlineExceeded);
        let r = ServerCallRecord::new(start, key, Err(&e), 2);
        assert_eq!((r.status, r.output_sha256, r.retries), (CallStatus::Timeout, None, 2));
    }
}
