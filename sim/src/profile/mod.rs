//! `mcpstorm profile`: a real MCP server measured into a scenario, so that "simulate *my* server" is one command.
//!
//! Three measurements, each bounded (the command refuses a non-loopback target unless its owner says so, and by
//! default calls only the tools the server marks read-only):
//! - per tool (`measure`): a run of calls one at a time: the latency distribution and the error rate, by kind;
//! - the concurrency knee (`knee`): the same call at 1, 2, 4, … in flight until the throughput stops growing, read
//!   as the number of workers a scenario server needs to behave alike;
//! - the schemas and annotations the server declares, copied as they are.
//!
//! `fit` picks each tool's latency shape (fixed, lognormal, or the measured quantiles as `dist = "empirical"` when
//! no parametric shape fits), and `write` turns it all into a scenario whose load repeats the measurement.

mod args;
mod fit;
mod knee;
pub mod measure;
mod write;

pub use args::sample_arguments;
pub use fit::{Shape, fit};
pub use knee::{Knee, Step, sweep};
pub use measure::{Errors, ToolProfile, measure};
pub use write::{Measured, NOT_NAMED, NOT_READ_ONLY, Upstream, config_scenario_text, knee_text, scenario_text};

/// Quantile `q` (0 to 1) of ascending `sorted`, linear between the two samples around it; 0 when empty.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    mcpstorm_fake::empirical_at(sorted, q)
}
