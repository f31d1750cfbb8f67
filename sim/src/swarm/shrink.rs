//! Shrinking a failure: greedy, deterministic reduction of a failing scenario to a smaller one that still breaks the
//! *same* invariant. Each pass tries, in order: dropping a fault, shortening one, moving it to the earliest start,
//! weakening it, cutting the run's duration to what the faults need, and halving the load; the first candidate that
//! still fails is kept and the passes start over, until none helps or the run budget is spent. The same failure
//! always shrinks to the same result: candidates come in a fixed order and every run is deterministic.

use std::time::Duration;

use super::draw::tail;
use super::invariants::{Violation, spec};
use super::{Options, check};
use crate::scenario::{self, Dur, Fault, LoadMode, Scenario};

/// A shrunk failure.
#[derive(Debug, Clone)]
pub struct Shrunk {
    pub scenario: Scenario,
    /// The violation the shrunk scenario shows (same invariant as the original).
    pub violation: Violation,
    /// Candidate scenarios checked while shrinking (each one or two simulations).
    pub runs: usize,
    pub simulations: usize,
}

/// Shrinks `failing` (which breaks `violation.invariant`) with at most `budget` candidate checks.
pub fn shrink(failing: &Scenario, violation: &Violation, options: Options, budget: usize) -> Shrunk {
    let mut best = Shrunk { scenario: failing.clone(), violation: violation.clone(), runs: 0, simulations: 0 };
    // The differential baseline is needed only to keep a differential failure.
    let options = Options { differential: options.differential && is_differential(&violation.invariant), ..options };
    'passes: loop {
        for candidate in candidates(&best.scenario) {
            if best.runs >= budget {
                break 'passes;
            }
            if scenario::validate(&candidate, "shrink").is_err() {
                continue;
            }
            let verdict = check(&candidate, options);
            best.runs += 1;
            best.simulations += verdict.simulations;
            if let Some(v) = verdict.violations.iter().find(|v| v.invariant == violation.invariant) {
                best.scenario = candidate;
                best.violation = v.clone();
                continue 'passes;
            }
        }
        break;
    }
    best
}

fn is_differential(invariant: &str) -> bool {
    matches!(invariant, "failures" | "healthy_p99" | "ok_calls")
}

/// Every smaller neighbour of `s`, the biggest reductions first.
fn candidates(s: &Scenario) -> Vec<Scenario> {
    let mut out = Vec::new();
    let with = |f: &dyn Fn(&mut Scenario)| {
        let mut c = s.clone();
        f(&mut c);
        c
    };
    for i in 0..s.faults.len() {
        if s.faults.len() > 1 {
            out.push(with(&|c| {
                c.faults.remove(i);
            }));
        }
    }
    let warmup = spec(s).warmup.0;
    for i in 0..s.faults.len() {
        let f = &s.faults[i];
        let shorter = whole_ms(f.duration.0 / 2);
        if !f.kind.instant() && shorter >= Duration::from_millis(100) {
            out.push(with(&|c| c.faults[i].duration = Dur(shorter)));
        }
        if f.start.0 > warmup {
            out.push(with(&|c| c.faults[i].start = Dur(warmup)));
            out.push(with(&|c| c.faults[i].start = Dur(whole_ms((f.start.0 + warmup) / 2))));
        }
        if let Some(weaker) = weaker(f) {
            out.push(with(&|c| c.faults[i] = weaker.clone()));
        }
    }
    // The run: only as long as its faults and the liveness tail need, then the load halved.
    let bounds = spec(s);
    let faults_end = s.faults.iter().map(|f| f.start.0 + f.duration.0).max().unwrap_or_default();
    let needed = faults_end.max(bounds.warmup.0 + bounds.min_fault.0) + tail(&bounds);
    let shorter = Duration::from_secs(needed.as_secs_f64().ceil() as u64);
    if shorter < s.duration.0 {
        out.push(with(&|c| c.duration = Dur(shorter)));
    }
    match s.load.mode {
        LoadMode::Open => {
            let rate = s.load.rate.unwrap_or(1.0);
            if rate >= 2.0 {
                out.push(with(&|c| c.load.rate = Some((rate / 2.0).round())));
            }
        }
        LoadMode::Closed => {
            let sessions = s.load.sessions.unwrap_or(1);
            if sessions >= 2 {
                out.push(with(&|c| c.load.sessions = Some(sessions / 2)));
            }
        }
        // A replay's load is its trace's: not halved.
        LoadMode::Replay => {}
    }
    out
}

/// The fault at half strength, or none when it is already at its weakest (or has no strength to lower).
fn weaker(f: &Fault) -> Option<Fault> {
    let mut w = f.clone();
    let mut changed = false;
    if let Some(rate) = f.rate.filter(|r| *r > 0.1) {
        w.rate = Some(((rate / 2.0) * 100.0).round() / 100.0);
        changed = true;
    }
    if let Some(m) = f.multiplier.filter(|m| *m > 1.1) {
        w.multiplier = Some(((1.0 + (m - 1.0) / 2.0) * 100.0).round() / 100.0);
        changed = true;
    }
    if let Some(extra) = f.extra.filter(|e| e.0 >= Duration::from_millis(2)) {
        w.extra = Some(Dur(whole_ms(extra.0 / 2)));
        changed = true;
    }
    changed.then_some(w)
}

fn whole_ms(d: Duration) -> Duration {
    Duration::from_millis(d.as_millis() as u64)
}
