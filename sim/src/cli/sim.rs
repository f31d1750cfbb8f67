//! `mcpstorm sim`: run a scenario (or its sweep) and write the report. `mcpstorm live` runs the same path with the
//! live engine ([`Engine::Live`]): the same report, made in real time.

use std::path::{Path, PathBuf};

use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use mcpstorm_core::session::GatewayProfile;

use super::Failure;
use super::out::{errln, outln};
use crate::check;
use crate::report::dir::Command;
use crate::report::{self, console_summary};
use crate::run::{CallSink, RunData, SweepData, SweepRow, WallClock};
use crate::scenario::{self, CallsMode, Scenario};
use crate::{live, world};

/// What runs a scenario: the simulator, or the live twin on this machine's sockets and clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Engine {
    Sim,
    Live,
}

impl Engine {
    /// The command's name, as the reproduce line spells it.
    fn command(self) -> &'static str {
        match self {
            Engine::Sim => "sim",
            Engine::Live => "live",
        }
    }

    /// Bad input for this engine: a scenario the live twin cannot run yet.
    fn refuse(self, scenario: &Scenario) -> Result<(), Failure> {
        match (self, live::unsupported(scenario)) {
            (Engine::Live, Some(key)) => Err(Failure::BadInput(live::LiveError::Unsupported(key).to_string())),
            _ => Ok(()),
        }
    }
}

/// `sim --help`: what the exit code says.
const EXIT_CODES: &str = "Exit codes: 0 when the scenario's [checks] pass (with [report] contrast, the primary run's; \
with a [sweep], every row's); 1 when any fails, or the run fails; 2 for bad input (arguments, the scenario file, a \
--set).";

#[derive(Debug, Args)]
#[command(after_help = EXIT_CODES)]
pub struct SimArgs {
    /// The scenario file (TOML).
    pub scenario: PathBuf,
    /// Override the scenario's seed. Default: MCPSTORM_SEED, else the scenario's own.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Report directory: report.html (the whole report on one self-contained page, for a browser), summary.md and
    /// summary.json, timeseries.csv, events.csv, calls.csv, scenario.toml and the plots (report, qps, p99, errors
    /// and, with [report] contrast, contrast; .png and .svg). Default: reports/<scenario>/seed-<seed>[ _<overrides>].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Override any key: --set load.sessions=200 --set 'faults[0].start="10s"'.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Run even beyond the run-cost limits (calls, hosts, ticks, turmoil work, memory); the ranges of each key still
    /// apply.
    #[arg(long)]
    pub allow_large: bool,
    /// Which attempts go to calls.csv, the call history: `all`, `sample` (every attempt of one logical call in
    /// 100), `off`, or `auto`: `all` for a run of up to 20,000 logical calls and `sample` beyond (retry_storm's full
    /// history is 39 MB). Default: the scenario's [report] calls, itself `auto` by default. Every figure, plot and
    /// check is computed from all the calls either way; `--calls all` writes the full history.
    #[arg(long, value_enum)]
    pub calls: Option<CallsMode>,
}

pub fn run(args: SimArgs) -> Result<(), Failure> {
    run_with(args, Engine::Sim)
}

/// `sim`, or `live` with [`Engine::Live`].
pub(super) fn run_with(args: SimArgs, engine: Engine) -> Result<(), Failure> {
    let mut sets = args.sets.clone();
    let seed = match args.seed {
        Some(seed) => Some(seed),
        None => super::seeds::env_seed()?,
    };
    if let Some(seed) = seed {
        sets.push(format!("seed={seed}"));
    }
    let limits = scenario::Limits::allowing_large(args.allow_large);
    let mut base =
        scenario::load_file_with(&args.scenario, &sets, &limits).map_err(|e| Failure::BadInput(e.to_string()))?;
    base.report.calls = calls_mode(&args, &base);
    engine.refuse(&base)?;
    let out = args.out.clone().unwrap_or_else(|| default_out(&base, &args.sets, engine));
    check_out(&out, Command::Sim)?;
    if let Some(trace) = &base.load.replay {
        // What a replay sends is not in the scenario file: say it before the run.
        errln!(
            "replay: {} calls (first attempts) of {} at speed {}; its {} retries are not replayed",
            trace.calls.len(),
            trace.path.display(),
            base.load.speed(),
            trace.retries_skipped
        );
    }
    let reproduce = reproduce_command(engine, &args.scenario, base.seed, &args.sets);
    match &base.sweep {
        None => run_one(&base, &out, reproduce, engine),
        Some(sweep) => {
            let runs = scenario::expand_sweep(&base).map_err(|e| Failure::BadInput(e.to_string()))?;
            let mut rows = Vec::new();
            let mut all_passed = true;
            for (label, mut scenario) in runs {
                scenario.report.calls = calls_mode(&args, &scenario);
                engine.refuse(&scenario)?;
                let dir = out.join(format!("{}={label}", sweep.param));
                let cmd = format!("{reproduce} --set {}={label}", sweep.param);
                errln!("== {} = {label}", sweep.param);
                let (run, passed) = simulate(&scenario, &dir, cmd, engine)?;
                all_passed &= passed;
                rows.push(SweepRow {
                    numeric: label.parse::<f64>().ok(),
                    value: label,
                    totals: run.totals,
                    sim_seconds: run.sim_seconds,
                    passed,
                });
            }
            let data = SweepData {
                scenario: base.name.clone(),
                param: sweep.param.clone(),
                seed: base.seed,
                rows,
                reproduce: reproduce.clone(),
            };
            let paths = report::write_sweep(&out, &data).map_err(|e| Failure::Failed(e.to_string()))?;
            outln!("sweep of {} over {} values: {}", data.param, data.rows.len(), out.display())?;
            if let Some(md) = paths.iter().find(|p| p.extension().is_some_and(|e| e == "md")) {
                if let Ok(text) = std::fs::read_to_string(md) {
                    outln!("{text}")?;
                }
            }
            outln!("reproduce: {reproduce}")?;
            if all_passed { Ok(()) } else { Err(Failure::Failed("some sweep rows failed their checks".into())) }
        }
    }
}

