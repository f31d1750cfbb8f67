//! Paired comparisons: one scenario, several variants (routing formulas, gateway profiles, any `--set` key), many
//! seeds. On each seed every variant sees the same arrivals and the same fault timeline — the scenario and seed fix
//! both — so differences between variants are the variants' doing. Runs spread over all cores; each is a separate
//! deterministic simulation, and results are slotted by (variant, seed), so the output does not depend on which
//! thread finished first.

pub mod merge;
pub mod middles;
pub mod partial;
pub mod stats;

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};

use crate::run::{FaultWindow, RunData, SecondRow, Totals};
use crate::scenario::{self, Limits, Scenario, ScenarioError};
use crate::world::{self, SimError};
use stats::{Estimate, paired, win_shares};

/// One side of the comparison: a label and the overrides that make it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    pub label: String,
    pub sets: Vec<String>,
}

impl Variant {
    /// The variants that give `key` each of `values` (`--vary key --values a,b,c`).
    pub fn of_key(key: &str, values: &[String]) -> Vec<Variant> {
        values.iter().map(|v| Variant { label: v.clone(), sets: vec![format!("{key}={}", toml_value(v))] }).collect()
    }
}

/// A `--set` value: numbers and booleans as they are, anything else quoted as a TOML string.
fn toml_value(v: &str) -> String {
    if v.parse::<f64>().is_ok() || v == "true" || v == "false" || v.starts_with('"') {
        v.to_owned()
    } else {
        format!("{v:?}")
    }
}

/// Every run of a comparison, resolved (and so validated) before any starts: `runs[v][s]` is variant `v` on the
/// `s`-th seed.
#[derive(Debug)]
pub struct Plan {
    pub name: String,
    pub variants: Vec<Variant>,
    pub seeds: Vec<u64>,
    runs: Vec<Vec<Scenario>>,
}

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("variant {variant:?}: {source}")]
    Scenario { variant: String, source: ScenarioError },
    #[error("{0} defines a [sweep]; compare variants instead (--vary KEY --values ...)")]
    Sweep(String),
    #[error("compare needs at least two variants, got {0}")]
    TooFewVariants(usize),
    #[error("variant labels must be distinct: {0:?} appears twice")]
    DuplicateLabel(String),
    #[error("compare needs at least one seed")]
    NoSeeds,
}

impl Plan {
    /// Every run of the comparison, each loaded (and so validated, and held to `limits`) before any starts.
    pub fn load(
        path: &Path,
        base: &[String],
        variants: Vec<Variant>,
        seeds: Vec<u64>,
        limits: &Limits,
    ) -> Result<Plan, CompareError> {
        if variants.len() < 2 {
            return Err(CompareError::TooFewVariants(variants.len()));
        }
        if let Some(dup) = variants.iter().enumerate().find(|(i, v)| variants[..*i].iter().any(|w| w.label == v.label))
        {
            return Err(CompareError::DuplicateLabel(dup.1.label.clone()));
        }
        if seeds.is_empty() {
            return Err(CompareError::NoSeeds);
        }
        let mut runs = Vec::new();
        for v in &variants {
            let mut row = Vec::new();
            for seed in &seeds {
                let mut sets = base.to_vec();
                sets.extend(v.sets.iter().cloned());
                sets.push(format!("seed={seed}"));
                let s = scenario::load_file_with(path, &sets, limits)
                    .map_err(|source| CompareError::Scenario { variant: v.label.clone(), source })?;
                if s.sweep.is_some() {
                    return Err(CompareError::Sweep(path.display().to_string()));
                }
                row.push(s);
            }
            runs.push(row);
        }
        let name = runs[0][0].name.clone();
        Ok(Plan { name, variants, seeds, runs })
    }

    pub fn len(&self) -> usize {
        self.variants.len() * self.seeds.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What a comparison keeps of each run: its totals, its seconds (for the overlay plots) and its checks' verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    pub seed: u64,
    pub totals: Totals,
    pub seconds: Vec<SecondRow>,
    pub passed: bool,
    /// The names of the `[checks]` that failed, in the scenario's order (empty when `passed`).
    #[serde(default)]
    pub failed: Vec<String>,
}

/// A finished comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareData {
    pub scenario: String,
    pub labels: Vec<String>,
    pub seeds: Vec<u64>,
    /// `runs[v][s]`.
    pub runs: Vec<Vec<RunSummary>>,
    pub faults: Vec<FaultWindow>,
    pub reproduce: String,
}

