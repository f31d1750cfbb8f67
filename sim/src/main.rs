use std::process::ExitCode;

use mcpstorm_sim::cli::{Cli, run};

/// mimalloc rather than glibc's malloc: a simulated call allocates dozens of small, short-lived objects, which a
/// thread-caching allocator serves without locks or trips to the shared heap. What it saved is in
/// docs/benchmarks.md ("What the simulator costs").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli: Cli = match mcpstorm_gateway::cli::parse_and_log() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => f.exit(),
    }
}