fn run_one(scenario: &Scenario, out: &Path, reproduce: String, engine: Engine) -> Result<(), Failure> {
    // With `contrast = "none"` the contrast checks are not judged: they are evaluated only beside a contrast run.
    let Some(asked) = scenario.report.contrast_profile() else {
        let (_, passed) = simulate(scenario, out, reproduce, engine)?;
        return if passed { Ok(()) } else { Err(Failure::Failed("checks failed (see the summary above)".into())) };
    };
    // Both runs first: the primary's contrast checks compare it with the other profile's run, and belong in its
    // summary.
    let mut primary = execute(scenario, out, engine)?;
    let (other, name) = contrast_scenario(scenario, asked);
    let other_reproduce = format!("{reproduce} --set gateway.profile={name}");
    let other_out = out.join(format!("contrast-{name}"));
    let secondary = execute(&other, &other_out, engine)?;
    check::evaluate_contrast_checks(scenario, &mut primary.0, &secondary.0);
    let (primary, text) = publish(scenario, out, reproduce, primary)?;
    outln!("contrast: the same scenario and seed with the {name} gateway profile")?;
    let (secondary, other_text) = publish(&other, &other_out, other_reproduce, secondary)?;
    write_html(&other, &other_out, &secondary, &other_text, None)?;
    report::write_contrast(out, &primary, &secondary).map_err(|e| Failure::Failed(e.to_string()))?;
    let sub = format!("contrast-{name}");
    write_html(scenario, out, &primary, &text, Some((&secondary, &sub)))?;
    outln!("profiles side by side (exit code follows the first row):")?;
    outln!("{}", report::contrast_table(&primary, &secondary).trim_end_matches('\n'))?;
    outln!("  plot       {}", out.join("contrast.png").display())?;
    // The contrast run is there to be compared with; only the primary run's checks decide the exit code.
    if primary.passed() { Ok(()) } else { Err(Failure::Failed("checks failed (see the summary above)".into())) }
}

/// `scenario` under the `asked` gateway profile (the other one when the primary already runs it), and its name.
fn contrast_scenario(scenario: &Scenario, asked: GatewayProfile) -> (Scenario, &'static str) {
    let profile = match (asked, scenario.gateway.profile) {
        (a, p) if a != p => a,
        (_, GatewayProfile::Default) => GatewayProfile::Naive,
        (_, GatewayProfile::Naive) => GatewayProfile::Default,
    };
    let mut other = scenario.clone();
    other.gateway.profile = profile;
    other.report.contrast = None;
    (other, scenario::profile_name(profile))
}

/// One run's results before the report is written (its `calls.csv` is written as it runs).
pub(super) type Executed = (RunData, WallClock);

/// Runs, writes the report, prints the one-screen summary. Returns the run and whether its checks passed.
fn simulate(scenario: &Scenario, out: &Path, reproduce: String, engine: Engine) -> Result<(RunData, bool), Failure> {
    let executed = execute(scenario, out, engine)?;
    let (run, text) = publish(scenario, out, reproduce, executed)?;
    write_html(scenario, out, &run, &text, None)?;
    let passed = run.passed();
    Ok((run, passed))
}