/// Runs the plan on `jobs` threads; `done()` is called after each run (for a progress bar).
pub fn run(plan: &Plan, jobs: usize, reproduce: String, done: &(dyn Fn() + Sync)) -> Result<CompareData, SimError> {
    let all: Vec<usize> = (0..plan.seeds.len()).collect();
    let Runs { runs, faults } = run_seeds(plan, &all, jobs, done)?;
    let labels = plan.variants.iter().map(|v| v.label.clone()).collect();
    Ok(CompareData { scenario: plan.name.clone(), labels, seeds: plan.seeds.clone(), runs, faults, reproduce })
}

/// Every variant's runs on some of the plan's seeds.
#[derive(Debug, Clone, PartialEq)]
pub struct Runs {
    /// `runs[v][j]`: variant `v` on the `j`-th of the seeds asked for.
    pub runs: Vec<Vec<RunSummary>>,
    /// The fault windows of the first variant on the first seed asked for (what the plots shade).
    pub faults: Vec<FaultWindow>,
}

/// Runs every variant on the plan's seeds at `seed_indices` (each run slotted by variant and seed, so the result
/// does not depend on which thread finished first), on `jobs` threads.
pub fn run_seeds(plan: &Plan, seed_indices: &[usize], jobs: usize, done: &(dyn Fn() + Sync)) -> Result<Runs, SimError> {
    let seeds = seed_indices.len();
    let total = plan.variants.len() * seeds;
    let slots: Mutex<Vec<Option<Result<RunData, SimError>>>> = Mutex::new((0..total).map(|_| None).collect());
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, total.max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= total {
                        break;
                    }
                    let scenario = &plan.runs[i / seeds][seed_indices[i % seeds]];
                    let result = world::run(scenario, String::new(), None, &mut |_, _| {}).map(|(run, _)| run);
                    if let Ok(mut slots) = slots.lock() {
                        slots[i] = Some(result);
                    }
                    done();
                }
            });
        }
    });
    let slots = slots.into_inner().map_err(|_| SimError::Turmoil("a comparison worker panicked".into()))?;
    let mut runs: Vec<Vec<RunSummary>> = (0..plan.variants.len()).map(|_| Vec::with_capacity(seeds)).collect();
    let mut faults = Vec::new();
    for (i, slot) in slots.into_iter().enumerate() {
        let run = slot.ok_or_else(|| SimError::Turmoil(format!("run {i} never finished")))??;
        if i == 0 {
            faults = run.faults.clone();
        }
        let passed = run.passed();
        let failed = run.checks.iter().filter(|c| !c.passed).map(|c| c.name.clone()).collect();
        runs[i / seeds].push(RunSummary { seed: run.seed, totals: run.totals, seconds: run.seconds, passed, failed });
    }
    Ok(Runs { runs, faults })
}

/// A figure of a run the comparison tabulates: over the whole run, or over the calls that completed inside the
/// fault windows (NaN for a run without them).
#[derive(Debug, Clone, Copy)]
pub struct Metric {
    pub name: &'static str,
    pub lower_is_better: bool,
    pub get: fn(&Totals) -> f64,
}

pub const METRICS: [Metric; 8] = [
    Metric { name: "p99_ms", lower_is_better: true, get: |t| t.p99_ms },
    Metric { name: "success_rate", lower_is_better: false, get: success_rate },
    Metric { name: "error_rate", lower_is_better: true, get: |t| t.error_rate },
    Metric { name: "amplification", lower_is_better: true, get: |t| t.amplification },
    Metric { name: "goodput", lower_is_better: false, get: |t| t.ok_per_s },
    // The whole run averages a fault away over its calm seconds: a variant that spikes to 700 ms whenever a
    // fault is on can have a whole-run P99 level with one that never does. These do not.
    Metric { name: "fault_ok", lower_is_better: false, get: |t| t.ok_during_fault.map_or(f64::NAN, |n| n as f64) },
    Metric { name: "fault_p99_ms", lower_is_better: true, get: |t| t.p99_during_fault_ms.unwrap_or(f64::NAN) },
    Metric { name: "fault_error_rate", lower_is_better: true, get: |t| t.error_rate_during_fault.unwrap_or(f64::NAN) },
];

