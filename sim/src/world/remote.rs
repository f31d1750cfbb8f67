//! Agents calling through a gateway node (`[nodes] count`): a load host's agents speak MCP over simulated
//! Streamable HTTP to a node's front (the core's client, over the turmoil dialer), as agents speak to a deployed
//! `mcpstorm gateway`. The node records the attempts it sends (see `node`); the agent records its logical calls as
//! it does through an in-process gateway: ok, an error by class, or degraded.
//!
//! An agent calls the federated name of its tool: the tool's own name while one server offers it, or
//! `server__tool` when several do (the catalog's rule, `gateway::catalog`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mcpstorm_core::mcp::CallToolResult;
use mcpstorm_core::transport::PoolConfig;
use mcpstorm_core::{CallOptions, ClientConfig, Dialer, HttpEndpoint, McpClient};
use serde_json::Value;

use super::agent::{self, Next, agent_arguments, is_degraded};
use super::clock::{HostTime, SimClock};
use super::net::{NODE_PORT, NodePaths};
use super::recorder::{Outcome, Recorder};
use crate::gateway::catalog::SEPARATOR;
use crate::scenario::{Scenario, node_host};
use crate::seed::Seed;

/// How much longer than the gateway's deadline an agent waits for a node's answer: the node answers by its own
/// deadline, and the agent should hear that answer rather than give up first.
const AGENT_SLACK: Duration = Duration::from_secs(5);

/// Connections a load host's client keeps to one node: each carries one request at a time.
const CONNECTIONS_PER_NODE: usize = 512;

/// A load host's clients of one gateway node: one at the node's federated path, or (a live run's middle that does
/// not federate) one at each server's path.
pub(super) enum NodeClients {
    Federated(Arc<McpClient>),
    PerServer(BTreeMap<String, Arc<McpClient>>),
}

impl NodeClients {
    /// Every client, for the audit and the close at the end of the load.
    pub(super) fn all(&self) -> Vec<&Arc<McpClient>> {
        match self {
            NodeClients::Federated(client) => vec![client],
            NodeClients::PerServer(clients) => clients.values().collect(),
        }
    }
}

/// Load host's clients of node `index` where `paths` says it serves (see [`node_client`]).
pub(super) fn node_clients(
    scenario: &Scenario,
    index: usize,
    (clock, seed): (&SimClock, Seed),
    dialer: Arc<dyn Dialer>,
    (paths, keeps_deadline): (&NodePaths, bool),
) -> NodeClients {
    // See `Links::nodes_keep_the_deadline`.
    let slack = if keeps_deadline { AGENT_SLACK } else { Duration::ZERO };
    let deadline = scenario.client.deadline.0.saturating_add(slack);
    match paths {
        NodePaths::Federated(path) => {
            NodeClients::Federated(node_client(index, (clock, seed), dialer, (path, deadline)))
        }
        NodePaths::PerServer(paths) => NodeClients::PerServer(
            paths
                .iter()
                .map(|(server, path)| {
                    let seed = seed.fork(server);
                    (server.clone(), node_client(index, (clock, seed), dialer.clone(), (path, deadline)))
                })
                .collect(),
        ),
    }
}

/// Load host's client of node `index`: MCP Streamable HTTP to `gateway-{index}:8848{path}` over `dialer` (the
/// world's link to the node), each call given `deadline`, its wall clock the host's, its random stream forked from
/// the host's seed by the node's name.
fn node_client(
    index: usize,
    (clock, seed): (&SimClock, Seed),
    dialer: Arc<dyn Dialer>,
    (path, deadline): (&str, Duration),
) -> Arc<McpClient> {
    let node = node_host(index);
    let mut config = ClientConfig::default();
    config.connection.call_deadline = deadline;
    config.connection.first_response = deadline;
    config.connection.queue_wait = deadline;
    config.connection.max_in_flight = 1 << 20;
    let client = McpClient::new(node.as_str(), dialer, config, seed.fork("node client").fork(&node).seeded_rng())
        .with_clock(Arc::new(clock.clone()));
    match HttpEndpoint::new(&format!("http://{node}:{NODE_PORT}{path}")) {
        Ok(mut http) => {
            http.pool = PoolConfig { max_connections: CONNECTIONS_PER_NODE, max_waiting: 1 << 20, max_wait: deadline };
            Arc::new(client.with_http(http))
        }
        // Node names are `gateway-N`, always a URL's host; without one the client speaks NDJSON and every call
        // fails, which the report shows.
        Err(e) => {
            tracing::warn!(node, error = %e, "no HTTP URL for this node");
            Arc::new(client)
        }
    }
}

