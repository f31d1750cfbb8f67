//! When a fault's effect begins (its *onset*) and when the run is back (its *recovery*), read from one run's
//! per-second series, so that the simulator's and the live run's can be set side by side.
//!
//! Both are judged against the run's own *pre-fault band*, over the seconds before the first fault (second 0, the
//! warm-up, left out):
//! - goodput, as [`world::phases`](crate::world::Phases) defines it for the `recovery_s` check: an open loop's share
//!   of offered calls served ok, a closed loop's ok calls per second; a second below
//!   [`RECOVERED_SHARE`](crate::world::RECOVERED_SHARE) of the pre-fault level is out of band;
//! - P99: a second whose P99 exceeds [`P99_FACTOR`] × the median pre-fault second's P99 plus [`P99_MARGIN_MS`] is
//!   out of band (a latency fault that every call outlasts leaves goodput alone).
//!
//! **Onset** is the first second, from the one the window starts in to the one after it ends, that is out of band:
//! a call is counted in the second it completes, so a fault's effect can show only when its window closes (calls
//! that waited it out). None when no such second: the fault had no visible effect.
//!
//! **Recovery** is the `recovery_s` check's measure ([`recovery_after`](crate::world::recovery_after)) applied from
//! this window's end: the first 3-second stretch back at 95% of the pre-fault goodput, given as seconds into the
//! run. Latency does not enter it, as it does not enter the check.

use serde::Serialize;

use crate::run::{FaultWindow, Recovery, SecondRow};
use crate::world::{baseline, below_baseline, recovery_after};

/// A second's P99 above this many times the median pre-fault second's (plus [`P99_MARGIN_MS`]) is out of band.
pub const P99_FACTOR: f64 = 2.0;
/// Added to the P99 band, so that a run whose calls take a millisecond or two is not out of band at 3 ms.
pub const P99_MARGIN_MS: f64 = 5.0;

/// A figure read from a run: a number (a total, or a moment as seconds into the run), or why there is none. In JSON,
/// the number or the reason as a string.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Figure {
    Num(f64),
    /// `no effect` (no onset), `never` (not back within the run), `n/a` (nothing to judge against).
    Missing(&'static str),
}

pub const NO_EFFECT: &str = "no effect";
pub const NEVER: &str = "never";
pub const NOT_JUDGED: &str = "n/a";

/// One run's onset and recovery of each fault window, in the windows' order.
#[derive(Debug, Clone, PartialEq)]
pub struct Timings {
    pub onset: Vec<Figure>,
    pub recovery: Vec<Figure>,
}

/// The timings of `faults` in `rows`; `open`: the load is an open loop; `load_end`: when the load stopped.
pub fn timings(rows: &[SecondRow], faults: &[FaultWindow], open: bool, load_end: f64) -> Timings {
    let first = faults.iter().map(|f| f.start_s).fold(f64::INFINITY, f64::min);
    if !first.is_finite() {
        return Timings { onset: Vec::new(), recovery: Vec::new() };
    }
    let first = first.max(0.0).floor() as u64;
    let goodput = baseline(rows, open, first);
    let p99_top = p99_band(rows, first);
    let out_of_band = |t: u64| {
        let slow = rows
            .get(t as usize)
            .is_some_and(|r| r.t == t && r.completed > 0 && p99_top.is_some_and(|top| r.p99_ms > top));
        slow || goodput.is_some_and(|level| below_baseline(rows, open, level, t))
    };
    let load_end = std::time::Duration::from_secs_f64(load_end.max(0.0));
    let mut onset = Vec::with_capacity(faults.len());
    let mut recovery = Vec::with_capacity(faults.len());
    for f in faults {
        let (from, to) = (f.start_s.max(0.0).floor() as u64, f.end_s.max(0.0).ceil() as u64);
        if goodput.is_none() && p99_top.is_none() {
            onset.push(Figure::Missing(NOT_JUDGED));
        } else {
            let seen = (from..=to).take_while(|t| (*t as usize) < rows.len()).find(|&t| out_of_band(t));
            onset.push(seen.map_or(Figure::Missing(NO_EFFECT), |t| Figure::Num(t as f64)));
        }
        recovery.push(match recovery_after(rows, open, first, to, load_end) {
            Recovery::After(s) => Figure::Num(to as f64 + s),
            Recovery::Never => Figure::Missing(NEVER),
            Recovery::NotJudged => Figure::Missing(NOT_JUDGED),
        });
    }
    Timings { onset, recovery }
}

