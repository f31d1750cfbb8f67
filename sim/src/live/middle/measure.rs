//! What a run through a middle measures without the middle's help, and how its checks are judged.
//!
//! A middle's own attempts (its retries, its failovers) happen in its process, out of the recorder's sight, so the
//! run counts them where they arrive: the `tools/call` requests each fake server received, per second. Those are
//! the run's attempts: its amplification (attempts per offered call) is measured at the servers, whatever the middle
//! does, and the `amplification_during_fault` check is judged on it.
//!
//! The checks that read what only the gateway's own records hold are not judged, each with a note: the attempts'
//! fates (`stale_sends`, `session_errors`, `auth_errors`, `misroutes`, `possible_duplicates`) for any middle, since
//! the recorder sees only the agents' calls; and `degraded` for a middle other than mcpstorm, whose degraded result
//! ("do not retry") is the mcpstorm gateway's own answer.

use serde::Serialize;

use super::usage::MiddleCost;
use crate::run::{CheckResult, FaultWindow, RunData, SecondRow, Totals};

/// What a run through a middle measured of it, from outside.
#[derive(Debug, Clone, Serialize)]
pub struct MiddleRun {
    pub name: String,
    /// Its processes: one per gateway node.
    pub instances: usize,
    pub cost: MiddleCost,
    /// `tools/call` requests that reached the fake servers, whoever sent them.
    pub server_attempts: u64,
    /// The same, per second of the run.
    pub server_attempts_per_second: Vec<u64>,
    /// The scenario's checks not judged through this middle, each with why.
    pub skipped_checks: Vec<String>,
}

/// The file a run through a middle adds to its report.
pub const MIDDLE_JSON: &str = "middle.json";

impl MiddleRun {
    /// CPU seconds of the middle per logical call offered, in µs (`None` unmeasured or without calls).
    pub fn cpu_per_call_us(&self, offered: u64) -> Option<f64> {
        (self.cost.measured && offered > 0).then(|| self.cost.cpu_seconds * 1e6 / offered as f64)
    }

    /// The console's lines: the middle's cost, the attempts the servers received, the checks not judged.
    pub fn console(&self, run: &RunData) -> String {
        let t = &run.totals;
        let plural = if self.instances == 1 { "" } else { "es" };
        let cost = match self.cpu_per_call_us(t.offered) {
            Some(per_call) => format!(
                "CPU {:.2} s ({per_call:.0} µs per call offered), peak memory {:.1} MB",
                self.cost.cpu_seconds,
                self.cost.peak_rss_bytes as f64 / 1e6
            ),
            None => "CPU and memory not measured (no /proc)".to_owned(),
        };
        let during = t.amplification_during_fault.map_or_else(String::new, |a| format!(", during faults {a:.2}x"));
        let mut s = format!(
            "  middle     {} ({} process{plural}): {cost}\n  servers    {} attempts reached the servers: \
             amplification {:.2}x{during}\n",
            self.name, self.instances, self.server_attempts, t.amplification
        );
        for skipped in &self.skipped_checks {
            s.push_str(&format!("  skipped    {skipped}\n"));
        }
        s
    }

    /// `middle.json` in `dir`.
    pub fn write(&self, dir: &std::path::Path) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(dir.join(MIDDLE_JSON), text + "\n")
    }
}

/// Checks judged on the attempts' fates, which only the gateway's records hold.
const ATTEMPT_CHECKS: &[&str] = &["stale_sends", "session_errors", "auth_errors", "misroutes", "possible_duplicates"];

/// Puts the servers' attempts in `run` (per second, the totals, the amplification during the fault windows),
/// judges `amplification_during_fault` on them, and leaves out the checks this middle cannot be judged on.
pub fn judge(run: &mut RunData, middle: MiddleRun, mcpstorm: bool) -> MiddleRun {
    let RunData { seconds, totals, faults, checks, .. } = run;
    judge_parts((seconds, totals, faults, checks), middle, mcpstorm)
}

