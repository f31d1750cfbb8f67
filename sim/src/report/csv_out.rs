//! `timeseries.csv` and `events.csv`.
//!
//! Written by hand rather than through serde so that every float has a fixed number of decimals: the files are
//! compared byte for byte across runs, and a reader should not see `0.30000000000000004`.

use super::num::{fixed, ratio};
use crate::run::{EventRow, SecondRow};

pub(crate) const TIMESERIES: &str = "timeseries.csv";
pub(crate) const EVENTS: &str = "events.csv";

/// Decimals for latencies (ms): microsecond resolution.
const MS_DECIMALS: usize = 3;
/// Decimals for rates in `[0, 1]`.
const RATE_DECIMALS: usize = 4;

/// The header of `timeseries.csv`: [`SecondRow`]'s fields in declaration order, then the derived columns (`errors`,
/// `error_rate`, `amplification` = attempts / offered).
pub(crate) const TIMESERIES_HEADER: [&str; 27] = [
    "t",
    "offered",
    "completed",
    "ok",
    "err_protocol",
    "err_lifecycle",
    "err_transport",
    "err_local",
    "err_tool",
    "err_auth",
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "in_flight",
    "attempts",
    "retries",
    "stale_sends",
    "session_errors",
    "auth_errors",
    "rehandshakes",
    "renewals",
    "open_breakers",
    "degraded",
    "misroutes",
    "errors",
    "error_rate",
    "amplification",
];

/// Failed logical calls over completed ones in one second, 0 when none completed.
pub(crate) fn error_rate(row: &SecondRow) -> f64 {
    ratio(row.errors(), row.completed)
}

pub(crate) fn timeseries(rows: &[SecondRow]) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(TIMESERIES_HEADER)?;
    for r in rows {
        let ints = [
            r.t,
            r.offered,
            r.completed,
            r.ok,
            r.err_protocol,
            r.err_lifecycle,
            r.err_transport,
            r.err_local,
            r.err_tool,
            r.err_auth,
        ];
        let mut rec: Vec<String> = ints.iter().map(u64::to_string).collect();
        rec.extend([r.p50_ms, r.p95_ms, r.p99_ms].iter().map(|x| fixed(*x, MS_DECIMALS)));
        let counts = [
            r.in_flight,
            r.attempts,
            r.retries,
            r.stale_sends,
            r.session_errors,
            r.auth_errors,
            r.rehandshakes,
            r.renewals,
            r.open_breakers,
            r.degraded,
            r.misroutes,
            r.errors(),
        ];
        rec.extend(counts.iter().map(u64::to_string));
        rec.push(fixed(error_rate(r), RATE_DECIMALS));
        rec.push(fixed(r.amplification(), RATE_DECIMALS));
        w.write_record(&rec)?;
    }
    finish(w)
}

pub(crate) fn events(rows: &[EventRow]) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(["t_ms", "kind", "target", "detail"])?;
    for e in rows {
        w.write_record([e.t_ms.to_string().as_str(), &e.kind, &e.target, &e.detail])?;
    }
    finish(w)
}

fn finish(w: csv::Writer<Vec<u8>>) -> Result<Vec<u8>, csv::Error> {
    w.into_inner().map_err(|e| csv::Error::from(e.into_error()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header must follow `SecondRow` as the simulator's engineer changes it: serde's view of the struct is
    /// the reference.
    #[test]
    fn header_follows_second_row() {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.serialize(SecondRow::default()).unwrap();
        let bytes = w.into_inner().unwrap();
        let text = String::from_utf8(bytes).unwrap();
        let serde_header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
        // The derived columns: errors, error_rate, amplification.
        assert_eq!(serde_header, TIMESERIES_HEADER[..TIMESERIES_HEADER.len() - 3]);
    }

    #[test]
    fn events_are_quoted() {
        let rows = vec![EventRow {
            t_ms: 5,
            kind: "fault_start".into(),
            target: "api".into(),
            detail: "latency x10, \"slow\"".into(),
        }];
        let text = String::from_utf8(events(&rows).unwrap()).unwrap();
        assert_eq!(text, "t_ms,kind,target,detail\n5,fault_start,api,\"latency x10, \"\"slow\"\"\"\n");
    }
}
