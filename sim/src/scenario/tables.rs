//! The gateway's own tables as a file of their own: `[gateway]`, `[client]` and `[[servers]]`, exactly as a scenario
//! writes them (the gateway's configuration file takes them unchanged). Read by the scenario's strict path, so a bad
//! value gives the same message, at the same `file:line:column`, as in a scenario.

use std::path::Path;
use std::time::Duration;

use mcpstorm_core::GatewayConfig;
use serde::{Deserialize, Serialize};

use super::client::ClientSpec;
use super::error::ScenarioError;
use super::gateway::GatewaySpec;
use super::ranges::Ranges;
use super::read::{read_other, read_other_str};
use super::rules::{Issue, Rules};
use super::servers::ServerSpec;

/// A file holding the gateway's tables and nothing else (any other table or key is refused).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayFile {
    #[serde(default)]
    pub gateway: GatewaySpec,
    #[serde(default)]
    pub client: ClientSpec,
    /// The MCP servers the gateway routes to.
    pub servers: Vec<ServerSpec>,
}

impl GatewayFile {
    /// Reads and checks the file at `path`; errors name `path` as given.
    pub fn load(path: &Path) -> Result<GatewayFile, ScenarioError> {
        read_other(path, GatewayFile::check)
    }

    /// Parses and checks `text`; `origin` names it in errors.
    pub fn load_str(text: &str, origin: &str) -> Result<GatewayFile, ScenarioError> {
        read_other_str(text, origin, GatewayFile::check)
    }

    /// The three tables' rules and bounds, as a scenario checks them. There is no run here, so the keys a scenario
    /// bounds by its duration (`join_at`, `leave_at`) are held to a week.
    fn check(&self) -> Vec<Issue> {
        let mut rules = Rules::default();
        ServerSpec::problems_of(&self.servers, Duration::ZERO, &mut rules);
        self.client.problems(&mut rules);
        self.gateway.problems(&mut rules);
        let mut ranges = Ranges::default();
        for (i, server) in self.servers.iter().enumerate() {
            server.ranges(i, &mut ranges);
        }
        self.client.ranges(&mut ranges);
        self.gateway.ranges(&mut ranges);
        ranges.check(Duration::ZERO, &mut rules);
        rules.issues
    }
}

/// `[gateway]` with `[client]`: the settings of the core's [`Gateway`](mcpstorm_core::Gateway), as a simulated load
/// host and the `mcpstorm gateway` process both build them, so what was tuned is what runs. (The router is
/// [`GatewaySpec::router`], each replica's client [`ClientSpec::to_core`] and its HTTP pool [`ClientSpec::pool`].)
pub fn gateway_config(gateway: &GatewaySpec, client: &ClientSpec) -> GatewayConfig {
    GatewayConfig {
        refresh_every: gateway.router.refresh_every.0,
        requirement_rules: gateway.requirements.iter().map(|r| (r.argument.clone(), r.attribute.clone())).collect(),
        // The agent's deadline for a call covers all the gateway's attempts of it.
        call_deadline: client.deadline.0,
        resilience: gateway.layers().to_core(),
    }
}
