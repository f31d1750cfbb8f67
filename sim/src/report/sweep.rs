//! A sweep's outputs: `sweep.csv`, `sweep.md`, and plots of throughput and latency against the swept parameter.
//!
//! The x axis is numeric when every value is a number (logarithmic when they span more than 20x, as concurrency
//! sweeps like 1/10/50/100/200/500 do, with a tick at each value), else categorical in sweep order.

use std::fmt::Write as _;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

use super::num::{finite, fixed, grouped, md_cell, ms, pct, per, short};
use super::plot::palette::{COMPLETED, OFFERED, OK, P50, P95, P99};
use super::plot::{
    Axis, FIG_W, Figure, Key, PANEL_H, PlotResult, Swatch, err, header, linear_axis, mesh, tick, value_axis,
};
use super::summary::{clean_totals, verdict};
use crate::run::{SweepData, SweepRow};

pub(crate) const SWEEP_CSV: &str = "sweep.csv";
pub(crate) const SWEEP_MD: &str = "sweep.md";
pub(crate) const SWEEP_QPS: &str = "sweep_qps";
pub(crate) const SWEEP_P99: &str = "sweep_p99";

pub(crate) const CSV_HEADER: [&str; 14] = [
    "value",
    "offered",
    "ok",
    "errors",
    "lost",
    "amplification",
    "error_rate",
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "max_ms",
    "ok_per_s",
    "sim_seconds",
    "passed",
];

pub(crate) fn csv(sweep: &SweepData) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(CSV_HEADER)?;
    for r in &sweep.rows {
        let t = &r.totals;
        w.write_record([
            r.value.clone(),
            t.offered.to_string(),
            t.ok.to_string(),
            t.errors.to_string(),
            t.lost.to_string(),
            fixed(t.amplification, 3),
            fixed(t.error_rate, 4),
            fixed(t.p50_ms, 3),
            fixed(t.p95_ms, 3),
            fixed(t.p99_ms, 3),
            fixed(t.max_ms, 3),
            fixed(t.ok_per_s, 3),
            fixed(r.sim_seconds, 3),
            r.passed.to_string(),
        ])?;
    }
    w.into_inner().map_err(|e| csv::Error::from(e.into_error()))
}

pub(crate) fn markdown(sweep: &SweepData) -> String {
    let mut s = String::new();
    // `write!` into a String cannot fail; the results are ignored on purpose.
    let _ = writeln!(s, "# {} — sweep of `{}`\n", md_cell(&sweep.scenario), md_cell(&sweep.param));
    let _ = writeln!(s, "- seed: `{}`", sweep.seed);
    let passed = sweep.rows.iter().filter(|r| r.passed).count();
    let _ = writeln!(s, "- rows: {} ({} passed their checks)", sweep.rows.len(), passed);
    let _ = writeln!(s, "- reproduce:\n\n```sh\n{}\n```\n", sweep.reproduce);
    let _ = writeln!(s, "| {} |", table_header(sweep).map(|h| md_cell(&h)).join(" | "));
    s.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|\n");
    for row in table_rows(sweep) {
        let _ = writeln!(s, "| {} |", row.map(|c| md_cell(&c)).join(" | "));
    }
    s.push_str("\n## Plots\n\n");
    for (stem, what) in [(SWEEP_QPS, "throughput and goodput"), (SWEEP_P99, "latency P50/P95/P99")] {
        let _ = writeln!(s, "![{what} against {}]({stem}.png)\n", md_cell(&sweep.param));
    }
    let _ = writeln!(
        s,
        "SVG: [{SWEEP_QPS}.svg]({SWEEP_QPS}.svg), [{SWEEP_P99}.svg]({SWEEP_P99}.svg). Data: [{SWEEP_CSV}]({SWEEP_CSV})."
    );
    s
}

/// The sweep table's columns (`sweep.md` and `report.html`).
pub(crate) fn table_header(sweep: &SweepData) -> [String; 14] {
    let names = [
        "offered",
        "ok",
        "errors",
        "lost",
        "error rate",
        "amplification",
        "P50",
        "P95",
        "P99",
        "max",
        "goodput",
        "sim time",
        "checks",
    ];
    std::array::from_fn(|i| if i == 0 { sweep.param.clone() } else { names[i - 1].to_owned() })
}

