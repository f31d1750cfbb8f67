//! Per tool: calls one at a time, each timed, and what went wrong with the ones that failed.

use mcpstorm_core::mcp::Tool;
use mcpstorm_core::{CallError, CallOptions, LocalError, McpClient};
use serde_json::Value;
use tokio::time::Instant;

/// Failed calls by kind, as a scenario can inject them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Errors {
    /// `isError: true` results: the tool ran and failed.
    pub tool: u64,
    /// JSON-RPC error responses: the server itself failed.
    pub jsonrpc: u64,
    /// No answer: the connection failed or the call timed out (not something a fake tool's `error_rate` models).
    pub transport: u64,
}

impl Errors {
    pub fn total(&self) -> u64 {
        self.tool + self.jsonrpc + self.transport
    }
}

/// One tool, measured.
#[derive(Debug, Clone)]
pub struct ToolProfile {
    /// The tool as the server lists it (schemas and annotations are copied into the scenario).
    pub tool: Tool,
    pub arguments: Value,
    /// Milliseconds of every answered call (ok or error result, or a JSON-RPC error), ascending.
    pub latencies_ms: Vec<f64>,
    pub calls: u64,
    pub errors: Errors,
    /// What the first failed call said (an `isError` result's text or the JSON-RPC error), to show the user.
    pub first_error: Option<String>,
}

impl ToolProfile {
    /// The share of calls that failed in a way a fake tool injects (`isError` or JSON-RPC): its `error_rate`.
    pub fn error_rate(&self) -> f64 {
        if self.calls == 0 { 0.0 } else { (self.errors.tool + self.errors.jsonrpc) as f64 / self.calls as f64 }
    }
}

/// Why a tool could not be measured.
#[derive(Debug)]
pub enum MeasureError {
    /// The arguments fail the tool's inputSchema (nothing was sent): the user must give some (`--args`).
    Arguments(String),
    /// Not one call was answered.
    NoAnswer(CallError),
}

/// How a call ended, for counting.
pub(super) enum Ended {
    /// `failed`: `Some(true)` a JSON-RPC error, `Some(false)` an `isError` result, with what it said.
    Answered {
        ms: f64,
        failed: Option<(bool, String)>,
    },
    Unanswered(CallError),
}

/// One call of `tool`, timed.
pub(super) async fn one_call(client: &McpClient, tool: &str, arguments: &Value) -> Result<Ended, MeasureError> {
    let started = Instant::now();
    let result = client.call_tool(tool, arguments.clone(), CallOptions::default()).await;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    Ok(match result {
        Ok(r) => Ended::Answered { ms, failed: r.is_error.then(|| (false, r.joined_text())) },
        Err(e @ CallError::Protocol(_)) => Ended::Answered { ms, failed: Some((true, e.to_string())) },
        Err(CallError::Local(LocalError::InvalidArguments(e))) => {
            let lines: Vec<String> = e.violations.iter().map(ToString::to_string).collect();
            return Err(MeasureError::Arguments(lines.join("; ")));
        }
        Err(e) => Ended::Unanswered(e),
    })
}

/// `warmup` calls not counted (a first call may pay for imports, caches and connections), then `calls` timed ones,
/// one at a time.
pub async fn measure(
    client: &McpClient,
    tool: &Tool,
    arguments: Value,
    calls: u64,
    warmup: u64,
) -> Result<ToolProfile, MeasureError> {
    for _ in 0..warmup {
        one_call(client, &tool.name, &arguments).await?;
    }
    let mut profile = ToolProfile {
        tool: tool.clone(),
        arguments,
        latencies_ms: Vec::new(),
        calls: 0,
        errors: Errors::default(),
        first_error: None,
    };
    let mut last_error = None;
    for _ in 0..calls {
        profile.calls += 1;
        match one_call(client, &tool.name, &profile.arguments).await? {
            Ended::Answered { ms, failed } => {
                profile.latencies_ms.push(ms);
                if let Some((jsonrpc, said)) = failed {
                    if jsonrpc {
                        profile.errors.jsonrpc += 1;
                    } else {
                        profile.errors.tool += 1;
                    }
                    profile.first_error.get_or_insert(said);
                }
            }
            Ended::Unanswered(e) => {
                profile.errors.transport += 1;
                last_error = Some(e);
            }
        }
    }
    if profile.latencies_ms.is_empty()
        && let Some(e) = last_error
    {
        return Err(MeasureError::NoAnswer(e));
    }
    profile.latencies_ms.sort_by(f64::total_cmp);
    Ok(profile)
}
