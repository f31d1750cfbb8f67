//! `traces.otlp.json`: the calls `[report] traces` kept, as OpenTelemetry spans in the OTLP JSON encoding, a line
//! per call (each an `ExportTraceServiceRequest`: resourceSpans → scopeSpans → spans), with the span names and attributes of the MCP
//! semantic conventions ([`mcpstorm_core::observe::trace`]) that the gateway uses too.
//!
//! One trace per logical call:
//! - the agent's span (`CLIENT`, service `agent` on its load host), from the call's intended start to its outcome;
//! - per gateway call (the agent's first, then each of its retries), the gateway's span (`SERVER`, service
//!   `mcpstorm-gateway` on the same host), a child of the agent's;
//! - per attempt, a child of its gateway call (`CLIENT`): the replica, the retry number, who retried, the breaker's
//!   decision and the outcome;
//! - per attempt the replica answered, the server's span (`SERVER`, service = the replica host), its child, over the
//!   attempt's time as the gateway saw it: the simulator does not time the server's side, and an attempt that timed
//!   out or lost its connection says nothing of what the server did, so it has none.
//!
//! Timestamps are simulated time from the run's epoch ([`crate::world::EPOCH_SECS`]), never skewed. Trace and span
//! ids come from ChaCha8 seeded by the run's seed, one stream per logical call, so a call's ids are the same whichever
//! other calls are kept. The file is written from integers only: byte-identical per seed.
//!
//! Not in the simulator's spans: `jsonrpc.request.id` and `mcp.session.id` (the simulator does not see the wire's),
//! the bulkhead wait and the route's score (the gateway core does not report them per attempt).

use std::fmt::Write as _;
use std::time::Duration;

use mcpstorm_core::observe::trace::{
    self, BREAKER_ADMITTED, EXECUTE_TOOL, SpanId, SpanKind, TOOL_ERROR, TraceId, attr,
};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::run::RetryBy;
use crate::run::traces::CallTrace;

pub(crate) const TRACES: &str = "traces.otlp.json";

const TOOLS_CALL: &str = mcpstorm_core::mcp::method::TOOLS_CALL;

/// Who wrote a span: its OTLP resource.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Service {
    /// An agent on this load host.
    Agent(String),
    /// This load host's gateway.
    Gateway(String),
    /// This server replica.
    Server(String),
}

impl Service {
    fn name_and_host(&self) -> (&str, &str) {
        match self {
            Service::Agent(h) => ("agent", h),
            Service::Gateway(h) => ("mcpstorm-gateway", h),
            Service::Server(h) => (h, h),
        }
    }
}

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Str(String),
    Int(i64),
}

/// One span, as the file and the waterfall read it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Span {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    pub parent: Option<SpanId>,
    pub name: String,
    pub kind: SpanKind,
    pub service: Service,
    pub start: Duration,
    pub end: Duration,
    pub attributes: Vec<(&'static str, Value)>,
    /// OTLP's status ERROR: the span's operation failed.
    pub error: bool,
}

impl Span {
    pub fn attribute(&self, key: &str) -> Option<&Value> {
        self.attributes.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }
}

/// The ids of one call's trace: ChaCha8 from the run's seed, the call's own stream.
struct Ids(ChaCha8Rng);

impl Ids {
    fn of(seed: u64, logical: u64) -> Ids {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(logical);
        Ids(rng)
    }

    /// All zeros is no id: the last byte is then made 1 (one draw in 2^64 or more).
    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut b = [0u8; N];
        self.0.fill_bytes(&mut b);
        if b == [0; N] {
            b[N - 1] = 1;
        }
        b
    }

    fn span(&mut self) -> SpanId {
        SpanId(self.bytes())
    }
}

/// `error.type` of a call that ended as `outcome` (a class label): a tool result with `isError` (the gateway's
/// degraded answer is one) is the conventions' `tool_error`.
fn call_error(outcome: &str) -> Option<&str> {
    match outcome {
        "ok" => None,
        "tool" | "degraded" => Some(TOOL_ERROR),
        other => Some(other),
    }
}

