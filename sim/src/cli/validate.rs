//! `mcpstorm validate <scenario.toml> [--set key=value ...] [--allow-large]`: load and check a scenario without
//! running it, and print what running it would cost.

use std::path::PathBuf;

use clap::Args;

use super::Failure;
use super::out::{errln, outln};
use crate::scenario::{Limits, cost, expand_sweep, load_file_with};

#[derive(Debug, Args)]
#[command(after_help = "Exit codes: 0 when the scenario (with its --set overrides) is valid; 2 when it is not, every \
problem listed.")]
pub struct ValidateArgs {
    /// The scenario file.
    pub scenario: PathBuf,
    /// Override a key before checking, e.g. `--set load.sessions=200` or `--set 'faults[0].start="10s"'`
    /// (repeatable; the value is TOML, or else a plain string).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Accept runs beyond the run-cost limits (calls, hosts, ticks, turmoil work, memory); the ranges of each key
    /// still apply.
    #[arg(long)]
    pub allow_large: bool,
}

/// Prints `ok: <name> (...)` and the run's estimated cost (each sweep row's), and succeeds; or prints every problem,
/// one per line, and fails with bad input (exit 2).
pub fn run(args: ValidateArgs) -> Result<(), Failure> {
    let limits = Limits::allowing_large(args.allow_large);
    match load_file_with(&args.scenario, &args.set, &limits) {
        Ok(s) => {
            let values = s.sweep.as_ref().map_or(0, |sweep| sweep.values.len());
            outln!(
                "ok: {} ({}, {}, {})",
                s.name,
                count(s.servers.len(), "server"),
                count(s.faults.len(), "fault"),
                count(values, "sweep value")
            )?;
            match &s.sweep {
                None => outln!("cost: {}", cost::estimate(&s))?,
                Some(sweep) => {
                    // Loading expanded and checked every row already, so this cannot fail; if it did, the base's
                    // estimate is still worth printing.
                    let rows = expand_sweep(&s).unwrap_or_default();
                    for (label, row) in rows {
                        outln!("cost ({} = {label}): {}", sweep.param, cost::estimate(&row))?;
                    }
                }
            }
            outln!("limits: {limits}{}", if args.allow_large { " (--allow-large)" } else { "" })
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
