//! A comparison's outputs: `compare.csv` (one row per variant and seed), `compare.md` and `compare.json` (per
//! metric: each variant's mean with its 95% confidence interval, the paired difference from the first variant, and
//! its share of seed wins), and overlay plots with one line per variant.

use std::fmt::Write as _;

use serde::Serialize;

use super::num::{fixed, md_cell, short};
use super::overlay::{ERROR_RATE, GOODPUT, Metric, Overlay, P99, Series};
use crate::compare::stats::Estimate;
use crate::compare::{CompareData, MetricTable, success_rate};

pub(crate) const COMPARE_CSV: &str = "compare.csv";
pub(crate) const COMPARE_MD: &str = "compare.md";
pub(crate) const COMPARE_JSON: &str = "compare.json";

const CSV_HEADER: [&str; 18] = [
    "variant",
    "seed",
    "offered",
    "ok",
    "errors",
    "lost",
    "attempts",
    "amplification",
    "error_rate",
    "success_rate",
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "ok_per_s",
    "fault_ok",
    "fault_error_rate",
    "fault_p99_ms",
    "passed",
];

pub(crate) fn csv(data: &CompareData) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(CSV_HEADER)?;
    for (label, runs) in data.labels.iter().zip(&data.runs) {
        for r in runs {
            let t = &r.totals;
            w.write_record([
                label.clone(),
                r.seed.to_string(),
                t.offered.to_string(),
                t.ok.to_string(),
                t.errors.to_string(),
                t.lost.to_string(),
                t.attempts.to_string(),
                fixed(t.amplification, 3),
                fixed(t.error_rate, 4),
                fixed(success_rate(t), 4),
                fixed(t.p50_ms, 3),
                fixed(t.p95_ms, 3),
                fixed(t.p99_ms, 3),
                fixed(t.ok_per_s, 3),
                t.ok_during_fault.map_or_else(String::new, |n| n.to_string()),
                t.error_rate_during_fault.map_or_else(String::new, |x| fixed(x, 4)),
                t.p99_during_fault_ms.map_or_else(String::new, |x| fixed(x, 3)),
                r.passed.to_string(),
            ])?;
        }
    }
    w.into_inner().map_err(|e| csv::Error::from(e.into_error()))
}

/// How a metric's values read: latency in ms, rates in percent, the rest as plain numbers.
fn show(metric: &str, x: f64) -> String {
    match metric {
        "success_rate" | "error_rate" | "fault_error_rate" => format!("{}%", fixed(x * 100.0, 2)),
        "p99_ms" | "fault_p99_ms" => format!("{} ms", fixed(x, 1)),
        _ => short(x, 3),
    }
}

fn show_ci(metric: &str, e: &Estimate) -> String {
    if e.ci95.is_finite() { format!("± {}", show(metric, e.ci95)) } else { "—".to_owned() }
}

pub(crate) fn heading(metric: &str, lower_is_better: bool) -> String {
    let name = match metric {
        "p99_ms" => "P99 latency",
        "success_rate" => "Success rate (ok / offered)",
        "error_rate" => "Error rate (failed / completed)",
        "amplification" => "Retry amplification (attempts / logical calls)",
        "goodput" => "Goodput (ok calls per simulated second)",
        "fault_ok" => "During the faults: ok calls (completed inside a fault window)",
        "fault_p99_ms" => "During the faults: P99 latency of the calls completed inside a fault window",
        "fault_error_rate" => "During the faults: error rate (failed / completed inside a fault window)",
        other => other,
    };
    format!("{name} — {} is better", if lower_is_better { "lower" } else { "higher" })
}

/// One metric's table: the rows the README and the closing notes quote.
pub(crate) fn metric_table(data: &CompareData, t: &MetricTable) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "| {} |", metric_header(data, t).map(|h| md_cell(&h)).join(" | "));
    s.push_str("|---|---:|---:|---:|---:|---:|---:|\n");
    for row in metric_rows(data, t) {
        let _ = writeln!(s, "| {} |", row.map(|c| md_cell(&c)).join(" | "));
    }
    s
}

/// The columns of a metric's table (`compare.md`, the console and `report.html`).
pub(crate) fn metric_header(data: &CompareData, t: &MetricTable) -> [String; 7] {
    let better = if t.lower_is_better { "lower" } else { "higher" };
    [
        "variant".to_owned(),
        format!("mean ({better} is better)"),
        "95% CI".to_owned(),
        format!("Δ vs {} (paired)", data.labels[0]),
        "95% CI of Δ".to_owned(),
        "seeds won".to_owned(),
        "seeds tied".to_owned(),
    ]
}