/// The top of the P99 band: from the median P99 of the pre-fault seconds that completed calls (`None` without any).
fn p99_band(rows: &[SecondRow], first: u64) -> Option<f64> {
    let mut p99s: Vec<f64> = rows
        .iter()
        .filter(|r| r.t >= 1 && r.t < first && r.completed > 0)
        .map(|r| r.p99_ms)
        .filter(|p| p.is_finite())
        .collect();
    if p99s.is_empty() {
        return None;
    }
    p99s.sort_by(f64::total_cmp);
    let median = p99s[p99s.len() / 2];
    Some(median * P99_FACTOR + P99_MARGIN_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An open loop offering 100 calls a second, ok and P99 per second given.
    fn rows(series: &[(u64, f64)]) -> Vec<SecondRow> {
        let row = |(t, &(ok, p99)): (usize, &(u64, f64))| SecondRow {
            t: t as u64,
            offered: 100,
            completed: 100,
            ok,
            err_transport: 100 - ok,
            p99_ms: p99,
            ..SecondRow::default()
        };
        series.iter().enumerate().map(row).collect()
    }

    fn window(start: f64, end: f64) -> FaultWindow {
        FaultWindow { label: "error_burst db".into(), start_s: start, end_s: end }
    }

    #[test]
    fn an_error_burst_begins_when_goodput_drops_and_recovers_when_it_is_back() {
        let mut s = vec![(100, 10.0); 4];
        s.extend([(100, 10.0), (40, 10.0), (40, 10.0), (100, 10.0), (100, 10.0), (100, 10.0), (100, 10.0)]);
        let t = timings(&rows(&s), &[window(4.0, 7.0)], true, 11.0);
        assert_eq!(t.onset, vec![Figure::Num(5.0)], "second 4 was still in band");
        assert_eq!(t.recovery, vec![Figure::Num(7.0)]);
    }

    #[test]
    fn a_latency_fault_that_every_call_outlasts_begins_when_p99_leaves_its_band() {
        let mut s = vec![(100, 10.0); 5];
        // 2 × 10 + 5 = 25 ms is the band's top: 24 ms is noise, 300 ms is the fault.
        s.extend([(100, 24.0), (100, 300.0), (100, 300.0), (100, 10.0), (100, 10.0), (100, 10.0)]);
        let t = timings(&rows(&s), &[window(5.0, 8.0)], true, 11.0);
        assert_eq!(t.onset, vec![Figure::Num(6.0)]);
        assert_eq!(t.recovery, vec![Figure::Num(8.0)], "recovery is goodput's, as the recovery_s check's");
    }

    #[test]
    fn a_fault_without_effect_and_a_run_that_never_comes_back_say_so() {
        let calm = timings(&rows(&[(100, 10.0); 10]), &[window(4.0, 6.0)], true, 10.0);
        assert_eq!((calm.onset, calm.recovery), (vec![Figure::Missing(NO_EFFECT)], vec![Figure::Num(6.0)]));
        let mut s = vec![(100, 10.0); 4];
        s.extend([(0, 10.0); 6]);
        let down = timings(&rows(&s), &[window(4.0, 6.0)], true, 10.0);
        assert_eq!((down.onset, down.recovery), (vec![Figure::Num(4.0)], vec![Figure::Missing(NEVER)]));
        // A fault from the first second: no pre-fault band to judge against.
        let early = timings(&rows(&s), &[window(0.0, 2.0)], true, 10.0);
        assert_eq!(
            (early.onset, early.recovery),
            (vec![Figure::Missing(NOT_JUDGED)], vec![Figure::Missing(NOT_JUDGED)])
        );
        assert!(timings(&rows(&s), &[], true, 10.0).onset.is_empty());
    }
}
