//! mcpstorm-gateway: the core served to agents, as a process (`mcpstorm-gateway`, or `mcpstorm gateway`).
//!
//! Agents speak MCP to the front (`core::serve`: Streamable HTTP at `/mcp` in both eras, or stdio); their tool
//! calls go through the core's [`Gateway`](mcpstorm_core::Gateway), built by [`node`] from the [`config`] tables,
//! to real servers' replicas. The simulator depends on this crate and builds every simulated gateway through the
//! same [`node`] from the same tables; nothing of the simulator reaches this crate.
//!
//! - `config`: the gateway file's tables, each key declared once (a scenario embeds them), and the strict reader.
//! - `cli`: the command (`--config FILE [--stdio]`), its exit codes, and a live process's clock and random stream.
//! - `seed`: random streams forked by name from one seed.
//! - `catalog`: federation's names (`server__tool` on a collision).
//! - `federation`: listings, the router's declarations, the protected call, servers taken out of rotation and back.
//! - `proxied`: prompts and resources, federated the same way.
//! - `upstreams`: how each replica is dialed, and the connector that makes its client.
//! - `service`: the front's service (what agents' requests reach).
//! - `state`, `readiness`, `metrics`, `observer`, `admin`: what operators see and do; `history`: the call history's file.
//! - `sync`: `[gateway.sync]`, breaker sync with the other nodes through Redis.
//! - `node`: one node built from its tables and seams, shared by the process and every simulated gateway.
//! - `tap`: a watcher of every attempt (the simulator's recorder).
//! - `process`: building it all from the config, serving, SIGTERM and SIGHUP.

pub mod admin;
pub mod catalog;
pub mod cli;
pub mod config;
pub mod federation;
pub mod filter;
pub mod history;
mod input_required;
mod listen;
pub mod metrics;
pub mod node;
pub mod oauth;
pub mod observer;
pub mod process;
pub mod proxied;
pub mod readiness;
pub mod runtime;
pub mod seed;
pub mod service;
pub mod state;
pub mod subscribe;
pub mod subscriptions;
pub mod sync;
pub mod tap;
pub mod telemetry;
pub mod upstreams;

pub use federation::Current;
pub use process::{Bound, Gateway as Process};
