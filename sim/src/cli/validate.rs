//! `mcpstorm validate <scenario.toml> [--set key=value ...]`: load and check a scenario without running it.

use std::path::PathBuf;

use clap::Args;

use super::Failure;
use super::out::{errln, outln};
use crate::scenario::load_file;

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The scenario file.
    pub scenario: PathBuf,
    /// Override a key before checking, e.g. `--set load.sessions=200` or `--set 'faults[0].start="10s"'`
    /// (repeatable; the value is TOML, or else a plain string).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

/// Prints `ok: <name> (...)` and succeeds, or prints every problem, one per line, and fails with bad input (exit 2).
pub fn run(args: ValidateArgs) -> Result<(), Failure> {
    match load_file(&args.scenario, &args.set) {
        Ok(s) => {
            let values = s.sweep.as_ref().map_or(0, |sweep| sweep.values.len());
            outln!(
                "ok: {} ({}, {}, {})",
                s.name,
                count(s.servers.len(), "server"),
                count(s.faults.len(), "fault"),
                count(values, "sweep value")
            )
        }
        Err(e) => {
            errln!("{e}");
            Err(Failure::BadInput(format!("{}: {}", args.scenario.display(), count(e.count(), "error"))))
        }
    }
}

fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}
