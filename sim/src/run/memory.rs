//! What a run keeps in memory while it is recorded: one row per simulated second, and the latency histograms of the
//! few seconds that can still receive a latency. The call history is not kept: each attempt's record goes to disk as
//! it finishes (see [`CallSink`](super::CallSink)). The recorder fills the series; the run-cost estimate prices it
//! before the run starts, so both read the sizes from here.

use std::collections::VecDeque;
use std::time::Duration;

use hdrhistogram::Histogram;

use super::SecondRow;

/// Significant digits of a second's latency histogram: two keeps hundreds of buckets small.
const SECOND_SIGFIG: u8 = 2;

/// Latency histogram in microseconds, up to an hour, with `sigfig` significant digits (three for a whole run).
pub fn latency_histogram(sigfig: u8) -> Histogram<u64> {
    match Histogram::new_with_bounds(1, 3_600_000_000, sigfig) {
        Ok(h) => h,
        Err(_) => unreachable!("constant histogram bounds are valid"),
    }
}

/// The per-second series of a run as the recorder collects it.
///
/// A second's latency percentiles are read from its histogram once no latency can arrive for it any more, and the
/// histogram is then reused for a later second: memory holds a row per second (a few hundred bytes) and a handful
/// of histograms (25 KB each) however long the run, and a long run does not touch fresh memory every second.
///
/// When that is: hosts run one after another within a tick, each from the tick's start to its end, so a latency
/// recorded at `at` means every later one is recorded at `at − tick` or after. Second `s` is finished once a latency
/// arrives at `(s + 1) s + lateness` or later, `lateness` being the tick.
#[derive(Debug)]
pub struct Seconds {
    rows: Vec<SecondRow>,
    /// The seconds that may still receive a latency, oldest first, with their histograms.
    open: VecDeque<(usize, Histogram<u64>)>,
    /// Finished histograms, reset, for the next seconds.
    spare: Vec<Histogram<u64>>,
    lateness: Duration,
}

impl Seconds {
    /// An empty series whose latencies arrive at most `lateness` out of order.
    pub fn new(lateness: Duration) -> Seconds {
        Seconds { rows: Vec::new(), open: VecDeque::new(), spare: Vec::new(), lateness }
    }

    /// Sets how far out of order latencies may arrive (before any is recorded).
    pub fn set_lateness(&mut self, lateness: Duration) {
        self.lateness = lateness;
    }

    /// The row of the second `at` falls in, made (with every row before it) if it is new.
    pub fn row(&mut self, at: Duration) -> &mut SecondRow {
        let t = at.as_secs() as usize;
        while self.rows.len() <= t {
            self.rows.push(SecondRow { t: self.rows.len() as u64, ..SecondRow::default() });
        }
        &mut self.rows[t]
    }

    /// Records a logical call's latency (µs) into the second `at` falls in, and finishes the seconds no later
    /// latency can reach.
    pub fn latency(&mut self, at: Duration, micros: u64) {
        let t = at.as_secs() as usize;
        self.row(at);
        let done = at.saturating_sub(self.lateness).as_secs() as usize;
        while self.open.front().is_some_and(|(s, _)| *s < done) {
            self.finish_oldest();
        }
        // Seconds open in order; a latency for a second already finished (the bound above says none comes) would
        // open it again and overwrite its percentiles with those of the late values alone.
        let at_index = self.open.iter().position(|(s, _)| *s >= t).unwrap_or(self.open.len());
        if self.open.get(at_index).is_none_or(|(s, _)| *s != t) {
            let hist = self.spare.pop().unwrap_or_else(|| latency_histogram(SECOND_SIGFIG));
            self.open.insert(at_index, (t, hist));
        }
        if let Some((_, hist)) = self.open.get_mut(at_index) {
            let _ = hist.record(micros);
        }
    }

    fn finish_oldest(&mut self) {
        let Some((t, mut hist)) = self.open.pop_front() else { return };
        if let Some(row) = self.rows.get_mut(t) {
            row.p50_ms = ms(&hist, 0.5);
            row.p95_ms = ms(&hist, 0.95);
            row.p99_ms = ms(&hist, 0.99);
        }
        hist.reset();
        self.spare.push(hist);
    }

    /// Every row, each second's percentiles filled in (0 for a second in which no call completed).
    pub fn finish(&mut self) -> Vec<SecondRow> {
        while !self.open.is_empty() {
            self.finish_oldest();
        }
        self.rows.clone()
    }

    /// Bytes the series grows by per simulated second (its row): the histograms do not grow with the run.
    pub fn bytes_per_second() -> usize {
        std::mem::size_of::<SecondRow>()
    }
}

/// A latency quantile of `h` in ms (0 when it is empty).
pub fn ms(h: &Histogram<u64>, q: f64) -> f64 {
    if h.is_empty() { 0.0 } else { h.value_at_quantile(q) as f64 / 1000.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn percentiles_match_a_histogram_per_second_kept_for_the_whole_run() {
        // Latencies arrive up to a tick (5 ms) out of order around each second's boundary, as hosts run one after
        // another within a tick.
        let tick = 5 * MS;
        let mut seconds = Seconds::new(tick);
        let mut kept: Vec<Histogram<u64>> = Vec::new();
        let mut at = Duration::ZERO;
        for i in 0..20_000u64 {
            at += MS / 2;
            // Every third latency comes from a host that ran earlier in the same tick.
            let when = if i % 3 == 0 { at.saturating_sub(tick / 2) } else { at };
            let micros = 1 + (i * 7919) % 400_000;
            seconds.latency(when, micros);
            let t = when.as_secs() as usize;
            while kept.len() <= t {
                kept.push(latency_histogram(SECOND_SIGFIG));
            }
            kept[t].record(micros).unwrap();
            assert!(seconds.open.len() <= 2, "only seconds a tick can still reach stay open");
        }
        seconds.row(at + 2 * Duration::from_secs(1)).offered += 1;
        let rows = seconds.finish();
        assert_eq!(rows.len(), 13);
        for (row, hist) in rows.iter().zip(&kept) {
            assert_eq!((row.p50_ms, row.p95_ms, row.p99_ms), (ms(hist, 0.5), ms(hist, 0.95), ms(hist, 0.99)));
        }
        assert!(rows[10].p99_ms > 0.0);
        assert_eq!(rows[12].p99_ms, 0.0, "a second without a completed call has no latency");
    }
}
