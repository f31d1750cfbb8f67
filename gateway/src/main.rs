use std::process::ExitCode;

use clap::Parser;
use mcpstorm_gateway::cli::{self, GatewayArgs};

/// mimalloc rather than glibc's malloc: a proxied call allocates many small, short-lived objects (futures, frames,
/// JSON values), the pattern glibc's allocator handles worst; the simulator's binary uses it for the same reason.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The MCP gateway: the mcpstorm core served to agents.
#[derive(Debug, Parser)]
#[command(name = "mcpstorm-gateway", version)]
struct Cli {
    #[command(flatten)]
    args: GatewayArgs,
}

fn main() -> ExitCode {
    let cli: Cli = match cli::parse_and_log() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let runtime = match mcpstorm_gateway::runtime::build(cli.args.workers.map(usize::from)) {
        Ok(runtime) => runtime,
        Err(e) => return cli::Failure::Failed(format!("cannot start the runtime: {e}")).exit("mcpstorm-gateway"),
    };
    match runtime.block_on(cli::run(cli.args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => f.exit("mcpstorm-gateway"),
    }
}
