//! `mcpstorm swarm`: many seeds, each with its own drawn fault timeline, checked against invariants; every failure
//! shrunk and written as a scenario that replays it (see [`crate::swarm`]).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use super::Failure;
use super::out::outln;
use super::seeds::{SeedRuns, with_sets};
use crate::report::{SwarmPage, SwarmSeed};
use crate::run::FaultWindow;
use crate::scenario::{self, Scenario};
use crate::shard::Shard;
use crate::swarm::shrink::{Shrunk, shrink};
use crate::swarm::{self, Options, SwarmRun};

#[derive(Debug, Args)]
#[command(after_help = EXIT_CODES, mut_arg("shard", |a| a.help(super::seeds::SWARM_SHARD)))]
pub struct SwarmArgs {
    /// The scenario file (TOML): its servers, load and `[swarm]` bounds; its own faults are replaced by drawn ones.
    pub scenario: PathBuf,
    /// How many seeds to draw and run, 1 to 100000.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub seeds: u64,
    /// Override any key: --set duration=40s.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Report directory (`report.html`: every seed, its faults and verdict on one self-contained page, linking the
    /// failure files; `swarm.md`; and `failures/<seed>-<invariant>.toml`). Default: reports/<scenario>/swarm.
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub runs: SeedRuns,
    /// Check the scenario's own `[checks]` too.
    #[arg(long)]
    pub checks: bool,
    /// Skip the naive baseline run and the differential invariants (half the simulations).
    #[arg(long)]
    pub no_differential: bool,
    /// Run the scenario as it is (its own seed and faults, nothing drawn; MCPSTORM_SEED is ignored) and check the
    /// invariants: how a shrunk failure is replayed. Exit 1 while the failure stands.
    #[arg(long)]
    pub replay: bool,
    /// The most candidate runs a failure's shrinking may take (0: do not shrink).
    #[arg(long, default_value_t = 40)]
    pub shrink_runs: usize,
    /// Run even beyond the run-cost limits.
    #[arg(long)]
    pub allow_large: bool,
}

/// `swarm --help`: what the exit code says.
const EXIT_CODES: &str = "Exit codes: 0 when every invariant holds on every seed (with --replay: on the scenario as \
it is); 1 when any breaks (with --replay: while the failure stands); 2 for bad input, a scenario too short to \
swarm included.";

/// One seed's outcome, and its shrunk failure.
struct Outcome {
    seed: u64,
    run: SwarmRun,
    shrunk: Option<Shrunk>,
}

pub fn run(args: SwarmArgs) -> Result<(), Failure> {
    let bad = |e: &dyn std::fmt::Display| Failure::BadInput(e.to_string());
    let limits = scenario::Limits::allowing_large(args.allow_large);
    // A swarm replaces the scenario's faults (and ignores its sweep): they are dropped before the user's overrides,
    // so that `--set duration=...` may shorten a run its own faults would not fit in, and with them the checks that
    // read fault windows. With `--checks` the scenario's checks are kept, and so are its faults until the draw.
    let drop: &[&str] = match (args.replay, args.checks) {
        (true, _) => &[],
        (false, true) => &[],
        (false, false) => &["faults=[]", "checks={}"],
    };
    let sets: Vec<String> = drop.iter().map(|s| (*s).to_owned()).chain(args.sets.iter().cloned()).collect();
    let mut base = scenario::load_file_with(&args.scenario, &sets, &limits).map_err(|e| bad(&e))?;
    base.sweep = None;
    let options = Options { differential: !args.no_differential, checks: args.checks };
    if args.replay {
        return replay(&base, options);
    }
    let shard = args.runs.shard()?;
    let first = args.runs.first(base.seed, args.seeds)?;
    let shard = shard.unwrap_or(Shard::WHOLE);
    let seeds: Vec<u64> = (0..args.seeds).filter(|i| shard.takes(*i as usize)).map(|i| first + i).collect();
    // Every seed's draw first: a scenario too short for its bounds is bad input, found before anything runs.
    let cases = seeds.iter().map(|s| swarm::case(&base, *s)).collect::<Result<Vec<_>, _>>().map_err(|e| bad(&e))?;
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("reports").join(&base.name).join("swarm"));
    super::sim::check_out(&out, crate::report::dir::Command::Swarm)?;
    let jobs = args.runs.jobs();

    let bar = progress(cases.len());
    let failures = AtomicUsize::new(0);
    let outcomes = run_cases(&cases, jobs, &|case| {
        let run = swarm::check(case, options);
        let shrunk = run.first().filter(|_| args.shrink_runs > 0).map(|v| shrink(case, v, options, args.shrink_runs));
        let failed = failures.fetch_add(usize::from(!run.passed()), Ordering::Relaxed) + usize::from(!run.passed());
        bar.set_message(format!("{failed} failing"));
        bar.inc(1);
        Outcome { seed: case.seed, run, shrunk }
    });
    bar.finish_and_clear();
    let command = reproduce(&args, first);
    let mut files = Vec::new();
    for o in outcomes.iter().filter(|o| !o.run.passed()) {
        files.extend(write_failure(&out, o, &command, options)?);
    }
    let replays: Vec<(u64, String)> =
        files.iter().map(|(seed, name)| (*seed, replay_command(&out.join(FAILURES).join(name), options))).collect();
    let table = summary(&base, &outcomes, shard, &command, &replays);
    std::fs::write(out.join("swarm.md"), &table).map_err(|e| Failure::Failed(format!("{}: {e}", out.display())))?;
    let page = page(&base, &outcomes, shard, &command, &files, options);
    crate::report::write_swarm_html(&out, &page).map_err(|e| Failure::Failed(e.to_string()))?;
    outln!("{table}")?;
    let failed = outcomes.iter().filter(|o| !o.run.passed()).count();
    if failed > 0 {
        return Err(Failure::Failed(format!(
            "{failed} of {} seeds broke an invariant: {}",
            outcomes.len(),
            out.join("failures").display()
        )));
    }
    Ok(())
}