/// One row of plain text cells per swept value; the last is the row's verdict.
pub(crate) fn table_rows(sweep: &SweepData) -> Vec<[String; 14]> {
    sweep
        .rows
        .iter()
        .map(|r| {
            let t = clean_totals(&r.totals);
            [
                r.value.clone(),
                grouped(t.offered),
                grouped(t.ok),
                grouped(t.errors),
                grouped(t.lost),
                pct(t.error_rate),
                format!("{}x", short(t.amplification, 3)),
                ms(t.p50_ms),
                ms(t.p95_ms),
                ms(t.p99_ms),
                ms(t.max_ms),
                format!("{} ok/s", short(t.ok_per_s, 2)),
                format!("{} s", short(r.sim_seconds, 3)),
                verdict(r.passed).to_owned(),
            ]
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SweepPanel {
    Qps,
    Latency,
}

#[derive(Debug)]
pub(crate) struct SweepFigure<'a> {
    sweep: &'a SweepData,
    panel: SweepPanel,
}

pub(crate) fn figures(sweep: &SweepData) -> Vec<(&'static str, SweepFigure<'_>)> {
    vec![
        (SWEEP_QPS, SweepFigure { sweep, panel: SweepPanel::Qps }),
        (SWEEP_P99, SweepFigure { sweep, panel: SweepPanel::Latency }),
    ]
}

/// Where each row sits on the x axis, and how the axis is drawn.
struct XAxis {
    axis: Axis,
    xs: Vec<f64>,
    labels: Option<Vec<String>>,
}

fn x_axis(rows: &[SweepRow]) -> XAxis {
    let nums: Option<Vec<f64>> = rows.iter().map(|r| r.numeric.filter(|v| v.is_finite())).collect();
    match nums {
        Some(xs) if !xs.is_empty() => {
            let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
            let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mut distinct = xs.clone();
            distinct.sort_by(f64::total_cmp);
            distinct.dedup();
            let axis = if min > 0.0 && max / min > 20.0 {
                let ticks = if distinct.len() <= 12 { distinct } else { super::plot::log_axis(min, max).ticks };
                Axis { lo: min / 1.4, hi: max * 1.4, ticks, log: true }
            } else {
                let pad = if max > min { (max - min) * 0.06 } else { min.abs().max(1.0) * 0.5 };
                let (lo, hi) = (min - pad, max + pad);
                let ticks = if distinct.len() <= 12 {
                    distinct
                } else {
                    let a = linear_axis(max, 8);
                    a.ticks.into_iter().filter(|t| *t >= lo && *t <= hi).collect()
                };
                Axis { lo, hi, ticks, log: false }
            };
            XAxis { axis, xs, labels: None }
        }
        _ => {
            let n = rows.len().max(1);
            let xs = (0..rows.len()).map(|i| i as f64).collect();
            let axis = Axis { lo: -0.5, hi: n as f64 - 0.5, ticks: (0..n).map(|i| i as f64).collect(), log: false };
            XAxis { axis, xs, labels: Some(rows.iter().map(|r| r.value.clone()).collect()) }
        }
    }
}

struct Series {
    label: &'static str,
    color: RGBColor,
    dashed: bool,
    width: u32,
    pts: Vec<(f64, f64)>,
}

impl SweepFigure<'_> {
    fn series(&self, x: &XAxis) -> Vec<Series> {
        let rows = &self.sweep.rows;
        let make = |label, color, dashed, f: &dyn Fn(&SweepRow) -> f64| {
            let width = if color == OK { 4 } else { 2 };
            let mut pts: Vec<(f64, f64)> = rows.iter().zip(&x.xs).map(|(r, x)| (*x, finite(f(r)))).collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series { label, color, dashed, width, pts }
        };
        match self.panel {
            SweepPanel::Qps => vec![
                make("ok / s (goodput)", OK, false, &|r| r.totals.ok_per_s),
                make("completed / s", COMPLETED, false, &|r| per(r.totals.completed as f64, r.sim_seconds)),
                make("offered / s", OFFERED, true, &|r| per(r.totals.offered as f64, r.sim_seconds)),
            ],
            SweepPanel::Latency => vec![
                make("P50", P50, false, &|r| r.totals.p50_ms),
                make("P95", P95, false, &|r| r.totals.p95_ms),
                make("P99", P99, false, &|r| r.totals.p99_ms),
            ],
        }
    }
}

impl Figure for SweepFigure<'_> {
    fn size(&self) -> (u32, u32) {
        (FIG_W, PANEL_H + 20)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> PlotResult<()> {
        root.fill(&WHITE).map_err(err)?;
        let x = x_axis(&self.sweep.rows);
        let series = self.series(&x);
        let keys: Vec<Key> = series
            .iter()
            .map(|s| Key::new(s.label, s.color, if s.dashed { Swatch::Dashed } else { Swatch::Line }))
            .collect();
        let (what, y_desc) = match self.panel {
            SweepPanel::Qps => ("Throughput and goodput", "calls / s"),
            SweepPanel::Latency => ("Latency", "latency (ms)"),
        };
        let title = format!("{what} vs {} — {} (seed {})", self.sweep.param, self.sweep.scenario, self.sweep.seed);
        let body = header(root, &title, &keys)?;
        let y = match self.panel {
            SweepPanel::Qps => {
                linear_axis(series.iter().flat_map(|s| s.pts.iter().map(|p| p.1)).fold(0.0, f64::max), 5)
            }
            SweepPanel::Latency => value_axis(series.iter().flat_map(|s| s.pts.iter().map(|p| p.1)), 20.0),
        };
        let labels = x.labels.clone();
        let x_fmt = move |v: &f64| match &labels {
            Some(l) => l.get(v.round().max(0.0) as usize).cloned().unwrap_or_default(),
            None => tick(*v),
        };
        let x_desc = if x.axis.log { format!("{} (log scale)", self.sweep.param) } else { self.sweep.param.clone() };
        let y_desc = if y.log { format!("{y_desc}, log scale") } else { y_desc.to_string() };
        let c = ChartSpec { x_desc: &x_desc, y_desc: &y_desc, x_fmt: &x_fmt, series: &series, y_floor: y.log };
        match (x.axis.log, y.log) {
            (false, false) => chart(&body, x.axis.lin(), y.lin(), &c),
            (true, false) => chart(&body, x.axis.log(), y.lin(), &c),
            (false, true) => chart(&body, x.axis.lin(), y.log(), &c),
            (true, true) => chart(&body, x.axis.log(), y.log(), &c),
        }
    }
}

struct ChartSpec<'a> {
    x_desc: &'a str,
    y_desc: &'a str,
    x_fmt: &'a dyn Fn(&f64) -> String,
    series: &'a [Series],
    /// The y axis is logarithmic: values <= 0 cannot be drawn and are left out.
    y_floor: bool,
}

