//! `mcpstorm fidelity`: a scenario in the simulator against the same scenario run live, side by side, judged
//! against the tolerances of its `[fidelity]` table (see [`crate::fidelity`]).
//!
//! The live run comes through a [`LiveRunner`], given to [`run_with`] by the one wiring function [`live_runner`]:
//! a build without `mcpstorm live` says so and judges nothing.

use std::path::PathBuf;

use clap::Args;

use super::Failure;
use super::out::{errln, outln};
use super::seeds::{SeedRuns, with_sets};
use crate::fidelity::{self, HostGauge, LiveRunner};
use crate::report;
use crate::report::dir::Command;
use crate::scenario;

/// `fidelity --help`: what the exit code says.
const EXIT_CODES: &str = "Exit codes: 0 when every judged row of every seed is inside its tolerance; 1 when any is \
outside (the failed rows are named), or a run fails (a live run this machine cannot keep in real time among them, \
judging nothing); 2 for bad input (arguments, the scenario file and its [fidelity] table, a --set, a [sweep], what \
live runs do not support: network.fail_rate, a clock_skew on a gateway node).";

#[derive(Debug, Args)]
#[command(after_help = EXIT_CODES)]
pub struct FidelityArgs {
    /// The scenario file (TOML). It runs in real time on this machine, so pick one that fits on its cores.
    pub scenario: PathBuf,
    /// How many seeds to compare on, 1 to 100 (each one a live run in real time).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=MAX_SEEDS))]
    pub seeds: u64,
    /// The first seed (then +1, +2, ...). Default: MCPSTORM_SEED, else the scenario's own seed.
    #[arg(long)]
    pub first_seed: Option<u64>,
    /// Override any key on both sides: --set duration=20s --set fidelity.ok_calls=0.1.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Report directory: report.html (the tables and the overlay plot on one self-contained page), fidelity.md,
    /// fidelity.json and the overlay plot (fidelity.png/.svg). Default:
    /// reports/<scenario>/fidelity-<first seed>-<n>seeds.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Run even beyond the run-cost limits (calls, hosts, ticks, turmoil work, memory); the ranges of each key still
    /// apply.
    #[arg(long)]
    pub allow_large: bool,
    /// Run both sides through gateway nodes, one per load host: live, `mcpstorm gateway` processes of this binary;
    /// simulated, the same nodes in the simulator. The same as `--set nodes.count=<load.hosts>` (which the
    /// reproduce line spells out).
    #[arg(long)]
    pub through_gateway: bool,
}

/// The most `--seeds`: each is a live run in real time.
const MAX_SEEDS: u64 = 100;

/// The live runner: `mcpstorm live`'s engine, without a call history or a progress line.
fn live_runner() -> Box<LiveRunner> {
    Box::new(|s| {
        let exe = crate::live::this_binary();
        crate::live::run(s, exe.as_deref(), String::new(), None, &mut |_, _| {})
            .map(|(run, _)| run)
            .map_err(|e| e.to_string())
    })
}

pub fn run(args: FidelityArgs) -> Result<(), Failure> {
    run_with(args, &*live_runner(), HostGauge::Proc)
}

/// The command with `live` as its live runner, and the host's load read by `gauge`.
pub fn run_with(mut args: FidelityArgs, live: &LiveRunner, gauge: HostGauge) -> Result<(), Failure> {
    let limits = scenario::Limits::allowing_large(args.allow_large);
    if args.through_gateway {
        args.sets = super::live::through_gateway_sets(&args.scenario, std::mem::take(&mut args.sets), &limits)?;
    }
    let base =
        scenario::load_file_with(&args.scenario, &args.sets, &limits).map_err(|e| Failure::BadInput(e.to_string()))?;
    if base.sweep.is_some() {
        return Err(Failure::BadInput(format!(
            "{}: has a [sweep]: fidelity compares one scenario; pick a value with --set",
            args.scenario.display()
        )));
    }
    if let Some(key) = crate::live::unsupported(&base) {
        return Err(Failure::BadInput(format!("{}: live runs do not support {key}", args.scenario.display())));
    }
    let seeds = SeedRuns { first_seed: args.first_seed, jobs: None, shard: None, shard_count: None };
    let first = seeds.first(base.seed, args.seeds)?;
    let seed_list: Vec<u64> = (0..args.seeds).map(|i| first + i).collect();
    let out = args.out.clone().unwrap_or_else(|| default_out(&base.name, first, args.seeds));
    let created = !out.exists();
    super::sim::check_out(&out, Command::Fidelity)?;
    let reproduce = reproduce(&args, first);
    let mut progress = |seed: u64, run: &str| errln!("== seed {seed}: {run} run");
    let data = fidelity::run(&base, &seed_list, live, gauge, reproduce, &mut progress).map_err(|e| {
        // Nothing was written: a directory made for this report goes again (`remove_dir` removes only an empty one).
        if created {
            let _ = std::fs::remove_dir(&out);
        }
        Failure::Failed(e.to_string())
    })?;
    report::write_fidelity(&out, &data).map_err(|e| Failure::Failed(e.to_string()))?;
    let outcome = data.outcome();
    outln!("mcpstorm fidelity: {} ({} seed(s)) {}", data.scenario, data.seeds.len(), outcome.label())?;
    outln!("{}", report::fidelity_table(&data).trim_end())?;
    outln!("  report     {}", out.display())?;
    outln!("  plot       {}", out.join("fidelity.png").display())?;
    outln!("reproduce: {}", data.reproduce)?;
    let failed = data.failures();
    if failed.is_empty() {
        return Ok(());
    }
    Err(Failure::Failed(format!("outside the tolerances: {}", failed.join("; "))))
}

