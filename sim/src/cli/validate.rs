//! `mcpstorm validate <file.toml> [--set key=value ...] [--allow-large]`: load and check a scenario without
//! running it, and print what running it would cost; or check a gateway config (`mcpstorm gateway --config`),
//! told apart by its `[listen]` or `[admin]` table or its `[[servers.replicas]]` tables.

use std::path::PathBuf;

use clap::Args;

use super::Failure;
use super::out::{errln, outln};
use crate::scenario::tables::GatewayFile;
use crate::scenario::{Limits, cost, expand_sweep, load_file_with};

#[derive(Debug, Args)]
#[command(after_help = "Exit codes: 0 when the scenario (with its --set overrides) or the gateway config is valid \
(a gateway config's unset environment variables are warnings on stderr, unless --env); 2 when it is not, every problem \
listed.")]
pub struct ValidateArgs {
    /// The scenario file, or a gateway config.
    pub scenario: PathBuf,
    /// Override a key before checking, e.g. `--set load.sessions=200` or `--set 'faults[0].start="10s"'`
    /// (repeatable; the value is TOML, or else a plain string).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Accept runs beyond the run-cost limits (calls, hosts, ticks, turmoil work, memory); the ranges of each key
    /// still apply.
    #[arg(long)]
    pub allow_large: bool,
    /// A gateway config: every environment variable it names (tokens, passwords, `env:NAME` headers and stdio
    /// variables) must be set here, as where it will run; without it, an unset one is only a warning (the deploy
    /// environment may differ).
    #[arg(long)]
    pub env: bool,
}

/// Prints `ok: <name> (...)` and the run's estimated cost (each sweep row's), and succeeds; or prints every problem,
/// one per line, and fails with bad input (exit 2).
pub fn run(args: ValidateArgs) -> Result<(), Failure> {
    if args.env && !is_gateway_config(&args.scenario) {
        return Err(Failure::BadInput("--env applies to a gateway config, not to a scenario".into()));
    }
    if is_gateway_config(&args.scenario) {
        return gateway_config(&args);
    }
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

/// Whether `path` holds a gateway config rather than a scenario. A file with syntax errors is judged by what toml
/// recovers of it, so that a gateway config's syntax errors come with its other problems, not a scenario's.
fn is_gateway_config(path: &std::path::Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else { return false };
    let (table, _) = toml::de::DeTable::parse_recoverable(&text);
    let table = table.into_inner();
    let replicas_listed = match table.get("servers").map(|s| s.get_ref()) {
        Some(toml::de::DeValue::Array(servers)) => servers
            .iter()
            .any(|s| matches!(s.get_ref().get("replicas").map(|r| r.get_ref()), Some(toml::de::DeValue::Array(_)))),
        _ => false,
    };
    table.contains_key("listen") || table.contains_key("admin") || replicas_listed
}

fn gateway_config(args: &ValidateArgs) -> Result<(), Failure> {
    if !args.set.is_empty() || args.allow_large {
        return Err(Failure::BadInput("--set and --allow-large apply to scenarios, not to a gateway config".into()));
    }
    let loaded = if args.env { GatewayFile::load_for_start(&args.scenario) } else { GatewayFile::load(&args.scenario) };
    match loaded {
        Ok(file) => {
            // Checked only once the file itself is valid: then every problem found here is an unset variable.
            if !args.env
                && let Err(unset) = GatewayFile::load_for_start(&args.scenario)
            {
                for problem in unset.problems() {
                    errln!("warning: {problem} (where the gateway runs it must be set; --env makes this an error)");
                }
            }
            let replicas: usize = file.servers.iter().map(|s| s.replicas.len()).sum();
            outln!(
                "ok: gateway config ({}, {}), serving http://{}/mcp{}",
                count(file.servers.len(), "server"),
                count(replicas, "replica"),
                file.listen.http,
                file.admin.as_ref().map(|a| format!(", admin at http://{}", a.listen)).unwrap_or_default()
            )
        }
        Err(e) => {
            errln!("{e}");
            Err(Failure::BadInput(format!("{}: {}", args.scenario.display(), count(e.count(), "error"))))
        }
    }
}
