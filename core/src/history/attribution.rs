//! Failure attribution: for a failed workflow, the last call that did not succeed and how its server was doing just
//! before it.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use strum::VariantArray;

use super::record::{CallCode, CallStatus, ServerCallRecord};

/// The last non-success in a history, its server, and that server's metrics in the window before it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FailureAttribution {
    /// The failed record itself.
    pub record: ServerCallRecord,
    /// The window the metrics cover: calls to the same server that started in
    /// `[record.start_offset - window, record.start_offset]` (monotonic offsets), the failure included.
    #[serde(rename = "window_ms", serialize_with = "as_ms")]
    pub window: Duration,
    pub server_metrics: WindowMetrics,
}

impl FailureAttribution {
    pub fn server(&self) -> &str {
        &self.record.server
    }

    pub fn tool(&self) -> &str {
        &self.record.tool
    }

    pub fn status(&self) -> CallStatus {
        self.record.status
    }

    pub fn code(&self) -> Option<&CallCode> {
        self.record.code.as_ref()
    }
}

/// One server's calls in a window.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct WindowMetrics {
    pub calls: u64,
    /// Calls that did not succeed (timeouts, errors and rejections).
    pub errors: u64,
    /// Calls by status, in [`CallStatus::VARIANTS`] order, zeros included.
    pub by_status: Vec<(CallStatus, u64)>,
    /// Nearest-rank P95 of the calls' durations (zero when there are none).
    #[serde(rename = "p95_duration_ms", serialize_with = "as_ms")]
    pub p95_duration: Duration,
    /// Codes of the failures, most frequent first, ties by code.
    pub codes: Vec<(CallCode, u64)>,
}

impl WindowMetrics {
    pub(crate) fn of<'a>(records: impl Iterator<Item = &'a ServerCallRecord>) -> WindowMetrics {
        let mut durations = Vec::new();
        let mut by_status: BTreeMap<CallStatus, u64> = CallStatus::VARIANTS.iter().map(|s| (*s, 0)).collect();
        let mut codes: BTreeMap<&CallCode, u64> = BTreeMap::new();
        for r in records {
            durations.push(r.duration);
            *by_status.entry(r.status).or_default() += 1;
            if let Some(code) = &r.code {
                *codes.entry(code).or_default() += 1;
            }
        }
        durations.sort_unstable();
        let calls = durations.len() as u64;
        let successes = by_status.get(&CallStatus::Success).copied().unwrap_or(0);
        let mut codes: Vec<(CallCode, u64)> = codes.into_iter().map(|(c, n)| (c.clone(), n)).collect();
        // Stable sort over a code-ordered list: ties keep code order.
        codes.sort_by_key(|c| std::cmp::Reverse(c.1));
        WindowMetrics {
            calls,
            errors: calls - successes,
            by_status: CallStatus::VARIANTS.iter().map(|s| (*s, by_status.get(s).copied().unwrap_or(0))).collect(),
            p95_duration: nearest_rank(&durations, 0.95),
            codes,
        }
    }
}

/// The nearest-rank quantile of sorted values: the smallest value with at least `q` of them at or below it.
fn nearest_rank(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn as_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_p95() {
        let ms = |v: &[u64]| v.iter().map(|m| Duration::from_millis(*m)).collect::<Vec<_>>();
        assert_eq!(nearest_rank(&[], 0.95), Duration::ZERO);
        assert_eq!(nearest_rank(&ms(&[7]), 0.95), Duration::from_millis(7));
        let hundred: Vec<u64> = (1..=100).collect();
        assert_eq!(nearest_rank(&ms(&hundred), 0.95), Duration::from_millis(95));
        let twenty: Vec<u64> = (1..=20).collect();
        assert_eq!(nearest_rank(&ms(&twenty), 0.95), Duration::from_millis(19));
        let twenty_one: Vec<u64> = (1..=21).collect();
        assert_eq!(nearest_rank(&ms(&twenty_one), 0.95), Duration::from_millis(20));
    }
}
