//! Overlay plots: one line per variant (routing formula, gateway profile, ...) on shared axes over simulated time,
//! fault windows shaded, for goodput, P99 and error rate. A variant run on several seeds is drawn as its per-second
//! aggregate: the mean goodput, the mean of the seeds' P99s (over seeds that completed calls that second), and the
//! pooled error rate (all seeds' failed calls over all their completed ones).

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::csv_out::error_rate;
use super::data::{FaultWindow, SecondRow};
use super::num::finite;
use super::plot::{
    Axis, FIG_W, Figure, Key, Lane, MARGIN_L, MARGIN_R, MUTED, PANEL_H, PlotResult, RIGHT_AREA, Swatch, Y_AREA, err,
    header, label_faults, linear_axis, mesh, shade_faults, text, tick, time_axis, value_axis,
};
use super::timeline::{build, draw_segments};

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

const TIME_DESC: &str = "simulated time (s)";
const HEAD_H: u32 = 70;

/// One variant's per-second aggregate, as points `(t + 0.5, value)`; seconds without completed calls have no P99
/// and no error rate.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Series {
    pub goodput: Vec<(f64, f64)>,
    pub p99_ms: Vec<(f64, f64)>,
    pub error_pct: Vec<(f64, f64)>,
}

impl Series {
    /// Aggregates one variant's runs (one `SecondRow` list per seed).
    pub(crate) fn of(runs: &[&[SecondRow]]) -> Series {
        let seconds = runs.iter().map(|r| r.len()).max().unwrap_or(0);
        let mut s = Series::default();
        for t in 0..seconds {
            let rows: Vec<&SecondRow> = runs.iter().filter_map(|r| r.get(t)).collect();
            let x = t as f64 + 0.5;
            s.goodput.push((x, rows.iter().map(|r| r.ok as f64).sum::<f64>() / runs.len().max(1) as f64));
            let done: Vec<&&SecondRow> = rows.iter().filter(|r| r.completed > 0).collect();
            if !done.is_empty() {
                s.p99_ms.push((x, done.iter().map(|r| finite(r.p99_ms)).sum::<f64>() / done.len() as f64));
                let pooled = SecondRow {
                    completed: done.iter().map(|r| r.completed).sum(),
                    err_protocol: done.iter().map(|r| r.errors()).sum(),
                    ..SecondRow::default()
                };
                s.error_pct.push((x, error_rate(&pooled) * 100.0));
            }
        }
        s
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OverlayPanel {
    Goodput,
    P99,
    ErrorRate,
    /// The three stacked under a title block.
    All,
}

#[derive(Debug)]
pub(crate) struct Overlay<'a> {
    pub title: String,
    pub subtitle: String,
    pub labels: &'a [String],
    pub series: &'a [Series],
    pub faults: &'a [FaultWindow],
    pub panel: OverlayPanel,
}

impl Overlay<'_> {
    fn time(&self) -> Axis {
        let end = self.series.iter().flat_map(|s| s.goodput.last()).map(|p| p.0 + 0.5).fold(0.0, f64::max);
        let faults = self.faults.iter().map(|f| f.end_s).fold(0.0, f64::max);
        time_axis(end.max(faults.min(end.max(1.0))))
    }

    fn keys(&self) -> Vec<Key> {
        self.labels
            .iter()
            .enumerate()
            .map(|(i, l)| Key::new(l.clone(), VARIANT_COLORS[i % VARIANT_COLORS.len()], Swatch::Line))
            .collect()
    }

    fn panel<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        title: &str,
        y_desc: &str,
        pick: fn(&Series) -> &Vec<(f64, f64)>,
        latency: bool,
    ) -> PlotResult<()> {
        let body = header(area, title, &self.keys())?;
        let time = self.time();
        let (w, _) = body.dim_in_pixel();
        let plot_x = ((MARGIN_L + Y_AREA) as i32, (w - MARGIN_R - RIGHT_AREA) as i32);
        let lane = Lane::new(&body, self.faults, time.hi, plot_x)?;
        let values = self.series.iter().flat_map(|s| pick(s).iter().map(|p| finite(p.1)));
        // Latency may span decades (a stalled variant next to a healthy one): log scale when it does.
        let y = if latency { value_axis(values, 20.0) } else { linear_axis(values.fold(0.0, f64::max).max(1.0), 5) };
        if y.log {
            let mut chart = build(&body, &time, y.log(), &lane, false)?;
            mesh(&mut chart, TIME_DESC, y_desc, &|v| tick(*v))?;
            shade_faults(&chart, self.faults, time.hi)?;
            for (i, s) in self.series.iter().enumerate() {
                let pts: Vec<(f64, f64)> = pick(s).iter().copied().filter(|p| p.1 > 0.0).collect();
                draw_segments(&mut chart, &pts, VARIANT_COLORS[i % VARIANT_COLORS.len()])?;
            }
            label_faults(&body, &chart, self.faults, time.hi, &lane)
        } else {
            let mut chart = build(&body, &time, y.lin(), &lane, false)?;
            mesh(&mut chart, TIME_DESC, y_desc, &|v| tick(*v))?;
            shade_faults(&chart, self.faults, time.hi)?;
            for (i, s) in self.series.iter().enumerate() {
                draw_segments(&mut chart, pick(s), VARIANT_COLORS[i % VARIANT_COLORS.len()])?;
            }
            label_faults(&body, &chart, self.faults, time.hi, &lane)
        }
    }

    fn goodput<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> PlotResult<()> {
        self.panel(area, &self.panel_title("Goodput (ok calls per second)"), "ok calls / s", |s| &s.goodput, false)
    }

    fn p99<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> PlotResult<()> {
        self.panel(area, &self.panel_title("P99 latency of completed calls"), "P99 (ms)", |s| &s.p99_ms, true)
    }

    fn error_rate<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> PlotResult<()> {
        self.panel(area, &self.panel_title("Error rate"), "failed / completed (%)", |s| &s.error_pct, false)
    }

    fn panel_title(&self, what: &str) -> String {
        if self.panel == OverlayPanel::All { what.to_owned() } else { format!("{what} — {}", self.title) }
    }
}

impl Figure for Overlay<'_> {
    fn size(&self) -> (u32, u32) {
        match self.panel {
            OverlayPanel::All => (FIG_W, HEAD_H + 3 * PANEL_H),
            _ => (FIG_W, PANEL_H),
        }
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> PlotResult<()> {
        root.fill(&WHITE).map_err(err)?;
        match self.panel {
            OverlayPanel::Goodput => self.goodput(root),
            OverlayPanel::P99 => self.p99(root),
            OverlayPanel::ErrorRate => self.error_rate(root),
            OverlayPanel::All => {
                let (head, rest) = root.split_vertically(HEAD_H);
                let left = Pos::new(HPos::Left, VPos::Top);
                head.draw_text(&self.title, &text(24.0).pos(left), (16, 10)).map_err(err)?;
                head.draw_text(&self.subtitle, &text(15.0).color(&MUTED).pos(left), (16, 42)).map_err(err)?;
                let panels = rest.split_evenly((3, 1));
                self.goodput(&panels[0])?;
                self.p99(&panels[1])?;
                self.error_rate(&panels[2])
            }
        }
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
        let s = Series::of(&[&a, &b]);
        assert_eq!(s.goodput, vec![(0.5, 8.0), (1.5, 1.0)]);
        assert_eq!(s.p99_ms, vec![(0.5, 10.0), (1.5, 30.0)], "a second without completions has no P99");
        assert_eq!(s.error_pct, vec![(0.5, 20.0), (1.5, 50.0)], "pooled: 4 of 20, then 2 of 4");
    }
}
