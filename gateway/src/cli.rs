//! The gateway's command: `mcpstorm-gateway --config FILE [--stdio]` (and `mcpstorm gateway`, which calls the same
//! [`run`]), its exit codes, and what any live process takes from its host: a random stream and the wall clock.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::config::GatewayFile;
use crate::process::{Gateway as Process, StartError};
use crate::seed::Seed;

/// After `--help`: signals, environment and exit codes.
const AFTER_HELP: &str = "Signals: SIGTERM or Ctrl-C drains (calls in flight finish for up to [listen] drain) and \
exits 0; SIGHUP reloads the servers, [gateway] and [client] from the file without dropping agent sessions (a bad \
file is refused and the running configuration stays). Environment: MCPSTORM_SESSION_KEY signs agent session ids \
(hex or base64, at least 32 bytes; several separated by commas, the first signing: key rotation). Without it \
sessions do not survive a second gateway process. Logs go to stderr; RUST_LOG=debug adds per-call lines.

Exit codes: 0 after a clean stop; 1 when it cannot serve (a port in use); 2 for bad input (the config file, a \
missing environment variable it names).";

#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct GatewayArgs {
    /// The gateway's configuration: [listen], [[servers]] with [[servers.replicas]], [gateway] and [client] (the
    /// same tables a scenario embeds). `mcpstorm validate FILE` checks it without starting anything.
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// Serve one agent over stdin and stdout (for an agent that spawns the gateway) instead of HTTP.
    #[arg(long)]
    pub stdio: bool,
    /// Threads that carry calls: 1 runs everything on one thread (no cross-thread wakeups, the cheapest per call);
    /// more is a work-stealing pool. Default: 1 on a host of at most two cores, else one per core.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub workers: Option<u16>,
}

/// How the gateway failed, mapped to the process exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The user's input was wrong (the config file, a missing variable it names): exit 2.
    BadInput(String),
    /// It could not serve (a port in use): exit 1.
    Failed(String),
}

impl Failure {
    /// The exit code, after printing the message to stderr prefixed by `program`.
    pub fn exit(self, program: &str) -> ExitCode {
        let (code, message) = match self {
            Failure::BadInput(m) => (2, m),
            Failure::Failed(m) => (1, m),
        };
        eprintln!("{program}: {message}");
        ExitCode::from(code)
    }
}

impl From<StartError> for Failure {
    fn from(e: StartError) -> Failure {
        match e {
            StartError::BadInput(m) => Failure::BadInput(m),
            StartError::Failed(m) => Failure::Failed(m),
        }
    }
}

/// Loads the config, starts every upstream, serves until SIGTERM (drained) and returns.
pub async fn run(args: GatewayArgs) -> Result<(), Failure> {
    // Every variable the file names is checked here, before any upstream is started.
    let file = GatewayFile::load_for_start(&args.config).map_err(|e| Failure::BadInput(e.to_string()))?;
    let seed = Seed::new(process_rng(None).next_u64());
    let servers = file.servers.len();
    let mut gateway = Process::start(args.config.clone(), file, seed, wall_clock()).await?;
    let bound = gateway.open(args.stdio).await?;
    // On stderr: with --stdio, stdout is the agent's.
    if let Some(http) = bound.http {
        eprintln!("mcpstorm gateway: serving MCP at http://{http}/mcp ({servers} servers)");
    }
    if let Some(admin) = bound.admin {
        eprintln!("mcpstorm gateway: admin API at http://{admin}/admin/breakers, metrics at http://{admin}/metrics");
    }
    Ok(gateway.run().await?)
}

/// The random stream of a live process, seeded in this one place: `seed` when the user gives one (to replay a run),
/// else from the OS — never a constant, so that processes started together do not draw the same jitter. The seed is
/// logged at debug level.
pub fn process_rng(seed: Option<u64>) -> mcpstorm_core::SeededRng {
    let seed = seed.unwrap_or_else(|| getrandom::u64().unwrap_or_else(|_| u64::from(std::process::id())));
    tracing::debug!(seed, "random stream seeded (replay with --seed {seed})");
    mcpstorm_core::SeededRng::new(seed)
}

/// The wall clock of a live process: the core reads no std time (a simulator drives its clock), so the command gives
/// its clients one anchored to the system's, which certificate validity (`https`) is checked against.
pub fn wall_clock() -> mcpstorm_core::TokioClock {
    // Outside the simulated path: a live command, the one place this process learns the time of day.
    #[allow(clippy::disallowed_methods)]
    let now = std::time::SystemTime::now();
    let ms = now.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    mcpstorm_core::TokioClock::new(ms)
}

/// The command line parsed as `T`, or the exit code after clap printed why not (2 for bad input, 0 for `--help` and
/// `--version`); then logging started (see [`init_logging`]). Both binaries start so.
pub fn parse_and_log<T: clap::Parser>() -> Result<T, ExitCode> {
    let parsed = T::try_parse().map_err(|e| {
        let code = if e.use_stderr() { 2 } else { 0 };
        let _ = e.print();
        ExitCode::from(code)
    })?;
    init_logging();
    Ok(parsed)
}

/// Logs to stderr at `RUST_LOG`'s level (`warn` when unset), coloured only on a terminal.
pub fn init_logging() {
    use tracing_subscriber::EnvFilter;
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}
