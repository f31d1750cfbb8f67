//! `mcpstorm merge`: the shards of a comparison (`compare --shard K/N`, run on several machines) into the report an
//! unsharded run writes, byte for byte.

use std::path::{Path, PathBuf};

use clap::Args;

use super::Failure;
use super::out::outln;
use crate::compare::merge::merge;
use crate::compare::partial::Partial;
use crate::report;

#[derive(Debug, Args)]
#[command(after_help = super::compare::EXIT_CODES)]
pub struct MergeArgs {
    /// Shard results: `shard-K-of-N.json` files, or directories holding them.
    #[arg(required = true, value_name = "SHARD")]
    pub inputs: Vec<PathBuf>,
    /// The report directory.
    #[arg(long)]
    pub out: PathBuf,
}

pub fn run(args: MergeArgs) -> Result<(), Failure> {
    let bad = |e: &dyn std::fmt::Display| Failure::BadInput(e.to_string());
    let mut parts = Vec::new();
    for path in files(&args.inputs)? {
        parts.push((path.display().to_string(), Partial::read(&path).map_err(|e| bad(&e))?));
    }
    let shards = parts.len();
    let data = merge(parts).map_err(|e| bad(&e))?;
    super::sim::check_out(&args.out, crate::report::dir::Command::Compare)?;
    report::write_compare(&args.out, &data).map_err(|e| Failure::Failed(e.to_string()))?;
    outln!(
        "{}: {} shards of {} variants × {} seeds (paired) → {}",
        data.scenario,
        shards,
        data.labels.len(),
        data.seeds.len(),
        args.out.display()
    )?;
    super::compare::print_tables(&data, &args.out)
}

/// The files named, and in each directory named its `shard-*-of-*.json` files in name order.
fn files(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, Failure> {
    let mut files = Vec::new();
    for input in inputs {
        if !input.is_dir() {
            files.push(input.clone());
            continue;
        }
        let unreadable = |e: std::io::Error| Failure::BadInput(format!("{}: {e}", input.display()));
        let mut found: Vec<PathBuf> = std::fs::read_dir(input)
            .map_err(unreadable)?
            .map(|entry| entry.map(|e| e.path()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(unreadable)?
            .into_iter()
            .filter(|p| is_shard_name(p))
            .collect();
        if found.is_empty() {
            return Err(Failure::BadInput(format!("{} holds no shard-K-of-N.json", input.display())));
        }
        found.sort();
        files.extend(found);
    }
    Ok(files)
}

fn is_shard_name(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    name.starts_with("shard-") && name.ends_with(".json") && name.contains("-of-")
}
