//! The configuration file of `mcpstorm gateway`: `[listen]`, `[admin]`, the real servers (`[[servers]]` with
//! `[[servers.replicas]]`), and a scenario's `[gateway]` and `[client]` tables taken unchanged. Read by the
//! scenario's strict path, so a bad value in `[gateway]` or `[client]` gives the same message, at the same
//! `file:line:column`, as in a scenario; and [`gateway_config`] is the one conversion of those two tables to the
//! core's settings, for a simulated load host and the process alike: what was tuned is what runs.

use std::path::Path;
use std::time::Duration;

use mcpstorm_core::GatewayConfig;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::auth::AuthSpec;
use super::client::ClientSpec;
use super::environment;
use super::error::ConfigError;
use super::gateway::GatewaySpec;
use super::history::HistorySpec;
use super::listen::{AdminSpec, ListenSpec};
use super::ranges::Ranges;
use super::read::{read_file, read_str};
use super::rules::{Issue, Rules};
use super::telemetry::TelemetrySpec;
use super::upstream::UpstreamSpec;

/// The gateway process's configuration (any other table or key is refused).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GatewayFile {
    /// Where agents connect, and the bounds each meets.
    #[serde(default)]
    pub listen: ListenSpec,
    /// The MCP servers the gateway federates, each with its replicas.
    pub servers: Vec<UpstreamSpec>,
    /// Routing and resilience: a scenario's `[gateway]` table, the same keys and checks.
    #[serde(default)]
    pub gateway: GatewaySpec,
    /// Each replica's client: a scenario's `[client]` table, the same keys and checks.
    #[serde(default)]
    pub client: ClientSpec,
    /// The operators' API; absent: not served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin: Option<AdminSpec>,
    /// The call history's rotating file; absent: no history is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<HistorySpec>,
    /// Agents authorized by an identity provider (OAuth 2.1); absent: `listen.agent_tokens_env` alone, or none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<AuthSpec>,
    /// Traces of every tool call to an OTLP/HTTP collector; absent: no span is built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<TelemetrySpec>,
}

impl GatewayFile {
    /// Reads and checks the file at `path`; errors name `path` as given.
    pub fn load(path: &Path) -> Result<GatewayFile, ConfigError> {
        read_file(path, GatewayFile::check)
    }

    /// Parses and checks `text`; `origin` names it in errors.
    pub fn load_str(text: &str, origin: &str) -> Result<GatewayFile, ConfigError> {
        read_str(text, origin, GatewayFile::check)
    }

    /// [`load`](Self::load), and every environment variable the file reads must be set in this process's
    /// environment (see [`environment`](super::environment)): what a process checks before it starts anything, each
    /// missing variable at the `file:line:column` of the key that names it.
    pub fn load_for_start(path: &Path) -> Result<GatewayFile, ConfigError> {
        read_file(path, |file: &GatewayFile| {
            let issues = file.check();
            if !issues.is_empty() {
                return issues;
            }
            environment::unset(file, |var| std::env::var(var).ok())
        })
    }

    /// Every table's rules and bounds; `[gateway]` and `[client]` are checked as a scenario checks them.
    fn check(&self) -> Vec<Issue> {
        let mut rules = Rules::default();
        self.listen.problems(&mut rules, self.auth.is_some());
        UpstreamSpec::problems_of(&self.servers, &mut rules);
        self.client.problems(&mut rules);
        self.gateway.problems(&mut rules);
        if let Some(admin) = &self.admin {
            admin.problems(&mut rules);
        }
        if let Some(history) = &self.history {
            history.problems(&mut rules);
        }
        if let Some(auth) = &self.auth {
            auth.problems(&mut rules);
        }
        if let Some(telemetry) = &self.telemetry {
            telemetry.problems(&mut rules);
        }
        let mut ranges = Ranges::default();
        self.listen.ranges(&mut ranges);
        if let Some(auth) = &self.auth {
            auth.ranges(&mut ranges);
        }
        if let Some(history) = &self.history {
            history.ranges(&mut ranges);
        }
        if let Some(telemetry) = &self.telemetry {
            telemetry.ranges(&mut ranges);
        }
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