/// The attributes every span of a tool call carries.
fn tool_attributes(tool: &str) -> Vec<(&'static str, Value)> {
    let mut a = vec![(attr::MCP_METHOD_NAME, Value::Str(TOOLS_CALL.to_owned()))];
    if !tool.is_empty() {
        a.push((attr::GEN_AI_TOOL_NAME, Value::Str(tool.to_owned())));
    }
    a.push((attr::GEN_AI_OPERATION_NAME, Value::Str(EXECUTE_TOOL.to_owned())));
    a
}

/// The spans of one call's trace, parents before children. `seed` is the run's.
pub(crate) fn spans(seed: u64, call: &CallTrace) -> Vec<Span> {
    let mut ids = Ids::of(seed, call.logical);
    let trace_id = TraceId(ids.bytes());
    let name = trace::span_name(TOOLS_CALL, Some(&call.tool));
    let span = |ids: &mut Ids, parent: Option<SpanId>, kind, service, (start, end), attributes, error| Span {
        trace_id,
        span_id: ids.span(),
        parent,
        name: name.clone(),
        kind,
        service,
        start,
        end,
        attributes,
        error,
    };
    let mut out = Vec::new();
    let mut a = tool_attributes(&call.tool);
    a.push((attr::CALL_OUTCOME, Value::Str(call.outcome.to_owned())));
    let failed = call_error(call.outcome);
    if let Some(e) = failed {
        a.push((attr::ERROR_TYPE, Value::Str(e.to_owned())));
    }
    let agent = Service::Agent(call.load_host.clone());
    let root = span(&mut ids, None, SpanKind::Client, agent, (call.start, call.end), a, failed.is_some());
    let root_id = root.span_id;
    out.push(root);
    for g in &call.gateway_calls {
        let mut a = tool_attributes(&call.tool);
        let error = match (g.declined, g.attempts.last()) {
            (Some(reason), _) => {
                a.push((attr::DEGRADED_REASON, Value::Str(reason.to_owned())));
                a.push((attr::BREAKER_DECISION, Value::Str(reason.to_owned())));
                Some(TOOL_ERROR.to_owned())
            }
            (None, Some(last)) if last.status != "success" => {
                Some(last.code.clone().unwrap_or_else(|| last.status.to_owned()))
            }
            (None, _) => None,
        };
        if let Some(e) = &error {
            a.push((attr::ERROR_TYPE, Value::Str(e.clone())));
        }
        let service = Service::Gateway(call.load_host.clone());
        let gateway = span(&mut ids, Some(root_id), SpanKind::Server, service, (g.start, g.end), a, error.is_some());
        let gateway_id = gateway.span_id;
        out.push(gateway);
        for at in &g.attempts {
            let mut a = tool_attributes(&call.tool);
            a.push((attr::NETWORK_TRANSPORT, Value::Str("tcp".to_owned())));
            a.push((attr::SERVER_ADDRESS, Value::Str(at.replica.clone())));
            a.push((attr::ATTEMPT_REPLICA, Value::Str(at.replica.clone())));
            a.push((attr::ATTEMPT_RETRY, Value::Int(i64::from(at.retry))));
            if at.by != RetryBy::First {
                a.push((attr::ATTEMPT_RETRY_BY, Value::Str(at.by.label().to_owned())));
            }
            a.push((attr::BREAKER_DECISION, Value::Str(BREAKER_ADMITTED.to_owned())));
            a.push((attr::ATTEMPT_OUTCOME, Value::Str(at.status.to_owned())));
            let error = (at.status != "success").then(|| at.code.clone().unwrap_or_else(|| at.status.to_owned()));
            if let Some(e) = &error {
                a.push((attr::ERROR_TYPE, Value::Str(e.clone())));
            }
            let service = Service::Gateway(call.load_host.clone());
            let window = (at.sent, at.end);
            let attempt = span(&mut ids, Some(gateway_id), SpanKind::Client, service, window, a, error.is_some());
            let attempt_id = attempt.span_id;
            out.push(attempt);
            if at.answered {
                let mut a = tool_attributes(&call.tool);
                if let Some(e) = &error {
                    a.push((attr::ERROR_TYPE, Value::Str(e.clone())));
                }
                let service = Service::Server(at.replica.clone());
                out.push(span(&mut ids, Some(attempt_id), SpanKind::Server, service, window, a, error.is_some()));
            }
        }
    }
    out
}

