use std::process::ExitCode;

use clap::Parser;
use mcpstorm_sim::cli::{Cli, run};
use tracing_subscriber::EnvFilter;

/// mimalloc rather than glibc's malloc: a simulated call allocates dozens of small, short-lived objects, which a
/// thread-caching allocator serves without locks or trips to the shared heap. What it saved is in
/// docs/benchmarks.md ("What the simulator costs").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => f.exit(),
    }
}
