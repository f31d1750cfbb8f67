//! The router's tunables, each with the original router's value (or ours, argued) as the default.

use std::time::Duration;

/// Every default, in one place:
///
/// | field                      | default | why                                                                    |
/// |----------------------------|---------|------------------------------------------------------------------------|
/// | `check_interval`           | 15 s    | the original router's active health-check period                       |
/// | `check_timeout`            | 5 s     | a check that hangs is a failed check, not a stuck task                 |
/// | `failure_threshold`        | 3       | 3 consecutive failures set the weight to 0                             |
/// | `error_window`             | 5 min   | the original router's error-rate window; also the P95 window           |
/// | `window_buckets`           | 10      | 30 s buckets: expiry is exact to a bucket, updates stay O(1)           |
/// | `uptime_window`            | 24 h    | the original router's `uptime_24h`                                     |
/// | `uptime_buckets`           | 96      | 15 min buckets                                                         |
/// | `drift_drop`               | 0.15    | the drift rule: a score drop of more than 15% ...                      |
/// | `drift_window`             | 5 min   | ... within 5 min ...                                                   |
/// | `drift_penalty`            | 10 min  | ... halves the weight for 10 min                                       |
/// | `ewma_decay`               | 10 s    | Peak-EWMA's time constant (tower's and Finagle's default)              |
/// | `default_latency_p95`      | 1 s     | the latency a server that declares none is judged against              |
/// | `default_max_concurrent`   | 100     | the capacity of a server that declares none                            |
/// | `min_samples`              | 1       | calls in the window before its error rate and P95 count (else 0 / none) |
#[derive(Debug, Clone, PartialEq)]
pub struct RouterConfig {
    pub check_interval: Duration,
    pub check_timeout: Duration,
    pub failure_threshold: u32,
    pub error_window: Duration,
    pub window_buckets: u32,
    pub uptime_window: Duration,
    pub uptime_buckets: u32,
    pub drift_drop: f64,
    pub drift_window: Duration,
    pub drift_penalty: Duration,
    pub ewma_decay: Duration,
    pub default_latency_p95: Duration,
    pub default_max_concurrent: u32,
    pub min_samples: u64,
}

impl Default for RouterConfig {
    fn default() -> Self {
        RouterConfig {
            check_interval: Duration::from_secs(15),
            check_timeout: Duration::from_secs(5),
            failure_threshold: 3,
            error_window: Duration::from_secs(300),
            window_buckets: 10,
            uptime_window: Duration::from_secs(24 * 3600),
            uptime_buckets: 96,
            drift_drop: 0.15,
            drift_window: Duration::from_secs(300),
            drift_penalty: Duration::from_secs(600),
            ewma_decay: Duration::from_secs(10),
            default_latency_p95: Duration::from_secs(1),
            default_max_concurrent: 100,
            min_samples: 1,
        }
    }
}
