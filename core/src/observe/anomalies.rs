//! Peer-controlled anomalies (frames rejected, responses to ids never issued, notifications dropped for a full
//! queue) logged so that a peer cannot flood the log: a server that sends a million unsolicited notifications must
//! not write a million WARN lines. Per connection and kind, the 1st, 10th, 100th, 1,000th, ... occurrence is logged
//! with the running count and the first occurrence's detail, and the total when the connection closes: O(log n)
//! lines for n events, with nothing lost (the exact per-connection counts are also in `Connection::stats`).
//!
//! Powers of ten rather than a time-based rate limit: the log stays the same for the same input, whatever the
//! clock, and the first occurrence is always logged at once.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use super::ConnId;

/// What kind of anomaly, for the counts and the log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Anomaly {
    FrameRejected,
    UnknownResponse,
    NotificationDropped,
}

impl Anomaly {
    /// What the log line says was dropped.
    pub fn what(self) -> &'static str {
        match self {
            Anomaly::FrameRejected => "malformed frames rejected",
            Anomaly::UnknownResponse => "responses to ids this connection never issued dropped",
            Anomaly::NotificationDropped => "notifications dropped (queue full)",
        }
    }
}

/// Longest detail kept from the first occurrence: enough to recognise it, never the peer's megabytes.
const DETAIL_CHARS: usize = 160;

#[derive(Debug)]
struct Tally {
    count: u64,
    first: String,
}

/// Counts per (connection, kind) and says when to log; see the module docs.
#[derive(Debug, Default)]
pub struct AnomalyLog {
    tallies: Mutex<BTreeMap<(ConnId, Anomaly), Tally>>,
}

/// One log decision: the running count and the first occurrence's detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnomalyReport {
    pub anomaly: Anomaly,
    pub count: u64,
    pub first: String,
}

impl AnomalyLog {
    /// Counts one occurrence; `Some` when this one is to be logged (the count is 1, 10, 100, ...). `detail` is only
    /// evaluated for the first occurrence.
    pub fn count(&self, conn: ConnId, anomaly: Anomaly, detail: impl FnOnce() -> String) -> Option<AnomalyReport> {
        let mut tallies = self.tallies.lock().unwrap_or_else(PoisonError::into_inner);
        let tally = tallies.entry((conn, anomaly)).or_insert_with(|| Tally { count: 0, first: bounded(detail()) });
        tally.count = tally.count.saturating_add(1);
        is_power_of_ten(tally.count).then(|| AnomalyReport { anomaly, count: tally.count, first: tally.first.clone() })
    }

    /// The connection closed: its totals not logged yet (a count that is not a power of ten), and it is forgotten.
    pub fn close(&self, conn: ConnId) -> Vec<AnomalyReport> {
        let mut tallies = self.tallies.lock().unwrap_or_else(PoisonError::into_inner);
        let keys: Vec<(ConnId, Anomaly)> = tallies.range((conn, Anomaly::FrameRejected)..).map(|(k, _)| *k).collect();
        keys.into_iter()
            .take_while(|(c, _)| *c == conn)
            .filter_map(|key| tallies.remove(&key).map(|t| (key.1, t)))
            .filter(|(_, t)| !is_power_of_ten(t.count))
            .map(|(anomaly, t)| AnomalyReport { anomaly, count: t.count, first: t.first })
            .collect()
    }
}

fn is_power_of_ten(mut n: u64) -> bool {
    while n >= 10 && n % 10 == 0 {
        n /= 10;
    }
    n == 1
}

/// `text` cut to [`DETAIL_CHARS`] characters, control characters escaped: it came from the peer.
fn bounded(text: String) -> String {
    let mut out: String = text.chars().take(DETAIL_CHARS).flat_map(char::escape_default).collect();
    if text.chars().count() > DETAIL_CHARS {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_million_occurrences_log_seven_lines_and_the_close_logs_the_rest() {
        let log = AnomalyLog::default();
        let (a, b) = (ConnId(1), ConnId(2));
        let logged: Vec<u64> = (0..1_000_000)
            .filter_map(|i| log.count(a, Anomaly::NotificationDropped, || format!("first {i}")))
            .map(|r| r.count)
            .collect();
        assert_eq!(logged, [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000]);
        for _ in 0..12 {
            log.count(b, Anomaly::UnknownResponse, || "\u{1b}[2J".repeat(100));
        }
        let first = log.count(a, Anomaly::FrameRejected, || "x".into());
        assert_eq!(first.map(|r| r.count), Some(1));
        assert_eq!(log.close(a), [], "a's counts were all logged as they happened, except none pending");
        let rest = log.close(b);
        assert_eq!(rest.len(), 1);
        assert_eq!((rest[0].anomaly, rest[0].count), (Anomaly::UnknownResponse, 12));
        assert!(!rest[0].first.contains('\u{1b}') && rest[0].first.ends_with('…'), "{}", rest[0].first);
        assert_eq!(log.close(b), [], "forgotten after close");
    }
}
