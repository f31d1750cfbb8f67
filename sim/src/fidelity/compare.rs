//! One seed's comparison: the simulator's run and the live run of the same scenario, row by row — the whole-run
//! totals and each fault window's onset and recovery, judged against the tolerances; and the per-second series,
//! set side by side and summarised (shown, not judged: one second of a Poisson load swings by about √rate, in
//! reality as in the simulator, so a per-second verdict would fail on noise alone).

use serde::Serialize;

use super::timing::{Figure, timings};
use super::tolerance::{Tolerance, Tolerances};
use crate::live::host_load::HostLoad;
use crate::run::{RunData, SecondRow};
use crate::scenario::{LoadMode, Scenario};

/// What a row's figures measure, for how they read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Calls,
    /// A share (0.25 reads as 25.00%).
    Share,
    Ms,
    /// Seconds into the run.
    Seconds,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Verdict {
    Pass,
    Fail,
    /// Shown for reading, not judged.
    Info,
}

/// One line of the table: a figure of each run, their difference and what may separate them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub name: String,
    pub unit: Unit,
    pub sim: Figure,
    pub live: Figure,
    /// `sim - live`, when both are numbers.
    pub difference: Option<f64>,
    /// The tolerance (`None` for a row shown but not judged).
    pub tolerance: Option<Tolerance>,
    pub verdict: Verdict,
}

/// One second's figures of one run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct SecondFigures {
    pub offered: u64,
    pub ok: u64,
    pub errors: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

impl SecondFigures {
    fn of(row: Option<&SecondRow>) -> SecondFigures {
        row.map_or_else(SecondFigures::default, |r| SecondFigures {
            offered: r.offered,
            ok: r.ok,
            errors: r.errors(),
            p50_ms: finite(r.p50_ms),
            p99_ms: finite(r.p99_ms),
        })
    }
}

/// One second of both runs (a run that ended earlier counts zeros).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SecondPair {
    pub t: u64,
    pub sim: SecondFigures,
    pub live: SecondFigures,
}

/// How much of the machine's CPU the live run could not have (other processes' and the hypervisor's share) above
/// which a failed comparison is not judged: the live run was slowed by its host, not by anything the simulator
/// models. A host that slows a live run enough to fail it reads far above a quarter, and a quiet one far below it,
/// so a quarter tells them apart with room for a quiet host's background work. The runs the bound rests on, with
/// their readings, are in docs/fidelity.md ("A busy host").
pub const BUSY_HOST: f64 = 0.25;

/// A seed's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Pass,
    Fail,
    /// A row failed while the host was busy ([`BUSY_HOST`]): the live run is no reference. Run it again on a
    /// quieter machine.
    NotJudged,
}

impl Outcome {
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Pass => "PASS",
            Outcome::Fail => "FAIL",
            Outcome::NotJudged => "NOT JUDGED",
        }
    }
}

/// One seed's comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub seed: u64,
    /// The judged rows (totals, then each fault window's onset and recovery), then the per-second summaries.
    pub rows: Vec<Row>,
    pub seconds: Vec<SecondPair>,
    /// The host's load over the live run, where it could be read.
    pub host: Option<HostLoad>,
}

impl Comparison {
    pub fn outcome(&self) -> Outcome {
        if self.rows.iter().all(|r| r.verdict != Verdict::Fail) {
            Outcome::Pass
        } else if self.busy_host() {
            Outcome::NotJudged
        } else {
            Outcome::Fail
        }
    }

    pub fn passed(&self) -> bool {
        self.outcome() == Outcome::Pass
    }

    /// Whether the live run's host was too busy for it to be a reference ([`BUSY_HOST`]).
    pub fn busy_host(&self) -> bool {
        self.host.is_some_and(|h| h.taken() > BUSY_HOST)
    }

    /// The names of the rows that failed.
    pub fn failed(&self) -> Vec<&str> {
        self.rows.iter().filter(|r| r.verdict == Verdict::Fail).map(|r| r.name.as_str()).collect()
    }
}

