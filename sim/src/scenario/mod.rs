//! Scenario files: the format ([`Scenario`] in [`model`], one module per table), strict loading with
//! `file:line:column` errors ([`load_file`]), `--set` overrides and sweeps ([`expand_sweep`]), and the format's JSON
//! Schema for editors ([`schema`]).
//!
//! Every table's module holds its keys (spec and defaults), its rules (`problems`), its bounded keys (`ranges`) and
//! its conversion to the core's type (`to_core`): `model` (the top table, `[network]`, `[sweep]`) · `report` ·
//! `gateway` · `sync` and `redis` (`[gateway.sync]`, and the simulated Redis host it names) · `layers` (the
//! gateway's resilience tables) · `client` · `servers` · `workload` (`[load]`, `[agent]`) · `faults` · `checks` ·
//! `fidelity` · `swarm`; `trace` (a replay's recorded calls) and `replay` (reading them with the scenario). `tables`
//! reads the gateway's tables as a file of their own.
//!
//! What the tables share: `units` (`Dur`, `SignedDur`) · `shared` (defaults, schemas, reserved target names) ·
//! `rules` (the issues a rule gives) · `ranges` (the bounds and the list of bounded keys) · `target` (what a fault's
//! `target` names). The walk and the pipeline: `validate` (asks every table for its problems and ranges) · `read`
//! (reading a file) · `doc` (the spanned TOML tree: spans to key paths and back) · `path` (key paths) · `overrides`
//! (`--set`, sweeps) · `cost` (a run's estimated cost and its limits) · `error` (what the CLI prints) · `schema`.

mod checks;
mod client;
pub mod cost;
mod doc;
mod error;
mod faults;
mod fidelity;
mod gateway;
mod history;
pub mod layers;
mod listen;
pub mod model;
mod overrides;
mod path;
pub mod placement;
pub mod ranges;
mod read;
mod redis;
mod replay;
mod report;
mod rules;
pub mod schema;
mod servers;
mod shared;
pub mod swarm;
mod sync;
pub mod tables;
mod target;
pub mod trace;
mod units;
mod upstream;
mod validate;
mod workload;

#[cfg(test)]
mod tests;

pub use checks::Checks;
pub use client::ClientSpec;
pub use cost::{Cost, Limits};
pub use error::{Location, Problem, ScenarioError};
pub use faults::{CrashMode, DriftKind, Fault, FaultKind};
pub use fidelity::FidelitySpec;
pub use gateway::{
    CredentialSpec, DEFAULT_FORMULA, FormulaName, FrontKind, GatewaySpec, MAX_NODES, PrefixMode, RequirementRule,
    RouterSpec, ToolsSpec, profile_name,
};
pub use history::HistorySpec;
pub use listen::{AdminSpec, ListenSpec};
pub use model::label as sweep_label;
pub use model::{HostsMode, Network, PartitionMode, Scenario, Sweep};
pub use overrides::expand_sweep;
pub use placement::{Placement, load_host, node_host, replica_host, server_host};
pub use read::{load_file, load_file_with, load_str, load_str_with};
pub use redis::RedisHost;
pub use report::{CALLS_SAMPLE_EVERY, CallsMode, Contrast, ReportSpec};
pub use servers::{Declared, HealthCheckSpec, ServerSpec};
pub use swarm::SwarmSpec;
pub use sync::SyncSpec;
pub use target::{GATEWAY, resolve_target};
pub use trace::{Trace, TraceCall, TraceFormat};
pub use units::{Dur, SignedDur};
pub use upstream::{ENV_PREFIX, ReplicaAddr, ReplicaSpec, UpstreamSpec};
pub use validate::{MAX_RETRIES, validate};
pub use workload::{Agent, Load, LoadMode, MixEntry, RetryMode};
