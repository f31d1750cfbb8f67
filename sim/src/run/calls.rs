//! Where a run's call history goes: one [`ServerCallRecord`] per attempt, handed over as the attempt finishes, so the
//! history is never held in memory however long the run. The world feeds a sink; the report's `calls.csv` writer is
//! the one the CLI gives it.

use std::fmt;

use mcpstorm_core::history::ServerCallRecord;

/// A sink's failure to keep a record (a full disk): the run stops writing to it and reports this at its end.
pub type CallSinkError = Box<dyn std::error::Error + Send + Sync>;

/// Takes a run's call records in the order attempts finish.
pub trait CallSink: Send + fmt::Debug {
    /// Keeps one attempt's record.
    fn write(&mut self, record: &ServerCallRecord) -> Result<(), CallSinkError>;

    /// The run is over: make everything written durable (flush).
    fn finish(&mut self) -> Result<(), CallSinkError>;
}
