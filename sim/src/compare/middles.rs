//! `mcpstorm compare --live --middles A,B,...`: one live scenario and seed through each middle (see
//! [`crate::live::middle`]), in alternating order, for several rounds. Live runs are not deterministic, so the rounds
//! are the spread; the order alternates (A B, then B A) so that neither middle always runs first on a machine whose
//! load drifts.
//!
//! What it gives: [`MiddlesData`], one row per middle with the figures measured without the middle's help (the
//! agents' calls, the attempts that reached the servers, the middle's CPU and memory), and the same runs as a
//! [`CompareData`] whose variants are the middles and whose "seeds" are the rounds, which `report::write_compare`
//! draws as it draws any comparison: one coloured line per middle over the fault bands.

use std::fmt::Write as _;

use serde::Serialize;

use super::{CompareData, RunSummary};
use crate::live::MiddleRun;
use crate::run::{FaultWindow, RunData, Totals};

/// One run through one middle.
#[derive(Debug, Clone, Serialize)]
pub struct MiddleRound {
    pub round: usize,
    pub totals: Totals,
    pub middle: MiddleRun,
    pub passed: bool,
    pub failed: Vec<String>,
}

/// Every round of every middle.
#[derive(Debug, Clone, Serialize)]
pub struct MiddlesData {
    pub scenario: String,
    pub seed: u64,
    pub middles: Vec<String>,
    /// `rounds[m]`: middle `m`'s runs, by round.
    pub rounds: Vec<Vec<MiddleRound>>,
    /// The middles asked for that this machine could not run, each with why.
    pub skipped: Vec<String>,
    pub reproduce: String,
    #[serde(skip)]
    pub seconds: Vec<Vec<Vec<crate::run::SecondRow>>>,
    #[serde(skip)]
    pub faults: Vec<FaultWindow>,
}

impl MiddlesData {
    pub fn new(scenario: &str, seed: u64, reproduce: String) -> MiddlesData {
        MiddlesData {
            scenario: scenario.to_owned(),
            seed,
            middles: Vec::new(),
            rounds: Vec::new(),
            skipped: Vec::new(),
            reproduce,
            seconds: Vec::new(),
            faults: Vec::new(),
        }
    }

    /// Adds `middle`'s run of round `round` (its slot is made on its first run).
    pub fn add(&mut self, round: usize, run: RunData, middle: MiddleRun) {
        let m = match self.middles.iter().position(|n| *n == middle.name) {
            Some(m) => m,
            None => {
                self.middles.push(middle.name.clone());
                self.rounds.push(Vec::new());
                self.seconds.push(Vec::new());
                self.middles.len() - 1
            }
        };
        if self.faults.is_empty() {
            self.faults = run.faults.clone();
        }
        let failed = run.checks.iter().filter(|c| !c.passed).map(|c| c.name.clone()).collect();
        let passed = run.passed();
        self.rounds[m].push(MiddleRound { round, totals: run.totals, middle, passed, failed });
        self.seconds[m].push(run.seconds);
    }

    /// The same runs as a comparison of variants (the middles) over "seeds" (the rounds), for the overlay plots and
    /// the paired tables `report::write_compare` writes.
    pub fn as_compare(&self) -> CompareData {
        let runs = self
            .rounds
            .iter()
            .zip(&self.seconds)
            .map(|(rounds, seconds)| {
                rounds
                    .iter()
                    .zip(seconds)
                    .map(|(r, s)| RunSummary {
                        seed: self.seed,
                        totals: r.totals.clone(),
                        seconds: s.clone(),
                        passed: r.passed,
                        failed: r.failed.clone(),
                    })
                    .collect()
            })
            .collect();
        let rounds = self.rounds.first().map_or(0, Vec::len);
        CompareData {
            scenario: self.scenario.clone(),
            labels: self.middles.clone(),
            seeds: vec![self.seed; rounds],
            runs,
            faults: self.faults.clone(),
            reproduce: self.reproduce.clone(),
        }
    }

    /// The table: one row per middle, each figure the mean over its rounds (with the range when there are several).
    pub fn table(&self) -> String {
        let mut s = String::from(
            "| middle | rounds | ok calls | errors | P99 | P99 during faults | healthy P99 ratio | attempts per call \
             at the servers (during faults) | middle CPU per call | peak memory |\n|---|---:|---:|---:|---:|---:|\
             ---:|---:|---:|---:|\n",
        );
        for (name, rounds) in self.middles.iter().zip(&self.rounds) {
            let col = |f: &dyn Fn(&MiddleRound) -> Option<f64>, fmt: &dyn Fn(f64) -> String| column(rounds, f, fmt);
            let count = |v: f64| format!("{v:.0}");
            let millis = |v: f64| format!("{v:.0} ms");
            let _ = writeln!(
                s,
                "| {name} | {} | {} | {} | {} | {} | {} | {} ({}) | {} | {} |",
                rounds.len(),
                col(&|r| Some(r.totals.ok as f64), &count),
                col(&|r| Some(r.totals.errors as f64), &count),
                col(&|r| Some(r.totals.p99_ms), &millis),
                col(&|r| r.totals.p99_during_fault_ms, &millis),
                col(&|r| r.totals.healthy_p99_ratio, &|v| format!("{v:.2}x")),
                col(&|r| Some(r.totals.amplification), &|v| format!("{v:.2}x")),
                col(&|r| r.totals.amplification_during_fault, &|v| format!("{v:.2}x")),
                col(&|r| r.middle.cpu_per_call_us(r.totals.offered), &|v| format!("{v:.0} µs")),
                col(&|r| r.middle.cost.measured.then_some(r.middle.cost.peak_rss_bytes as f64 / 1e6), &|v| {
                    format!("{v:.0} MB")
                }),
            );
        }
        s
    }

