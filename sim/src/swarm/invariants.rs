//! The invariants a swarm run must hold: pure functions of a run's data (and, for the differential ones, of the
//! naive profile's run on the same seed). Each returns the violations it found, empty when the run holds it.
//!
//! | invariant     | kind         | holds when                                                                   |
//! |---------------|--------------|------------------------------------------------------------------------------|
//! | `lost`        | safety       | every offered call reached an outcome (`lost = 0`)                           |
//! | `one_outcome` | safety       | no call reached two outcomes (completed ≤ offered)                           |
//! | `misdelivered`| safety       | no connection received a response to a request id it never issued            |
//! | `leaked`      | safety       | after its drain, every load host's gateway holds no bulkhead permit, routed call, pending request or in-flight slot |
//! | `panic`       | safety       | the run finished without a panic or a simulation error                        |
//! | `memory`      | safety       | what the run measurably held stays within the run-cost estimate (see [`memory`]) |
//! | `recovery`    | liveness     | goodput over 3 s is back to ≥ 95% of its pre-fault level within `swarm.recovery_within` of the last fault's end (see [`liveness`]) |
//! | `failures`    | differential | for a server with a replica no fault touched, the default profile fails at most naive's failures + `error_slack` × calls + `error_slack_calls` |
//! | `healthy_p99` | differential | for a server no fault touched, the default profile's P99 ≤ `p99_ratio` × naive's + `p99_slack` |
//! | `checks`      | the scenario's | the scenario's own `[checks]` pass (only when asked for)                  |

use std::collections::BTreeSet;

use serde::Serialize;

use crate::run::memory::Seconds;
use crate::run::{RunData, SecondRow, ServerTotals};
use crate::scenario::cost::{self, CALL_BYTES, PROCESS_BYTES};
use crate::scenario::{LoadMode, Scenario, SwarmSpec, resolve_target};
use crate::world::{RECOVERED_SECONDS, RECOVERED_SHARE};

/// One broken invariant.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Violation {
    /// The invariant's name (see the module's table).
    pub invariant: String,
    pub detail: String,
}

impl Violation {
    pub fn new(invariant: &str, detail: impl Into<String>) -> Violation {
        Violation { invariant: invariant.to_owned(), detail: detail.into() }
    }
}

/// The safety invariants of one run (a panic is the driver's to report: a panicked run has no data).
pub fn safety(scenario: &Scenario, run: &RunData) -> Vec<Violation> {
    let mut out = Vec::new();
    let t = &run.totals;
    if t.lost > 0 {
        out.push(Violation::new("lost", format!("{} of {} calls never reached an outcome", t.lost, t.offered)));
    }
    if t.completed > t.offered {
        out.push(Violation::new("one_outcome", format!("{} outcomes for {} calls", t.completed, t.offered)));
    }
    if run.audit.unknown_responses > 0 {
        let n = run.audit.unknown_responses;
        out.push(Violation::new("misdelivered", format!("{n} responses to request ids no caller sent")));
    }
    for (host, end) in run.audit.end.iter().enumerate() {
        match end {
            None => out.push(Violation::new("leaked", format!("load host {host} never finished its drain"))),
            Some(e) if *e != mcpstorm_core::InFlightSnapshot::default() => out.push(Violation::new(
                "leaked",
                format!(
                    "load host {host} after its drain: {} bulkhead permits, {} routed calls, {} pending requests, \
                     {} client slots still held",
                    e.bulkhead_permits, e.routed, e.pending, e.client_slots
                ),
            )),
            Some(_) => {}
        }
    }
    let (measured, estimate) = (memory(run), cost::estimate(scenario).memory);
    if measured > estimate {
        out.push(Violation::new(
            "memory",
            format!("measured {:.1} MiB > estimated {:.1} MiB", measured / MIB, estimate / MIB),
        ));
    }
    out
}

const MIB: f64 = 1024.0 * 1024.0;

/// What the run measurably held, bytes, priced as the run-cost estimate prices it: the process, the attempts in
/// flight at the busiest per-second sample, every per-second row, and the event log's rows and text. Hosts'
/// connections and the allocator's own overhead are not measured per run (the estimate's flat share stands for
/// them), so this checks the parts that grow with the run.
pub fn memory(run: &RunData) -> f64 {
    let events: usize =
        run.events.iter().map(|e| std::mem::size_of_val(e) + e.kind.len() + e.target.len() + e.detail.len()).sum();
    PROCESS_BYTES
        + run.audit.peak_in_flight as f64 * CALL_BYTES
        + (run.seconds.len() * Seconds::bytes_per_second()) as f64
        + events as f64
}

