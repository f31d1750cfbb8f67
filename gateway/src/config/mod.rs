//! The gateway's configuration: every table of the gateway file, declared once, and read by the strict path.
//!
//! A scenario embeds these same tables (`[gateway]`, `[client]`, and the router's declarations of a server), so a
//! key means the same thing, with the same default, range and message, in the file an operator deploys and the
//! scenario that simulates it. The tables: `gateway` (`[gateway]` and `[gateway.router]`) · `layers` (its resilience
//! tables) · `sync` (`[gateway.sync]`) · `client` (`[client]`) · `upstream` (`[[servers]]` of real servers) · `upstream_auth` (`[servers.oauth]`) ·
//! `declared` (what any server declares to the router) · `listen` (`[listen]`, `[admin]`) · `history` (`[history]`) · `auth` (`[auth]`) · `telemetry` (`[telemetry]`) ·
//! `file` (the whole gateway file, and [`gateway_config`], the one conversion to the core's settings) ·
//! `environment` (the variables the file reads at start).
//!
//! The machinery every config file shares (a scenario's loader adds `--set`, sweeps and run costs on top): `read` (the
//! strict path), `doc` (the spanned TOML tree), `path` (key paths), `rules` (the issues a rule gives), `ranges` (the
//! bounds of every duration and count), `units` (`Dur`, `SignedDur`), `error` (what the command prints).

pub mod auth;
pub mod client;
pub mod declared;
pub mod doc;
pub mod environment;
pub mod error;
pub mod file;
pub mod gateway;
pub mod history;
pub mod layers;
pub mod listen;
pub mod path;
pub mod ranges;
pub mod read;
pub mod recover;
pub mod rules;
pub mod sync;
pub mod telemetry;
pub mod units;
pub mod upstream;
pub mod upstream_auth;

pub use auth::{AuthSpec, IntrospectionSpec};
pub use client::ClientSpec;
pub use declared::{Declared, HealthCheckSpec, server_tag};
pub use error::{ConfigError, Location, Problem};
pub use file::{GatewayFile, gateway_config};
pub use gateway::{
    CredentialSpec, DEFAULT_FORMULA, FormulaName, GatewaySpec, PrefixMode, RequirementRule, RouterSpec, ToolsSpec,
    profile_name,
};
pub use history::HistorySpec;
pub use listen::{AdminSpec, ListenSpec, ReadyRule};
pub use sync::SyncSpec;
pub use telemetry::TelemetrySpec;
pub use units::{Dur, SignedDur};
pub use upstream::{ENV_PREFIX, ReplicaAddr, ReplicaSpec, UpstreamEra, UpstreamSpec};
pub use upstream_auth::{Grant, UpstreamAuthSpec};
