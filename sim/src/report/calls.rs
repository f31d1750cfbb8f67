//! `calls.csv`: the call history, one row per attempt (first tries and retries), in the order attempts finished;
//! with `[report] calls = "sample"`, only the attempts of the sampled logical calls.
//!
//! | column | meaning |
//! |---|---|
//! | `seq` | the attempt's position among all the run's attempts, from 0 (a sample skips the others' numbers) |
//! | `start_ms` | simulated time the attempt started, ms since the run began |
//! | `timestamp_ms` | the load host's wall clock at the start (`Clock` seam: simulated epoch plus host skew) |
//! | `server` | the replica called, e.g. `db-1` |
//! | `tool` | |
//! | `input_sha256`, `output_sha256` | SHA-256 of the canonical JSON of arguments and result (none without a result) |
//! | `duration_ms` | the attempt's own duration (not the logical call's latency from its intended start) |
//! | `status` | `success`, `timeout`, `error` or `rejected` |
//! | `code` | a protocol error's JSON-RPC code, a label otherwise (`deadline_exceeded`, `closed`, `tool_error`) |
//! | `retries` | attempts of the same logical call before this one |
//! | `retry_by` | who sent it again: `agent` (after its gateway call ended), `gateway` (within it); empty: a first try |
//!
//! With `[nodes]`, a node sees each of its agents' calls as a new call: `retry_by` there names the node's own retries
//! (`gateway`) and leaves an agent's retry empty.
//!
//! Times are written from whole microseconds with integer arithmetic, never through a float, so the file is
//! byte-identical across runs of the same seed. The file is streamed as attempts finish ([`CallsCsv`], the run's
//! [`CallSink`]), never held in memory: 160 to 190 bytes a row, 25 MB for `retry_storm`'s naive contrast run.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcpstorm_core::history::ServerCallRecord;

use super::error::ReportError;
use crate::run::{CallSink, CallSinkError, RetryBy};
use crate::scenario::CallsMode;

pub(crate) const CALLS: &str = "calls.csv";

/// What `calls.csv` holds under `mode`, and how to get every attempt when it does not hold them all: for the
/// console and `summary.md`.
pub(crate) fn kept(mode: CallsMode) -> &'static str {
    match mode {
        CallsMode::All | CallsMode::Auto => "calls.csv: every attempt",
        CallsMode::Sample => {
            "calls.csv: a sample, every attempt of one logical call in 100 (the full history: --calls all)"
        }
        CallsMode::Off => "no calls.csv (the full history: --calls all)",
    }
}

pub(crate) const CALLS_HEADER: [&str; 12] = [
    "seq",
    "start_ms",
    "timestamp_ms",
    "server",
    "tool",
    "input_sha256",
    "output_sha256",
    "duration_ms",
    "status",
    "code",
    "retries",
    "retry_by",
];

/// `calls.csv` being written: created with its header before the run, a row per record as attempts finish.
#[derive(Debug)]
pub struct CallsCsv {
    path: PathBuf,
    w: csv::Writer<BufWriter<File>>,
}

impl CallsCsv {
    /// Creates `calls.csv` in `dir` (created if missing) and writes its header.
    pub fn create(dir: &Path) -> Result<CallsCsv, ReportError> {
        std::fs::create_dir_all(dir).map_err(|source| ReportError::Io { path: dir.to_path_buf(), source })?;
        let path = dir.join(CALLS);
        let file = File::create(&path).map_err(|source| ReportError::Io { path: path.clone(), source })?;
        let mut w = csv::Writer::from_writer(BufWriter::new(file));
        w.write_record(CALLS_HEADER).map_err(|source| ReportError::Csv { path: path.clone(), source })?;
        Ok(CallsCsv { path, w })
    }
}

impl CallSink for CallsCsv {
    fn write(&mut self, record: &ServerCallRecord, by: RetryBy) -> Result<(), CallSinkError> {
        write_row(&mut self.w, record, by).map_err(|source| ReportError::Csv { path: self.path.clone(), source }.into())
    }

    fn finish(&mut self) -> Result<(), CallSinkError> {
        // The csv writer's buffer, then the file's.
        self.w.flush().map_err(|source| ReportError::Io { path: self.path.clone(), source }.into())
    }
}

pub(crate) fn write_row<W: Write>(w: &mut csv::Writer<W>, r: &ServerCallRecord, by: RetryBy) -> Result<(), csv::Error> {
    w.write_record([
        r.seq.to_string().as_str(),
        &exact_ms(r.start_offset),
        &r.timestamp_ms.to_string(),
        &r.server,
        &r.tool,
        &r.input_sha256.to_hex(),
        &r.output_sha256.map(|h| h.to_hex()).unwrap_or_default(),
        &exact_ms(r.duration),
        r.status.into(),
        &r.code.as_ref().map(ToString::to_string).unwrap_or_default(),
        &r.retries.to_string(),
        by.label(),
    ])
}

/// Milliseconds with three decimals, from whole microseconds (truncated), without floating point.
fn exact_ms(d: Duration) -> String {
    let us = d.as_micros();
    format!("{}.{:03}", us / 1000, us % 1000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpstorm_core::history::{CallCode, CallStatus};
    use mcpstorm_core::schema::ContentHash;
    use serde_json::json;

    #[test]
    fn rows_are_exact_and_quoted() {
        let ok = ServerCallRecord {
            seq: 7,
            timestamp_ms: 1_735_689_600_123,
            start_offset: Duration::from_nanos(123_456_789),
            server: "db-1".into(),
            tool: "get".into(),
            input_sha256: ContentHash::of(&json!({})),
            output_sha256: Some(ContentHash::of(&json!({}))),
            duration: Duration::from_micros(4_000_001),
            status: CallStatus::Success,
            code: None,
            retries: 0,
        };
        let failed = ServerCallRecord {
            seq: 8,
            tool: "a,b".into(),
            output_sha256: None,
            status: CallStatus::Error,
            code: Some(CallCode::Rpc(-32602)),
            retries: 2,
            duration: Duration::from_micros(999),
            ..ok.clone()
        };
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(CALLS_HEADER).unwrap();
        for (r, by) in [(ok, RetryBy::First), (failed, RetryBy::Agent)] {
            write_row(&mut w, &r, by).unwrap();
        }
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        let h = "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";
        assert_eq!(
            text,
            format!(
                "seq,start_ms,timestamp_ms,server,tool,input_sha256,output_sha256,duration_ms,status,code,retries,\
                 retry_by\n\
                 7,123.456,1735689600123,db-1,get,{h},{h},4000.001,success,,0,\n\
                 8,123.456,1735689600123,db-1,\"a,b\",{h},,0.999,error,-32602,2,agent\n"
            )
        );
    }
}
