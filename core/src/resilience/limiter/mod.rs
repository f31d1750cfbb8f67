//! Adaptive concurrency limits (Netflix concurrency-limits): how many calls a server gets at once, learned from what
//! its answers look like, instead of a number someone guessed.
//!
//! A [`Limiter`] is a pure strategy — RTT samples and drops in, the current limit out — and [`LimitedPool`] is the
//! permit source built on it (a per-server bulkhead: acquire within a queue-wait bound, the RAII permit feeds the
//! sample back when the call ends). Strategies:
//!
//! - [`Fixed`]: a static limit (a server's declared `max_concurrent_requests`, or configuration).
//! - [`Aimd`]: loss-based, as TCP Reno — additive increase while the pool is used, multiplicative decrease on a drop
//!   (a timeout, an overload error, or an RTT above the timeout). Simple and robust; needs drops to find the limit.
//! - [`Gradient2`]: delay-based — compares the recent RTT with a long-term average and shrinks the limit as queueing
//!   delay grows, before anything times out. This is "lower the limit when timeouts rise", done earlier.
//!
//! Each strategy documents its exact update rule. The limits are integers ≥ 1 and never exceed the strategy's
//! `max` — for a bulkhead, the server's hard cap — so adaptation can only ever shrink what the server declared.

mod aimd;
mod gradient2;
mod pool;

use std::fmt::Debug;
use std::time::Duration;

pub use aimd::{Aimd, AimdConfig};
pub use gradient2::{Gradient2, Gradient2Config};
pub use pool::{LimitPermit, LimitedPool, PoolTimeout, SampleOutcome};

/// One finished call, as a limiter sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// From permit to outcome.
    pub rtt: Duration,
    /// Calls in flight when this one started (itself included).
    pub in_flight: usize,
    /// It timed out or the server shed it: the loss signal.
    pub dropped: bool,
}

/// A concurrency-limit strategy. Pure: no clock, no locks, no randomness.
pub trait Limiter: Debug + Send {
    /// The current limit, at least 1.
    fn limit(&self) -> usize;
    /// Learns from one finished call; returns the new limit.
    fn on_sample(&mut self, sample: Sample) -> usize;
}

/// A limit that never moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fixed(pub usize);

impl Limiter for Fixed {
    fn limit(&self) -> usize {
        self.0.max(1)
    }

    fn on_sample(&mut self, _: Sample) -> usize {
        self.limit()
    }
}

/// Which strategy a pool uses; the pool's cap becomes the strategy's maximum.
#[derive(Debug, Clone, PartialEq)]
pub enum LimiterKind {
    Fixed,
    Aimd(AimdConfig),
    Gradient2(Gradient2Config),
}

impl LimiterKind {
    /// A limiter never above `cap` (at least 1).
    pub fn build(&self, cap: usize) -> Box<dyn Limiter> {
        let cap = cap.max(1);
        match self {
            LimiterKind::Fixed => Box::new(Fixed(cap)),
            LimiterKind::Aimd(c) => Box::new(Aimd::new(AimdConfig { max: c.max.min(cap), ..c.clone() })),
            LimiterKind::Gradient2(c) => Box::new(Gradient2::new(Gradient2Config { max: c.max.min(cap), ..c.clone() })),
        }
    }
}

/// `value` within `[min, max]`, with `min` raised to 1 and `max` to `min`: settings cannot make a limit of zero.
fn clamp_limit(value: f64, min: usize, max: usize) -> f64 {
    let min = min.max(1);
    value.clamp(min as f64, max.max(min) as f64)
}

#[cfg(test)]
mod tests;
