//! The OpenTelemetry MCP semantic conventions (`gen-ai/mcp`) as both sides write them: the gateway's exported spans
//! and the simulator's `traces.otlp.json` use the same span names and attribute keys, so a backend shows a simulated
//! call and a real one alike.
//!
//! Also the W3C trace context (`traceparent`, `tracestate`) as MCP carries it: in a request's `params._meta`, under
//! the header names. Parsing follows the W3C rules a receiver must apply (lowercase hex, no all-zero id, version
//! `ff` invalid, a later version read by its first four fields), so a bad `traceparent` from an agent starts a new
//! trace instead of joining a broken one.
//!
//! No clock here: spans are timed by whoever builds them (the gateway's `Clock` seam, the simulator's simulated time).

use std::fmt;

use serde_json::{Map, Value};

/// Attribute keys: the MCP conventions' first, then mcpstorm's own (an attempt is a gateway concept the
/// conventions do not name, so its attributes live under `mcpstorm.`).
pub mod attr {
    /// The JSON-RPC method, e.g. `tools/call`.
    pub const MCP_METHOD_NAME: &str = "mcp.method.name";
    pub const MCP_SESSION_ID: &str = "mcp.session.id";
    pub const MCP_PROTOCOL_VERSION: &str = "mcp.protocol.version";
    /// The request's JSON-RPC id, as a string.
    pub const JSONRPC_REQUEST_ID: &str = "jsonrpc.request.id";
    pub const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
    /// `execute_tool` on a `tools/call` span ([`super::EXECUTE_TOOL`]).
    pub const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
    /// Set only when the call failed: [`super::TOOL_ERROR`] for a result with `isError: true`, the error's class
    /// otherwise.
    pub const ERROR_TYPE: &str = "error.type";
    /// `tcp`, `pipe` (stdio) ...
    pub const NETWORK_TRANSPORT: &str = "network.transport";
    pub const SERVER_ADDRESS: &str = "server.address";
    pub const SERVER_PORT: &str = "server.port";

    /// The replica an attempt went to (its endpoint, or the simulator's replica host).
    pub const ATTEMPT_REPLICA: &str = "mcpstorm.attempt.replica";
    /// Attempts of the same logical call before this one (0 for a first try).
    pub const ATTEMPT_RETRY: &str = "mcpstorm.attempt.retry";
    /// Who sent it again: `agent` or `gateway`; absent for a first try.
    pub const ATTEMPT_RETRY_BY: &str = "mcpstorm.attempt.retry_by";
    /// How the attempt ended: `success`, `timeout`, `error` or `rejected` (the call history's status).
    pub const ATTEMPT_OUTCOME: &str = "mcpstorm.attempt.outcome";
    /// What the replica's breaker said: [`super::BREAKER_ADMITTED`] for an attempt that was sent, or why the
    /// gateway declined (`breaker_open`, `bulkhead_full`, ...) on a call span that sent nothing more.
    pub const BREAKER_DECISION: &str = "mcpstorm.breaker.decision";
    /// Seconds the attempt waited for a bulkhead permit.
    pub const BULKHEAD_WAIT: &str = "mcpstorm.bulkhead.wait";
    /// The routing formula's score of the chosen replica.
    pub const ROUTE_SCORE: &str = "mcpstorm.route.score";
    /// How a whole call ended: `ok`, `degraded`, or a failure's class (`local`, `transport`, `tool` ...).
    pub const CALL_OUTCOME: &str = "mcpstorm.call.outcome";
    /// Why the gateway answered degraded (`breaker_open`, `bulkhead_full`, `budget` ...).
    pub const DEGRADED_REASON: &str = "mcpstorm.degraded.reason";
}

/// `gen_ai.operation.name` of a tool call.
pub const EXECUTE_TOOL: &str = "execute_tool";
/// `error.type` of a tool result with `isError: true`.
pub const TOOL_ERROR: &str = "tool_error";
/// `mcpstorm.breaker.decision` of an attempt its breaker let through.
pub const BREAKER_ADMITTED: &str = "admitted";

/// The keys of `params._meta` that carry the trace context (the W3C header names).
pub mod meta {
    pub const TRACEPARENT: &str = "traceparent";
    pub const TRACESTATE: &str = "tracestate";
    pub const BAGGAGE: &str = "baggage";
}

/// The conventions' span name: `{mcp.method.name} {target}`, the target being the tool's (or prompt's, resource's)
/// name; the method alone when there is none.
pub fn span_name(method: &str, target: Option<&str>) -> String {
    match target {
        Some(t) if !t.is_empty() => format!("{method} {t}"),
        _ => method.to_owned(),
    }
}

