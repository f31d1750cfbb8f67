//! What a run keeps in memory while it is recorded: one bucket per simulated second (its row and the latencies its
//! percentiles come from). The call history is not kept: each attempt's record goes to disk as it finishes (see
//! [`CallSink`](super::CallSink)). The recorder fills the buckets; the run-cost estimate prices them before the run
//! starts, so both read the sizes from here.

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

/// One simulated second as the recorder collects it.
#[derive(Debug)]
pub struct SecondBucket {
    pub row: SecondRow,
    /// Latencies of the logical calls completed in the second, µs.
    pub hist: Histogram<u64>,
}

impl SecondBucket {
    /// The empty bucket of second `t`.
    pub fn new(t: u64) -> SecondBucket {
        SecondBucket { row: SecondRow { t, ..SecondRow::default() }, hist: latency_histogram(SECOND_SIGFIG) }
    }

    /// Bytes one bucket holds (its row and histogram counts): a long run's memory grows by this every second.
    pub fn bytes() -> usize {
        latency_histogram(SECOND_SIGFIG).distinct_values() * std::mem::size_of::<u64>()
            + std::mem::size_of::<SecondBucket>()
    }
}