/// The file's bytes: a line per kept call, each an `ExportTraceServiceRequest` holding that call's spans grouped by
/// resource (agent, gateway, then server hosts). JSON lines are what the OpenTelemetry Collector's file exporter
/// writes and its `otlpjsonfile` receiver reads, and a line a call keeps each line small whatever the run's size.
pub(crate) fn otlp_json(seed: u64, calls: &[CallTrace]) -> Vec<u8> {
    let mut out = String::new();
    for call in calls {
        let mut by_service: std::collections::BTreeMap<Service, Vec<Span>> = Default::default();
        for s in spans(seed, call) {
            by_service.entry(s.service.clone()).or_default().push(s);
        }
        out.push_str("{\"resourceSpans\":[");
        for (i, (service, spans)) in by_service.iter().enumerate() {
            let (name, host) = service.name_and_host();
            if i > 0 {
                out.push(',');
            }
            out.push_str("{\"resource\":{\"attributes\":[");
            out.push_str(&attribute("service.name", &Value::Str(name.to_owned())));
            out.push(',');
            out.push_str(&attribute("host.name", &Value::Str(host.to_owned())));
            out.push_str("]},\"scopeSpans\":[{\"scope\":{\"name\":\"mcpstorm-sim\",\"version\":\"");
            out.push_str(env!("CARGO_PKG_VERSION"));
            out.push_str("\"},\"spans\":[");
            for (j, s) in spans.iter().enumerate() {
                if j > 0 {
                    out.push(',');
                }
                write_span(&mut out, s);
            }
            out.push_str("]}]}");
        }
        out.push_str("]}\n");
    }
    out.into_bytes()
}

/// Nanoseconds since the Unix epoch of simulated time `at`, as OTLP JSON writes a fixed64: a decimal string.
fn unix_nanos(at: Duration) -> String {
    let ns = u128::from(crate::world::EPOCH_SECS) * 1_000_000_000 + at.as_nanos();
    ns.to_string()
}

fn write_span(out: &mut String, s: &Span) {
    let _ = write!(out, "{{\"traceId\":\"{}\",\"spanId\":\"{}\",", s.trace_id, s.span_id);
    if let Some(p) = s.parent {
        let _ = write!(out, "\"parentSpanId\":\"{p}\",");
    }
    out.push_str("\"name\":");
    out.push_str(&json_string(&s.name));
    let _ = write!(
        out,
        ",\"kind\":{},\"startTimeUnixNano\":\"{}\",\"endTimeUnixNano\":\"{}\",\"attributes\":[",
        s.kind as i32,
        unix_nanos(s.start),
        unix_nanos(s.end)
    );
    for (i, (k, v)) in s.attributes.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&attribute(k, v));
    }
    out.push(']');
    if s.error {
        // STATUS_CODE_ERROR.
        out.push_str(",\"status\":{\"code\":2}");
    }
    out.push('}');
}

/// `{"key": k, "value": {"stringValue": ...}}`; an int64 is a decimal string in OTLP JSON.
fn attribute(key: &str, value: &Value) -> String {
    let value = match value {
        Value::Str(s) => format!("{{\"stringValue\":{}}}", json_string(s)),
        Value::Int(n) => format!("{{\"intValue\":\"{n}\"}}"),
    };
    format!("{{\"key\":{},\"value\":{value}}}", json_string(key))
}

