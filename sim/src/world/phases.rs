//! The run cut into phases by its fault windows — before the first fault, during a fault, after the last — and the
//! resilience figures measured against them: retry amplification during the faults, healthy servers' P99 during
//! the faults against before, and how long goodput took to come back after the last fault.
//!
//! Only faults with a duration make windows (an instant schema drift or session purge has none). Per-second
//! figures use the seconds a window touches: `[floor(start), ceil(end))`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::run::{Recovery, SecondRow};
use crate::scenario::{Scenario, resolve_target, server_host};

/// Share of the pre-fault goodput that counts as recovered.
pub const RECOVERED_SHARE: f64 = 0.95;
/// Seconds judged together (one good second could be luck, and one second of an open loop is noisy).
pub const RECOVERED_SECONDS: usize = 3;

#[derive(Debug, Clone, Default)]
pub struct Phases {
    /// Fault windows (start, end), in timeline order.
    windows: Vec<(Duration, Duration)>,
    /// Servers some fault targets (a replica target marks its whole server: its calls are not "healthy").
    targeted: BTreeSet<String>,
    /// The fault windows on each replica host (a fault on a whole server is on each of its replicas).
    on_replica: BTreeMap<String, Vec<(Duration, Duration)>>,
}

impl Phases {
    pub fn of(scenario: &Scenario) -> Phases {
        let mut phases = Phases::default();
        for f in &scenario.faults {
            let window = (f.start.0, f.start.0.saturating_add(f.duration.0));
            let lasting = !f.kind.instant() && !f.duration.0.is_zero();
            if lasting {
                phases.windows.push(window);
            }
            let Ok((s, replica)) = resolve_target(&f.target, &scenario.servers) else { continue };
            let server = &scenario.servers[s];
            phases.targeted.insert(server.name.clone());
            let replicas = replica.map_or(0..server.replicas, |r| r..r + 1);
            for r in replicas.filter(|_| lasting) {
                phases.on_replica.entry(server_host(&server.name, r)).or_default().push(window);
            }
        }
        phases
    }

    /// Whether an ok attempt on replica host `replica`, sent at `sent` and answered at `answered`, was *waited
    /// out*: sent inside a fault window on that replica (or its whole server) and answered once the window had
    /// ended. Such a call was served only because the fault happened to end while it waited, which a causal
    /// gateway cannot know; the swarm's `ok_calls` oracle does not count them.
    pub fn waited_out(&self, replica: &str, sent: Duration, answered: Duration) -> bool {
        let windows = self.on_replica.get(replica).map_or(&[][..], Vec::as_slice);
        windows.iter().any(|&(start, end)| start <= sent && sent < end && end <= answered)
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

    /// Attempts per logical call over the seconds the fault windows touch (`None` without windows, or without
    /// calls offered in them).
    pub fn amplification_during(&self, rows: &[SecondRow]) -> Option<f64> {
        // Saturating: a count that could overflow is already meaningless, but must not panic a debug build.
        let add = |(a, o): (u64, u64), r: &SecondRow| (a.saturating_add(r.attempts), o.saturating_add(r.offered));
        let (attempts, offered) = rows.iter().filter(|r| self.second_during(r.t)).fold((0, 0), add);
        (offered > 0).then(|| attempts as f64 / offered as f64)
    }

    /// How long goodput took to come back after the last fault window: the one measure of recovery (the console,
    /// the summaries, the `recovery_s` check and the swarm's liveness invariant all read it).
    ///
    /// Goodput is judged over [`RECOVERED_SECONDS`] seconds at a time, from the end of the last window (rounded up
    /// to a whole second), against its level before the first fault (second 0, the warm-up, left out); recovered at
    /// the first stretch at ≥ [`RECOVERED_SHARE`] of it. An open loop's (`open`) level is its ok calls as a share of
    /// the calls offered in those seconds: its arrivals are Poisson, so raw ok/s swings by about √rate from second
    /// to second, and a 95% bar on it fails on noise alone. A closed loop's is ok calls per second (its offered load
    /// follows its own latency). Stretches reaching past `load_end` (when the load stopped) are not judged; a load
    /// that stopped less than [`RECOVERED_SECONDS`] after the last fault is judged over the seconds left.
    /// [`Recovery::NotJudged`] without windows, without an ok call before the first fault, or without a whole second
    /// of load after the last fault.
    pub fn recovery(&self, rows: &[SecondRow], open: bool, load_end: Duration) -> Recovery {
        let (Some(first), Some(last)) = (self.first_start(), self.last_end()) else { return Recovery::NotJudged };
        recovery_after(rows, open, first.as_secs(), last.as_secs_f64().ceil() as u64, load_end)
    }
}

/// Ok calls and calls offered over the rows of seconds `[from, to)`, saturating.
fn sums(rows: &[SecondRow], from: u64, to: u64) -> (u64, u64) {
    let rows = rows.iter().filter(|r| r.t >= from && r.t < to);
    rows.fold((0u64, 0u64), |(ok, offered), r| (ok.saturating_add(r.ok), offered.saturating_add(r.offered)))
}

/// Goodput's level over `seconds` seconds that served `ok` of `offered` calls: an open loop's share of offered calls
/// served, a closed loop's ok calls per second (see [`Phases::recovery`]).
fn level(open: bool, ok: u64, offered: u64, seconds: u64) -> f64 {
    if open { ok as f64 / offered.max(1) as f64 } else { ok as f64 / seconds.max(1) as f64 }
}

/// Goodput's pre-fault level: over seconds `[1, first)` (second 0, the warm-up, left out), where `first` is the
/// second the first fault starts in. `None` without an ok call there: nothing to recover to.
pub fn baseline(rows: &[SecondRow], open: bool, first: u64) -> Option<f64> {
    let (ok, offered) = sums(rows, 1, first);
    (ok > 0).then(|| level(open, ok, offered, first.saturating_sub(1)))
}

/// Whether second `t` alone is below the recovered share of `baseline` (an open loop's second without offered
/// calls is not).
pub fn below_baseline(rows: &[SecondRow], open: bool, baseline: f64, t: u64) -> bool {
    let (ok, offered) = sums(rows, t, t + 1);
    !(open && offered == 0) && level(open, ok, offered, 1) < RECOVERED_SHARE * baseline
}

/// [`Phases::recovery`] measured from second `from` (a fault window's end, rounded up) against the goodput level
/// before second `first` (the first fault's start): the one definition of being back, which `mcpstorm fidelity`
/// also applies to each fault window.
pub fn recovery_after(rows: &[SecondRow], open: bool, first: u64, from: u64, load_end: Duration) -> Recovery {
    let Some(baseline) = baseline(rows, open, first) else { return Recovery::NotJudged };
    // A load that stops less than a stretch after the last fault is judged over what is left of it.
    let end = load_end.as_secs();
    let span = (RECOVERED_SECONDS as u64).min(end.saturating_sub(from));
    if span == 0 {
        return Recovery::NotJudged;
    }
    let good = |t: u64| {
        let (ok, offered) = sums(rows, t, t + span);
        (open && offered == 0) || level(open, ok, offered, span) >= RECOVERED_SHARE * baseline
    };
    match (from..=end - span).find(|&t| good(t)) {
        Some(t) => Recovery::After((t - from) as f64),
        None => Recovery::Never,
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
            ..Phases::default()
        }
    }

