//! mcpstorm-sim: the deterministic chaos simulator and the `mcpstorm` command.
//!
//! The simulator runs the real gateway core ([`mcpstorm_core`]), unchanged, inside turmoil against fake MCP servers
//! ([`mcpstorm_fake`]) that speak the real wire protocol. A scenario file says what to build and what to break; a run
//! writes a byte-reproducible report. Data flows one way: `scenario` → `world` → `run` → `report` / `check` /
//! `compare` / `swarm`, and `cli` drives them all. The modules, in that order:
//!
//! - [`scenario`]: the scenario file format, one module per table, strict loading with `file:line:column` errors,
//!   `--set` overrides, sweeps and the JSON Schema.
//! - [`seed`]: every random stream of a run, forked by name from the run's seed.
//! - [`world`]: the simulated world: the core and the fake servers on turmoil's network, the load generator, faults
//!   on a timeline, the recorder.
//! - [`run`]: what one run produced (totals, per-second rows, calls), filled by `world` and only read after.
//! - [`check`]: a run's verdict: the scenario's `[checks]` thresholds against its totals.
//! - [`report`]: the files a run writes: CSV, summaries, plots.
//! - [`compare`]: paired comparisons of variants (formulas, profiles, any key) over many seeds.
//! - [`fidelity`]: the simulator against reality: a scenario's simulated and live runs compared row by row against
//!   the tolerances of its `[fidelity]` table.
//! - [`swarm`]: drawn fault timelines checked against invariants, failures shrunk to a replayable file.
//! - [`shard`]: one machine's share of a multi-seed study (`--shard K/N`).
//! - [`gateway`]: the gateway crate (`mcpstorm-gateway`), which this crate depends on: every simulated gateway is
//!   built by its node from its config tables, and `mcpstorm gateway` is its command.
//! - [`cli`]: the `mcpstorm` command: subcommands, exit codes, the live commands that talk to real servers.

pub mod check;
pub mod cli;
pub mod compare;
pub mod fidelity;
pub mod live;
pub mod profile;
pub mod report;
pub mod run;
pub mod scenario;
pub mod shard;
pub mod swarm;
pub mod world;

/// The gateway crate: its node builds every simulated gateway, its tables are a scenario's `[gateway]` and `[client]`.
pub use mcpstorm_gateway as gateway;
/// Seeds: the gateway crate's, so a simulated node forks its streams as the process does.
pub use mcpstorm_gateway::seed;
