//! A replay's trace (`[load] trace`): its formats, read into rows with `file:line:column` errors, and the logical
//! calls a replay sends again (see `replay`, which reads it with the scenario).
//!
//! Two formats, told apart by the file's first line:
//! - `mcpstorm sim`'s `calls.csv` (a header naming `start_ms`, `server`, `tool` and `retries`; see
//!   `report::calls`): the start is `start_ms`, simulated time in µs;
//! - a gateway's `[history]` file: JSON lines of the core's `ServerCallRecord` (`mcpstorm gateway`). The start is
//!   `timestamp_ms`, the gateway's wall clock in ms: each replica's client keeps its own monotonic origin, so
//!   `start_offset_ns` of two replicas cannot be compared. Lines saying records were lost (`lost_records`) are
//!   skipped.
//!
//! Both hold one row per *attempt*. Only first attempts (`retries = 0`) are replayed: retries are the gateway's and
//! the agents' business, and the scenario's own models make them again. Each call keeps its start, relative to the
//! trace's earliest, its server and its tool.

use std::path::PathBuf;
use std::time::Duration;

use mcpstorm_core::history::ServerCallRecord;
use serde_json::Value;

use super::doc;
use super::{Location, Problem};

/// At most this many bad rows are reported (one mistake usually repeats on every row).
pub(super) const MAX_PROBLEMS: usize = 20;

/// The `calls.csv` columns a replay reads.
const COLUMNS: [&str; 4] = ["start_ms", "server", "tool", "retries"];

/// A trace, read and resolved against its scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// The file, as resolved (relative to the scenario's directory).
    pub path: PathBuf,
    pub format: TraceFormat,
    /// The logical calls, earliest first (ties in file order).
    pub calls: Vec<TraceCall>,
    /// Attempts in the file that were not first attempts, and so not replayed.
    pub retries_skipped: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    /// `calls.csv` from `mcpstorm sim`.
    CallsCsv,
    /// A gateway's `[history]` file.
    GatewayHistory,
}

/// One logical call of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceCall {
    /// Its start, after the trace's earliest, as recorded (not yet scaled by `load.speed`).
    pub offset: Duration,
    /// Its `[[load.mix]]` entry (its server, tool and arguments).
    pub entry: usize,
    /// Its line in the file.
    pub line: usize,
}

/// One attempt as a row gives it, before it is resolved.
pub(super) struct Row {
    pub(super) line: usize,
    /// µs since the format's origin.
    pub(super) start_us: u64,
    pub(super) server: String,
    pub(super) tool: String,
    pub(super) first: bool,
    /// Columns (1-based, in characters) of the server and tool fields, for errors.
    pub(super) at: (usize, usize),
}

pub(super) fn at(origin: &str, line: usize, column: usize, message: String) -> Problem {
    Problem { location: Location::File { origin: origin.to_owned(), line, column }, key: None, message }
}

/// The trace's rows, in file order, after its format is told from its first line.
pub(super) fn parse(text: &str, origin: &str) -> Result<(TraceFormat, Vec<Row>), Vec<Problem>> {
    let first = text.lines().next().unwrap_or_default();
    if first.trim_start().starts_with('{') {
        return history_rows(text, origin).map(|rows| (TraceFormat::GatewayHistory, rows));
    }
    if first.split(',').any(|c| c == "start_ms") {
        return csv_rows(text, origin).map(|rows| (TraceFormat::CallsCsv, rows));
    }
    let message = "not a trace: expected a calls.csv header (seq,start_ms,...,retries) from `mcpstorm sim`, or JSON \
                   lines of a gateway's call history"
        .to_owned();
    Err(vec![at(origin, 1, 1, message)])
}

/// Collects rows, or up to [`MAX_PROBLEMS`] problems.
#[derive(Default)]
struct Rows {
    rows: Vec<Row>,
    problems: Vec<Problem>,
}

impl Rows {
    fn fail(&mut self, origin: &str, line: usize, column: usize, message: String) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(at(origin, line, column, message));
        }
    }

    fn done(self) -> Result<Vec<Row>, Vec<Problem>> {
        if self.problems.is_empty() { Ok(self.rows) } else { Err(self.problems) }
    }
}