    fn offered(ok_offered: &[(u64, u64)]) -> Vec<SecondRow> {
        let row =
            |(t, &(ok, offered)): (usize, &(u64, u64))| SecondRow { t: t as u64, ok, offered, ..SecondRow::default() };
        ok_offered.iter().enumerate().map(row).collect()
    }

    #[test]
    fn an_open_loop_is_judged_by_the_share_of_offered_calls_over_three_seconds() {
        // Before: 90% served; fault 3-5; from 5 on, 3-second stretches at 90% (a noisy second inside is fine).
        let good = [(0, 10), (9, 10), (18, 20), (0, 10), (0, 10), (9, 10), (4, 5), (14, 15), (9, 10), (9, 10)];
        assert_eq!(window(3, 5).recovery(&offered(&good), true, Duration::from_secs(10)), Recovery::After(0.0));
        // Only the stretch from 9 s is good: 4 s after the fault.
        let mut late = vec![(0, 10), (9, 10), (9, 10), (0, 10), (0, 10)];
        late.extend([(1, 10); 4]);
        late.extend([(9, 10); 3]);
        assert_eq!(window(3, 5).recovery(&offered(&late), true, Duration::from_secs(12)), Recovery::After(4.0));
        // The same rows when the load stopped at 11 s: the good stretch is never judged.
        assert_eq!(window(3, 5).recovery(&offered(&late), true, Duration::from_secs(11)), Recovery::Never);
        // A load that stops 2 s after the fault is judged over those 2 s; one that stops with it, not at all.
        assert_eq!(window(3, 5).recovery(&offered(&good), true, Duration::from_secs(7)), Recovery::After(0.0));
        assert_eq!(window(3, 5).recovery(&offered(&late), true, Duration::from_secs(7)), Recovery::Never);
        assert_eq!(window(3, 5).recovery(&offered(&good), true, Duration::from_secs(5)), Recovery::NotJudged);
    }