/// Liveness: goodput back within `swarm.recovery_within` of the last fault window's end. Goodput is judged over
/// [`RECOVERED_SECONDS`] seconds at a time against its mean before the first fault (second 0, the warm-up, left
/// out): an open loop's ok calls as a share of the calls offered in those seconds (its arrivals are Poisson, so raw
/// ok/s swings by about √rate from second to second, and a 95% bar on it fails on noise alone), a closed loop's ok
/// calls per second (its offered load follows its own latency). Runs without fault windows, or with no ok call
/// before the first fault (nothing to recover to), hold it trivially.
pub fn liveness(scenario: &Scenario, run: &RunData) -> Vec<Violation> {
    let within = spec(scenario).recovery_within.0.as_secs_f64();
    match recovery_s(scenario, &run.seconds) {
        Some(took) if took > within => vec![Violation::new(
            "recovery",
            format!("goodput not back to 95% of its pre-fault level within {within} s of the last fault ({took} s)"),
        )],
        _ => Vec::new(),
    }
}

/// Seconds from the last fault window's end (rounded up) to the start of the first good stretch (see
/// [`liveness`]); past the load's end without one: the seconds to the load's end, plus one. `None` when there is
/// nothing to judge.
pub fn recovery_s(scenario: &Scenario, rows: &[SecondRow]) -> Option<f64> {
    let windows = scenario.faults.iter().filter(|f| !f.kind.instant() && !f.duration.0.is_zero());
    let first = windows.clone().map(|f| f.start.0.as_secs()).min()?;
    let last = windows.map(|f| (f.start.0 + f.duration.0).as_secs_f64().ceil() as u64).max()?;
    let open = scenario.load.mode == LoadMode::Open;
    let sum = |from: u64, to: u64| {
        let rows = rows.iter().filter(|r| r.t >= from && r.t < to);
        rows.fold((0u64, 0u64), |(ok, offered), r| (ok.saturating_add(r.ok), offered.saturating_add(r.offered)))
    };
    let (ok, offered) = sum(1, first);
    if ok == 0 {
        return None;
    }
    // The pre-fault level: a share of the offered calls (open loop) or ok calls per second (closed loop).
    let level = |ok: u64, offered: u64, seconds: u64| {
        if open { ok as f64 / offered.max(1) as f64 } else { ok as f64 / seconds.max(1) as f64 }
    };
    let baseline = level(ok, offered, first.saturating_sub(1));
    let span = RECOVERED_SECONDS as u64;
    let end = scenario.duration.0.as_secs();
    let good = |t: u64| {
        let (ok, offered) = sum(t, t + span);
        (open && offered == 0) || level(ok, offered, span) >= RECOVERED_SHARE * baseline
    };
    let found = (last..end.saturating_sub(span - 1)).find(|&t| good(t));
    Some(found.map_or((end.saturating_sub(last) + 1) as f64, |t| (t - last) as f64))
}

/// The differential invariants: `run` (the default profile) against `naive` (the same scenario and seed under the
/// naive profile).
pub fn differential(scenario: &Scenario, run: &RunData, naive: &RunData) -> Vec<Violation> {
    let spec = spec(scenario);
    let mut out = Vec::new();
    for server in &scenario.servers {
        let touched = touched_replicas(scenario, &server.name, server.replicas);
        if touched.len() == server.replicas {
            continue;
        }
        let (mine, theirs) = (totals(run, &server.name), totals(naive, &server.name));
        let allowed = theirs.failed as f64 + spec.error_slack * mine.calls as f64 + spec.error_slack_calls as f64;
        if mine.failed as f64 > allowed {
            out.push(Violation::new(
                "failures",
                format!(
                    "{}: {} of {} calls failed, naive {} of {} (allowed {allowed:.0}; replicas touched: {touched:?})",
                    server.name, mine.failed, mine.calls, theirs.failed, theirs.calls
                ),
            ));
        }
        let limit = spec.p99_ratio * theirs.p99_ms + spec.p99_slack.0.as_secs_f64() * 1000.0;
        if touched.is_empty() && mine.p99_ms > limit {
            out.push(Violation::new(
                "healthy_p99",
                format!("{}: P99 {} ms, naive {} ms (allowed {limit:.1} ms)", server.name, mine.p99_ms, theirs.p99_ms),
            ));
        }
    }
    out
}

/// The scenario's own `[checks]` that failed.
pub fn checks(run: &RunData) -> Vec<Violation> {
    let failed = run.checks.iter().filter(|c| !c.passed);
    failed.map(|c| Violation::new("checks", format!("{}: {} > {}", c.name, c.actual, c.limit))).collect()
}

/// The replicas of `server` some fault targets (all of them for a fault on the whole server).
pub fn touched_replicas(scenario: &Scenario, server: &str, replicas: usize) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    for f in &scenario.faults {
        match resolve_target(&f.target, &scenario.servers) {
            Ok((s, replica)) if scenario.servers[s].name == server => match replica {
                Some(r) => {
                    out.insert(r);
                }
                None => out.extend(0..replicas),
            },
            _ => {}
        }
    }
    out
}

fn totals(run: &RunData, server: &str) -> ServerTotals {
    run.audit.servers.get(server).copied().unwrap_or_default()
}

