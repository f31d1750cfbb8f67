//! The run cut into phases by its fault windows — before the first fault, during a fault, after the last — and the
//! resilience figures measured against them: retry amplification during the faults, healthy servers' P99 during
//! the faults against before, and how long goodput took to come back after the last fault.
//!
//! Only faults with a duration make windows (an instant schema drift or session purge has none). Per-second
//! figures use the seconds a window touches: `[floor(start), ceil(end))`.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::run::SecondRow;
use crate::scenario::{Scenario, resolve_target};

/// Share of the pre-fault goodput that counts as recovered.
pub const RECOVERED_SHARE: f64 = 0.95;
/// Consecutive seconds at or above it that make a recovery (one good second could be luck).
pub const RECOVERED_SECONDS: usize = 3;

#[derive(Debug, Clone, Default)]
pub struct Phases {
    /// Fault windows (start, end), in timeline order.
    windows: Vec<(Duration, Duration)>,
    /// Servers some fault targets (a replica target marks its whole server: its calls are not "healthy").
    targeted: BTreeSet<String>,
}

impl Phases {
    pub fn of(scenario: &Scenario) -> Phases {
        let mut windows = Vec::new();
        let mut targeted = BTreeSet::new();
        for f in &scenario.faults {
            if let Ok((s, _)) = resolve_target(&f.target, &scenario.servers) {
                targeted.insert(scenario.servers[s].name.clone());
            }
            if !f.kind.instant() && !f.duration.0.is_zero() {
                windows.push((f.start.0, f.start.0.saturating_add(f.duration.0)));
            }
        }
        Phases { windows, targeted }
    }

    pub fn has_windows(&self) -> bool {
        !self.windows.is_empty()
    }

    fn first_start(&self) -> Option<Duration> {
        self.windows.iter().map(|w| w.0).min()
    }

    fn last_end(&self) -> Option<Duration> {
        self.windows.iter().map(|w| w.1).max()
    }

    /// Whether calls to `server` are "healthy" ones: no fault targets it.
    pub fn healthy(&self, server: &str) -> bool {
        !self.targeted.contains(server)
    }

    /// Before the first fault window (false when there is none).
    pub fn before(&self, at: Duration) -> bool {
        self.first_start().is_some_and(|s| at < s)
    }

    /// Inside some fault window.
    pub fn during(&self, at: Duration) -> bool {
        self.windows.iter().any(|(s, e)| *s <= at && at < *e)
    }

    /// Whether per-second row `t` touches a fault window.
    fn second_during(&self, t: u64) -> bool {
        self.windows.iter().any(|(s, e)| s.as_secs() <= t && t < e.as_secs_f64().ceil() as u64)
    }

    /// Attempts per logical call over the seconds the fault windows touch (0 without windows or calls).
    pub fn amplification_during(&self, rows: &[SecondRow]) -> f64 {
        // Saturating: a count that could overflow is already meaningless, but must not panic a debug build.
        let add = |(a, o): (u64, u64), r: &SecondRow| (a.saturating_add(r.attempts), o.saturating_add(r.offered));
        let (attempts, offered) = rows.iter().filter(|r| self.second_during(r.t)).fold((0, 0), add);
        if offered == 0 { 0.0 } else { attempts as f64 / offered as f64 }
    }

    /// Seconds from the end of the last fault window (rounded up to a whole second) until the first of
    /// [`RECOVERED_SECONDS`] consecutive seconds whose ok count is at least [`RECOVERED_SHARE`] of the mean ok per
    /// second before the first fault (second 0, the warm-up, left out). `load_end` is the second the load stopped:
    /// seconds from there on are not judged. Never recovered: the seconds from the fault's end to `load_end`, plus
    /// one (so it exceeds any recovery the run could have shown). 0 without windows.
    pub fn recovery_s(&self, rows: &[SecondRow], load_end: Duration) -> f64 {
        let (Some(first), Some(last)) = (self.first_start(), self.last_end()) else { return 0.0 };
        let before: Vec<u64> = rows.iter().filter(|r| r.t >= 1 && r.t < first.as_secs()).map(|r| r.ok).collect();
        let baseline = if before.is_empty() {
            0.0
        } else {
            before.iter().fold(0u64, |sum, ok| sum.saturating_add(*ok)) as f64 / before.len() as f64
        };
        let from = last.as_secs_f64().ceil() as u64;
        let until = load_end.as_secs();
        let good = |t: u64| rows.get(t as usize).is_some_and(|r| r.ok as f64 >= RECOVERED_SHARE * baseline);
        let run = RECOVERED_SECONDS as u64;
        (from..until.saturating_sub(run - 1))
            .find(|&t| (t..t + run).all(good))
            .map_or((until.saturating_sub(from) + 1) as f64, |t| (t - from) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(ok: &[u64]) -> Vec<SecondRow> {
        ok.iter().enumerate().map(|(t, &ok)| SecondRow { t: t as u64, ok, ..SecondRow::default() }).collect()
    }

    fn window(start: u64, end: u64) -> Phases {
        Phases {
            windows: vec![(Duration::from_secs(start), Duration::from_secs(end))],
            targeted: BTreeSet::from(["db".to_owned()]),
        }
    }

    #[test]
    fn recovery_counts_from_the_fault_end_to_three_good_seconds_in_a_row() {
        // Baseline (seconds 1-2) 100 ok/s; fault 3-5; 96 at 5, a dip at 6, then good from 7.
        let r = rows(&[0, 100, 100, 10, 10, 96, 50, 95, 97, 99, 100]);
        assert_eq!(window(3, 5).recovery_s(&r, Duration::from_secs(11)), 2.0);
        // Good at once.
        let r = rows(&[0, 100, 100, 10, 10, 100, 100, 100, 100]);
        assert_eq!(window(3, 5).recovery_s(&r, Duration::from_secs(9)), 0.0);
    }

    #[test]
    fn never_recovering_reports_more_than_the_rest_of_the_load() {
        let r = rows(&[0, 100, 100, 10, 10, 50, 50, 50, 50]);
        assert_eq!(window(3, 5).recovery_s(&r, Duration::from_secs(9)), 5.0);
    }

    #[test]
    fn amplification_is_over_the_seconds_the_windows_touch() {
        let mut r = rows(&[0; 6]);
        for (row, (attempts, offered)) in r.iter_mut().zip([(10, 10), (10, 10), (30, 10), (50, 10), (10, 10), (10, 10)])
        {
            row.attempts = attempts;
            row.offered = offered;
        }
        let p = Phases { windows: vec![(Duration::from_millis(2500), Duration::from_millis(3200))], ..window(0, 0) };
        // Seconds 2 and 3: (30 + 50) / 20.
        assert_eq!(p.amplification_during(&r), 4.0);
        assert!(p.during(Duration::from_millis(2600)) && !p.during(Duration::from_millis(3200)));
        assert!(p.before(Duration::from_secs(2)) && !p.before(Duration::from_millis(2500)));
        assert!(p.healthy("api") && !p.healthy("db"));
    }
}
