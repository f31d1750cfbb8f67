//! One `tools/call`'s spans: the gateway's SERVER span and a CLIENT span per attempt, built as the call goes (an
//! attempt's span id is needed before it is sent, for its upstream `traceparent`) and queued when it ends.

use std::sync::{Mutex, PoisonError};

use mcpstorm_core::conn::AttemptMeta;
use mcpstorm_core::gateway::Routed;
use mcpstorm_core::history::{CallCode, CallStatus};
use mcpstorm_core::mcp::CallToolResult;
use mcpstorm_core::observe::trace::{
    self, BREAKER_ADMITTED, EXECUTE_TOOL, SpanId, SpanKind, TOOL_ERROR, TraceContext, TraceId, TraceParent, attr,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::{Span, Status, status};
use serde_json::{Map, Value};

use super::Telemetry;

/// The method every span of a call names.
const TOOLS_CALL: &str = "tools/call";
/// The longest argument or result text a span holds (`record_content`).
const MAX_CONTENT: usize = 4096;

/// A call being traced. See the module documentation.
#[derive(Debug)]
pub struct CallTrace {
    trace_id: TraceId,
    span_id: SpanId,
    /// The agent's span, when its `traceparent` was valid.
    parent: Option<SpanId>,
    /// Whether the spans are exported (the agent's sampled flag; sampled without one).
    sampled: bool,
    /// The agent's `tracestate`, passed on with the spans and the upstream requests; and its `baggage`, passed on.
    state: Option<String>,
    baggage: Option<String>,
    /// The tool as the agent named it.
    tool: String,
    start_ns: u64,
    /// Each attempt's span id and send time, in attempt order.
    attempts: Mutex<Vec<(SpanId, u64)>>,
    meta: AttemptMeta,
}

impl CallTrace {
    /// A call to `tool` whose request's `params._meta` is `meta`: the child of the agent's span when it carries a
    /// valid `traceparent`, a new trace otherwise (a malformed one is not joined).
    pub fn begin(telemetry: &Telemetry, meta: Option<&Value>, tool: &str) -> CallTrace {
        let context = meta.and_then(Value::as_object).and_then(TraceContext::from_meta).and_then(Result::ok);
        let (trace_id, parent, sampled, state, baggage) = match context {
            Some(c) => (c.parent.trace_id, Some(c.parent.parent_id), c.parent.sampled(), c.state, c.baggage),
            None => (telemetry.trace_id(), None, true, None, None),
        };
        CallTrace {
            trace_id,
            span_id: telemetry.span_id(),
            parent,
            sampled,
            state,
            baggage,
            tool: tool.to_owned(),
            start_ns: telemetry.now_ns(),
            attempts: Mutex::default(),
            meta: AttemptMeta::default(),
        }
    }

    /// What the call's options carry (`CallOptions::meta`): each attempt's `traceparent`, set by
    /// [`sending`](Self::sending).
    pub fn attempt_meta(&self) -> AttemptMeta {
        self.meta.clone()
    }

    /// An attempt is about to be sent: its span begins, and its request will carry the attempt's trace context.
    pub fn sending(&self, telemetry: &Telemetry) {
        let span_id = telemetry.span_id();
        let context = TraceContext {
            parent: TraceParent::new(self.trace_id, span_id, self.sampled),
            state: self.state.clone(),
            baggage: self.baggage.clone(),
        };
        let mut keys = Map::new();
        context.to_meta(&mut keys);
        self.meta.set(keys);
        self.attempts.lock().unwrap_or_else(PoisonError::into_inner).push((span_id, telemetry.now_ns()));
    }

    /// The call ended as `routed` (the agent got `answer`, or a JSON-RPC error's code): its spans are queued for
    /// export. `address` gives a replica endpoint's URL (`http://host:port/...`, `tcp://host:port`), for
    /// `server.address` and `server.port`. `arguments` and the answer go into the call's span only under
    /// `record_content`.
    pub fn end(
        self,
        telemetry: &Telemetry,
        routed: &Routed,
        arguments: &Value,
        answer: Result<&CallToolResult, i64>,
        address: impl Fn(&str) -> Option<String>,
    ) {
        if !self.sampled {
            return;
        }
        let end_ns = telemetry.now_ns();
        let sent = std::mem::take(&mut *self.attempts.lock().unwrap_or_else(PoisonError::into_inner));
        for (i, attempt) in routed.attempts().enumerate() {
            let Some(&(span_id, start_ns)) = sent.get(i) else { break };
            // The core reports no attempt's end: an earlier attempt ends when the next was sent, at the latest (its
            // backoff included), the last when the call did, as the simulator's spans take it.
            let until = sent.get(i + 1).map_or(end_ns, |next| next.1);
            let outcome = attempt.outcome.as_ref();
            let mut attributes = vec![
                string(attr::MCP_METHOD_NAME, TOOLS_CALL),
                string(attr::GEN_AI_TOOL_NAME, &self.tool),
                string(attr::GEN_AI_OPERATION_NAME, EXECUTE_TOOL),
                string(attr::ATTEMPT_REPLICA, &attempt.endpoint),
                int(attr::ATTEMPT_RETRY, i as i64),
                string(attr::ATTEMPT_OUTCOME, &CallStatus::of_outcome(outcome).to_string()),
                string(attr::BREAKER_DECISION, BREAKER_ADMITTED),
            ];
            if i > 0 {
                attributes.push(string(attr::ATTEMPT_RETRY_BY, "gateway"));
            }
            attributes.extend(address(&attempt.endpoint).map_or_else(Vec::new, |url| server_address(&url)));
            // `tool_error` for `isError`, else the call history's code (`deadline_exceeded`, a JSON-RPC code ...).
            let error = CallCode::of_outcome(outcome).map(|code| code.to_string());
            let span = Span { span_id: span_id.0.to_vec(), parent_span_id: self.span_id.0.to_vec(), ..self.span() };
            telemetry.finish(finished(span, SpanKind::Client, (start_ns, until), attributes, error));
        }
        let mut attributes = vec![
            string(attr::MCP_METHOD_NAME, TOOLS_CALL),
            string(attr::GEN_AI_TOOL_NAME, &self.tool),
            string(attr::GEN_AI_OPERATION_NAME, EXECUTE_TOOL),
        ];
        if let Some(declined) = routed.degraded() {
            let reason: &str = declined.reason.into();
            attributes.push(string(attr::BREAKER_DECISION, reason));
            attributes.push(string(attr::DEGRADED_REASON, reason));
        }
        if telemetry.record_content {
            attributes.push(string("gen_ai.tool.call.arguments", &cut(arguments.to_string())));
            if let Ok(answer) = answer {
                let text = serde_json::to_string(answer).unwrap_or_default();
                attributes.push(string("gen_ai.tool.call.result", &cut(text)));
            }
        }
        let error = match answer {
            Ok(a) => a.is_error.then(|| TOOL_ERROR.to_owned()),
            Err(code) => Some(code.to_string()),
        };
        let parent = self.parent.map_or_else(Vec::new, |p| p.0.to_vec());
        let span = Span { span_id: self.span_id.0.to_vec(), parent_span_id: parent, ..self.span() };
        telemetry.finish(finished(span, SpanKind::Server, (self.start_ns, end_ns), attributes, error));
    }

    /// A span of this call's trace, named as the conventions say.
    fn span(&self) -> Span {
        Span {
            trace_id: self.trace_id.0.to_vec(),
            trace_state: self.state.clone().unwrap_or_default(),
            name: trace::span_name(TOOLS_CALL, Some(&self.tool)),
            // W3C trace flags: sampled (only sampled calls are exported).
            flags: u32::from(TraceParent::SAMPLED),
            ..Span::default()
        }
    }
}

fn finished(
    mut span: Span,
    kind: SpanKind,
    (start, end): (u64, u64),
    mut attributes: Vec<KeyValue>,
    error: Option<String>,
) -> Span {
    span.kind = kind as i32;
    span.start_time_unix_nano = start;
    span.end_time_unix_nano = end.max(start);
    if let Some(error) = error {
        attributes.push(string(attr::ERROR_TYPE, &error));
        span.status = Some(Status { code: status::StatusCode::Error as i32, message: String::new() });
    }
    span.attributes = attributes;
    span
}

/// `server.address`, `server.port` and `network.transport` of a replica's URL (`http://host:port/path`,
/// `tcp://host:port`); nothing for what is no URL.
fn server_address(endpoint: &str) -> Vec<KeyValue> {
    let Some((_, rest)) = endpoint.split_once("://") else { return Vec::new() };
    let authority = rest.split('/').next().unwrap_or_default();
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => (host, port.parse::<i64>().ok()),
        _ => (authority, None),
    };
    let mut out = vec![string(attr::NETWORK_TRANSPORT, "tcp"), string(attr::SERVER_ADDRESS, host)];
    out.extend(port.map(|p| int(attr::SERVER_PORT, p)));
    out
}

/// At most [`MAX_CONTENT`] bytes, cut at a character boundary.
fn cut(mut s: String) -> String {
    if s.len() > MAX_CONTENT {
        let mut end = MAX_CONTENT;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

fn string(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(any_value::Value::StringValue(value.to_owned())) }),
    }
}

fn int(key: &str, value: i64) -> KeyValue {
    KeyValue { key: key.to_owned(), value: Some(AnyValue { value: Some(any_value::Value::IntValue(value)) }) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replica_url_names_its_address_and_a_command_none() {
        let kv = server_address("http://127.0.0.1:8931/mcp");
        let keys: Vec<&str> = kv.iter().map(|k| k.key.as_str()).collect();
        assert_eq!(keys, [attr::NETWORK_TRANSPORT, attr::SERVER_ADDRESS, attr::SERVER_PORT]);
        assert_eq!(kv[2].value, Some(AnyValue { value: Some(any_value::Value::IntValue(8931)) }));
        assert!(server_address("python3 server.py").is_empty());
        assert_eq!(cut("é".repeat(MAX_CONTENT)).len(), MAX_CONTENT);
    }
}