    #[test]
    fn poisson_noise_at_300_calls_a_second_is_not_a_slow_recovery() {
        // 300 calls/s offered with Poisson-sized swings (about ±√300 ≈ ±17), 99% served before a 10-12 s fault and
        // 97% after it: the plot is back at once, though single seconds dip well under 95% of the mean ok/s.
        let swings = [0i64, -25, 18, -30, 9, 22, -17, 31, -12, -28, 5, 26, -21, 14, -33, 11];
        let mut rows = Vec::new();
        for t in 0..30u64 {
            let offered = (300 + swings[t as usize % swings.len()]) as u64;
            let served = match t {
                10..12 => offered / 10,
                12.. => offered * 97 / 100,
                _ => offered * 99 / 100,
            };
            rows.push(SecondRow { t, ok: served, offered, ..SecondRow::default() });
        }
        let took = window(10, 12).recovery(&rows, true, Duration::from_secs(30));
        assert!(matches!(took, Recovery::After(s) if s <= 1.0), "{took:?}");
        // The old measure (ok/s against the pre-fault mean ok/s, three good seconds in a row) said otherwise.
        let mean = rows[1..10].iter().map(|r| r.ok as f64).sum::<f64>() / 9.0;
        let good = |t: usize| rows[t].ok as f64 >= RECOVERED_SHARE * mean;
        let old = (12..28).find(|&t| (t..t + 3).all(good)).map_or(f64::INFINITY, |t| (t - 12) as f64);
        assert!(old > 1.0, "{old}");
    }

    #[test]
    fn a_closed_loop_is_judged_by_ok_calls_per_second() {
        let r = rows(&[0, 100, 100, 10, 10, 96, 50, 95, 97, 99, 100]);
        // Stretches from 5: (96+50+95)/3 = 80 < 95; from 6: 80.7; from 7: 97.
        assert_eq!(window(3, 5).recovery(&r, false, Duration::from_secs(11)), Recovery::After(2.0));
    }

    #[test]
    fn never_recovering_and_nothing_to_judge_are_not_numbers() {
        let r = rows(&[0, 100, 100, 10, 10, 50, 50, 50, 50]);
        assert_eq!(window(3, 5).recovery(&r, false, Duration::from_secs(9)), Recovery::Never);
        assert_eq!(Recovery::Never.seconds(), None);
        // No ok call before the fault: nothing to recover to.
        let r = rows(&[0, 0, 0, 10, 10, 50, 50, 50, 50]);
        assert_eq!(window(3, 5).recovery(&r, false, Duration::from_secs(9)), Recovery::NotJudged);
        // No fault window.
        let none = Phases::default();
        assert_eq!(none.recovery(&rows(&[100; 9]), true, Duration::from_secs(9)), Recovery::NotJudged);
        assert_eq!(none.amplification_during(&rows(&[100; 9])), None);
    }

    #[test]
    fn waited_out_calls_started_inside_a_window_on_their_replica_and_were_answered_after_it() {
        let text = "name = \"t\"\nduration = \"20s\"\n[[servers]]\nname = \"db\"\nreplicas = 2\n[[servers.tools]]\n\
                    name = \"q\"\n[[servers]]\nname = \"api\"\nreplicas = 2\n[[servers.tools]]\nname = \"x\"\n[load]\n\
                    mode = \"open\"\nrate = 10.0\n[[load.mix]]\nserver = \"db\"\ntool = \"q\"\n\
                    [[faults]]\nkind = \"error_burst\"\ntarget = \"db\"\nstart = \"10s\"\nduration = \"2s\"\nrate = 1.0\n\
                    [[faults]]\nkind = \"error_burst\"\ntarget = \"api#1\"\nstart = \"4s\"\nduration = \"1s\"\nrate = 1.0\n\
                    [[faults]]\nkind = \"session_expiry\"\ntarget = \"api#0\"\nstart = \"4s\"\n";
        let mut scenario = crate::scenario::load_str(text, "t.toml", &[]).expect("valid");
        // An instant fault has no window, whatever its duration says.
        scenario.faults[2].duration = crate::scenario::Dur(Duration::from_secs(5));
        let p = Phases::of(&scenario);
        let ms = Duration::from_millis;
        // A whole-server fault is on each replica: sent at 11 s, answered at 12 s (the window's end) or later.
        assert!(p.waited_out("db-0", ms(11_000), ms(12_000)) && p.waited_out("db-1", ms(10_000), ms(15_000)));
        // Answered inside the window, sent before it, or sent after it: not waited out.
        assert!(!p.waited_out("db-0", ms(11_000), ms(11_999)));
        assert!(!p.waited_out("db-0", ms(9_999), ms(12_500)) && !p.waited_out("db-0", ms(12_000), ms(12_500)));
        // A replica fault is on that replica only; an instant fault has no window.
        assert!(p.waited_out("api-1", ms(4_500), ms(5_100)) && !p.waited_out("api-0", ms(4_500), ms(5_100)));
        assert!(!p.waited_out("nowhere", ms(4_500), ms(5_100)));
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
        assert_eq!(p.amplification_during(&r), Some(4.0));
        assert!(p.during(Duration::from_millis(2600)) && !p.during(Duration::from_millis(3200)));
        assert!(p.before(Duration::from_secs(2)) && !p.before(Duration::from_millis(2500)));
        assert!(p.healthy("api") && !p.healthy("db"));
    }
}