fn json_string(s: &str) -> String {
    // Cannot fail: a string always serializes.
    serde_json::to_string(s).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::traces::{AttemptTrace, GatewayCall};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn attempt(replica: &str, retry: u32, by: RetryBy, (sent, end): (u64, u64), status: &'static str) -> AttemptTrace {
        let code = match status {
            "timeout" => Some("deadline_exceeded".to_owned()),
            _ => None,
        };
        AttemptTrace {
            replica: replica.into(),
            retry,
            by,
            sent: ms(sent),
            end: ms(end),
            status,
            code,
            answered: status == "success",
        }
    }

    /// A call whose first attempt timed out on db-0, retried by the gateway on db-1 with success.
    fn retried() -> CallTrace {
        CallTrace {
            logical: 42,
            load_host: "load-0".into(),
            tool: "get".into(),
            start: ms(1000),
            end: ms(2300),
            outcome: "ok",
            gateway_calls: vec![GatewayCall {
                start: ms(1000),
                end: ms(2300),
                declined: None,
                attempts: vec![
                    attempt("db-0", 0, RetryBy::First, (1001, 2001), "timeout"),
                    attempt("db-1", 1, RetryBy::Gateway, (2002, 2300), "success"),
                ],
            }],
        }
    }

    #[test]
    fn a_retried_call_is_one_trace_agent_gateway_attempts_server() {
        let spans = spans(7, &retried());
        let kinds: Vec<_> = spans.iter().map(|s| (s.kind, s.service.name_and_host().0.to_owned())).collect();
        assert_eq!(
            kinds,
            [
                (SpanKind::Client, "agent".to_owned()),
                (SpanKind::Server, "mcpstorm-gateway".to_owned()),
                (SpanKind::Client, "mcpstorm-gateway".to_owned()),
                (SpanKind::Client, "mcpstorm-gateway".to_owned()),
                (SpanKind::Server, "db-1".to_owned()),
            ]
        );
        assert!(spans.iter().all(|s| s.trace_id == spans[0].trace_id && s.name == "tools/call get"));
        let parent = |i: usize| spans[i].parent;
        assert_eq!(parent(0), None);
        assert_eq!(parent(1), Some(spans[0].span_id));
        assert_eq!((parent(2), parent(3)), (Some(spans[1].span_id), Some(spans[1].span_id)));
        assert_eq!(parent(4), Some(spans[3].span_id));
        assert_eq!(spans[2].attribute(attr::ERROR_TYPE), Some(&Value::Str("deadline_exceeded".into())));
        assert_eq!(spans[3].attribute(attr::ATTEMPT_RETRY), Some(&Value::Int(1)));
        assert_eq!(spans[3].attribute(attr::ATTEMPT_RETRY_BY), Some(&Value::Str("gateway".into())));
        assert!(spans[2].error && !spans[3].error && !spans[0].error);
        let ids: std::collections::BTreeSet<_> = spans.iter().map(|s| s.span_id).collect();
        assert_eq!(ids.len(), spans.len(), "span ids are distinct");
    }

    #[test]
    fn ids_depend_on_the_seed_and_the_call_only() {
        let a = spans(7, &retried());
        assert_eq!(a, spans(7, &retried()));
        assert_ne!(a[0].trace_id, spans(8, &retried())[0].trace_id);
        let other = CallTrace { logical: 43, ..retried() };
        assert_ne!(a[0].trace_id, spans(7, &other)[0].trace_id);
    }

    #[test]
    fn a_declined_call_is_a_tool_error_with_the_reason() {
        let call = CallTrace {
            outcome: "degraded",
            gateway_calls: vec![GatewayCall {
                start: ms(1000),
                end: ms(1050),
                declined: Some("breaker_open"),
                attempts: vec![],
            }],
            ..retried()
        };
        let spans = spans(7, &call);
        assert_eq!(spans.len(), 2);
        for s in &spans {
            assert_eq!(s.attribute(attr::ERROR_TYPE), Some(&Value::Str(TOOL_ERROR.into())));
        }
        assert_eq!(spans[1].attribute(attr::BREAKER_DECISION), Some(&Value::Str("breaker_open".into())));
    }

    #[test]
    fn the_file_is_otlp_json_with_string_nanos_and_hex_ids() {
        let other = CallTrace { logical: 43, ..retried() };
        let bytes = otlp_json(7, &[retried(), other]);
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert_eq!(text.lines().count(), 2, "a line per call");
        let v: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        let rs = v["resourceSpans"].as_array().unwrap();
        assert_eq!(rs.len(), 3, "agent, gateway and db-1");
        let span = &rs[0]["scopeSpans"][0]["spans"][0];
        assert_eq!(span["startTimeUnixNano"], format!("{}", (crate::world::EPOCH_SECS * 1000 + 1000) * 1_000_000));
        assert_eq!(span["traceId"].as_str().unwrap().len(), 32);
        assert_eq!(span["spanId"].as_str().unwrap().len(), 16);
        assert_eq!(span["kind"], 3);
        let retry = &rs[1]["scopeSpans"][0]["spans"][2]["attributes"];
        assert!(
            retry.as_array().unwrap().iter().any(|a| a["key"] == attr::ATTEMPT_RETRY && a["value"]["intValue"] == "1")
        );
        assert_eq!(bytes, otlp_json(7, &[retried(), CallTrace { logical: 43, ..retried() }]));
    }
}