/// OTLP's span kinds, by their protobuf numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SpanKind {
    Internal = 1,
    /// Receives a request: the gateway's call span, the upstream server's span.
    Server = 2,
    /// Sends one: the agent's call span, each of the gateway's attempts.
    Client = 3,
}

/// A 16-byte trace id; all zeros is invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TraceId(pub [u8; 16]);

/// An 8-byte span id; all zeros is invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SpanId(pub [u8; 8]);

impl TraceId {
    pub fn is_valid(&self) -> bool {
        self.0 != [0; 16]
    }
}

impl SpanId {
    pub fn is_valid(&self) -> bool {
        self.0 != [0; 8]
    }
}

/// Lowercase hex, as traceparent and OTLP JSON both write ids.
impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_hex(f, &self.0)
    }
}

impl fmt::Display for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_hex(f, &self.0)
    }
}

fn write_hex(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    bytes.iter().try_for_each(|b| write!(f, "{b:02x}"))
}

/// Exactly `N` bytes from `2N` lowercase hex digits (the W3C forbids uppercase).
fn parse_hex<const N: usize>(s: &str) -> Option<[u8; N]> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let s = s.as_bytes();
    if s.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (i, pair) in s.chunks_exact(2).enumerate() {
        out[i] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

/// Why a `traceparent` was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TraceParentError {
    #[error("traceparent is not four dash-separated lowercase hex fields")]
    Malformed,
    #[error("traceparent version ff is invalid")]
    InvalidVersion,
    #[error("traceparent has an all-zero trace id or parent id")]
    ZeroId,
}

/// A parsed `traceparent`: `{version}-{trace-id}-{parent-id}-{flags}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceParent {
    pub trace_id: TraceId,
    /// The sender's span: the parent of the receiver's.
    pub parent_id: SpanId,
    pub flags: u8,
}

impl TraceParent {
    /// The `sampled` flag.
    pub const SAMPLED: u8 = 0x01;

    pub fn new(trace_id: TraceId, parent_id: SpanId, sampled: bool) -> TraceParent {
        TraceParent { trace_id, parent_id, flags: if sampled { Self::SAMPLED } else { 0 } }
    }

    pub fn sampled(&self) -> bool {
        self.flags & Self::SAMPLED != 0
    }

    /// Parses a header value. Version `00` must be exactly its four fields; a later version may carry more after a
    /// dash, which is ignored (the W3C's forward compatibility).
    pub fn parse(s: &str) -> Result<TraceParent, TraceParentError> {
        use TraceParentError::*;
        let s = s.trim_matches(|c| c == ' ' || c == '\t');
        let head = s.get(..55).ok_or(Malformed)?;
        let rest = &s[55..];
        let mut fields = head.split('-');
        let (Some(v), Some(t), Some(p), Some(fl), None) =
            (fields.next(), fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err(Malformed);
        };
        let [version] = parse_hex::<1>(v).ok_or(Malformed)?;
        if version == 0xff {
            return Err(InvalidVersion);
        }
        if (version == 0 && !rest.is_empty()) || (version != 0 && !rest.is_empty() && !rest.starts_with('-')) {
            return Err(Malformed);
        }
        let trace_id = TraceId(parse_hex(t).ok_or(Malformed)?);
        let parent_id = SpanId(parse_hex(p).ok_or(Malformed)?);
        let [flags] = parse_hex::<1>(fl).ok_or(Malformed)?;
        if !trace_id.is_valid() || !parent_id.is_valid() {
            return Err(ZeroId);
        }
        Ok(TraceParent { trace_id, parent_id, flags })
    }
}

/// Always written as version `00`.
impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "00-{}-{}-{:02x}", self.trace_id, self.parent_id, self.flags)
    }
}

/// The longest `tracestate` and `baggage` passed on: the W3C's limits (512 characters of tracestate is what a
/// receiver must keep; baggage's 8192 bytes). Longer ones are dropped rather than cut, since a cut list is malformed.
pub const MAX_TRACESTATE: usize = 512;
pub const MAX_BAGGAGE: usize = 8192;

/// The trace context a request carries in `params._meta`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    pub parent: TraceParent,
    /// Passed on as it came (vendor data, opaque here), when it is printable ASCII within [`MAX_TRACESTATE`].
    pub state: Option<String>,
    pub baggage: Option<String>,
}