/// Runs `f` on every case on `jobs` threads; results in case order, whichever thread finished first.
fn run_cases(cases: &[Scenario], jobs: usize, f: &(dyn Fn(&Scenario) -> Outcome + Sync)) -> Vec<Outcome> {
    let slots: Mutex<Vec<Option<Outcome>>> = Mutex::new((0..cases.len()).map(|_| None).collect());
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, cases.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(case) = cases.get(i) else { break };
                    let outcome = f(case);
                    if let Ok(mut slots) = slots.lock() {
                        slots[i] = Some(outcome);
                    }
                }
            });
        }
    });
    slots.into_inner().unwrap_or_else(|p| p.into_inner()).into_iter().flatten().collect()
}

fn replay(s: &Scenario, options: Options) -> Result<(), Failure> {
    let run = swarm::check(s, options);
    if run.passed() {
        outln!("{}: seed {}, {} faults: every invariant holds", s.name, s.seed, s.faults.len())?;
        return Ok(());
    }
    for v in &run.violations {
        outln!("{}: {}", v.invariant, v.detail)?;
    }
    Err(Failure::Failed(format!("{}: {} invariant(s) broken", s.name, run.violations.len())))
}

/// The directory of failure files in a swarm's report.
const FAILURES: &str = "failures";

/// `failures/<seed>-<invariant>.toml`: the shrunk scenario (the original when shrinking was off), with a header
/// naming the invariant, the seed and the commands that find and replay it. Returns the seed and the file's name.
fn write_failure(out: &Path, o: &Outcome, command: &str, options: Options) -> Result<Option<(u64, String)>, Failure> {
    let failed = |e: &dyn std::fmt::Display| Failure::Failed(e.to_string());
    let Some(first) = o.run.first() else { return Ok(None) };
    let dir = out.join(FAILURES);
    std::fs::create_dir_all(&dir).map_err(|e| failed(&e))?;
    let name = format!("{}-{}.toml", o.seed, first.invariant);
    let path = dir.join(&name);
    let (scenario, violation, runs) = match &o.shrunk {
        Some(s) => (&s.scenario, &s.violation, format!("shrunk in {} runs ({} simulations)", s.runs, s.simulations)),
        None => (&o.run.scenario, first, "not shrunk".to_owned()),
    };
    let text = toml::to_string(scenario).map_err(|e| failed(&e))?;
    let replay = replay_command(&path, options);
    let head = format!(
        "# swarm failure: invariant `{}` broken on seed {}: {}\n# {} faults drawn, {} kept; {runs}.\n\
         # found by: {command}\n# replay:   {replay}   (exit 1 while the failure stands)\n",
        violation.invariant,
        o.seed,
        violation.detail.replace('\n', " "),
        o.run.scenario.faults.len(),
        scenario.faults.len(),
    );
    std::fs::write(&path, head + &text).map_err(|e| failed(&e))?;
    Ok(Some((o.seed, name)))
}

