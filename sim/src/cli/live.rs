//! `mcpstorm live`: the scenario in real time on this machine (see [`crate::live`]), written as `sim` writes its
//! report, with `"mode": "live"` in `summary.json`.

use std::path::{Path, PathBuf};

use clap::Args;

use super::Failure;
use super::SimArgs;
use super::sim::{Engine, run_with};
use crate::live;
use crate::scenario::{self, CallsMode};

/// `live --help`: what the exit code says.
const EXIT_CODES: &str = "Exit codes: 0 when the scenario's [checks] pass; 1 when any fails, or the run fails — \
including a run this machine cannot keep in real time (the step loop or an arrival more than 250 ms late), which \
stops without a report, and a gateway node that does not serve; 2 for bad input (arguments, the scenario file, a \
--set, or what live runs do not support: network.fail_rate, a clock_skew on a gateway node).";

#[derive(Debug, Args)]
#[command(after_help = EXIT_CODES)]
pub struct LiveArgs {
    /// The scenario file (TOML), as `mcpstorm sim` takes it. It runs for its `duration` of real time (plus the
    /// drain), on loopback sockets: each replica a port of its own, behind a relay per load host that adds the
    /// network's latency and carries partitions (`[network] partition`).
    pub scenario: PathBuf,
    /// Override the scenario's seed (the load's arrivals, the fakes' latencies). Default: MCPSTORM_SEED, else the
    /// scenario's own. A live run is not deterministic: the same seed draws the same plan, not the same figures.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Report directory (the layout `sim` writes). Default: reports/<scenario>/live-seed-<seed>[ _<overrides>].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Override any key: --set duration=10s --set load.rate=200.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Run even beyond the run-cost limits (calls, hosts, memory); the ranges of each key still apply.
    #[arg(long)]
    pub allow_large: bool,
    /// Which attempts go to calls.csv: `all`, `sample`, `off` or `auto`, as for `sim`.
    #[arg(long, value_enum)]
    pub calls: Option<CallsMode>,
    /// Send the agents' calls through `mcpstorm gateway` processes of this binary, one per load host, instead of
    /// a gateway inside each load host: the same as `--set nodes.count=<load.hosts>` (which the reproduce line spells
    /// out). A scenario with `[nodes] count` always runs them as processes.
    #[arg(long)]
    pub through_gateway: bool,
}

pub fn run(args: LiveArgs) -> Result<(), Failure> {
    let LiveArgs { scenario, seed, out, mut sets, allow_large, calls, through_gateway } = args;
    if through_gateway {
        sets = through_gateway_sets(&scenario, sets, &scenario::Limits::allowing_large(allow_large))?;
    }
    run_with(SimArgs { scenario, seed, out, sets, allow_large, calls }, Engine::Live)
}

/// `--through-gateway`: `sets` and, unless the scenario already has gateway nodes, one node per load host served
/// over HTTP.
pub(super) fn through_gateway_sets(
    path: &Path,
    mut sets: Vec<String>,
    limits: &scenario::Limits,
) -> Result<Vec<String>, Failure> {
    let base = scenario::load_file_with(path, &sets, limits).map_err(|e| Failure::BadInput(e.to_string()))?;
    if base.nodes.count == 0 {
        sets.push(format!("nodes.count={}", base.load.hosts));
    }
    Ok(sets)
}

/// The keep-up bound the help text quotes.
const _: () = assert!(live::MAX_LAG.as_millis() == 250);
