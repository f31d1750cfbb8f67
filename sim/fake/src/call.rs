//! One `tools/call`: checked, and its random draws made, as soon as it is read (so draws follow the read order); then
//! run on its own task: wait for a worker, sleep the latency (reporting progress if the caller gave a token), fail or
//! succeed.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use mcpstorm_core::jsonrpc::{ErrorCode, ErrorObject, Message};
use mcpstorm_core::mcp::{ProgressParams, method};
use rand::Rng;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep_until};

use crate::args;
use crate::call_frame::{CallParams, PROGRESS_TOKEN, Text};
use crate::config::{DEFAULT_REPLY, ErrorKind, ToolConfig, ValidationError};
use crate::latency::LatencyDraw;
use crate::methods::invalid_params;
use crate::params::Params;
use crate::reply::Reply;
use crate::shared::{Catalog, Shared};
use crate::stats::{Counters, Ticket};
use crate::workers::Worker;

/// Most progress notifications one call sends: a tiny `progress_ms` under a long latency must not flood the writer.
const MAX_PROGRESS: u128 = 10_000;

/// What a request turns into once read.
#[derive(Debug)]
pub enum Job {
    /// Answered without work; `Some` outcome for a `tools/call` that failed before it could run.
    Reply(Result<Reply, ErrorObject>, Option<CallEnd>),
    Call(Box<PreparedCall>),
}

/// How a `tools/call` ended on this server, for its counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallEnd {
    Completed,
    Errored,
}

#[derive(Debug)]
pub struct PreparedCall {
    /// The tools as they were when the call was read (a later drift does not change a call already accepted).
    catalog: Arc<Catalog>,
    tool: usize,
    args: Map<String, Value>,
    draw: LatencyDraw,
    /// Uniform in [0, 1): the call fails if this is below the error rate in force when it runs.
    coin: f64,
    progress_token: Option<Value>,
    ticket: Ticket,
}

/// Keeps the worker and the call's gauge until the answer is queued for the writer.
#[derive(Debug)]
pub struct Held {
    _worker: Worker,
    _ticket: Ticket,
}

/// Reads a `tools/call`. Malformed params are a protocol error (-32602); an unknown tool or bad arguments are a tool
/// error (`isError: true`), as real servers (and the 2025-11-25 spec) answer them.
pub fn prepare(shared: &Arc<Shared>, params: Params<'_>) -> Job {
    let invalid = |msg: String| Job::Reply(Err(invalid_params(msg)), Some(CallEnd::Errored));
    let (arguments, name, token) = match params {
        Params::Call(CallParams { name, arguments, meta }) => {
            let name = match name {
                Some(Text::Str(name)) => Some(name),
                _ => None,
            };
            (arguments, name, meta.and_then(|m| m.progress_token))
        }
        Params::Value(Some(Value::Object(mut params))) => {
            let token = match params.remove("_meta") {
                Some(Value::Object(mut meta)) => meta.remove(PROGRESS_TOKEN),
                _ => None,
            };
            let name = match params.remove("name") {
                Some(Value::String(name)) => Some(Cow::Owned(name)),
                _ => None,
            };
            (params.remove("arguments"), name, token)
        }
        Params::Value(_) => return invalid("tools/call params must be an object".into()),
    };
    let args = match arguments {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(args)) => args,
        Some(other) => return invalid(format!("\"arguments\" must be an object, got {other}")),
    };
    let Some(name) = name else {
        return invalid("tools/call needs a string \"name\"".into());
    };
    let catalog = shared.catalog();
    let found = catalog.by_name.get(&*name).and_then(|&i| Some((i, catalog.latency.get(i)?, catalog.listing.get(i)?)));
    let Some((index, latency, listed)) = found else {
        return tool_error(format!("Unknown tool: {name}"));
    };
    if let Err(e) = args::check(&listed.input_schema, &args) {
        Counters::bump(&shared.counters.schema_rejections);
        return validation_error(shared.config.validation_error, &name, &e);
    }
    // Real servers only report progress when asked to, by a token in `_meta`.
    let progress_token = token.filter(|t| t.is_string() || t.is_number());
    // Always two draws in the same order, whatever the tool: changing one tool's distribution or error rate does
    // not shift the sequence another tool sees.
    let (coin, draw) = {
        let mut rng = shared.rng();
        let coin = rng.random::<f64>();
        (coin, latency.sample(&mut *rng, &args))
    };
    let draw = match draw {
        Ok(draw) => draw,
        Err(e) => return validation_error(shared.config.validation_error, &name, &e),
    };
    let ticket = Ticket::new(shared.counters.clone());
    Job::Call(Box::new(PreparedCall { tool: index, args, draw, coin, progress_token, ticket, catalog }))
}