fn default_out(name: &str, first: u64, seeds: u64) -> PathBuf {
    PathBuf::from("reports").join(name).join(format!("fidelity-{first}-{seeds}seeds"))
}

fn reproduce(args: &FidelityArgs, first: u64) -> String {
    let cmd = format!("mcpstorm fidelity {} --seeds {} --first-seed {first}", args.scenario.display(), args.seeds);
    with_sets(cmd, &args.sets)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::scenario::{Dur, Scenario};

    /// 100 calls/s on one server; every call fails from 4 s to 6 s.
    const BURST: &str = "name = \"cli_burst\"\nduration = \"10s\"\n[[servers]]\nname = \"api\"\n[[servers.tools]]\n\
                         name = \"get\"\nlatency = { dist = \"fixed\", ms = 10 }\n[load]\nmode = \"open\"\nrate = 100.0\n\
                         [[load.mix]]\nserver = \"api\"\ntool = \"get\"\n[[faults]]\nkind = \"error_burst\"\n\
                         target = \"api\"\nstart = \"4s\"\nduration = \"2s\"\nrate = 1.0\n";

    fn args(name: &str, text: &str) -> FidelityArgs {
        let dir = std::env::temp_dir().join(format!("mcpstorm-fidelity-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        let scenario = dir.join("burst.toml");
        std::fs::write(&scenario, text).expect("write the scenario");
        FidelityArgs {
            scenario,
            seeds: 1,
            first_seed: None,
            sets: Vec::new(),
            out: Some(dir.join("out")),
            allow_large: false,
            through_gateway: false,
        }
    }

    /// A "live" runner that is the simulator, with the scenario's faults moved by `shift` seconds.
    fn simulator(shift: u64) -> impl Fn(&Scenario) -> Result<crate::run::RunData, String> {
        move |s: &Scenario| {
            let mut s = s.clone();
            for f in &mut s.faults {
                f.start = Dur(f.start.0 + Duration::from_secs(shift));
            }
            crate::world::run(&s, String::new(), None, &mut |_, _| {}).map(|(run, _)| run).map_err(|e| e.to_string())
        }
    }

    #[test]
    fn the_runner_it_is_given_decides_the_verdict_and_the_exit_code() {
        let same = args("same", BURST);
        let out = same.out.clone().expect("an out");
        assert!(run_with(same, &simulator(0), HostGauge::Off).is_ok());
        assert!(out.join("fidelity.json").is_file() && out.join("report.html").is_file());
        let _ = std::fs::remove_dir_all(out.parent().expect("the scratch dir"));
        let shifted = args("shifted", BURST);
        let scratch = shifted.scenario.parent().expect("the scratch dir").to_path_buf();
        let verdict = run_with(shifted, &simulator(3), HostGauge::Off);
        let _ = std::fs::remove_dir_all(scratch);
        match verdict {
            Err(Failure::Failed(m)) => {
                assert!(
                    m.starts_with("outside the tolerances: seed 1: ") && m.contains("onset: error_burst api"),
                    "{m}"
                )
            }
            other => panic!("expected a failed verdict, got {other:?}"),
        }
    }

    #[test]
    fn a_sweep_is_bad_input_before_anything_runs() {
        let text = format!("{BURST}[sweep]\nparam = \"load.rate\"\nvalues = [50.0, 100.0]\n");
        let never = |_: &Scenario| -> Result<crate::run::RunData, String> { panic!("nothing runs") };
        let sweep = args("sweep", &text);
        let scratch = sweep.scenario.parent().expect("the scratch dir").to_path_buf();
        let verdict = run_with(sweep, &never, HostGauge::Off);
        assert!(!scratch.join("out").exists(), "refused before the report directory is made");
        let _ = std::fs::remove_dir_all(scratch);
        match verdict {
            Err(Failure::BadInput(m)) => assert!(m.contains("has a [sweep]"), "{m}"),
            other => panic!("expected bad input, got {other:?}"),
        }
    }
}