    /// `middles.md`: the table, what its columns mean, the checks each middle failed or was not judged on, and the
    /// reproduce line.
    pub fn markdown(&self) -> String {
        let mut s = format!(
            "# {}: middles under the same live run (seed {})\n\n{}\n{COLUMNS}\n",
            self.scenario,
            self.seed,
            self.table()
        );
        for (name, rounds) in self.middles.iter().zip(&self.rounds) {
            let failed: Vec<String> = rounds
                .iter()
                .filter(|r| !r.passed)
                .map(|r| format!("round {}: {}", r.round, r.failed.join(", ")))
                .collect();
            if !failed.is_empty() {
                let _ = writeln!(s, "- {name} failed the scenario's checks: {}", failed.join("; "));
            }
            if let Some(first) = rounds.first() {
                for skipped in &first.middle.skipped_checks {
                    let _ = writeln!(s, "- {skipped}");
                }
            }
        }
        for skipped in &self.skipped {
            let _ = writeln!(s, "- skipped: {skipped}");
        }
        let _ = writeln!(s, "\nreproduce: `{}`", self.reproduce);
        s
    }

    /// One line per middle that failed the scenario's checks in some round.
    pub fn failed_checks(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (name, rounds) in self.middles.iter().zip(&self.rounds) {
            let failing: Vec<&MiddleRound> = rounds.iter().filter(|r| !r.passed).collect();
            if let Some(first) = failing.first() {
                let checks = first.failed.join(", ");
                lines.push(format!("{name}: failed in {} of {} rounds ({checks})", failing.len(), rounds.len()));
            }
        }
        lines
    }
}

/// What the table's columns are.
const COLUMNS: &str = "Each figure is the mean over the rounds, with the lowest and highest in brackets when there \
were several. *ok calls* and *errors* are the agents' logical calls; P99 is their latency, over the whole run and \
over the calls that completed inside the fault windows; the *healthy P99 ratio* is the P99 of calls to servers no \
fault targets during the faults over their P99 before them. *Attempts per call at the servers* are the `tools/call` \
requests the fake servers received over the calls the agents offered, whoever sent them (the agents' retries and \
the middle's own); *middle CPU per call* is the user and system time of the middle's processes over the calls \
offered, and *peak memory* their most resident memory at once, both read from /proc.\n";

/// A column's cell: the mean over the rounds with a value, `[lowest–highest]` after it when there are several, `n/a`
/// when none has one.
fn column(rounds: &[MiddleRound], f: &dyn Fn(&MiddleRound) -> Option<f64>, fmt: &dyn Fn(f64) -> String) -> String {
    let values: Vec<f64> = rounds.iter().filter_map(f).filter(|v| v.is_finite()).collect();
    if values.is_empty() {
        return "n/a".to_owned();
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    if values.len() == 1 {
        return fmt(mean);
    }
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{} [{}–{}]", fmt(mean), fmt(lo), fmt(hi))
}

/// The order of the middles in round `round`: as given in even rounds, reversed in odd ones.
pub fn order(middles: usize, round: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..middles).collect();
    if round % 2 == 1 {
        order.reverse();
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_alternate_the_order() {
        assert_eq!(order(3, 0), [0, 1, 2]);
        assert_eq!(order(3, 1), [2, 1, 0]);
        assert_eq!(order(3, 2), [0, 1, 2]);
    }

    #[test]
    fn a_cell_is_the_mean_and_its_range() {
        let round = |ok: u64| MiddleRound {
            round: 0,
            totals: Totals { ok, ..Totals::default() },
            middle: MiddleRun {
                name: "x".into(),
                instances: 1,
                cost: crate::live::middle::usage::MiddleCost::default(),
                server_attempts: 0,
                server_attempts_per_second: Vec::new(),
                skipped_checks: Vec::new(),
            },
            passed: true,
            failed: Vec::new(),
        };
        let count = |v: f64| format!("{v:.0}");
        assert_eq!(column(&[round(10), round(20)], &|r| Some(r.totals.ok as f64), &count), "15 [10–20]");
        assert_eq!(column(&[round(10)], &|r| Some(r.totals.ok as f64), &count), "10");
        assert_eq!(column(&[round(10)], &|r| r.totals.p99_during_fault_ms, &count), "n/a");
    }
}