fn chart<DB, X, Y>(body: &DrawingArea<DB, Shift>, x: X, y: Y, c: &ChartSpec<'_>) -> PlotResult<()>
where
    DB: DrawingBackend,
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let mut chart = ChartBuilder::on(body)
        .margin_left(10)
        .margin_right(28)
        .margin_top(4)
        .margin_bottom(8)
        .x_label_area_size(48)
        .y_label_area_size(84)
        .build_cartesian_2d(x, y)
        .map_err(err)?;
    mesh(&mut chart, c.x_desc, c.y_desc, c.x_fmt)?;
    // Later series draw over earlier ones; `series` lists them so that the thinner lines end up on top.
    for s in c.series {
        let pts: Vec<(f64, f64)> = s.pts.iter().copied().filter(|p| !c.y_floor || p.1 > 0.0).collect();
        if s.dashed {
            chart.draw_series(DashedLineSeries::new(pts.clone(), 8, 5, s.color.stroke_width(2))).map_err(err)?;
        } else {
            chart.draw_series(LineSeries::new(pts.clone(), s.color.stroke_width(s.width))).map_err(err)?;
        }
        chart.draw_series(pts.iter().map(|p| Circle::new(*p, 4, s.color.filled()))).map_err(err)?;
    }
    Ok(())
}
