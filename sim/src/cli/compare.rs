//! `mcpstorm compare`: one scenario, several variants, many seeds — paired runs, a table with confidence intervals
//! and overlay plots (see [`crate::compare`]).

use std::path::{Path, PathBuf};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use mcpstorm_core::router::FormulaSpec;

use super::Failure;
use super::out::outln;
use super::seeds::{SeedRuns, with_sets};
use crate::compare::partial::{Partial, PlanId};
use crate::compare::{self, CompareData, Plan, Variant};
use crate::report;
use crate::report::dir::Command;
use crate::scenario;
use crate::shard::Shard;

#[derive(Debug, Args)]
#[command(after_help = EXIT_CODES, mut_arg("shard", |a| a.help(super::seeds::COMPARE_SHARD)))]
pub struct CompareArgs {
    /// The scenario file (TOML).
    pub scenario: PathBuf,
    /// The key that differs between the variants, e.g. `gateway.profile`.
    #[arg(long, value_name = "KEY", required_unless_present_any = ["formulas", "middles"], requires = "values")]
    pub vary: Option<String>,
    /// The values it takes, one variant each; the first is the baseline the others are compared with.
    #[arg(long, value_name = "A,B,...", value_delimiter = ',', requires = "vary")]
    pub values: Vec<String>,
    /// Routing formulas to compare: short for `--vary gateway.formula --values A,B,...` (names checked first).
    #[arg(long, value_name = "A,B,...", value_delimiter = ',', conflicts_with = "vary")]
    pub formulas: Vec<String>,
    /// Run the scenario live, in real time on this machine, through each of `--middles` (see `mcpstorm live
    /// --middle`) instead of varying a key in the simulator: one seed, `--rounds` rounds.
    #[arg(long, requires = "middles")]
    pub live: bool,
    /// With `--live`: the middles to compare (`mcpstorm`, `nginx`, or middle files), run in turn, the order
    /// alternating every round. A middle whose program is not installed is skipped with a message.
    #[arg(long, value_name = "A,B,...", value_delimiter = ',', requires = "live", conflicts_with_all = ["vary", "formulas"])]
    pub middles: Vec<String>,
    /// With `--live`: how many rounds through every middle, 1 to 100 (default 1).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub rounds: Option<u64>,
    /// How many seeds each variant runs on, 1 to 10000.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=MAX_SEEDS))]
    pub seeds: u64,
    /// Override any key for every variant: --set duration=30s.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Report directory: report.html (the tables and the overlay plot on one self-contained page, for a browser),
    /// compare.md, compare.json, compare.csv and the overlay plots (compare*.png/.svg). Default:
    /// reports/<scenario>/compare-<key>-<values>-<n>seeds.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Run even beyond the run-cost limits (calls, hosts, ticks, turmoil work, memory); the ranges of each key still
    /// apply.
    #[arg(long)]
    pub allow_large: bool,
    #[command(flatten)]
    pub runs: SeedRuns,
}

/// The most `--seeds`. Every run is planned (its scenario resolved) before any starts and keeps its per-second rows
/// for the overlay plots, so memory grows with variants × seeds; and a confidence interval narrows only as 1/√n:
/// 10,000 seeds make it 30 times narrower than 10 do, and take hours for the smallest scenario.
const MAX_SEEDS: u64 = 10_000;

/// The key and values being compared: `--vary`/`--values`, or `--formulas` with every name checked up front.
fn varied(args: &CompareArgs) -> Result<(String, Vec<String>), Failure> {
    match &args.vary {
        Some(key) => Ok((key.clone(), args.values.clone())),
        None => {
            // Each variant is labelled by the formula's own name: an alias (`seed_weighted`) reads as the formula it
            // names (`health_weighted`), as in a single run's report.
            let mut names = Vec::with_capacity(args.formulas.len());
            for name in &args.formulas {
                match name.parse::<FormulaSpec>() {
                    Ok(formula) => names.push(formula.name().to_owned()),
                    Err(e) => return Err(Failure::BadInput(format!("--formulas {name:?}: {e}"))),
                }
            }
            Ok((FORMULA_KEY.to_owned(), names))
        }
    }
}

/// The scenario key `--formulas` varies.
const FORMULA_KEY: &str = "gateway.formula";

