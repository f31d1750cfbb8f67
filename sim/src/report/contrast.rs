//! The same scenario and seed under two gateway profiles, side by side: `contrast.png`/`.svg` (goodput, P99, error
//! rate and stale sends — or, when neither run had any, retry amplification — over time, one colour per profile, fault windows shaded) and a two-row summary table.
//!
//! Both runs share the scenario, so their fault windows are the same and are shaded once per panel.

use std::fmt::Write as _;

use super::num::{finite, grouped, ms, pct};
use super::overlay::{AMPLIFICATION, ERROR_RATE, GOODPUT, Metric, Overlay, P99, STALE_SENDS, Series};
use super::summary::{clean_totals, recovery, times, verdict};
use crate::run::RunData;

pub(crate) const CONTRAST: &str = "contrast";

/// The panels of `contrast.png`: stale sends when either run had any, else retry amplification (a storm's
/// signature).
const PANELS: [Metric; 4] = [GOODPUT, P99, ERROR_RATE, STALE_SENDS];
const STORM_PANELS: [Metric; 4] = [GOODPUT, P99, ERROR_RATE, AMPLIFICATION];

fn panels(primary: &RunData, other: &RunData) -> &'static [Metric; 4] {
    if primary.totals.stale_sends > 0 || other.totals.stale_sends > 0 { &PANELS } else { &STORM_PANELS }
}

/// The labels and one-seed series of the two runs, for [`figure`].
pub(crate) fn series(primary: &RunData, other: &RunData) -> (Vec<String>, Vec<Series>) {
    let runs = [primary, other];
    let labels = runs.iter().map(|r| format!("{} profile", r.profile)).collect();
    let series = runs.iter().map(|r| Series::of(&[r.seconds.as_slice()], panels(primary, other))).collect();
    (labels, series)
}

/// Both runs on shared axes (both share the scenario, so their fault windows are the same and shaded once).
pub(crate) fn figure<'a>(
    primary: &'a RunData,
    other: &'a RunData,
    labels: &'a [String],
    series: &'a [Series],
) -> Overlay<'a> {
    let verdicts = [primary, other]
        .iter()
        .map(|r| format!("{}: {} ({} errors)", r.profile, verdict(r.passed()), pct(finite(r.totals.error_rate))))
        .collect::<Vec<_>>()
        .join("   ·   ");
    Overlay {
        title: format!("mcpstorm · {} · seed {} · gateway profiles side by side", primary.scenario, primary.seed),
        subtitle: format!("{verdicts}   ·   shaded: fault windows"),
        labels,
        series,
        metrics: panels(primary, other),
        faults: &primary.faults,
        panel: None,
    }
}

/// The two runs' key figures, one row each, for the console and `summary.md`.
pub fn contrast_table(primary: &RunData, other: &RunData) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "  {:<8} {:>6} {:>10} {:>8} {:>10} {:>12} {:>12} {:>14} {:>13} {:>9} {:>12} {:>12} {:>9}",
        "profile",
        "checks",
        "ok",
        "errors",
        "P99",
        "stale sends",
        "error window",
        "session errors",
        "re-handshakes",
        "renewals",
        "amp (faults)",
        "healthy P99x",
        "recovery"
    );
    for run in [primary, other] {
        let t = &clean_totals(&run.totals);
        let _ = writeln!(
            s,
            "  {:<8} {:>6} {:>10} {:>8} {:>10} {:>12} {:>12} {:>14} {:>13} {:>9} {:>12} {:>12} {:>9}",
            run.profile,
            verdict(run.passed()),
            grouped(t.ok),
            pct(finite(t.error_rate)),
            ms(t.p99_ms),
            grouped(t.stale_sends),
            format!("{} s", t.error_window_s),
            grouped(t.session_errors),
            grouped(t.rehandshakes),
            grouped(t.renewals),
            times(t.amplification_during_fault),
            times(t.healthy_p99_ratio),
            recovery(t.recovery)
        );
    }
    s
}
