//! Overlay plots: one line per variant (a routing formula, a gateway profile, ...) on shared axes over simulated
//! time, fault windows shaded. Both `contrast.png` (one scenario and seed under two gateway profiles) and the
//! comparison plots (`compare*.png`, several variants over many seeds) are this figure.
//!
//! A variant run on several seeds is drawn as its per-second aggregate, each [`Metric`] saying how: the mean
//! goodput, the mean of the seeds' P99s (over the seeds that completed calls that second), the pooled error rate (all
//! seeds' failed calls over all their completed ones). The first variant is drawn wide and underneath, the others
//! thin on top, so lines that coincide all stay visible.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::csv_out::error_rate;
use super::num::finite;
use super::plot::{
    Axis, FIG_W, Figure, Key, Lane, MARGIN_L, MARGIN_R, MUTED, PANEL_H, PlotResult, RIGHT_AREA, Swatch, Y_AREA, err,
    header, label_faults, linear_axis, mesh, shade_faults, text, tick, time_axis, value_axis,
};
use super::timeline::{TIME_DESC, build, draw_segments_width};
use crate::run::{FaultWindow, SecondRow};

/// Variant colours, in order (matplotlib's tab10 without its greys).
const VARIANT_COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

const HEAD_H: u32 = 70;

/// One panel: its title, its y axis, and one second's value from the rows of every seed of one variant (`None`:
/// nothing to draw that second, the line breaks).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Metric {
    pub title: &'static str,
    pub y_desc: &'static str,
    /// May use a log axis (latency, which can span decades when one variant stalls).
    pub log_ok: bool,
    pub value: fn(&[&SecondRow]) -> Option<f64>,
}

fn mean(rows: &[&SecondRow], f: impl Fn(&SecondRow) -> f64) -> Option<f64> {
    (!rows.is_empty()).then(|| rows.iter().map(|r| f(r)).sum::<f64>() / rows.len() as f64)
}

pub(crate) const GOODPUT: Metric = Metric {
    title: "Goodput (ok calls per second)",
    y_desc: "ok calls / s",
    log_ok: false,
    value: |rows| mean(rows, |r| r.ok as f64),
};

pub(crate) const P99: Metric = Metric {
    title: "P99 latency of completed calls",
    y_desc: "P99 (ms)",
    log_ok: true,
    value: |rows| {
        let done: Vec<&SecondRow> = rows.iter().copied().filter(|r| r.completed > 0).collect();
        mean(&done, |r| finite(r.p99_ms))
    },
};

pub(crate) const ERROR_RATE: Metric = Metric {
    title: "Error rate",
    y_desc: "failed / completed (%)",
    log_ok: false,
    value: |rows| {
        let completed: u64 = rows.iter().map(|r| r.completed).sum();
        let pooled = SecondRow {
            completed,
            err_protocol: rows.iter().filter(|r| r.completed > 0).map(|r| r.errors()).sum(),
            ..SecondRow::default()
        };
        (completed > 0).then(|| error_rate(&pooled) * 100.0)
    },
};

pub(crate) const AMPLIFICATION: Metric = Metric {
    title: "Retry amplification (attempts per offered call)",
    y_desc: "attempts / call",
    log_ok: false,
    value: |rows| {
        let offered: u64 = rows.iter().map(|r| r.offered).sum();
        let attempts: u64 = rows.iter().map(|r| r.attempts).sum();
        (offered > 0).then(|| attempts as f64 / offered as f64)
    },
};

pub(crate) const STALE_SENDS: Metric = Metric {
    title: "Stale sends (refused for a schema the gateway could have known was stale)",
    y_desc: "stale sends / s",
    log_ok: false,
    value: |rows| mean(rows, |r| r.stale_sends as f64),
};

/// One variant's points per metric, `(t + 0.5, value)`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Series {
    pub points: Vec<Vec<(f64, f64)>>,
}

impl Series {
    /// Aggregates one variant's runs (one `SecondRow` list per seed) for each of `metrics`.
    pub(crate) fn of(runs: &[&[SecondRow]], metrics: &[Metric]) -> Series {
        let seconds = runs.iter().map(|r| r.len()).max().unwrap_or(0);
        let mut points = vec![Vec::new(); metrics.len()];
        for t in 0..seconds {
            let rows: Vec<&SecondRow> = runs.iter().filter_map(|r| r.get(t)).collect();
            for (m, pts) in metrics.iter().zip(points.iter_mut()) {
                if let Some(v) = (m.value)(&rows) {
                    pts.push((t as f64 + 0.5, v));
                }
            }
        }
        Series { points }
    }
}