/// Compares the simulator's run `sim` of `scenario` with its live run `live`, under the scenario's `[fidelity]`
/// tolerances.
pub fn compare(scenario: &Scenario, sim: &RunData, live: &RunData) -> Comparison {
    let tol = Tolerances::of(&scenario.fidelity);
    let (s, l) = (&sim.totals, &live.totals);
    let mut rows = vec![
        judged("ok calls", Unit::Calls, s.ok as f64, l.ok as f64, tol.ok_calls),
        judged("error rate", Unit::Share, s.error_rate, l.error_rate, tol.error_rate),
        judged("P50", Unit::Ms, s.p50_ms, l.p50_ms, tol.latency),
        judged("P99", Unit::Ms, s.p99_ms, l.p99_ms, tol.latency),
    ];
    let open = scenario.load.mode == LoadMode::Open;
    let load_end = |run: &RunData| scenario.duration.0.as_secs_f64().min(run.sim_seconds);
    // Both runs play the scenario's timeline: the simulator's windows are the scenario's.
    let faults = &sim.faults;
    let (ts, tl) =
        (timings(&sim.seconds, faults, open, load_end(sim)), timings(&live.seconds, faults, open, load_end(live)));
    for (i, f) in faults.iter().enumerate() {
        rows.push(moment(format!("onset: {}", f.label), &ts.onset[i], &tl.onset[i], tol.onset));
        rows.push(moment(format!("recovery: {}", f.label), &ts.recovery[i], &tl.recovery[i], tol.recovery));
    }
    let len = sim.seconds.len().max(live.seconds.len());
    let at = |rows: &[SecondRow], t: usize| SecondFigures::of(rows.get(t));
    let seconds: Vec<SecondPair> =
        (0..len).map(|t| SecondPair { t: t as u64, sim: at(&sim.seconds, t), live: at(&live.seconds, t) }).collect();
    rows.extend(per_second(&seconds));
    Comparison { seed: sim.seed, rows, seconds, host: None }
}

fn finite(v: f64) -> f64 {
    if v.is_finite() { v } else { 0.0 }
}

fn judged(name: &str, unit: Unit, sim: f64, live: f64, tolerance: Tolerance) -> Row {
    let (sim, live) = (finite(sim), finite(live));
    Row {
        name: name.to_owned(),
        unit,
        sim: Figure::Num(sim),
        live: Figure::Num(live),
        difference: Some(sim - live),
        tolerance: Some(tolerance),
        verdict: if tolerance.admits(sim, live) { Verdict::Pass } else { Verdict::Fail },
    }
}

/// An onset or recovery row: two times within the tolerance, or the same reason for none in both.
fn moment(name: String, sim: &Figure, live: &Figure, tolerance: Tolerance) -> Row {
    let (difference, pass) = match (sim, live) {
        (Figure::Num(s), Figure::Num(l)) => (Some(s - l), tolerance.admits(*s, *l)),
        (Figure::Missing(a), Figure::Missing(b)) => (None, a == b),
        _ => (None, false),
    };
    let verdict = if pass { Verdict::Pass } else { Verdict::Fail };
    Row {
        name,
        unit: Unit::Seconds,
        sim: sim.clone(),
        live: live.clone(),
        difference,
        tolerance: Some(tolerance),
        verdict,
    }
}

/// The per-second series summarised, one row per figure: each run's mean per second, and the mean of the
/// per-second absolute differences (latency over the seconds in which both runs completed calls).
fn per_second(seconds: &[SecondPair]) -> Vec<Row> {
    type Pick = fn(&SecondFigures) -> f64;
    let figures: [(&str, Unit, Pick, bool); 5] = [
        ("offered", Unit::Calls, |f| f.offered as f64, false),
        ("ok", Unit::Calls, |f| f.ok as f64, false),
        ("errors", Unit::Calls, |f| f.errors as f64, false),
        ("P50", Unit::Ms, |f| f.p50_ms, true),
        ("P99", Unit::Ms, |f| f.p99_ms, true),
    ];
    figures
        .iter()
        .map(|&(name, unit, pick, latency)| {
            // A second without completed calls has no latency to compare.
            let used: Vec<&SecondPair> = seconds
                .iter()
                .filter(|p| !latency || (p.sim.ok + p.sim.errors > 0 && p.live.ok + p.live.errors > 0))
                .collect();
            let n = used.len().max(1) as f64;
            let mean = |f: &dyn Fn(&SecondPair) -> f64| used.iter().map(|p| f(p)).sum::<f64>() / n;
            Row {
                name: format!("per second: {name} (mean |difference|)"),
                unit,
                sim: Figure::Num(mean(&|p| pick(&p.sim))),
                live: Figure::Num(mean(&|p| pick(&p.live))),
                difference: Some(mean(&|p| (pick(&p.sim) - pick(&p.live)).abs())),
                tolerance: None,
                verdict: Verdict::Info,
            }
        })
        .collect()
}