fn opaque(v: Option<&Value>, max: usize) -> Option<String> {
    let s = v?.as_str()?;
    (s.len() <= max && s.bytes().all(|b| (0x20..0x7f).contains(&b))).then(|| s.to_owned())
}

impl TraceContext {
    /// Reads `_meta`: `None` without a `traceparent`, an error for a bad one (the caller starts a new trace).
    /// `tracestate` and `baggage` count only beside a valid `traceparent`.
    pub fn from_meta(meta: &Map<String, Value>) -> Option<Result<TraceContext, TraceParentError>> {
        let parent = meta.get(meta::TRACEPARENT)?;
        let parent = parent.as_str().ok_or(TraceParentError::Malformed).and_then(TraceParent::parse);
        Some(parent.map(|parent| TraceContext {
            parent,
            state: opaque(meta.get(meta::TRACESTATE), MAX_TRACESTATE),
            baggage: opaque(meta.get(meta::BAGGAGE), MAX_BAGGAGE),
        }))
    }

    /// Writes the context into `_meta`, replacing what was there under its keys.
    pub fn to_meta(&self, meta: &mut Map<String, Value>) {
        meta.insert(meta::TRACEPARENT.to_owned(), Value::String(self.parent.to_string()));
        for (key, value) in [(meta::TRACESTATE, &self.state), (meta::BAGGAGE, &self.baggage)] {
            match value {
                Some(v) => meta.insert(key.to_owned(), Value::String(v.clone())),
                None => meta.remove(key),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const W3C_EXAMPLE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn the_w3c_example_round_trips() {
        let p = TraceParent::parse(W3C_EXAMPLE).unwrap();
        assert_eq!(p.trace_id.to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(p.parent_id.to_string(), "00f067aa0ba902b7");
        assert!(p.sampled());
        assert_eq!(p.to_string(), W3C_EXAMPLE);
        let unsampled = TraceParent::new(p.trace_id, p.parent_id, false);
        assert_eq!(unsampled.to_string(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
    }

    #[test]
    fn what_the_w3c_says_to_reject_is_rejected() {
        use TraceParentError::*;
        let cases = [
            ("", Malformed),
            ("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", Malformed),
            ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", Malformed),
            ("00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01", Malformed),
            ("00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", Malformed),
            ("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", InvalidVersion),
            ("00-00000000000000000000000000000000-00f067aa0ba902b7-01", ZeroId),
            ("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", ZeroId),
            ("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", Malformed),
        ];
        for (s, want) in cases {
            assert_eq!(TraceParent::parse(s), Err(want), "{s:?}");
        }
    }

    #[test]
    fn a_later_version_is_read_by_its_first_four_fields() {
        let p = TraceParent::parse("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-what-comes-next").unwrap();
        assert_eq!(p.to_string(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
        assert!(!p.sampled());
    }

    #[test]
    fn meta_carries_the_context_and_drops_what_is_unsafe() {
        let meta = json!({"traceparent": W3C_EXAMPLE, "tracestate": "congo=t61rcWkgMzE", "baggage": "k=\u{7}"});
        let ctx = TraceContext::from_meta(meta.as_object().unwrap()).unwrap().unwrap();
        assert_eq!(ctx.state.as_deref(), Some("congo=t61rcWkgMzE"));
        assert_eq!(ctx.baggage, None, "a control character is not passed on");
        let mut out = json!({"progressToken": 1, "baggage": "stale"}).as_object().unwrap().clone();
        ctx.to_meta(&mut out);
        assert_eq!(
            Value::Object(out),
            json!({"progressToken": 1, "traceparent": W3C_EXAMPLE, "tracestate": "congo=t61rcWkgMzE"})
        );
        assert_eq!(TraceContext::from_meta(json!({}).as_object().unwrap()), None);
        let bad = json!({"traceparent": 7});
        assert_eq!(TraceContext::from_meta(bad.as_object().unwrap()), Some(Err(TraceParentError::Malformed)));
        let long = json!({"traceparent": W3C_EXAMPLE, "tracestate": "a".repeat(MAX_TRACESTATE + 1)});
        assert_eq!(TraceContext::from_meta(long.as_object().unwrap()).unwrap().unwrap().state, None);
    }

    #[test]
    fn span_names_follow_the_conventions() {
        assert_eq!(span_name("tools/call", Some("get")), "tools/call get");
        assert_eq!(span_name("tools/list", None), "tools/list");
        assert_eq!(span_name("tools/call", Some("")), "tools/call");
    }
}
