//! Scenario files: the format ([`Scenario`] in [`model`], one module per table), strict loading with
//! `file:line:column` errors ([`load_file`]), `--set` overrides and sweeps ([`expand_sweep`]), and the format's JSON
//! Schema for editors ([`schema`]).
//!
//! Every table's module holds its keys (spec and defaults), its rules (`problems`), its bounded keys (`ranges`) and
//! its conversion to the core's type (`to_core`). The gateway's own tables come from the gateway crate
//! ([`mcpstorm_gateway::config`]), declared once for its file and a scenario alike: `[gateway]` with its resilience
//! tables (`layers`) and `[gateway.sync]`, `[client]`, what a server declares to the router, and the machinery every
//! config file shares (`units`, `rules`, `ranges`, `doc`, `path`, `error`, the strict reader). The scenario's own:
//! `model` (the top table, `[network]`, `[sweep]`) · `nodes` (`[nodes]`, gateway nodes as hosts) · `report` · `redis`
//! (the simulated Redis host `[gateway.sync]` names) · `servers` (the fake servers) · `workload` (`[load]`,
//! `[agent]`) · `faults` · `checks` · `fidelity` · `swarm` · `reference` (`gateway_config`: the gateway's settings
//! taken from its own file); `trace` (a replay's recorded calls) and `replay`
//! (reading them with the scenario). `tables` is the gateway's file, read on its own.
//!
//! The walk and the pipeline: `validate` (asks every table for its problems and ranges) · `read` (reading a
//! scenario: the gateway crate's strict path plus `--set`, sweeps and run costs) · `overrides` (`--set`, sweeps) ·
//! `cost` (a run's estimated cost and its limits) · `shared` (defaults and reserved target names) · `target` (what a
//! fault's `target` names) · `schema`.

mod checks;
pub mod cost;
mod faults;
mod fidelity;
mod idp;
pub mod model;
mod nodes;
mod overrides;
pub mod placement;
mod read;
mod redis;
mod reference;
mod replay;
mod report;
pub mod schema;
mod servers;
mod shared;
pub mod swarm;
mod target;
pub mod trace;
mod validate;
mod workload;

// The gateway crate's tables and config machinery, which a scenario embeds: one declaration of each key.
use mcpstorm_gateway::config::{client, doc, error, gateway, history, listen, path, rules, sync, units, upstream};
pub use mcpstorm_gateway::config::{file as tables, layers, ranges};

#[cfg(test)]
mod tests;

pub use checks::Checks;
pub use client::ClientSpec;
pub use cost::{Cost, Limits};
pub use error::{ConfigError as ScenarioError, Location, Problem};
pub use faults::{CrashMode, DriftKind, Fault, FaultKind};
pub use fidelity::FidelitySpec;
pub use gateway::{
    CredentialSpec, DEFAULT_FORMULA, FormulaName, GatewaySpec, PrefixMode, RequirementRule, RouterSpec, ToolsSpec,
    profile_name,
};
pub use history::HistorySpec;
pub use idp::{IDP_HOST, IDP_PORT, IdentityProviderSpec};
pub use listen::{AdminSpec, ListenSpec};
pub use mcpstorm_gateway::config::{Declared, HealthCheckSpec, server_tag};
pub use model::label as sweep_label;
pub use model::{HostsMode, Network, PartitionMode, Scenario, Sweep};
pub use nodes::{FrontKind, MAX_NODES, NodesSpec};
pub use overrides::expand_sweep;
pub use placement::{Placement, load_host, node_host, replica_host, server_host};
pub use read::{load_file, load_file_with, load_str, load_str_with};
pub use redis::RedisHost;
pub use reference::GATEWAY_CONFIG;
pub use report::{CALLS_SAMPLE_EVERY, CallsMode, Contrast, ReportSpec, TracesMode};
pub use servers::ServerSpec;
pub use swarm::SwarmSpec;
pub use sync::SyncSpec;
pub use target::{GATEWAY, resolve_target};
pub use trace::{Trace, TraceCall, TraceFormat};
pub use units::{Dur, SignedDur};
pub use upstream::{ENV_PREFIX, ReplicaAddr, ReplicaSpec, UpstreamSpec};
pub use validate::{MAX_RETRIES, validate};
pub use workload::{Agent, Load, LoadMode, MixEntry, RetryMode};
