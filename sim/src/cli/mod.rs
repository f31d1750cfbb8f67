//! The `mcpstorm` command line. Exit codes: 0 success (also when stdout's reader went away: see `out`), 1 a failed
//! call or check, 2 bad input (arguments, config files, tool arguments, unknown tools). Every failure is one line on
//! stderr; server-controlled text reaches the terminal only through `terminal::show`.

mod authorize;
mod compare;
mod compare_live;
mod diagnose;
mod elicit;
mod fidelity;
mod formulas;
mod live;
mod merge;
mod out;
mod peer;
mod profile;
mod scenarios;
mod seeds;
mod serve_fake;
mod sim;
mod swarm;
mod terminal;
mod validate;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use peer::{CallArgs, ServerArgs, ToolsArgs};
pub use serve_fake::ServeFakeArgs;
pub use sim::SimArgs;

#[derive(Debug, Parser)]
#[command(name = "mcpstorm", version, about = "MCP gateway core and deterministic chaos simulator", after_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The top-level `--help`: the exit codes every command shares (each command's `--help` says what they mean for it).
const EXIT_CODES: &str = "Exit codes: 0 success; 1 a failed check, invariant or call (sim, compare, merge, swarm, \
diagnose, live: the checks or invariants failed; fidelity: a row outside its tolerance; tools, call: the server or \
the tool failed); 2 bad input (arguments, \
scenario or config files, tool arguments). A command's --help says what they mean for it.";

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List a server's tools.
    Tools(ToolsArgs),
    /// Call one tool and print its result.
    Call(CallArgs),
    /// Check a server layer by layer: connect, handshake, version, tools and schemas, auth, ping, a sample call and
    /// session renewal.
    Diagnose(diagnose::DiagnoseArgs),
    /// Serve MCP to agents: federate real servers' tools behind the core's routing and protection (Streamable HTTP
    /// at /mcp, or stdio), with an admin API and Prometheus metrics.
    Gateway(mcpstorm_gateway::cli::GatewayArgs),
    /// Run a scenario in the simulator and write its report.
    Sim(SimArgs),
    /// Run a scenario in real time on this machine (fake servers on loopback sockets, the real core, the same load,
    /// faults and report as `sim`), to check the simulator against reality.
    Live(live::LiveArgs),
    /// Run one scenario under several variants (e.g. routing formulas, gateway profiles) on many seeds, paired, and
    /// write a table with confidence intervals and overlay plots.
    Compare(compare::CompareArgs),
    /// Run a scenario in the simulator and live (in real time on this machine) on the same seeds, compare them row
    /// by row (totals, each fault's onset and recovery, every second) and judge them against its [fidelity]
    /// tolerances, with an overlay plot.
    Fidelity(fidelity::FidelityArgs),
    /// Combine the shards of a comparison (`compare --shard K/N` on several machines) into the report an unsharded
    /// run writes.
    Merge(merge::MergeArgs),
    /// Draw a fault timeline per seed over a scenario's servers, check safety, liveness and differential invariants,
    /// and shrink every failure into a scenario that replays it.
    Swarm(swarm::SwarmArgs),
    /// Run a scripted fake MCP server (newline-delimited JSON-RPC or Streamable HTTP) on a TCP address: loopback by
    /// default, any with --listen.
    ServeFake(ServeFakeArgs),
    /// Measure a real server (each tool's latency and errors, its concurrency knee, its schemas) and write it as a
    /// scenario whose load repeats the measurement.
    Profile(profile::ProfileArgs),
    /// Check a scenario file (with any --set overrides) without running it.
    Validate(validate::ValidateArgs),
    /// List the routing formulas, one line each, and what a custom `expr:` formula may use.
    Formulas(formulas::FormulasArgs),
    /// List the scenarios that ship with mcpstorm, or print one (they are built into the binary).
    Scenarios(scenarios::ScenariosArgs),
}

/// How a command failed, mapped to the process exit code.
#[derive(Debug)]
pub enum Failure {
    /// The user's input was wrong: exit 2.
    BadInput(String),
    /// The work failed: exit 1.
    Failed(String),
    /// Stdout's reader went away (`mcpstorm ... | head -1`): stop quietly, exit 0.
    StdoutClosed,
}

impl Failure {
    pub fn exit(self) -> ExitCode {
        let (code, msg) = match self {
            Failure::BadInput(m) => (2, m),
            Failure::Failed(m) => (1, m),
            Failure::StdoutClosed => return ExitCode::SUCCESS,
        };
        out::errln!("mcpstorm: {msg}");
        ExitCode::from(code)
    }
}

/// Runs a command. The simulator builds its own (simulated) runtimes, so only the commands that talk to live
/// servers get a tokio runtime here.
pub fn run(cli: Cli) -> Result<(), Failure> {
    let result = match cli.command {
        Command::Sim(args) => sim::run(args),
        // Builds its own runtime (the live engine's API needs none from its caller).
        Command::Live(args) => live::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Fidelity(args) => fidelity::run(args),
        Command::Swarm(args) => swarm::run(args),
        Command::Tools(args) => live(peer::tools(args)),
        Command::Call(args) => live(peer::call(args)),
        Command::Diagnose(args) => live(diagnose::run(args)),
        Command::ServeFake(args) => live(serve_fake::run(args)),
        Command::Gateway(args) => {
            let runtime = mcpstorm_gateway::runtime::build(args.workers.map(usize::from))
                .map_err(|e| Failure::Failed(format!("cannot start the runtime: {e}")))?;
            runtime.block_on(async { Ok(mcpstorm_gateway::cli::run(args).await?) })
        }
        Command::Profile(args) => live(profile::run(args)),
        Command::Validate(args) => validate::run(args),
        Command::Scenarios(args) => scenarios::run(args),
        Command::Formulas(args) => formulas::run(args),
    };
    // The command's own failure comes first; a closed stdout found only now still ends quietly.
    result.and(out::flush())
}

use mcpstorm_gateway::cli::{process_rng, wall_clock};

impl From<mcpstorm_gateway::cli::Failure> for Failure {
    fn from(f: mcpstorm_gateway::cli::Failure) -> Failure {
        match f {
            mcpstorm_gateway::cli::Failure::BadInput(m) => Failure::BadInput(m),
            mcpstorm_gateway::cli::Failure::Failed(m) => Failure::Failed(m),
        }
    }
}

fn live(fut: impl Future<Output = Result<(), Failure>>) -> Result<(), Failure> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Failed(format!("cannot start the runtime: {e}")))?;
    runtime.block_on(fut)
}
