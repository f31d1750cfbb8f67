//! Report writers: CSV, summaries and plots for one run or a sweep.

pub mod data;

pub use data::*;
