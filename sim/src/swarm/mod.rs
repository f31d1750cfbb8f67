//! Swarm testing: for each seed, draw a fault timeline over the scenario's servers within its `[swarm]` bounds
//! ([`draw`]), run it under the default gateway and, as the baseline, the naive one, and check invariants instead
//! of expected numbers ([`invariants`]); shrink each failure to a small timeline that still breaks the same
//! invariant ([`shrink`]).
//!
//! The public API is what a user's own property test needs: [`run_seed`] (a scenario and a seed in, the runs and
//! their violations out), the invariants as functions, and, with the `proptest` feature, a strategy that draws fault
//! timelines ([`strategy::fault_timeline`]).

pub mod draw;
pub mod invariants;
pub mod shrink;
#[cfg(feature = "proptest")]
pub mod strategy;

use std::panic::{AssertUnwindSafe, catch_unwind};

use mcpstorm_core::session::GatewayProfile;

use crate::run::RunData;
use crate::scenario::Scenario;
use crate::world;
pub use draw::{DrawError, fault_timeline};
pub use invariants::Violation;

/// What a swarm run checks besides safety and liveness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Run the naive profile on the same seed and check the differential invariants.
    pub differential: bool,
    /// Check the scenario's own `[checks]` too.
    pub checks: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { differential: true, checks: false }
    }
}

/// One seed's runs and verdict.
#[derive(Debug, Clone)]
pub struct SwarmRun {
    /// The scenario as run: the seed and the fault timeline drawn for it.
    pub scenario: Scenario,
    /// The default profile's run (none if it panicked or the simulation failed).
    pub run: Option<RunData>,
    /// The naive profile's run on the same seed, the differential baseline.
    pub naive: Option<RunData>,
    /// Every violation found, safety first, then liveness, differential and the scenario's checks.
    pub violations: Vec<Violation>,
    /// Simulations this verdict took (1 or 2).
    pub simulations: usize,
}

impl SwarmRun {
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }

    /// The invariant a shrink keeps breaking: the first one violated.
    pub fn first(&self) -> Option<&Violation> {
        self.violations.first()
    }
}

/// `scenario` with seed `seed` and the fault timeline that seed draws.
pub fn case(scenario: &Scenario, seed: u64) -> Result<Scenario, DrawError> {
    let mut s = scenario.clone();
    s.seed = seed;
    s.faults = fault_timeline(scenario, seed)?;
    Ok(s)
}

/// Draws seed `seed`'s fault timeline for `scenario` and checks it with the default [`Options`].
pub fn run_seed(scenario: &Scenario, seed: u64) -> Result<SwarmRun, DrawError> {
    Ok(check(&case(scenario, seed)?, Options::default()))
}

/// Runs `scenario` as it is (its own seed and faults) and checks every invariant `options` asks for.
pub fn check(scenario: &Scenario, options: Options) -> SwarmRun {
    let mut violations = Vec::new();
    let run = simulate(scenario, &mut violations);
    let mut simulations = 1;
    let mut naive = None;
    if let Some(run) = &run {
        violations.extend(invariants::safety(scenario, run));
        violations.extend(invariants::liveness(scenario, run));
        if options.differential && scenario.gateway.profile != GatewayProfile::Naive {
            let mut baseline = scenario.clone();
            baseline.gateway.profile = GatewayProfile::Naive;
            // The naive baseline runs the core as shipped: without the planted defect the scenario may carry.
            #[cfg(feature = "testing")]
            {
                baseline.planted_leak = false;
            }
            simulations += 1;
            naive = simulate(&baseline, &mut Vec::new());
            if let Some(naive) = &naive {
                violations.extend(invariants::differential(scenario, run, naive));
            }
        }
        if options.checks {
            violations.extend(invariants::checks(run));
        }
    }
    SwarmRun { scenario: scenario.clone(), run, naive, violations, simulations }
}

/// One run, with a panic or a simulation error turned into a `panic` violation.
fn simulate(scenario: &Scenario, violations: &mut Vec<Violation>) -> Option<RunData> {
    let outcome = catch_unwind(AssertUnwindSafe(|| world::run(scenario, String::new(), None, &mut |_, _| {})));
    match outcome {
        Ok(Ok((run, _))) => Some(run),
        Ok(Err(e)) => {
            violations.push(Violation::new("panic", format!("the simulation failed: {e}")));
            None
        }
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            violations.push(Violation::new("panic", format!("the run panicked: {message}")));
            None
        }
    }
}
