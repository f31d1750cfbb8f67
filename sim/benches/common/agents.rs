//! The gateway bench's agents: one core `McpClient` (one session) making calls in a closed loop or in one burst,
//! each call's latency recorded. Shared by the bench's own rows and its load child (the allocation count).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcpstorm_core::resilience::InFlightLimit;
use mcpstorm_core::{CallOptions, ClientConfig, HttpEndpoint, McpClient, SeededRng};
use serde_json::Value;
use tokio::time::Instant;

/// One task's latencies (µs), its errors and the first error's text.
pub type Outcome = (Vec<u64>, usize, Option<String>);

/// A client of the MCP endpoint at `url` with a keep-alive pool of `width` connections and as many calls in
/// flight, once it lists `tool`.
pub async fn client(url: &str, width: usize, tool: &str) -> Result<Arc<McpClient>, String> {
    let mut endpoint = HttpEndpoint::new(url).map_err(|e| format!("{url}: {e}"))?;
    endpoint.pool.max_connections = width;
    endpoint.pool.max_waiting = width;
    let mut config = ClientConfig::default();
    config.connection.max_in_flight = width;
    let client = Arc::new(
        McpClient::http("agent", endpoint, config, SeededRng::new(0)).with_global_limit(InFlightLimit::new(width)),
    );
    let tools = client.list_tools().await.map_err(|e| format!("tools/list at {url}: {e}"))?;
    // Through the gateway a lone server's names stay as the server wrote them.
    if !tools.iter().any(|t| t.name == tool) {
        return Err(format!("{url} does not list {tool}"));
    }
    Ok(client)
}

/// One call, and what it came to: `None`, or why it failed.
async fn call(client: &McpClient, tool: &str, arguments: Value) -> Option<String> {
    match client.call_tool(tool, arguments, CallOptions::default()).await {
        Ok(r) if r.is_error => Some(format!("tool error: {:?}", r.content)),
        Ok(_) => None,
        Err(e) => Some(e.to_string()),
    }
}

/// `tasks` tasks calling `tool` back to back until `calls` calls are made.
pub async fn closed_loop(
    client: &Arc<McpClient>,
    tool: &'static str,
    arguments: &Value,
    tasks: usize,
    calls: usize,
) -> Vec<Outcome> {
    let next = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            let (client, next, arguments) = (client.clone(), next.clone(), arguments.clone());
            tokio::spawn(async move {
                let (mut latencies, mut errors, mut first) = (Vec::new(), 0, None);
                while next.fetch_add(1, Ordering::Relaxed) < calls {
                    let t0 = Instant::now();
                    let failure = call(&client, tool, arguments.clone()).await;
                    latencies.push(t0.elapsed().as_micros() as u64);
                    if let Some(f) = failure {
                        errors += 1;
                        first.get_or_insert(f);
                    }
                }
                (latencies, errors, first)
            })
        })
        .collect();
    join(handles).await
}

/// `calls` tasks on the one client (one session), each making exactly one call, all at once; each latency from
/// the burst's start, so that a call the client or a middle held back before sending counts its wait.
pub async fn burst(client: &Arc<McpClient>, tool: &'static str, arguments: &Value, calls: usize) -> Vec<Outcome> {
    let started = Instant::now();
    let handles: Vec<_> = (0..calls)
        .map(|_| {
            let (client, arguments) = (client.clone(), arguments.clone());
            tokio::spawn(async move {
                let failure = call(&client, tool, arguments).await;
                let latency = started.elapsed().as_micros() as u64;
                (vec![latency], usize::from(failure.is_some()), failure)
            })
        })
        .collect();
    join(handles).await
}

async fn join(handles: Vec<tokio::task::JoinHandle<Outcome>>) -> Vec<Outcome> {
    let mut outcomes = Vec::with_capacity(handles.len());
    for h in handles {
        outcomes.push(h.await.unwrap_or_else(|e| (Vec::new(), 1, Some(format!("task: {e}")))));
    }
    outcomes
}
