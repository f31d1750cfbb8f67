//! Scenario files: the format ([`model`]), strict parsing with file:line:column errors, `--set` overrides, sweeps.

pub mod model;

pub use model::*;
