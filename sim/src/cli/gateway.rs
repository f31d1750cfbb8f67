//! `mcpstorm gateway --config FILE [--stdio]`: serve the core to agents (see [`crate::gateway`]).

use std::path::PathBuf;

use clap::Args;

use super::{Failure, process_rng, wall_clock};
use crate::gateway::Process;
use crate::gateway::process::StartError;
use crate::scenario::tables::GatewayFile;
use crate::seed::Seed;

#[derive(Debug, Args)]
#[command(after_help = "Signals: SIGTERM or Ctrl-C drains (calls in flight finish for up to [listen] drain) and \
exits 0; SIGHUP reloads the servers, [gateway] and [client] from the file without dropping agent sessions (a bad \
file is refused and the running configuration stays). Environment: MCPSTORM_SESSION_KEY signs agent session ids \
(hex or base64, at least 32 bytes; several separated by commas, the first signing: key rotation). Without it \
sessions do not survive a second gateway process. Logs go to stderr; RUST_LOG=debug adds per-call lines.

Exit codes: 0 after a clean stop; 1 when it cannot serve (a port in use); 2 for bad input (the config file, a \
missing environment variable it names).")]
pub struct GatewayArgs {
    /// The gateway's configuration: [listen], [[servers]] with [[servers.replicas]], and a scenario's [gateway]
    /// and [client] tables. `mcpstorm validate FILE` checks it without starting anything.
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// Serve one agent over stdin and stdout (for an agent that spawns the gateway) instead of HTTP.
    #[arg(long)]
    pub stdio: bool,
}

pub async fn run(args: GatewayArgs) -> Result<(), Failure> {
    let file = GatewayFile::load(&args.config).map_err(|e| Failure::BadInput(e.to_string()))?;
    let seed = Seed::new(process_rng(None).next_u64());
    let servers = file.servers.len();
    let mut gateway = Process::start(args.config.clone(), file, seed, wall_clock()).await.map_err(failure)?;
    let bound = gateway.open(args.stdio).await.map_err(failure)?;
    // On stderr: with --stdio, stdout is the agent's.
    if let Some(http) = bound.http {
        eprintln!("mcpstorm gateway: serving MCP at http://{http}/mcp ({servers} servers)");
    }
    if let Some(admin) = bound.admin {
        eprintln!("mcpstorm gateway: admin API at http://{admin}/admin/breakers, metrics at http://{admin}/metrics");
    }
    gateway.run().await.map_err(failure)
}

fn failure(e: StartError) -> Failure {
    match e {
        StartError::BadInput(m) => Failure::BadInput(m),
        StartError::Failed(m) => Failure::Failed(m),
    }
}
