//! `[nodes]`: gateway nodes as hosts of their own, a scenario's business only (a gateway process is one node).
//!
//! | key     | default  | meaning                                                                                  |
//! |---------|----------|------------------------------------------------------------------------------------------|
//! | `count` | 0        | gateway nodes `gateway-0` … `gateway-{N-1}`, each the gateway crate's node served by its front, which the load hosts' agents reach over `front`; with `[gateway.sync]` the nodes are the sync nodes. 0: each load host runs the same node in-process, without a front (faster) |
//! | `front` | `"http"` | how agents reach a node: MCP Streamable HTTP at `/mcp`                                   |

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ranges::Ranges;

/// The most gateway nodes a scenario places: turmoil's cost grows steeply with hosts.
pub const MAX_NODES: usize = 64;

/// See the module's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct NodesSpec {
    /// Gateway nodes as hosts of their own (`gateway-0` to `gateway-{N-1}`), each running the gateway crate's node
    /// served by its front, which the load hosts' agents reach over `front`. 0 (the default): each load host runs
    /// the node in-process, which is faster.
    #[serde(default)]
    #[schemars(range(max = MAX_NODES))]
    pub count: usize,
    /// How agents reach a node.
    #[serde(default)]
    pub front: FrontKind,
}

impl NodesSpec {
    pub(super) fn is_default(&self) -> bool {
        *self == NodesSpec::default()
    }

    /// The table's counts with their bounds.
    pub(super) fn ranges(&self, out: &mut Ranges) {
        // Each node is a host of the simulated world, and turmoil's cost grows steeply with hosts.
        out.count("nodes.count", self.count as f64, MAX_NODES as f64);
    }
}

/// How agents reach a gateway node; other fronts (stdio, ...) may join.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum FrontKind {
    /// MCP Streamable HTTP at `/mcp`, as `mcpstorm gateway` serves it.
    #[default]
    Http,
}