pub fn run(args: CompareArgs) -> Result<(), Failure> {
    if args.live {
        return super::compare_live::run(&super::compare_live::Request {
            scenario: &args.scenario,
            middles: &args.middles,
            rounds: args.rounds,
            sets: &args.sets,
            out: args.out.as_deref(),
            allow_large: args.allow_large,
            runs: &args.runs,
        });
    }
    let bad = |e: &dyn std::fmt::Display| Failure::BadInput(e.to_string());
    let (key, values) = varied(&args)?;
    let shard = args.runs.shard()?;
    let limits = scenario::Limits::allowing_large(args.allow_large);
    let base = scenario::load_file_with(&args.scenario, &args.sets, &limits).map_err(|e| bad(&e))?;
    let first = args.runs.first(base.seed, args.seeds)?;
    let seeds: Vec<u64> = (0..args.seeds).map(|i| first + i).collect();
    let variants = Variant::of_key(&key, &values);
    let plan = Plan::load(&args.scenario, &args.sets, variants, seeds, &limits).map_err(|e| bad(&e))?;
    let out = args.out.clone().unwrap_or_else(|| default_out(&base.name, &key, &values, args.seeds));
    super::sim::check_out(&out, Command::Compare)?;
    let jobs = args.runs.jobs();

    let reproduce = reproduce(&args, first);
    if let Some(shard) = shard {
        return run_shard(&plan, shard, jobs, &reproduce, &out);
    }

    let bar = progress(&plan, plan.len());
    let data = compare::run(&plan, jobs, reproduce, &|| bar.inc(1)).map_err(|e| Failure::Failed(e.to_string()))?;
    bar.finish_and_clear();
    report::write_compare(&out, &data).map_err(|e| Failure::Failed(e.to_string()))?;
    outln!(
        "{}: {} variants of {} × {} seeds (paired) → {}",
        data.scenario,
        data.labels.len(),
        key,
        data.seeds.len(),
        out.display()
    )?;
    print_tables(&data, &out)
}

/// The console's view of a finished comparison: the headline metrics, the checks that failed, and where the rest
/// is. The exit code follows [`EXIT_CODES`]: 1 when any variant failed any of the scenario's `[checks]` on any seed.
pub(super) fn print_tables(data: &CompareData, out: &Path) -> Result<(), Failure> {
    let shown = ["p99_ms", "success_rate", "amplification", "fault_p99_ms", "fault_error_rate"];
    for m in data.metrics().filter(|m| shown.contains(&m.name)) {
        let within = if m.in_faults() { " (calls completed inside the fault windows)" } else { "" };
        outln!("\n{}{within}:\n{}", m.name, report::compare_table(data, m))?;
    }
    let failed = data.failed_checks();
    if !failed.is_empty() {
        outln!("\nchecks failed:")?;
        for line in &failed {
            outln!("  {line}")?;
        }
    }
    outln!("full tables: {}", out.join("compare.md").display())?;
    outln!("overlay plot: {}", out.join("compare.png").display())?;
    outln!("reproduce: {}", data.reproduce)?;
    if failed.is_empty() {
        return Ok(());
    }
    Err(Failure::Failed(format!(
        "{} of {} variants failed the scenario's checks on some seed (see above)",
        failed.len(),
        data.labels.len()
    )))
}

/// `compare --help` and `merge --help`: what the exit code says.
pub(super) const EXIT_CODES: &str = "Exit codes: 0 when every variant passed the scenario's [checks] on every seed; \
1 when any variant failed any check on any seed (the failed checks are listed on the console), or the run failed; \
2 for bad input. A shard (--shard) only writes its share and judges nothing: `mcpstorm merge` does. With --live, a \
middle fails when any of its rounds fails a judged check; a middle whose program is not installed is skipped, and \
none left to run is exit 1.";

/// One shard's runs, written as `shard-K-of-N.json` in `out` for `mcpstorm merge`.
fn run_shard(plan: &Plan, shard: Shard, jobs: usize, reproduce: &str, out: &Path) -> Result<(), Failure> {
    let failed = |e: &dyn std::fmt::Display| Failure::Failed(e.to_string());
    let indices = Partial::seed_indices(plan.seeds.len(), shard);
    let bar = progress(plan, plan.variants.len() * indices.len());
    let runs = compare::run_seeds(plan, &indices, jobs, &|| bar.inc(1)).map_err(|e| failed(&e))?;
    bar.finish_and_clear();
    let id = PlanId::of(plan, shard.count, reproduce).map_err(|e| failed(&e))?;
    let bytes = Partial::new(id, shard, runs).encode().map_err(|e| failed(&e))?;
    let path = out.join(Partial::file_name(shard));
    std::fs::write(&path, bytes).map_err(|e| Failure::Failed(format!("cannot write {}: {e}", path.display())))?;
    outln!(
        "{}: shard {shard}, {} of {} seeds × {} variants → {} (combine all {} with `mcpstorm merge`)",
        plan.name,
        indices.len(),
        plan.seeds.len(),
        plan.variants.len(),
        path.display(),
        shard.count
    )
}

fn progress(plan: &Plan, runs: usize) -> ProgressBar {
    let bar = ProgressBar::new(runs as u64);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} runs, {elapsed} wall")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message(format!("{} × {} seeds", plan.variants.len(), plan.seeds.len()));
    bar
}

fn default_out(name: &str, key: &str, values: &[String], seeds: u64) -> PathBuf {
    let clean = |s: &str| -> String {
        s.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect()
    };
    let leaf = format!("compare-{}-{}-{seeds}seeds", clean(key), clean(&values.join("_")));
    PathBuf::from("reports").join(name).join(leaf)
}

fn reproduce(args: &CompareArgs, first: u64) -> String {
    let what = match &args.vary {
        Some(key) => format!("--vary {key} --values {}", args.values.join(",")),
        None => format!("--formulas '{}'", args.formulas.join(",")),
    };
    let cmd =
        format!("mcpstorm compare {} {what} --seeds {} --first-seed {first}", args.scenario.display(), args.seeds);
    with_sets(cmd, &args.sets)
}