/// The swarm settings of `scenario` (its `[swarm]` table, or the defaults).
pub fn spec(scenario: &Scenario) -> SwarmSpec {
    scenario.swarm.clone().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::run::{RunAudit, SecondRow};
    use crate::scenario::{Dur, FaultKind};
    use crate::swarm::draw::bare;

    fn scenario(faults: &[(&str, u64, u64)]) -> Scenario {
        let text = "name = \"t\"\nduration = \"12s\"\n[[servers]]\nname = \"a\"\nreplicas = 2\n[[servers.tools]]\n\
                    name = \"x\"\n[[servers]]\nname = \"b\"\n[[servers.tools]]\nname = \"y\"\n[load]\nmode = \"open\"\n\
                    rate = 10.0\n[[load.mix]]\nserver = \"a\"\ntool = \"x\"\n[swarm]\nrecovery_within = \"3s\"\n";
        let mut s = crate::scenario::load_str(text, "t.toml", &[]).expect("valid");
        for (target, start, len) in faults {
            let (start, len) = (Duration::from_secs(*start), Duration::from_secs(*len));
            s.faults.push(bare(FaultKind::ErrorBurst, (*target).to_owned(), start, len));
        }
        s.faults.iter_mut().for_each(|f| f.rate = Some(1.0));
        s.duration = Dur(Duration::from_secs(12));
        s
    }

    fn rows(ok_offered: &[(u64, u64)]) -> Vec<SecondRow> {
        let row =
            |(t, &(ok, offered)): (usize, &(u64, u64))| SecondRow { t: t as u64, ok, offered, ..Default::default() };
        ok_offered.iter().enumerate().map(row).collect()
    }

    #[test]
    fn recovery_is_judged_against_the_offered_load_over_three_seconds() {
        let s = scenario(&[("a", 3, 2)]);
        // Before: 90% served; fault 3-5; from 5 on, 3-second windows at 90% (a noisy second inside is fine).
        let good = rows(&[
            (0, 10),
            (9, 10),
            (18, 20),
            (0, 10),
            (0, 10),
            (9, 10),
            (4, 5),
            (14, 15),
            (9, 10),
            (9, 10),
            (9, 10),
            (9, 10),
        ]);
        assert_eq!(recovery_s(&s, &good), Some(0.0));
        // Only the last window recovers: 4 s after the fault, more than `recovery_within` (3 s).
        let late = rows(&[
            (0, 10),
            (9, 10),
            (9, 10),
            (0, 10),
            (0, 10),
            (1, 10),
            (1, 10),
            (1, 10),
            (1, 10),
            (9, 10),
            (9, 10),
            (9, 10),
        ]);
        assert_eq!(recovery_s(&s, &late), Some(4.0));
        let mut run = RunData { seconds: late, ..blank() };
        run.totals.offered = 120;
        assert_eq!(liveness(&s, &run)[0].invariant, "recovery");
        // No fault window: nothing to judge.
        assert_eq!(recovery_s(&scenario(&[]), &rows(&[(1, 1); 12])), None);
    }

    #[test]
    fn differential_spares_servers_whose_every_replica_was_touched() {
        let s = scenario(&[("a#0", 3, 2)]);
        assert_eq!(touched_replicas(&s, "a", 2), BTreeSet::from([0]));
        let with = |failed: u64, p99_ms: f64| {
            let mut run = blank();
            run.audit.servers.insert("a".into(), ServerTotals { calls: 1000, failed, p99_ms: 10.0 });
            run.audit.servers.insert("b".into(), ServerTotals { calls: 1000, failed: 0, p99_ms });
            run
        };
        // a: 30 allowed over naive's 10 (2% of 1000 + 5); b untouched: P99 ≤ 1.5 × 10 + 20 ms.
        assert!(differential(&s, &with(35, 35.0), &with(10, 10.0)).is_empty());
        let broken = differential(&s, &with(36, 35.1), &with(10, 10.0));
        let names: Vec<&str> = broken.iter().map(|v| v.invariant.as_str()).collect();
        assert_eq!(names, ["failures", "healthy_p99"]);
        // Both replicas of `a` touched: its failures are not compared.
        let whole = scenario(&[("a", 3, 2)]);
        assert!(differential(&whole, &with(500, 10.0), &with(10, 10.0)).is_empty());
    }

    #[test]
    fn safety_names_what_a_gateway_still_holds_and_a_drain_that_never_ended() {
        let s = scenario(&[]);
        let mut run = blank();
        let held = mcpstorm_core::InFlightSnapshot { bulkhead_permits: 3, ..Default::default() };
        run.audit.end = vec![Some(held), None, Some(Default::default())];
        let v = safety(&s, &run);
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v[0].detail.contains("3 bulkhead permits") && v[1].detail.contains("load host 1 never finished"));
        run.totals.offered = 5;
        run.totals.lost = 1;
        assert_eq!(safety(&s, &run)[0].invariant, "lost");
    }

    fn blank() -> RunData {
        RunData {
            scenario: "t".into(),
            description: String::new(),
            seed: 1,
            profile: "default".into(),
            formula: String::new(),
            sim_seconds: 0.0,
            seconds: Vec::new(),
            events: Vec::new(),
            faults: Vec::new(),
            totals: Default::default(),
            checks: Vec::new(),
            reproduce: String::new(),
            audit: RunAudit::default(),
        }
    }
}