#[derive(Debug)]
pub(crate) struct Overlay<'a> {
    pub title: String,
    pub subtitle: String,
    pub labels: &'a [String],
    pub series: &'a [Series],
    pub metrics: &'a [Metric],
    pub faults: &'a [FaultWindow],
    /// One metric's panel alone, or `None`: every panel stacked under the title.
    pub panel: Option<usize>,
}

impl Overlay<'_> {
    fn time(&self) -> Axis {
        let end = self.series.iter().flat_map(|s| s.points.iter().flat_map(|p| p.last())).map(|p| p.0 + 0.5);
        time_axis(end.fold(1.0, f64::max))
    }

    fn draw_panel<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>, m: usize) -> PlotResult<()> {
        let metric = &self.metrics[m];
        let keys: Vec<Key> = self
            .labels
            .iter()
            .enumerate()
            .map(|(i, l)| Key::new(l.clone(), VARIANT_COLORS[i % VARIANT_COLORS.len()], Swatch::Line))
            .collect();
        let title =
            if self.panel.is_some() { format!("{} — {}", metric.title, self.title) } else { metric.title.to_owned() };
        let body = header(area, &title, &keys)?;
        let time = self.time();
        let (w, _) = body.dim_in_pixel();
        let plot_x = ((MARGIN_L + Y_AREA) as i32, (w - MARGIN_R - RIGHT_AREA) as i32);
        let lane = Lane::new(&body, self.faults, time.hi, plot_x)?;
        let values = self.series.iter().flat_map(|s| s.points[m].iter().map(|p| finite(p.1)));
        let y =
            if metric.log_ok { value_axis(values, 20.0) } else { linear_axis(values.fold(0.0, f64::max).max(1.0), 5) };
        let line = |i: usize| (VARIANT_COLORS[i % VARIANT_COLORS.len()], if i == 0 { 5 } else { 2 });
        if y.log {
            let mut chart = build(&body, &time, y.log(), &lane, false)?;
            mesh(&mut chart, TIME_DESC, metric.y_desc, &|v| tick(*v))?;
            shade_faults(&chart, self.faults, time.hi)?;
            for (i, s) in self.series.iter().enumerate() {
                // A log axis cannot show 0: such seconds break the line.
                let pts: Vec<(f64, f64)> = s.points[m].iter().copied().filter(|p| p.1 > 0.0).collect();
                let (color, width) = line(i);
                draw_segments_width(&mut chart, &pts, color, width)?;
            }
            label_faults(&body, &chart, self.faults, time.hi, &lane)
        } else {
            let mut chart = build(&body, &time, y.lin(), &lane, false)?;
            mesh(&mut chart, TIME_DESC, metric.y_desc, &|v| tick(*v))?;
            shade_faults(&chart, self.faults, time.hi)?;
            for (i, s) in self.series.iter().enumerate() {
                let (color, width) = line(i);
                draw_segments_width(&mut chart, &s.points[m], color, width)?;
            }
            label_faults(&body, &chart, self.faults, time.hi, &lane)
        }
    }
}

impl Figure for Overlay<'_> {
    fn size(&self) -> (u32, u32) {
        match self.panel {
            None => (FIG_W, HEAD_H + self.metrics.len() as u32 * PANEL_H),
            Some(_) => (FIG_W, PANEL_H),
        }
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> PlotResult<()> {
        root.fill(&WHITE).map_err(err)?;
        if let Some(m) = self.panel {
            return self.draw_panel(root, m);
        }
        let (head, rest) = root.split_vertically(HEAD_H);
        let left = Pos::new(HPos::Left, VPos::Top);
        head.draw_text(&self.title, &text(24.0).pos(left), (16, 10)).map_err(err)?;
        head.draw_text(&self.subtitle, &text(15.0).color(&MUTED).pos(left), (16, 44)).map_err(err)?;
        for (m, area) in rest.split_evenly((self.metrics.len(), 1)).iter().enumerate() {
            self.draw_panel(area, m)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: u64, ok: u64, completed: u64, p99: f64) -> SecondRow {
        SecondRow { t, ok, completed, err_transport: completed - ok, p99_ms: p99, ..SecondRow::default() }
    }

    #[test]
    fn seeds_aggregate_per_second() {
        let a = [row(0, 10, 10, 5.0), row(1, 0, 0, 0.0)];
        let b = [row(0, 6, 10, 15.0), row(1, 2, 4, 30.0)];
        let s = Series::of(&[&a, &b], &[GOODPUT, P99, ERROR_RATE]);
        assert_eq!(s.points[0], vec![(0.5, 8.0), (1.5, 1.0)]);
        assert_eq!(s.points[1], vec![(0.5, 10.0), (1.5, 30.0)], "a second without completions has no P99");
        assert_eq!(s.points[2], vec![(0.5, 20.0), (1.5, 50.0)], "pooled: 4 of 20, then 2 of 4");
    }
}
