//! `mcpstorm compare`: one scenario, several variants, many seeds — paired runs, a table with confidence intervals
//! and overlay plots (see [`crate::compare`]).

use std::path::{Path, PathBuf};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use super::Failure;
use crate::compare::{self, METRICS, Plan, Variant};
use crate::report;
use crate::scenario;

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The scenario file (TOML).
    pub scenario: PathBuf,
    /// The key that differs between the variants, e.g. `gateway.profile`.
    #[arg(long, value_name = "KEY")]
    pub vary: String,
    /// The values it takes, one variant each; the first is the baseline the others are compared with.
    #[arg(long, value_name = "A,B,...", value_delimiter = ',', required = true)]
    pub values: Vec<String>,
    /// How many seeds each variant runs on.
    #[arg(long, default_value_t = 10)]
    pub seeds: u64,
    /// The first seed (then +1, +2, ...). Default: the scenario's own seed.
    #[arg(long)]
    pub first_seed: Option<u64>,
    /// Override any key for every variant: --set duration=30s.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Report directory. Default: reports/<scenario>/compare-<key>-<values>-<n>seeds.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Runs at once. Default: the number of cores.
    #[arg(long)]
    pub jobs: Option<usize>,
}

pub fn run(args: CompareArgs) -> Result<(), Failure> {
    let bad = |e: &dyn std::fmt::Display| Failure::BadInput(e.to_string());
    let base = scenario::load_file(&args.scenario, &args.sets).map_err(|e| bad(&e))?;
    if args.seeds == 0 {
        return Err(Failure::BadInput("--seeds must be at least 1".into()));
    }
    let first = args.first_seed.unwrap_or(base.seed);
    let seeds: Vec<u64> = (0..args.seeds).map(|i| first.wrapping_add(i)).collect();
    let variants = Variant::of_key(&args.vary, &args.values);
    let plan = Plan::load(&args.scenario, &args.sets, variants, seeds).map_err(|e| bad(&e))?;
    let out = args.out.clone().unwrap_or_else(|| default_out(&base.name, &args));
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));

    let bar = ProgressBar::new(plan.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} runs, {elapsed} wall")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message(format!("{} × {} seeds", plan.variants.len(), plan.seeds.len()));
    let data = compare::run(&plan, jobs, reproduce(&args.scenario, &args, first), &|| bar.inc(1))
        .map_err(|e| Failure::Failed(e.to_string()))?;
    bar.finish_and_clear();
    report::write_compare(&out, &data).map_err(|e| Failure::Failed(e.to_string()))?;

    println!(
        "{}: {} variants of {} × {} seeds (paired) → {}",
        data.scenario,
        data.labels.len(),
        args.vary,
        data.seeds.len(),
        out.display()
    );
    for m in METRICS.iter().filter(|m| matches!(m.name, "p99_ms" | "success_rate" | "amplification")) {
        println!("\n{}:\n{}", m.name, report::compare_table(&data, m));
    }
    println!("full tables: {}", out.join("compare.md").display());
    println!("overlay plot: {}", out.join("compare.png").display());
    println!("reproduce: {}", data.reproduce);
    Ok(())
}

fn default_out(name: &str, args: &CompareArgs) -> PathBuf {
    let clean = |s: &str| -> String {
        s.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect()
    };
    let leaf = format!("compare-{}-{}-{}seeds", clean(&args.vary), clean(&args.values.join("_")), args.seeds);
    PathBuf::from("reports").join(name).join(leaf)
}

fn reproduce(path: &Path, args: &CompareArgs, first: u64) -> String {
    let mut cmd = format!(
        "mcpstorm compare {} --vary {} --values {} --seeds {} --first-seed {first}",
        path.display(),
        args.vary,
        args.values.join(","),
        args.seeds
    );
    for s in &args.sets {
        cmd.push_str(&format!(" --set '{s}'"));
    }
    cmd
}
