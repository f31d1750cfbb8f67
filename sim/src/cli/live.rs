//! `mcpstorm live`: the scenario in real time on this machine (see [`crate::live`]), written as `sim` writes its
//! report, with `"mode": "live"` in `summary.json`.

use std::path::{Path, PathBuf};

use clap::Args;

use super::Failure;
use super::SimArgs;
use super::out::{errln, outln};
use super::sim::{
    Engine, Executed, calls_mode, check_out, default_out, publish, reproduce_command, run_with, write_html,
};
use crate::live::{self, MiddleRun, middle::Middle};
use crate::report::{self, dir::Command};
use crate::run::CallSink;
use crate::scenario::{self, CallsMode, Scenario};

/// `live --help`: what the exit code says.
const EXIT_CODES: &str = "Exit codes: 0 when the scenario's [checks] pass; 1 when any fails, or the run fails — \
including a run this machine cannot keep in real time (the step loop or an arrival more than 250 ms late), which \
stops without a report, a gateway node that does not serve, and a middle that never listens, dies, or whose program \
is not installed; 2 for bad input (arguments, the scenario file, a \
--set, or what live runs do not support: network.fail_rate, a clock_skew on a gateway node; an unknown --middle, or a \
middle file or template with an error).";

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
    /// Send the agents' calls through this middle instead: `mcpstorm` (this binary's gateway processes), `nginx`
    /// (a plain reverse proxy), `fastmcp` or `fastmcp_shared` (FastMCP's proxy), or a middle file (`[middle] command` and `config_template`, see docs/middles.md).
    /// One instance per gateway node (one per load host by default); every replica serves Streamable HTTP. The
    /// report adds the middle's CPU and peak memory and the attempts that reached the servers (middle.json).
    #[arg(long, value_name = "NAME|FILE", conflicts_with = "through_gateway")]
    pub middle: Option<String>,
}

pub fn run(args: LiveArgs) -> Result<(), Failure> {
    if let Some(name) = args.middle.clone() {
        return through_middle(args, &name);
    }
    let LiveArgs { scenario, seed, out, mut sets, allow_large, calls, through_gateway, middle: _ } = args;
    if through_gateway {
        sets = through_gateway_sets(&scenario, sets, &scenario::Limits::allowing_large(allow_large))?;
    }
    run_with(SimArgs { scenario, seed, out, sets, allow_large, calls }, Engine::Live)
}

/// `--middle NAME`: a middle by name or file; bad input (exit 2) when unknown or malformed, a failure (exit 1) when
/// this machine lacks its program.
pub(super) fn middle_named(name: &str) -> Result<Middle, Failure> {
    Middle::named(name)
        .map_err(|e| if e.is_bad_input() { Failure::BadInput(e.to_string()) } else { Failure::Failed(e.to_string()) })
}

/// `live --middle`: one run through the middle, written as `sim` writes its report, plus `middle.json`.
fn through_middle(args: LiveArgs, name: &str) -> Result<(), Failure> {
    let middle = middle_named(name)?;
    let mut sets = args.sets.clone();
    if let Some(seed) = args.seed.map_or_else(super::seeds::env_seed, |s| Ok(Some(s)))? {
        sets.push(format!("seed={seed}"));
    }
    let limits = scenario::Limits::allowing_large(args.allow_large);
    let base =
        scenario::load_file_with(&args.scenario, &sets, &limits).map_err(|e| Failure::BadInput(e.to_string()))?;
    if base.sweep.is_some() {
        return Err(Failure::BadInput(format!(
            "{}: has a [sweep]: a run through a middle is one scenario; pick a value with --set",
            args.scenario.display()
        )));
    }
    let mut scenario = live::middle::scenario_for(&base);
    if let Some(key) = live::unsupported(&scenario) {
        return Err(Failure::BadInput(live::LiveError::Unsupported(key).to_string()));
    }
    let sim_args = SimArgs {
        scenario: args.scenario.clone(),
        seed: args.seed,
        out: None,
        sets: args.sets.clone(),
        allow_large: args.allow_large,
        calls: args.calls,
    };
    scenario.report.calls = calls_mode(&sim_args, &scenario);
    if scenario.report.contrast_profile().is_some() {
        errln!("[report] contrast is not run through a middle (mcpstorm compare --live --middles compares middles)");
        scenario.report.contrast = None;
    }
    let mut named = args.sets.clone();
    named.push(format!("middle={}", middle.name()));
    let out = args.out.clone().unwrap_or_else(|| default_out(&scenario, &named, Engine::Live));
    check_out(&out, Command::Sim)?;
    let reproduce =
        format!("{} --middle {name}", reproduce_command(Engine::Live, &args.scenario, scenario.seed, &args.sets));
    let (run, measured) = run_middle(&scenario, &middle, &out)?;
    let (run, text) = publish(&scenario, &out, reproduce, run)?;
    write_html(&scenario, &out, &run, &text, None)?;
    outln!("{}", measured.console(&run).trim_end())?;
    measured.write(&out).map_err(|e| Failure::Failed(e.to_string()))?;
    if run.passed() { Ok(()) } else { Err(Failure::Failed("checks failed (see the summary above)".into())) }
}

/// Runs `scenario` live through `middle`, its calls history in `out` as the scenario's `[report] calls` says.
pub(super) fn run_middle(scenario: &Scenario, middle: &Middle, out: &Path) -> Result<(Executed, MiddleRun), Failure> {
    let calls: Option<Box<dyn CallSink>> = match scenario.report.calls {
        CallsMode::Off => None,
        _ => Some(Box::new(report::CallsCsv::create(out).map_err(|e| Failure::Failed(e.to_string()))?)),
    };
    errln!("live through {}: {} s", middle.name(), scenario.duration.0.as_secs());
    let exe = live::this_binary();
    let (run, wall, measured) =
        live::run_through(scenario, exe.as_deref(), Some(middle), String::new(), calls, &mut |_, _| {})
            .map_err(|e| Failure::Failed(e.to_string()))?;
    let measured = measured.ok_or_else(|| Failure::Failed("the middle was not measured".into()))?;
    Ok(((run, wall), measured))
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
