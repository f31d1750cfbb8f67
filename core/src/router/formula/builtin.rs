//! The built-in formulas (see the table in the parent module for their arithmetic and why each exists).

use super::{Candidates, Choice, Formula};
use crate::router::score::health_score;
use crate::rt::SeededRng;

/// The linear weighted health score.
#[derive(Debug, Clone, Copy, Default)]
pub struct HealthWeighted;

impl Formula for HealthWeighted {
    fn name(&self) -> &str {
        "health_weighted"
    }

    fn decide(&mut self, candidates: &Candidates<'_>, _rng: &SeededRng, weights: &mut [f64]) -> Choice {
        for (w, s) in weights.iter_mut().zip(candidates.stats) {
            *w = health_score(s);
        }
        Choice::Weighted
    }
}

/// Each tool's candidates in turn. The cursor is per tool (a shared one would make each tool's rotation depend on
/// the others' traffic) and counts decisions, so a stable candidate set of n is visited once per n decisions.
#[derive(Debug, Clone, Default)]
pub struct RoundRobin {
    cursors: Vec<u64>,
}

impl Formula for RoundRobin {
    fn name(&self) -> &str {
        "round_robin"
    }

    fn decide(&mut self, candidates: &Candidates<'_>, _rng: &SeededRng, _weights: &mut [f64]) -> Choice {
        if self.cursors.len() <= candidates.key {
            // Grows once per new tool, never in the steady state.
            self.cursors.resize(candidates.key + 1, 0);
        }
        let cursor = &mut self.cursors[candidates.key];
        let pick = (*cursor % candidates.stats.len() as u64) as usize;
        *cursor = cursor.wrapping_add(1);
        Choice::Pick(pick)
    }
}

/// Uniform random.
#[derive(Debug, Clone, Copy, Default)]
pub struct RandomChoice;

impl Formula for RandomChoice {
    fn name(&self) -> &str {
        "random"
    }

    fn decide(&mut self, candidates: &Candidates<'_>, rng: &SeededRng, _weights: &mut [f64]) -> Choice {
        Choice::Pick(rng.below(candidates.stats.len() as u64) as usize)
    }
}

/// Fewest in-flight calls. Ties are broken uniformly (reservoir sampling, one pass): always taking the first would
/// send every burst to the same idle replica.
#[derive(Debug, Clone, Copy, Default)]
pub struct LeastOutstanding;

impl Formula for LeastOutstanding {
    fn name(&self) -> &str {
        "least_outstanding"
    }

    fn decide(&mut self, candidates: &Candidates<'_>, rng: &SeededRng, _weights: &mut [f64]) -> Choice {
        let mut best = 0;
        let mut ties = 0u64;
        for (i, s) in candidates.stats.iter().enumerate() {
            let current = candidates.stats[best].in_flight;
            if s.in_flight < current || i == 0 {
                best = i;
                ties = 1;
            } else if s.in_flight == current {
                ties += 1;
                if rng.below(ties) == 0 {
                    best = i;
                }
            }
        }
        Choice::Pick(best)
    }
}

/// Power of two choices by Peak-EWMA cost: `peak_ewma_ms · (in_flight + 1)`. Two distinct uniform draws, the
/// cheaper wins (ties: the first draw). One candidate is picked without drawing.
#[derive(Debug, Clone, Copy, Default)]
pub struct P2cPeakEwma;

impl P2cPeakEwma {
    /// The cost tower's `PeakEwma` load reports.
    pub fn load(s: &crate::router::CandidateStats) -> f64 {
        s.peak_ewma_ms * (s.in_flight + 1.0)
    }
}

impl Formula for P2cPeakEwma {
    fn name(&self) -> &str {
        "p2c_peak_ewma"
    }

    fn decide(&mut self, candidates: &Candidates<'_>, rng: &SeededRng, _weights: &mut [f64]) -> Choice {
        let n = candidates.stats.len() as u64;
        if n < 2 {
            return Choice::Pick(0);
        }
        let a = rng.below(n);
        let mut b = rng.below(n - 1);
        if b >= a {
            b += 1;
        }
        let (a, b) = (a as usize, b as usize);
        let pick = if Self::load(&candidates.stats[b]) < Self::load(&candidates.stats[a]) { b } else { a };
        Choice::Pick(pick)
    }
}

/// The highest linear health score, ties to the first.
#[derive(Debug, Clone, Copy, Default)]
pub struct BestScore;

impl Formula for BestScore {
    fn name(&self) -> &str {
        "best_score"
    }

    fn decide(&mut self, candidates: &Candidates<'_>, _rng: &SeededRng, _weights: &mut [f64]) -> Choice {
        let mut best = (0, f64::NEG_INFINITY);
        for (i, s) in candidates.stats.iter().enumerate() {
            let score = health_score(s);
            if score > best.1 {
                best = (i, score);
            }
        }
        Choice::Pick(best.0)
    }
}