/// A metric's table, one row of plain text cells per variant.
pub(crate) fn metric_rows(data: &CompareData, t: &MetricTable) -> Vec<[String; 7]> {
    let mut rows = Vec::new();
    for (i, label) in data.labels.iter().enumerate() {
        let e = &t.estimates[i];
        let (delta, delta_ci) = match &t.vs_first[i] {
            None => ("—".to_owned(), "—".to_owned()),
            Some(d) => {
                let sign = if d.mean > 0.0 { "+" } else { "" };
                let mark = if d.excludes_zero() { " ✓" } else { "" };
                (format!("{sign}{}", show(t.metric, d.mean)), format!("{}{mark}", show_ci(t.metric, d)))
            }
        };
        rows.push([
            label.clone(),
            show(t.metric, e.mean),
            show_ci(t.metric, e),
            delta,
            delta_ci,
            format!("{}%", fixed(t.wins[i] * 100.0, 0)),
            format!("{}%", fixed(t.ties[i] * 100.0, 0)),
        ]);
    }
    rows
}

/// How to read the tables (`compare.md` and `report.html`).
pub(crate) const NOTES: [&str; 3] = [
    "Δ is the mean of the per-seed differences from the first variant; ✓ marks a 95% interval that excludes 0",
    "seeds won: the seeds on which the variant was best alone; seeds tied: best level with another variant",
    "\"during the faults\": the calls that completed inside a fault window, which the whole-run figures average over \
     the calm seconds",
];

pub(crate) fn markdown(data: &CompareData) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# {} — paired comparison\n", md_cell(&data.scenario));
    let (first, last) = (data.seeds.first().copied().unwrap_or(0), data.seeds.last().copied().unwrap_or(0));
    let _ = writeln!(
        s,
        "- variants: {}",
        data.labels.iter().map(|l| format!("`{}`", md_cell(l))).collect::<Vec<_>>().join(", ")
    );
    let _ = writeln!(
        s,
        "- seeds: {} ({first}..={last}); on each seed every variant saw the same arrivals and the same fault timeline",
        data.seeds.len()
    );
    for note in NOTES {
        let _ = writeln!(s, "- {note}");
    }
    let _ = writeln!(s, "- reproduce:\n\n```sh\n{}\n```\n", data.reproduce);
    for m in data.metrics() {
        let t = data.table(m);
        let _ = writeln!(s, "## {}\n", heading(m.name, m.lower_is_better));
        s.push_str(&metric_table(data, &t));
        s.push('\n');
    }
    s.push_str("## Checks\n\n| variant | runs whose `[checks]` passed |\n|---|---:|\n");
    for (label, rate) in data.labels.iter().zip(data.pass_rates()) {
        let _ = writeln!(s, "| {} | {}% |", md_cell(label), fixed(rate * 100.0, 0));
    }
    s
}

#[derive(Serialize)]
struct Json<'a> {
    scenario: &'a str,
    variants: &'a [String],
    seeds: &'a [u64],
    metrics: Vec<MetricTable>,
    pass_rates: Vec<f64>,
    reproduce: &'a str,
}

pub(crate) fn json(data: &CompareData) -> Result<Vec<u8>, serde_json::Error> {
    let doc = Json {
        scenario: &data.scenario,
        variants: &data.labels,
        seeds: &data.seeds,
        metrics: data.metrics().map(|m| data.table(m)).collect(),
        pass_rates: data.pass_rates(),
        reproduce: &data.reproduce,
    };
    // Non-finite floats (a CI over one seed) serialise as null, which JSON readers accept.
    let mut out = serde_json::to_vec_pretty(&doc)?;
    out.push(b'\n');
    Ok(out)
}

/// The panels of the comparison plots.
pub(crate) const PANELS: [Metric; 3] = [GOODPUT, P99, ERROR_RATE];

/// Per-variant aggregates for the overlay plots.
pub(crate) fn series(data: &CompareData) -> Vec<Series> {
    data.runs
        .iter()
        .map(|runs| Series::of(&runs.iter().map(|r| r.seconds.as_slice()).collect::<Vec<_>>(), &PANELS))
        .collect()
}

/// The overlay figures' file stems (each written as `.svg` and `.png`): all panels stacked, then each alone.
pub(crate) const STEMS: [&str; 4] = ["compare", "compare_goodput", "compare_p99", "compare_errors"];

/// The overlay figures with their file stems: all panels stacked, then each alone.
pub(crate) fn figures<'a>(data: &'a CompareData, series: &'a [Series]) -> Vec<(&'static str, Overlay<'a>)> {
    let title = format!("mcpstorm compare · {} · {} seeds", data.scenario, data.seeds.len());
    let subtitle = "one line per variant: mean over seeds per simulated second; shaded bands: fault windows".to_owned();
    STEMS
        .into_iter()
        .zip([None, Some(0), Some(1), Some(2)])
        .map(|(stem, panel)| {
            let fig = Overlay {
                title: title.clone(),
                subtitle: subtitle.clone(),
                labels: &data.labels,
                series,
                metrics: &PANELS,
                faults: &data.faults,
                panel,
            };
            (stem, fig)
        })
        .collect()
}
