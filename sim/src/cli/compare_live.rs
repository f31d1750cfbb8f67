//! `mcpstorm compare --live --middles A,B,... SCENARIO`: the same live scenario and seed through each middle, in
//! alternating order, `--rounds` times (see [`crate::compare::middles`]). Writes into its directory:
//!
//! - `middles.md` and `middles.json`: one row per middle (ok calls, errors, P99 overall and during the faults, the
//!   healthy P99 ratio, attempts per call at the servers, the middle's CPU per call and peak memory);
//! - the comparison files `compare` writes (`compare.md`, `.json`, `.csv`, the overlay plots `compare*.png` with one
//!   coloured line per middle over the fault bands, `report.html`), the middles as variants and the rounds as seeds;
//! - `runs/<middle>-round-<n>/`: each run's own report (as `mcpstorm live` writes it) and `middle.json`.

use std::path::{Path, PathBuf};

use super::Failure;
use super::out::{errln, outln};
use super::seeds::{SeedRuns, with_sets};
use crate::compare::middles::{self, MiddlesData};
use crate::live::{self, middle::Middle};
use crate::report;
use crate::scenario::{self, CallsMode};

/// The files that mark a directory as a report of `compare --live`, which a new one may replace.
const MIDDLES_MD: &str = "middles.md";
const MIDDLES_JSON: &str = "middles.json";
const RUNS: &str = "runs";

/// What `compare --live` was asked (`compare`'s arguments that apply).
#[derive(Debug)]
pub struct Request<'a> {
    pub scenario: &'a Path,
    pub middles: &'a [String],
    pub rounds: Option<u64>,
    pub sets: &'a [String],
    pub out: Option<&'a Path>,
    pub allow_large: bool,
    pub runs: &'a SeedRuns,
}