fn tool_error(text: String) -> Job {
    Job::Reply(Ok(Reply::text(text, true)), Some(CallEnd::Errored))
}

/// Arguments the tool's current schema rejects, refused the way the configured SDK family does: the Python SDK's
/// `isError` result starting `Input validation error:`, or the TypeScript SDK's -32602 naming the tool. Both texts
/// name the argument (from [`args::check`]).
fn validation_error(kind: ValidationError, tool: &str, problem: &str) -> Job {
    match kind {
        ValidationError::ToolError => tool_error(format!("Input validation error: {problem}")),
        ValidationError::InvalidParams => Job::Reply(
            Err(invalid_params(format!("Invalid arguments for tool {tool}: {problem}"))),
            Some(CallEnd::Errored),
        ),
    }
}

impl PreparedCall {
    pub async fn run(
        self,
        shared: &Shared,
        out: &mpsc::Sender<Message>,
    ) -> (Result<Reply, ErrorObject>, CallEnd, Held) {
        let PreparedCall { catalog, tool, args, draw, coin, progress_token, mut ticket } = self;
        ticket.queued();
        let worker = shared.pool.acquire().await;
        ticket.running();
        let held = Held { _worker: worker, _ticket: ticket };
        let Some(tool) = catalog.tools.get(tool) else {
            let e = ErrorObject::new(ErrorCode::INTERNAL_ERROR, "tool vanished");
            return (Err(e), CallEnd::Errored, held);
        };
        let faults = shared.faults.get();
        let latency = faults.apply(draw.latency);
        let start = Instant::now();
        let period = tool.progress_ms.map(Duration::from_millis).or(draw.step).filter(|p| !p.is_zero());
        if let (Some(token), Some(period)) = (progress_token, period) {
            // Boxed: only calls that asked for progress pay for its state, not every call's task.
            Box::pin(report_progress(shared, out, token, start, latency, period)).await;
        }
        let due = start + latency;
        sleep_until(due.checked_sub(shared.timer_lead).map_or(due, |at| at.max(start))).await;
        let rate = faults.error_rate.unwrap_or(tool.error_rate);
        let (result, outcome) =
            if coin < rate { injected(tool) } else { (success(tool, latency, &args), CallEnd::Completed) };
        (result, outcome, held)
    }
}

/// Progress after every `period` while the call runs, `total` being the number of reports: for `steps` that is one
/// report per step, the last at the moment the step completes (as the Python peer does).
async fn report_progress(
    shared: &Shared,
    out: &mpsc::Sender<Message>,
    token: Value,
    start: Instant,
    latency: Duration,
    period: Duration,
) {
    let total = (latency.as_nanos() / period.as_nanos()).min(MAX_PROGRESS) as u32;
    for k in 1..=total {
        // k · period ≤ latency ≤ one day: no overflow.
        sleep_until(start + period.saturating_mul(k)).await;
        shared.unhung().await;
        let params = ProgressParams {
            progress_token: token.clone(),
            progress: f64::from(k),
            total: Some(f64::from(total)),
            message: Some(format!("step {k}/{total}")),
        };
        let note = Message::notification(method::PROGRESS, serde_json::to_value(params).ok());
        if out.send(note).await.is_err() {
            return;
        }
    }
}

fn injected(tool: &ToolConfig) -> (Result<Reply, ErrorObject>, CallEnd) {
    let result = match tool.error_kind {
        ErrorKind::Jsonrpc => Err(ErrorObject {
            code: ErrorCode::INTERNAL_ERROR.0,
            message: "injected failure".into(),
            data: Some(json!({"tool": tool.name})),
        }),
        ErrorKind::IsError => Ok(Reply::text(format!("injected failure in {}", tool.name), true)),
    };
    (result, CallEnd::Errored)
}

fn success(tool: &ToolConfig, latency: Duration, args: &Map<String, Value>) -> Result<Reply, ErrorObject> {
    let text = args::render(tool.reply.as_deref().unwrap_or(DEFAULT_REPLY), &tool.name, latency.as_millis(), args);
    Ok(Reply::Text { text, is_error: false, structured: tool.structured_content })
}