/// `calls.csv`: the header names the columns (in any order); every row has them all.
fn csv_rows(text: &str, origin: &str) -> Result<Vec<Row>, Vec<Problem>> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    let header: Vec<&str> =
        lines.next().map(|(_, l)| split_csv(l)).unwrap_or_default().into_iter().map(|f| f.1).collect();
    let mut out = Rows::default();
    let mut index = [0usize; 4];
    for (slot, name) in index.iter_mut().zip(COLUMNS) {
        match header.iter().position(|h| *h == name) {
            Some(i) => *slot = i,
            None => out.fail(origin, 1, 1, format!("the calls.csv header has no column `{name}`")),
        }
    }
    if !out.problems.is_empty() {
        return out.done();
    }
    let [start, server, tool, retries] = index;
    for (line, text) in lines.filter(|(_, l)| !l.trim().is_empty()) {
        let fields = split_csv(text);
        let Some(&last) = index.iter().max() else { continue };
        if fields.len() <= last {
            out.fail(origin, line, 1, format!("{} fields, the header has {}", fields.len(), header.len()));
            continue;
        }
        let (start, server, tool, retries) = (fields[start], fields[server], fields[tool], fields[retries]);
        let Some(start_us) = micros(start.1) else {
            out.fail(
                origin,
                line,
                start.0,
                format!("start_ms {:?} is not a number of ms (at most 3 decimals)", start.1),
            );
            continue;
        };
        let Ok(retries_n) = retries.1.parse::<u32>() else {
            out.fail(origin, line, retries.0, format!("retries {:?} is not a whole number", retries.1));
            continue;
        };
        let (first, at) = (retries_n == 0, (server.0, tool.0));
        out.rows.push(Row { line, start_us, server: server.1.to_owned(), tool: tool.1.to_owned(), first, at });
    }
    out.done()
}

/// A CSV line's fields with the column (1-based, in characters) each starts at; quotes removed (`calls.csv` quotes a
/// field holding a comma or a quote, doubling the quote). Servers and tools with quotes in their names are not
/// read back: the trace's fields are compared as written between the quotes.
fn split_csv(line: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let (mut column, mut rest) = (1, line);
    loop {
        let (field, width, next) = match rest.strip_prefix('"') {
            Some(quoted) => {
                let end = quoted.find("\",").map_or(quoted.len().saturating_sub(1), |i| i);
                let field = quoted.get(..end).unwrap_or(quoted);
                let after = quoted.get(end + 1..).unwrap_or("");
                (field, field.chars().count() + 2, after.strip_prefix(','))
            }
            None => match rest.split_once(',') {
                Some((field, after)) => (field, field.chars().count(), Some(after)),
                None => (rest, rest.chars().count(), None),
            },
        };
        out.push((column, field));
        let Some(next) = next else { return out };
        column += width + 1;
        rest = next;
    }
}

/// `123.456` ms as 123456 µs, exactly (no float): as `calls.csv` writes them.
fn micros(ms: &str) -> Option<u64> {
    let (whole, frac) = ms.split_once('.').unwrap_or((ms, ""));
    if whole.is_empty() || frac.len() > 3 || !(whole.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())) {
        return None;
    }
    let frac: u64 = format!("{frac:0<3}").parse().ok()?;
    whole.parse::<u64>().ok()?.checked_mul(1000)?.checked_add(frac)
}

/// A gateway's history: a `ServerCallRecord` per line; `lost_records` lines skipped.
fn history_rows(text: &str, origin: &str) -> Result<Vec<Row>, Vec<Problem>> {
    let mut out = Rows::default();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let n = i + 1;
        let record: ServerCallRecord = match serde_json::from_str(line) {
            Ok(r) => r,
            Err(e) => {
                let lost = serde_json::from_str::<Value>(line).ok().is_some_and(|v| v.get("lost_records").is_some());
                if !lost {
                    // serde_json counts the column in bytes; the file's columns count characters.
                    let column = doc::line_column(line, e.column().saturating_sub(1)).1;
                    out.fail(origin, n, column, format!("not a call record: {e}"));
                }
                continue;
            }
        };
        let Some(start_us) = record.timestamp_ms.checked_mul(1000) else {
            out.fail(origin, n, 1, format!("timestamp_ms {} is out of range", record.timestamp_ms));
            continue;
        };
        let at = (key_column(line, "server"), key_column(line, "tool"));
        let first = record.retries == 0;
        out.rows.push(Row { line: n, start_us, server: record.server, tool: record.tool, first, at });
    }
    out.done()
}

/// The column (1-based, in characters) of `"key":` in a JSON line, or 1.
fn key_column(line: &str, key: &str) -> usize {
    line.find(&format!("\"{key}\":")).map_or(1, |b| line.get(..b).map_or(0, |p| p.chars().count()) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_keep_their_columns_and_lose_their_quotes() {
        assert_eq!(split_csv("7,1.5,db-1,\"a,b\",0"), [(1, "7"), (3, "1.5"), (7, "db-1"), (12, "a,b"), (18, "0")]);
        assert_eq!(split_csv("é,\"x\""), [(1, "é"), (3, "x")]);
        assert_eq!(split_csv(""), [(1, "")]);
    }

    #[test]
    fn milliseconds_read_exactly_as_microseconds() {
        assert_eq!(micros("123.456"), Some(123_456));
        assert_eq!(micros("5"), Some(5_000));
        assert_eq!(micros("5.1"), Some(5_100));
        for bad in ["", ".5", "1.2345", "-1.000", "1e3", "x"] {
            assert_eq!(micros(bad), None, "{bad}");
        }
    }
}
