//! The concurrency knee: one tool called with 1, 2, 4, … calls in flight, until the throughput stops growing.
//!
//! A scenario server has `workers`: calls beyond them queue. By Little's law a server with `w` workers and a
//! service time `s` serves at most `w / s` calls per second, so the workers a measured server behaves like are its
//! best throughput times the service time of a lone call. A server whose throughput still grows with every step
//! showed no knee within the sweep: its workers are unbounded as far as the measurement can say.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mcpstorm_core::McpClient;
use serde_json::Value;
use tokio::time::Instant;

use super::measure::{Ended, MeasureError, one_call};
use super::quantile;

/// One step of the sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub concurrency: usize,
    pub calls: u64,
    pub ok: u64,
    pub seconds: f64,
    /// Ok calls per second.
    pub throughput: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// The sweep and what it says.
#[derive(Debug, Clone, PartialEq)]
pub struct Knee {
    pub tool: String,
    pub steps: Vec<Step>,
    /// The workers a scenario server needs to saturate where this one did; `None`: no knee within the sweep.
    pub workers: Option<usize>,
}

/// A step whose throughput is under this share of the best so far is past the knee: the sweep stops.
const PAST_KNEE: f64 = 0.8;
/// A step still within this share of perfect scaling (c times a lone call's rate) has not reached the knee.
const STILL_SCALING: f64 = 0.85;

/// Calls in one step of `concurrency`: enough for every caller to make several, bounded.
pub fn step_calls(concurrency: usize, per_step: u64) -> u64 {
    per_step.max(4 * concurrency as u64)
}

/// Sweeps 1, 2, 4, … up to `max_concurrency` calls in flight of `tool`, `per_step` calls (at least four per caller)
/// each.
pub async fn sweep(
    client: &Arc<McpClient>,
    tool: &str,
    arguments: &Value,
    max_concurrency: usize,
    per_step: u64,
) -> Result<Knee, MeasureError> {
    let mut steps: Vec<Step> = Vec::new();
    let mut concurrency = 1;
    while concurrency <= max_concurrency {
        let step = run_step(client, tool, arguments, concurrency, step_calls(concurrency, per_step)).await?;
        let best = steps.iter().map(|s| s.throughput).fold(0.0, f64::max);
        let errors_dominate = step.ok * 2 < step.calls;
        steps.push(step);
        let last = &steps[steps.len() - 1];
        if errors_dominate || (best > 0.0 && last.throughput < best * PAST_KNEE) {
            break;
        }
        concurrency *= 2;
    }
    let workers = workers(&steps);
    Ok(Knee { tool: tool.to_owned(), steps, workers })
}

/// The workers the steps show (see the module's comment).
pub fn workers(steps: &[Step]) -> Option<usize> {
    let lone = steps.first().filter(|s| s.throughput > 0.0)?;
    let service_s = lone.concurrency as f64 / lone.throughput;
    let best = steps.iter().max_by(|a, b| a.throughput.total_cmp(&b.throughput))?;
    let last = steps.last()?;
    if last.throughput >= STILL_SCALING * last.concurrency as f64 * lone.throughput {
        return None;
    }
    // In range: a positive finite product, rounded, at least one.
    Some(((best.throughput * service_s).round() as usize).max(1))
}

async fn run_step(
    client: &Arc<McpClient>,
    tool: &str,
    arguments: &Value,
    concurrency: usize,
    calls: u64,
) -> Result<Step, MeasureError> {
    let claimed = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut callers = tokio::task::JoinSet::new();
    for _ in 0..concurrency {
        let (client, tool, arguments, claimed) = (client.clone(), tool.to_owned(), arguments.clone(), claimed.clone());
        callers.spawn(async move {
            let mut seen = Vec::new();
            while claimed.fetch_add(1, Ordering::Relaxed) < calls {
                seen.push(one_call(&client, &tool, &arguments).await?);
            }
            Ok::<_, MeasureError>(seen)
        });
    }
    let mut latencies = Vec::new();
    let mut ok = 0;
    while let Some(joined) = callers.join_next().await {
        // A caller task that panicked is a bug of ours; its calls count as unanswered.
        let Ok(ended) = joined else { continue };
        for e in ended? {
            if let Ended::Answered { ms, failed } = e {
                latencies.push(ms);
                ok += u64::from(failed.is_none());
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64().max(1e-9);
    latencies.sort_by(f64::total_cmp);
    Ok(Step {
        concurrency,
        calls,
        ok,
        seconds,
        throughput: ok as f64 / seconds,
        p50_ms: quantile(&latencies, 0.5),
        p99_ms: quantile(&latencies, 0.99),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(concurrency: usize, throughput: f64) -> Step {
        Step { concurrency, calls: 100, ok: 100, seconds: 1.0, throughput, p50_ms: 0.0, p99_ms: 0.0 }
    }

    #[test]
    fn the_best_throughput_times_a_lone_calls_service_time_gives_the_workers() {
        // 20 ms a call: 50/s alone; four workers saturate at 200/s.
        let steps = [step(1, 50.0), step(2, 100.0), step(4, 198.0), step(8, 200.0), step(16, 199.0)];
        assert_eq!(workers(&steps), Some(4));
    }

    #[test]
    fn a_throughput_that_still_scales_shows_no_knee() {
        let steps = [step(1, 50.0), step(2, 100.0), step(4, 199.0), step(8, 390.0)];
        assert_eq!(workers(&steps), None);
        assert_eq!(workers(&[]), None);
        assert_eq!(workers(&[step(1, 0.0)]), None);
    }

    #[test]
    fn every_caller_makes_several_calls() {
        assert_eq!(step_calls(1, 200), 200);
        assert_eq!(step_calls(256, 200), 1024);
    }
}