/// Runs the scenario, with a progress bar, writing its `calls.csv` into `out` as it goes (unless `[report] calls`
/// is `"off"`).
fn execute(scenario: &Scenario, out: &Path, engine: Engine) -> Result<Executed, Failure> {
    let calls: Option<Box<dyn CallSink>> = match scenario.report.calls {
        CallsMode::Off => None,
        CallsMode::All | CallsMode::Sample | CallsMode::Auto => {
            Some(Box::new(report::CallsCsv::create(out).map_err(|e| Failure::Failed(e.to_string()))?))
        }
    };
    // Drawn on stderr, and only when it is a terminal: logs and CI output stay clean.
    let bar = ProgressBar::new(scenario.duration.0.as_secs().max(1));
    bar.set_style(
        ProgressStyle::with_template(match engine {
            Engine::Sim => "{msg} [{bar:40}] {pos}/{len} s simulated, {elapsed} wall",
            Engine::Live => "{msg} [{bar:40}] {pos}/{len} s live",
        })
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar.set_message(scenario.name.clone());
    let mut tick = |now: Duration, _end: Duration| bar.set_position(now.as_secs());
    let result = match engine {
        Engine::Sim => world::run(scenario, String::new(), calls, &mut tick).map_err(|e| e.to_string()),
        Engine::Live => live::run(scenario, crate::live::this_binary().as_deref(), String::new(), calls, &mut tick)
            .map_err(|e| e.to_string()),
    };
    bar.finish_and_clear();
    result.map_err(Failure::Failed)
}

/// Writes a run's report into `out` and prints its one-screen summary. Returns the run and `scenario.toml`'s text.
pub(super) fn publish(
    scenario: &Scenario,
    out: &Path,
    reproduce: String,
    (mut run, wall): Executed,
) -> Result<(RunData, String), Failure> {
    run.reproduce = reproduce;
    report::write_run(out, &run, &wall, scenario.report.calls).map_err(|e| Failure::Failed(e.to_string()))?;
    let text = write_resolved(scenario, out)?;
    outln!("{}", console_summary(&run, &wall, out, scenario.report.calls))?;
    Ok((run, text))
}

/// `report.html`, the run's page, written last: it inlines the plots written before it.
pub(super) fn write_html(
    scenario: &Scenario,
    out: &Path,
    run: &RunData,
    text: &str,
    contrast: Option<(&RunData, &str)>,
) -> Result<(), Failure> {
    report::write_run_html(out, run, text, scenario.report.calls, contrast)
        .map(drop)
        .map_err(|e| Failure::Failed(e.to_string()))
}

/// Makes `out` ready for `command`'s report before anything runs (see [`report::dir`]): a bad `--out` — one that
/// cannot be written, or holds something other than an earlier report of the same command — is bad input, found
/// at once rather than after the whole simulation.
pub(super) fn check_out(out: &Path, command: Command) -> Result<(), Failure> {
    report::dir::prepare(out, command).map_err(|e| Failure::BadInput(e.to_string()))
}

/// Which attempts the run writes to `calls.csv`: `--calls`, else the scenario's `[report] calls`, `auto` resolved
/// for this run's estimated size.
pub(super) fn calls_mode(args: &SimArgs, scenario: &Scenario) -> CallsMode {
    args.calls.unwrap_or(scenario.report.calls).resolve(scenario::cost::estimate(scenario).calls)
}

/// `scenario.toml` in the run directory: the scenario exactly as run (every `--set` applied), so the run can be read
/// without the command line. Secrets are written as `[redacted]`, so this copy is for reading, not re-running.
fn write_resolved(scenario: &Scenario, out: &Path) -> Result<String, Failure> {
    let mut copy = scenario.clone();
    // TOML integers are i64; a larger seed (from --seed) is kept in the comment instead.
    let fits = i64::try_from(copy.seed).is_ok();
    if !fits {
        copy.seed = 0;
    }
    let text = toml::to_string(&copy).map_err(|e| Failure::Failed(format!("cannot write the scenario copy: {e}")))?;
    let head = format!(
        "# The scenario as run: every --set applied, secrets redacted. Seed {}{}.\n",
        scenario.seed,
        if fits { "" } else { " (too large for TOML: `seed = 0` below)" }
    );
    let path = out.join(report::dir::SCENARIO_COPY);
    let text = head + &text;
    std::fs::write(&path, &text).map_err(|e| Failure::Failed(format!("{}: {e}", path.display())))?;
    Ok(text)
}

pub(super) fn default_out(scenario: &Scenario, sets: &[String], engine: Engine) -> PathBuf {
    let prefix = if engine == Engine::Live { "live-" } else { "" };
    let mut leaf = format!("{prefix}seed-{}", scenario.seed);
    for s in sets {
        let clean: String =
            s.chars().map(|c| if c.is_ascii_alphanumeric() || "._=-".contains(c) { c } else { '_' }).collect();
        leaf.push('_');
        leaf.push_str(&clean);
    }
    PathBuf::from("reports").join(&scenario.name).join(leaf)
}

pub(super) fn reproduce_command(engine: Engine, path: &Path, seed: u64, sets: &[String]) -> String {
    let mut cmd = format!("mcpstorm {} {} --seed {seed}", engine.command(), path.display());
    for s in sets {
        cmd.push_str(&format!(" --set '{s}'"));
    }
    cmd
}