impl Metric {
    /// Whether the metric is over the fault windows only.
    pub fn in_faults(&self) -> bool {
        self.name.starts_with("fault_")
    }
}

/// Ok logical calls over offered ones (a lost call counts against it, unlike the error rate).
pub fn success_rate(t: &Totals) -> f64 {
    if t.offered == 0 { f64::NAN } else { t.ok as f64 / t.offered as f64 }
}

/// One metric across the comparison: each variant's estimate, its paired difference from the first variant, and
/// its share of wins.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricTable {
    pub metric: &'static str,
    pub lower_is_better: bool,
    pub estimates: Vec<Estimate>,
    /// `None` for the first variant (the baseline).
    pub vs_first: Vec<Option<Estimate>>,
    /// Each variant's share of seeds on which it was best alone, and tied for best (see [`stats::win_shares`]).
    pub wins: Vec<f64>,
    pub ties: Vec<f64>,
}

impl CompareData {
    pub fn values(&self, metric: &Metric) -> Vec<Vec<f64>> {
        self.runs.iter().map(|runs| runs.iter().map(|r| (metric.get)(&r.totals)).collect()).collect()
    }

    pub fn table(&self, metric: &Metric) -> MetricTable {
        let values = self.values(metric);
        let wins = win_shares(&values, metric.lower_is_better);
        MetricTable {
            metric: metric.name,
            lower_is_better: metric.lower_is_better,
            estimates: values.iter().map(|v| Estimate::of(v)).collect(),
            vs_first: values.iter().enumerate().map(|(i, v)| (i > 0).then(|| paired(&values[0], v))).collect(),
            wins: wins.won,
            ties: wins.tied,
        }
    }

    /// The metrics this comparison has values for: the fault-window ones only when some run had a fault window
    /// with calls completed in it.
    pub fn metrics(&self) -> impl Iterator<Item = &'static Metric> + '_ {
        let any = |m: &Metric| self.runs.iter().flatten().any(|r| (m.get)(&r.totals).is_finite());
        METRICS.iter().filter(move |m| !m.in_faults() || any(m))
    }

    /// One line per variant that failed any of its `[checks]` on any seed: how many seeds, and which check failed on
    /// which seeds (the first few). Empty when every run passed: the rule `compare`'s exit code follows.
    pub fn failed_checks(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (label, runs) in self.labels.iter().zip(&self.runs) {
            let failing = runs.iter().filter(|r| !r.passed).count();
            if failing == 0 {
                continue;
            }
            // Check name -> the seeds it failed on, in the order the checks first failed.
            let mut by_check: Vec<(&str, Vec<u64>)> = Vec::new();
            for r in runs {
                for name in &r.failed {
                    match by_check.iter_mut().find(|(n, _)| n == name) {
                        Some((_, seeds)) => seeds.push(r.seed),
                        None => by_check.push((name, vec![r.seed])),
                    }
                }
            }
            let checks: Vec<String> =
                by_check.iter().map(|(name, seeds)| format!("{name} ({})", seed_list(seeds))).collect();
            let checks = if checks.is_empty() { String::new() } else { format!(": {}", checks.join(", ")) };
            lines.push(format!("{label}: failed on {failing} of {} seeds{checks}", runs.len()));
        }
        lines
    }

    /// Share of each variant's runs whose `[checks]` passed.
    pub fn pass_rates(&self) -> Vec<f64> {
        self.runs.iter().map(|r| r.iter().filter(|r| r.passed).count() as f64 / r.len().max(1) as f64).collect()
    }
}

/// `seed 3` or `seeds 1, 2, 5`, the first five and then how many more.
fn seed_list(seeds: &[u64]) -> String {
    const SHOWN: usize = 5;
    let shown: Vec<String> = seeds.iter().take(SHOWN).map(u64::to_string).collect();
    let more = if seeds.len() > SHOWN { format!(" and {} more", seeds.len() - SHOWN) } else { String::new() };
    format!("seed{} {}{more}", if seeds.len() == 1 { "" } else { "s" }, shown.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_become_toml() {
        let v = Variant::of_key("gateway.profile", &["naive".into(), "3".into(), "true".into()]);
        let sets: Vec<&str> = v.iter().map(|v| v.sets[0].as_str()).collect();
        assert_eq!(sets, ["gateway.profile=\"naive\"", "gateway.profile=3", "gateway.profile=true"]);
    }
}
