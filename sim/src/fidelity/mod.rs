//! `mcpstorm fidelity`: the simulator against reality. The same scenario runs in the simulator and live (in real
//! time on this machine, through a [`LiveRunner`]) on each seed, and the two runs are compared row by row
//! ([`compare`]): whole-run ok calls, error rate, P50 and P99, and each fault window's onset and recovery
//! ([`timing`]), each against a tolerance from the scenario's `[fidelity]` table ([`tolerance`]); the per-second
//! series are set side by side and summarised. The report writers are in `report` (`write_fidelity`).
//!
//! Nothing here runs a live scenario itself: the live runner is given, so that a build without one says so instead
//! of judging anything, and so that tests can put a simulator run on both sides.

pub mod compare;
pub mod timing;
pub mod tolerance;

use std::time::Duration;

pub use compare::{BUSY_HOST, Comparison, Outcome, Row, SecondFigures, SecondPair, Unit, Verdict, compare};
pub use timing::Figure;
pub use tolerance::{Tolerance, Tolerances};

use serde::Serialize;

use crate::live::host_load::{CpuSample, HostLoad};
use crate::run::{FaultWindow, RunData, SecondRow};
use crate::scenario::{FidelitySpec, Scenario};

/// Runs a scenario live (in real time, on real sockets) and returns what happened, or why it could not.
pub type LiveRunner = dyn Fn(&Scenario) -> Result<RunData, String>;

/// Whether the host's load is read over each live run (`live::host_load`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostGauge {
    /// From `/proc`: the command line's live runs.
    Proc,
    /// Not read: a comparison of runs that are not real time (tests putting a simulator run on the live side) must
    /// not depend on what else the machine was doing.
    Off,
}

impl HostGauge {
    fn read(self) -> Option<CpuSample> {
        match self {
            HostGauge::Proc => CpuSample::now(),
            HostGauge::Off => None,
        }
    }
}

/// Every seed's comparison of one scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FidelityData {
    pub scenario: String,
    pub description: String,
    /// The tolerances the rows were judged by.
    pub tolerances: FidelitySpec,
    pub faults: Vec<FaultWindow>,
    pub seeds: Vec<Comparison>,
    /// The exact command that reproduces the comparison.
    pub reproduce: String,
    /// Each seed's per-second rows of the simulator and of the live run, for the overlay plot.
    #[serde(skip)]
    pub series: Vec<(Vec<SecondRow>, Vec<SecondRow>)>,
}

impl FidelityData {
    pub fn passed(&self) -> bool {
        self.seeds.iter().all(Comparison::passed)
    }

    /// The run's verdict: FAIL when a seed failed on a quiet host, else NOT JUDGED when a seed failed on a busy
    /// one, else PASS.
    pub fn outcome(&self) -> Outcome {
        let outcomes: Vec<Outcome> = self.seeds.iter().map(Comparison::outcome).collect();
        [Outcome::Fail, Outcome::NotJudged].into_iter().find(|o| outcomes.contains(o)).unwrap_or(Outcome::Pass)
    }

    /// One line per seed that did not pass: `seed 3: P99, onset: error_burst db`, and on a busy host `(not judged:
    /// ...)` after the rows, naming the host's load.
    pub fn failures(&self) -> Vec<String> {
        self.seeds
            .iter()
            .filter(|c| !c.passed())
            .map(|c| match (c.outcome(), c.host) {
                (Outcome::NotJudged, Some(h)) => format!(
                    "seed {}: {} (not judged: the host was busy during the live run, {})",
                    c.seed,
                    c.failed().join(", "),
                    host_line(&h)
                ),
                _ => format!("seed {}: {}", c.seed, c.failed().join(", ")),
            })
            .collect()
    }
}

/// A host's load for people: `other processes 41% of the CPU, steal 2%`.
pub fn host_line(h: &HostLoad) -> String {
    format!("other processes {:.0}% of the CPU, steal {:.0}%", h.others * 100.0, h.steal * 100.0)
}

#[derive(Debug, thiserror::Error)]
pub enum FidelityError {
    #[error("seed {seed}: the live run failed: {message}")]
    Live { seed: u64, message: String },
    #[error("seed {seed}: the simulator failed: {message}")]
    Sim { seed: u64, message: String },
}

/// Runs `scenario` on each of `seeds`, live first (through `live`; the longer and the likelier to fail) and then in
/// the simulator, and compares them; `gauge` says whether the host's load over each live run is read (a failure
/// on a busy host is not judged). `progress(seed, run)` is called before each run (`"live"` or `"sim"`).
pub fn run(
    scenario: &Scenario,
    seeds: &[u64],
    live: &LiveRunner,
    gauge: HostGauge,
    reproduce: String,
    progress: &mut dyn FnMut(u64, &str),
) -> Result<FidelityData, FidelityError> {
    let mut comparisons = Vec::with_capacity(seeds.len());
    let mut series = Vec::with_capacity(seeds.len());
    let mut faults = Vec::new();
    for &seed in seeds {
        let mut s = scenario.clone();
        s.seed = seed;
        progress(seed, "live");
        let before = gauge.read();
        let live_run = live(&s).map_err(|message| FidelityError::Live { seed, message })?;
        let host = before.zip(gauge.read()).and_then(|(a, b)| a.load_until(&b));
        progress(seed, "sim");
        let mut quiet = |_: Duration, _: Duration| {};
        let (sim_run, _) = crate::world::run(&s, String::new(), None, &mut quiet)
            .map_err(|e| FidelityError::Sim { seed, message: e.to_string() })?;
        comparisons.push(Comparison { host, ..compare(&s, &sim_run, &live_run) });
        faults.clone_from(&sim_run.faults);
        series.push((sim_run.seconds, live_run.seconds));
    }
    Ok(FidelityData {
        scenario: scenario.name.clone(),
        description: scenario.description.clone(),
        tolerances: scenario.fidelity.clone(),
        faults,
        seeds: comparisons,
        reproduce,
        series,
    })
}