pub fn run(args: &Request<'_>) -> Result<(), Failure> {
    let bad = |e: &dyn std::fmt::Display| Failure::BadInput(e.to_string());
    let limits = scenario::Limits::allowing_large(args.allow_large);
    let base = scenario::load_file_with(args.scenario, args.sets, &limits).map_err(|e| bad(&e))?;
    if base.sweep.is_some() {
        return Err(bad(&format!("{}: has a [sweep]: pick a value with --set", args.scenario.display())));
    }
    if args.runs.shard()?.is_some() {
        return Err(bad(&"--live runs in real time on this machine: it has no shards (--shard)"));
    }
    let seed = args.runs.first(base.seed, 1)?;
    let rounds = args.rounds.unwrap_or(1) as usize;
    let mut chosen: Vec<Middle> = Vec::new();
    let mut skipped = Vec::new();
    for name in args.middles {
        match Middle::named(name) {
            Ok(m) if chosen.iter().any(|c| c.name() == m.name()) => {
                return Err(bad(&format!("--middles: {} appears twice", m.name())));
            }
            Ok(m) => chosen.push(m),
            Err(e) if e.is_bad_input() => return Err(bad(&e)),
            Err(e) => {
                errln!("{e}");
                skipped.push(e.to_string());
            }
        }
    }
    if chosen.is_empty() {
        return Err(Failure::Failed(format!("no middle to run: {}", skipped.join("; "))));
    }
    let mut scenario = live::middle::scenario_for(&base);
    scenario.seed = seed;
    // Each run's report is kept, without its call history: the comparison reads the per-second rows.
    scenario.report.calls = CallsMode::Off;
    scenario.report.contrast = None;
    if let Some(key) = live::unsupported(&scenario) {
        return Err(bad(&live::LiveError::Unsupported(key)));
    }
    let names: Vec<&str> = chosen.iter().map(Middle::name).collect();
    let out = args.out.map_or_else(|| default_out(&base.name, &names, rounds), Path::to_path_buf);
    prepare(&out)?;
    let reproduce = reproduce(args, seed, rounds);
    let mut data = MiddlesData::new(&scenario.name, seed, reproduce);
    data.skipped = skipped;
    for round in 0..rounds {
        for m in middles::order(chosen.len(), round) {
            let middle = &chosen[m];
            errln!("== round {} of {rounds}: {}", round + 1, middle.name());
            let dir = out.join(RUNS).join(format!("{}-round-{}", middle.name(), round + 1));
            std::fs::create_dir_all(&dir).map_err(|e| Failure::Failed(format!("{}: {e}", dir.display())))?;
            let ((run, wall), measured) = super::live::run_middle(&scenario, middle, &dir)?;
            report::write_run(&dir, &run, &wall, scenario.report.calls).map_err(|e| Failure::Failed(e.to_string()))?;
            measured.write(&dir).map_err(|e| Failure::Failed(e.to_string()))?;
            errln!("{}", measured.console(&run).trim_end());
            data.add(round + 1, run, measured);
        }
    }
    if data.middles.len() > 1 {
        report::write_compare(&out, &data.as_compare()).map_err(|e| Failure::Failed(e.to_string()))?;
    }
    let write = |name: &str, bytes: Vec<u8>| {
        let path = out.join(name);
        std::fs::write(&path, bytes).map_err(|e| Failure::Failed(format!("{}: {e}", path.display())))
    };
    write(MIDDLES_MD, data.markdown().into_bytes())?;
    let json = serde_json::to_vec_pretty(&data).map_err(|e| Failure::Failed(e.to_string()))?;
    write(MIDDLES_JSON, json)?;
    outln!("{}: seed {seed} live through {} × {rounds} round(s) → {}", data.scenario, names.join(", "), out.display())?;
    outln!("{}", data.table().trim_end())?;
    let failed = data.failed_checks();
    for line in &failed {
        outln!("  checks failed: {line}")?;
    }
    if data.middles.len() > 1 {
        outln!("overlay plot: {}", out.join("compare.png").display())?;
    }
    outln!("table: {}", out.join(MIDDLES_MD).display())?;
    outln!("reproduce: {}", data.reproduce)?;
    if failed.is_empty() {
        return Ok(());
    }
    Err(Failure::Failed(format!(
        "{} of {} middles failed the scenario's checks (see above)",
        failed.len(),
        names.len()
    )))
}

/// Makes `out` ready: created if missing; an earlier `compare --live` report in it is removed; anything else there
/// is bad input, left alone.
fn prepare(out: &Path) -> Result<(), Failure> {
    let io = |e: std::io::Error| Failure::BadInput(format!("--out {}: {e}", out.display()));
    if out.exists() && std::fs::read_dir(out).map_err(io)?.next().is_some() {
        // A report, or what a failed run left of one (its runs so far).
        let ours =
            |name: &str| name == RUNS || name == MIDDLES_JSON || name == "report.html" || name.starts_with("compare");
        let names: Vec<String> = std::fs::read_dir(out)
            .map_err(io)?
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect();
        if !out.join(MIDDLES_MD).is_file() && !names.iter().all(|n| ours(n)) {
            return Err(Failure::BadInput(format!(
                "--out {}: holds something other than an earlier `compare --live` report; give an empty or new \
                 directory",
                out.display()
            )));
        }
        std::fs::remove_dir_all(out).map_err(io)?;
    }
    std::fs::create_dir_all(out).map_err(io)
}

fn default_out(name: &str, middles: &[&str], rounds: usize) -> PathBuf {
    let clean: String = middles
        .join("_")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' })
        .collect();
    PathBuf::from("reports").join(name).join(format!("compare-live-{clean}-{rounds}rounds"))
}

fn reproduce(args: &Request<'_>, seed: u64, rounds: usize) -> String {
    let cmd = format!(
        "mcpstorm compare --live --middles {} --rounds {rounds} --first-seed {seed} {}",
        args.middles.join(","),
        args.scenario.display()
    );
    with_sets(cmd, args.sets)
}