type Parts<'a> = (&'a mut [SecondRow], &'a mut Totals, &'a [FaultWindow], &'a mut Vec<CheckResult>);

fn judge_parts((seconds, totals, faults, checks): Parts<'_>, mut middle: MiddleRun, mcpstorm: bool) -> MiddleRun {
    for (row, attempts) in seconds.iter_mut().zip(&middle.server_attempts_per_second) {
        row.attempts = *attempts;
    }
    let offered = totals.offered;
    totals.attempts = middle.server_attempts;
    totals.amplification = if offered > 0 { middle.server_attempts as f64 / offered as f64 } else { 0.0 };
    // The seconds the fault windows touch, as the simulator's own figure counts them (`Phases::second_during`).
    let windows: Vec<(u64, u64)> =
        faults.iter().map(|f| (f.start_s.max(0.0) as u64, f.end_s.max(0.0).ceil() as u64)).collect();
    let during = |t: u64| windows.iter().any(|&(s, e)| s <= t && t < e);
    let (attempts, offered) = seconds
        .iter()
        .filter(|r| during(r.t))
        .fold((0u64, 0u64), |(a, o), r| (a.saturating_add(r.attempts), o.saturating_add(r.offered)));
    let amplification = (offered > 0).then(|| attempts as f64 / offered as f64);
    totals.amplification_during_fault = amplification;
    let mut skipped = Vec::new();
    checks.retain_mut(|check| {
        if check.name == "amplification_during_fault" {
            check.actual = amplification;
            check.passed = amplification.is_none_or(|a| a <= check.limit);
            return true;
        }
        let why = if ATTEMPT_CHECKS.contains(&check.name.as_str()) {
            "needs the fate of each attempt the middle sent, which only the gateway's own records hold"
        } else if check.name == "degraded" && !mcpstorm {
            "a degraded result is the mcpstorm gateway's own answer"
        } else {
            return true;
        };
        skipped.push(format!("{}: not judged through {}: {why}", check.name, middle.name));
        false
    });
    middle.skipped_checks = skipped;
    middle
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, limit: f64) -> CheckResult {
        CheckResult { name: name.into(), limit, actual: Some(0.0), passed: true }
    }

    #[test]
    fn the_servers_attempts_judge_the_amplification_and_internal_checks_are_skipped() {
        let mut seconds: Vec<SecondRow> =
            (0..4).map(|t| SecondRow { t, offered: 10, ..SecondRow::default() }).collect();
        let mut totals = Totals { offered: 40, ..Totals::default() };
        let faults = [FaultWindow { label: "latency_spike db".into(), start_s: 1.0, end_s: 2.5 }];
        let mut checks =
            vec![check("amplification_during_fault", 1.2), check("degraded", 0.0), check("misroutes", 0.0)];
        let middle = MiddleRun {
            name: "nginx".into(),
            instances: 1,
            cost: MiddleCost::default(),
            server_attempts: 70,
            server_attempts_per_second: vec![10, 20, 30, 10],
            skipped_checks: Vec::new(),
        };
        let judged = judge_parts((&mut seconds, &mut totals, &faults, &mut checks), middle.clone(), false);
        assert_eq!(totals.amplification_during_fault, Some(2.5), "seconds 1 and 2: 50 attempts, 20 offered");
        assert!((totals.amplification - 1.75).abs() < 1e-9);
        assert_eq!(checks.len(), 1);
        assert!(!checks[0].passed, "2.5x is over 1.2x");
        assert_eq!(judged.skipped_checks.len(), 2, "{:?}", judged.skipped_checks);
        let mut again = vec![check("degraded", 0.0)];
        let judged = judge_parts((&mut seconds, &mut totals, &faults, &mut again), middle, true);
        assert!(judged.skipped_checks.is_empty(), "mcpstorm's degraded results are judged");
    }
}
