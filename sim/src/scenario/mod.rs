//! Scenario files: the format ([`model`]), strict loading with `file:line:column` errors ([`load_file`]), `--set`
//! overrides and sweeps ([`expand_sweep`]), and the format's JSON Schema for editors ([`schema`]).
//!
//! Map: `model` (serde types, defaults in their doc tables) · `load` (the pipeline) · `doc` (the spanned TOML tree:
//! spans to key paths and back) · `path` (key paths) · `overrides` (`--set`, sweeps) · `validate` (semantic rules) ·
//! `ranges` (every duration's and count's bounds) · `cost` (a run's estimated cost and its limits) · `error` (what
//! the CLI prints) · `schema` · `layers` (the gateway's resilience tables).

pub mod cost;
mod doc;
mod error;
pub mod layers;
mod load;
pub mod model;
mod overrides;
mod path;
pub mod ranges;
pub mod schema;
mod validate;

#[cfg(test)]
mod tests;

pub use cost::{Cost, Limits};
pub use error::{Location, Problem, ScenarioError};
pub use load::{load_file, load_file_with, load_str, load_str_with};
pub use model::*;
pub use overrides::{expand_sweep, label as sweep_label};
pub use validate::{GATEWAY, GOSSIP, MAX_RETRIES, resolve_target, validate};