/// The command that replays a failure file with the options that found it: the scenario's own checks are judged
/// only with `--checks` (a `checks` failure passes without it), and a run without the naive baseline is replayed
/// without it (a differential failure is found only with the baseline, so `--no-differential` never hides one).
/// Shrinking keeps the same invariant under these options, so the line reproduces the failure as written.
fn replay_command(path: &Path, options: Options) -> String {
    let mut cmd = format!("mcpstorm swarm {} --replay", path.display());
    if options.checks {
        cmd.push_str(" --checks");
    }
    if !options.differential {
        cmd.push_str(" --no-differential");
    }
    cmd
}

/// Simulations the swarm ran, shrinking included.
fn simulations(outcomes: &[Outcome]) -> usize {
    outcomes.iter().map(|o| o.run.simulations + o.shrunk.as_ref().map_or(0, |s| s.simulations)).sum()
}

/// `report.html`'s data: every seed's drawn faults and verdict, and for a failure its file (`files`: seed and name
/// under `failures/`) and a replay line relative to the report directory, so the page reads the same wherever the
/// report was written.
fn page<'a>(
    base: &'a Scenario,
    outcomes: &[Outcome],
    shard: Shard,
    command: &'a str,
    files: &[(u64, String)],
    options: Options,
) -> SwarmPage<'a> {
    let seeds = outcomes
        .iter()
        .map(|o| {
            let file = files.iter().find(|(seed, _)| *seed == o.seed).map(|(_, name)| format!("{FAILURES}/{name}"));
            SwarmSeed {
                seed: o.seed,
                faults: windows(&o.run.scenario),
                violations: o.run.violations.iter().map(|v| (v.invariant.clone(), v.detail.clone())).collect(),
                shrunk: o.shrunk.as_ref().map(|s| {
                    let (n, plural) = (s.scenario.faults.len(), |n: usize| if n == 1 { "" } else { "s" });
                    format!("{n} fault{} in {} shrink run{}", plural(n), s.runs, plural(s.runs))
                }),
                replay: file.as_ref().map(|f| replay_command(Path::new(f), options)),
                file,
            }
        })
        .collect();
    SwarmPage {
        scenario: &base.name,
        description: &base.description,
        duration_s: base.duration.0.as_secs_f64(),
        shard: shard.to_string(),
        simulations: simulations(outcomes),
        seeds,
        reproduce: command,
    }
}

/// A scenario's faults as windows labelled `kind target`, as a run's report labels them.
fn windows(s: &Scenario) -> Vec<FaultWindow> {
    s.faults
        .iter()
        .map(|f| FaultWindow {
            label: format!("{} {}", f.kind, f.target),
            start_s: f.start.0.as_secs_f64(),
            end_s: (f.start.0 + f.duration.0).as_secs_f64(),
        })
        .collect()
}

fn summary(base: &Scenario, outcomes: &[Outcome], shard: Shard, command: &str, replays: &[(u64, String)]) -> String {
    let failed = outcomes.iter().filter(|o| !o.run.passed()).count();
    let simulations = simulations(outcomes);
    let mut s = format!(
        "# swarm: {}\n\n{} seeds (shard {shard}), {failed} failing, {simulations} simulations\n\n",
        base.name,
        outcomes.len()
    );
    let _ = writeln!(s, "| seed | faults | verdict | shrunk to | shrink runs |\n|---|---|---|---|---|");
    for o in outcomes {
        let verdict = o.run.violations.iter().map(|v| format!("{}: {}", v.invariant, v.detail)).collect::<Vec<_>>();
        let verdict = if verdict.is_empty() { "ok".to_owned() } else { verdict.join("; ") };
        let (to, runs) = o.shrunk.as_ref().map_or(("".to_owned(), "".to_owned()), |s| {
            (format!("{} faults", s.scenario.faults.len()), s.runs.to_string())
        });
        let _ = writeln!(
            s,
            "| {} | {} | {} | {to} | {runs} |",
            o.seed,
            o.run.scenario.faults.len(),
            verdict.replace('|', "/")
        );
    }
    let _ = writeln!(s, "\nreproduce: {command}");
    for (seed, replay) in replays {
        let _ = writeln!(s, "replay seed {seed}: {replay}");
    }
    s
}

fn progress(seeds: usize) -> ProgressBar {
    let bar = ProgressBar::new(seeds as u64);
    bar.set_style(
        ProgressStyle::with_template("swarm [{bar:40}] {pos}/{len} seeds, {msg}, {elapsed} wall")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message("0 failing");
    bar
}

fn reproduce(args: &SwarmArgs, first: u64) -> String {
    let mut cmd = with_sets(
        format!("mcpstorm swarm {} --seeds {} --first-seed {first}", args.scenario.display(), args.seeds),
        &args.sets,
    );
    if args.checks {
        cmd.push_str(" --checks");
    }
    if args.no_differential {
        cmd.push_str(" --no-differential");
    }
    cmd
}
