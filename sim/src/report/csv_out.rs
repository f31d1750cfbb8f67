//! `timeseries.csv` and `events.csv`, through serde: one row struct per file, its fields the columns in order.
//!
//! Every float is written with a fixed number of decimals (`#[serde(serialize_with)]`): the files are compared byte
//! for byte across runs, and a reader should not see `0.30000000000000004`.

use serde::{Serialize, Serializer};

use super::num::{fixed, ratio};
use crate::run::{EventRow, SecondRow};

pub(crate) const TIMESERIES: &str = "timeseries.csv";
pub(crate) const EVENTS: &str = "events.csv";

/// Decimals for latencies (ms): microsecond resolution.
const MS_DECIMALS: usize = 3;
/// Decimals for rates in `[0, 1]`.
const RATE_DECIMALS: usize = 4;

/// A row of `timeseries.csv`: [`SecondRow`]'s fields in declaration order, then the derived columns (`errors`,
/// `error_rate`, `amplification` = attempts / offered).
#[derive(Debug, Default, Serialize)]
struct TimeseriesRow {
    t: u64,
    offered: u64,
    completed: u64,
    ok: u64,
    err_protocol: u64,
    err_lifecycle: u64,
    err_transport: u64,
    err_local: u64,
    err_tool: u64,
    err_degraded: u64,
    err_auth: u64,
    #[serde(serialize_with = "latency")]
    p50_ms: f64,
    #[serde(serialize_with = "latency")]
    p95_ms: f64,
    #[serde(serialize_with = "latency")]
    p99_ms: f64,
    in_flight: u64,
    attempts: u64,
    retries: u64,
    stale_sends: u64,
    session_errors: u64,
    auth_errors: u64,
    rehandshakes: u64,
    renewals: u64,
    open_breakers: u64,
    degraded: u64,
    misroutes: u64,
    errors: u64,
    #[serde(serialize_with = "rate")]
    error_rate: f64,
    #[serde(serialize_with = "rate")]
    amplification: f64,
}

impl From<&SecondRow> for TimeseriesRow {
    fn from(r: &SecondRow) -> Self {
        TimeseriesRow {
            t: r.t,
            offered: r.offered,
            completed: r.completed,
            ok: r.ok,
            err_protocol: r.err_protocol,
            err_lifecycle: r.err_lifecycle,
            err_transport: r.err_transport,
            err_local: r.err_local,
            err_tool: r.err_tool,
            err_degraded: r.err_degraded,
            err_auth: r.err_auth,
            p50_ms: r.p50_ms,
            p95_ms: r.p95_ms,
            p99_ms: r.p99_ms,
            in_flight: r.in_flight,
            attempts: r.attempts,
            retries: r.retries,
            stale_sends: r.stale_sends,
            session_errors: r.session_errors,
            auth_errors: r.auth_errors,
            rehandshakes: r.rehandshakes,
            renewals: r.renewals,
            open_breakers: r.open_breakers,
            degraded: r.degraded,
            misroutes: r.misroutes,
            errors: r.errors(),
            error_rate: error_rate(r),
            amplification: r.amplification(),
        }
    }
}

fn latency<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&fixed(*x, MS_DECIMALS))
}

fn rate<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&fixed(*x, RATE_DECIMALS))
}

/// Failed logical calls over completed ones in one second, 0 when none completed.
pub(crate) fn error_rate(row: &SecondRow) -> f64 {
    ratio(row.errors(), row.completed)
}

pub(crate) fn timeseries(rows: &[SecondRow]) -> Result<Vec<u8>, csv::Error> {
    table(rows.iter().map(TimeseriesRow::from), TimeseriesRow::default())
}

pub(crate) fn events(rows: &[EventRow]) -> Result<Vec<u8>, csv::Error> {
    table(rows, &EventRow::default())
}

/// The rows under their header (serde's field names). serde writes the header with the first row, so a table with
/// no rows takes it from `blank`, whose own line is dropped.
fn table<T: Serialize>(rows: impl IntoIterator<Item = T>, blank: T) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut empty = true;
    for row in rows {
        w.serialize(row)?;
        empty = false;
    }
    if empty {
        w.serialize(blank)?;
    }
    let mut bytes = w.into_inner().map_err(|e| csv::Error::from(e.into_error()))?;
    if empty {
        let header_end = bytes.iter().position(|b| *b == b'\n').map_or(bytes.len(), |i| i + 1);
        bytes.truncate(header_end);
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(bytes: Vec<u8>) -> Vec<String> {
        let text = String::from_utf8(bytes).unwrap();
        text.lines().next().unwrap().split(',').map(str::to_owned).collect()
    }

    /// The columns must follow `SecondRow` as the simulator's engineer changes it: serde's view of the struct is
    /// the reference, then the derived columns.
    #[test]
    fn header_follows_second_row() {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.serialize(SecondRow::default()).unwrap();
        let mut expected = header(w.into_inner().unwrap());
        expected.extend(["errors", "error_rate", "amplification"].map(str::to_owned));
        assert_eq!(header(timeseries(&[SecondRow::default()]).unwrap()), expected);
        assert_eq!(expected.len(), 28);
    }

    #[test]
    fn a_table_without_rows_has_its_header() {
        assert_eq!(String::from_utf8(events(&[]).unwrap()).unwrap(), "t_ms,kind,target,detail\n");
        let text = String::from_utf8(timeseries(&[]).unwrap()).unwrap();
        assert!(text.starts_with("t,offered,") && text.ends_with(",errors,error_rate,amplification\n"), "{text}");
        assert_eq!(text.lines().count(), 1);
    }

    #[test]
    fn floats_have_fixed_decimals() {
        let row = SecondRow {
            t: 3,
            offered: 4,
            attempts: 6,
            completed: 3,
            ok: 2,
            err_tool: 1,
            err_degraded: 2,
            p99_ms: 0.1 + 0.2,
            ..SecondRow::default()
        };
        let text = String::from_utf8(timeseries(&[row]).unwrap()).unwrap();
        let line = text.lines().nth(1).unwrap();
        // err_tool 1 and err_degraded 2: three failed calls, each in its own column.
        assert_eq!(line, "3,4,3,2,0,0,0,0,1,2,0,0.000,0.000,0.300,0,6,0,0,0,0,0,0,0,0,0,3,1.0000,1.5000");
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