/// A load host's agents, as a call through a node needs them.
pub(super) struct Agents<'a> {
    pub scenario: &'a Scenario,
    pub recorder: &'a Recorder,
    /// Simulated time on the load host.
    pub time: &'a HostTime,
}

/// What one logical call targets: its `[[load.mix]]` entry, tool and arguments.
pub(super) struct Target<'a> {
    pub entry: usize,
    pub tool: &'a str,
    pub args: &'a Value,
}

/// One logical call through `node`: the first attempt, then retries as the agent model says ([`agent::next`]).
pub(super) async fn logical_call(agents: Agents<'_>, node: &NodeClients, target: Target<'_>, intended: Duration) {
    let Agents { scenario, recorder, time } = agents;
    recorder.offered(intended);
    let rng = agent::AgentRng::for_call(Seed::new(scenario.seed), intended);
    let (node, name, server) = match node {
        NodeClients::Federated(node) => {
            let (name, server) = federated_name(scenario, node, &target).await;
            (node, name, server)
        }
        NodeClients::PerServer(clients) => {
            // The tool's own name at its server's path (a call no server offers goes to the first, which refuses it).
            let server = server_of(scenario, &target);
            let Some(client) = server.and_then(|s| clients.get(s)).or_else(|| clients.values().next()) else {
                return;
            };
            (client, target.tool.to_owned(), server)
        }
    };
    let mut retry_args: Option<Value> = None;
    let mut outcome = Outcome::Error("local");
    let mut finished = intended;
    for attempt in 0.. {
        let args = retry_args.as_ref().unwrap_or(target.args);
        let filled = agent_arguments(node, &name, args.clone()).await;
        let result = node.call_tool(&name, filled, CallOptions::default()).await;
        finished = time.now();
        outcome = match &result {
            Ok(r) => of_result(r),
            Err(e) => Outcome::Error(e.label()),
        };
        match agent::next(&scenario.agent, attempt, result.as_ref(), args, &rng) {
            Next::Stop => break,
            Next::Retry { after, args: next } => {
                retry_args = Some(next);
                if !after.is_zero() {
                    tokio::time::sleep(after).await;
                }
            }
        }
    }
    let audited = scenario.load.mix.get(target.entry).and_then(|m| m.server.as_deref()).or(server);
    recorder.logical_done(finished, finished.saturating_sub(intended), outcome, server, audited, None);
}

/// The server a call goes to: its mix entry's, or the first that offers the tool.
fn server_of<'a>(scenario: &'a Scenario, target: &Target<'_>) -> Option<&'a str> {
    let named = scenario.load.mix.get(target.entry).and_then(|m| m.server.as_deref());
    match named {
        Some(named) => scenario.servers.iter().find(|s| s.name == named),
        None => scenario.servers.iter().find(|s| s.tools.iter().any(|t| t.name == target.tool)),
    }
    .map(|s| s.name.as_str())
}

/// What a node's answer says of the call: ok, a tool error, the gateway's degraded result, or the failure to reach
/// the server that the node reports as a tool result naming its class (`upstreamError`).
fn of_result(result: &CallToolResult) -> Outcome {
    if !result.is_error {
        return Outcome::Ok;
    }
    if is_degraded(result) {
        return Outcome::Degraded;
    }
    let class = result.structured_content.as_ref().and_then(|s| s.get("upstreamError")).and_then(Value::as_str);
    match class {
        None => Outcome::Tool,
        Some("protocol") => Outcome::Error("protocol"),
        Some("lifecycle") => Outcome::Error("lifecycle"),
        Some("transport") => Outcome::Error("transport"),
        Some("auth") => Outcome::Error("auth"),
        Some(_) => Outcome::Error("local"),
    }
}

/// The name the agent calls for `target`, and the server it leads to: the mix entry's server (or the first that
/// offers the tool), its tool under `server__tool` when the node lists that name, else the tool's own name.
async fn federated_name<'a>(
    scenario: &'a Scenario,
    node: &McpClient,
    target: &Target<'_>,
) -> (String, Option<&'a str>) {
    let Some(server) = server_of(scenario, target) else { return (target.tool.to_owned(), None) };
    let prefixed = format!("{server}{SEPARATOR}{}", target.tool);
    let listed = node.capabilities().await.is_ok_and(|caps| caps.tool(&prefixed).is_some());
    (if listed { prefixed } else { target.tool.to_owned() }, Some(server))
}
