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

use crate::run::memory::SecondBucket;
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
/// flight at the busiest per-second sample, every per-second bucket, and the event log's rows and text. Hosts'
/// connections and the allocator's own overhead are not measured per run (the estimate's flat share stands for
/// them), so this checks the parts that grow with the run.
pub fn memory(run: &RunData) -> f64 {
    let events: usize =
        run.events.iter().map(|e| std::mem::size_of_val(e) + e.kind.len() + e.target.len() + e.detail.len()).sum();
    PROCESS_BYTES
        + run.audit.peak_in_flight as f64 * CALL_BYTES
        + (run.seconds.len() * SecondBucket::bytes()) as f64
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
