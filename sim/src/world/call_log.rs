//! The run's call history on its way out: which attempts go to the sink (`[report] calls`), their `seq`, and the
//! sink's first failure. Nothing is kept: a record is built (its result hashed) only when it will be written, and
//! handed to the sink at once.

use mcpstorm_core::history::ServerCallRecord;

use crate::run::{CallSink, CallSinkError, RetryBy};
use crate::scenario::{CALLS_SAMPLE_EVERY, CallsMode};

#[derive(Debug, Default)]
pub(super) struct CallLog {
    /// None: nothing is written (`calls = "off"`, no sink given, or the sink failed).
    sink: Option<Box<dyn CallSink>>,
    /// One logical call in this many is written.
    every: u64,
    /// Attempts finished so far, written or not: the next record's `seq`.
    seq: u64,
    /// The sink's first failure, reported when the run ends.
    error: Option<CallSinkError>,
}

impl CallLog {
    pub(super) fn new(sink: Option<Box<dyn CallSink>>, mode: CallsMode) -> CallLog {
        let (sink, every) = match mode {
            // `Auto` is resolved (`CallsMode::resolve`) by the command that hands over a sink; unresolved, every attempt.
            CallsMode::All | CallsMode::Auto => (sink, 1),
            CallsMode::Sample => (sink, CALLS_SAMPLE_EVERY),
            CallsMode::Off => (None, 1),
        };
        CallLog { sink, every, seq: 0, error: None }
    }

    /// One attempt of logical call number `logical` (in the order calls were offered), made `by` the agent or the
    /// gateway, finished: `record` builds its row, and is called only when the row is written.
    pub(super) fn attempt(&mut self, logical: u64, by: RetryBy, record: impl FnOnce() -> ServerCallRecord) {
        let seq = self.seq;
        self.seq += 1;
        let Some(sink) = self.sink.as_mut().filter(|_| logical % self.every == 0) else {
            return;
        };
        let record = ServerCallRecord { seq, ..record() };
        if let Err(e) = sink.write(&record, by) {
            self.error = Some(e);
            self.sink = None;
        }
    }

    /// The run is over: flushes the sink, or returns its first failure.
    pub(super) fn finish(&mut self) -> Result<(), CallSinkError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        match self.sink.as_mut() {
            Some(sink) => sink.finish(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use mcpstorm_core::history::CallStatus;
    use mcpstorm_core::schema::ContentHash;
    use serde_json::json;

    use super::*;

    /// Keeps (seq, retries) of what it is given; fails on the record whose `seq` is `fail_at`.
    #[derive(Debug, Default, Clone)]
    struct Kept {
        rows: Arc<Mutex<Vec<(u64, u32)>>>,
        fail_at: Option<u64>,
    }

    impl CallSink for Kept {
        fn write(&mut self, r: &ServerCallRecord, _: RetryBy) -> Result<(), CallSinkError> {
            if self.fail_at == Some(r.seq) {
                return Err("disk full".into());
            }
            self.rows.lock().unwrap().push((r.seq, r.retries));
            Ok(())
        }

        fn finish(&mut self) -> Result<(), CallSinkError> {
            Ok(())
        }
    }

    fn record(retries: u32) -> ServerCallRecord {
        ServerCallRecord {
            seq: u64::MAX,
            timestamp_ms: 0,
            start_offset: Duration::ZERO,
            server: "s".into(),
            tool: "t".into(),
            input_sha256: ContentHash::of(&json!({})),
            output_sha256: None,
            duration: Duration::ZERO,
            status: CallStatus::Error,
            code: None,
            retries,
        }
    }

    /// Logical calls 0..250, call `n` making `n % 3 + 1` attempts; returns how many records were built.
    fn feed(log: &mut CallLog) -> usize {
        let mut built = 0;
        for n in 0..250u64 {
            for retries in 0..(n % 3 + 1) as u32 {
                log.attempt(n, RetryBy::of(retries, 0), || {
                    built += 1;
                    record(retries)
                });
            }
        }
        built
    }

    #[test]
    fn all_writes_every_attempt_numbered_from_zero() {
        let sink = Kept::default();
        let mut log = CallLog::new(Some(Box::new(sink.clone())), CallsMode::All);
        let built = feed(&mut log);
        log.finish().unwrap();
        let rows = sink.rows.lock().unwrap();
        assert_eq!(rows.len(), built);
        assert!(rows.iter().enumerate().all(|(i, (seq, _))| *seq == i as u64));
    }

    #[test]
    fn sample_writes_every_attempt_of_calls_0_100_200_only() {
        let sink = Kept::default();
        let mut log = CallLog::new(Some(Box::new(sink.clone())), CallsMode::Sample);
        let built = feed(&mut log);
        // Attempts before call n: the sum of (k % 3 + 1) for k < n.
        let before = |n: u64| (0..n).map(|k| k % 3 + 1).sum::<u64>();
        let want: Vec<(u64, u32)> = [0u64, 100, 200]
            .iter()
            .flat_map(|&n| (0..(n % 3 + 1) as u32).map(move |r| (before(n) + u64::from(r), r)))
            .collect();
        assert_eq!(*sink.rows.lock().unwrap(), want);
        assert_eq!(built, want.len(), "records are built only for sampled calls");
    }

    #[test]
    fn off_or_no_sink_builds_no_record() {
        let sink = Kept::default();
        for mut log in [CallLog::new(Some(Box::new(sink.clone())), CallsMode::Off), CallLog::new(None, CallsMode::All)]
        {
            assert_eq!(feed(&mut log), 0);
            log.finish().unwrap();
        }
        assert!(sink.rows.lock().unwrap().is_empty());
    }

    #[test]
    fn a_failing_sink_stops_and_reports_at_the_end() {
        let sink = Kept { fail_at: Some(5), ..Kept::default() };
        let mut log = CallLog::new(Some(Box::new(sink.clone())), CallsMode::All);
        assert!(feed(&mut log) == 6, "nothing is built after the failure");
        assert_eq!(log.finish().unwrap_err().to_string(), "disk full");
        assert_eq!(sink.rows.lock().unwrap().len(), 5);
    }
}
