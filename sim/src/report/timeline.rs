//! A run's plots over simulated time: QPS, latency and errors, alone and stacked in one report figure.
//!
//! Rates are per simulated second; row `t` covers `[t, t+1)`, so lines put its value at `t + 0.5` and the stacked
//! error areas span the whole second. Seconds in which no call completed have no latency and no error rate: those
//! lines break there instead of dropping to zero.

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::csv_out::error_rate;
use super::num::{finite, grouped, ms, pct, short};
use super::plot::palette::{ATTEMPTS, COMPLETED, OFFERED, OK, P50, P95, P99};
use super::plot::{
    Axis, FIG_W, Figure, Key, Lane, Lin, MARGIN_B, MARGIN_L, MARGIN_R, MUTED, PANEL_H, PlotResult, RIGHT_AREA, Swatch,
    X_AREA, Y_AREA, err, header, label_faults, lighten, linear_axis, mesh, segments, shade_faults, text, tick,
    time_axis, value_axis,
};
use super::summary::verdict;
use crate::run::{RunData, SecondRow};

const RATE: RGBColor = RGBColor(33, 37, 41);
const PASS_INK: RGBColor = RGBColor(30, 130, 50);
const FAIL_INK: RGBColor = RGBColor(200, 30, 30);

/// Error classes, bottom of the stack first.
/// Reads one count or one latency from a row.
type Count = fn(&SecondRow) -> u64;
type Millis = fn(&SecondRow) -> f64;

const CLASSES: [(&str, RGBColor, Count); 6] = [
    ("transport", RGBColor(214, 39, 40), |r| r.err_transport),
    ("protocol", RGBColor(148, 103, 189), |r| r.err_protocol),
    ("lifecycle", RGBColor(140, 86, 75), |r| r.err_lifecycle),
    ("local", RGBColor(127, 127, 127), |r| r.err_local),
    ("tool", RGBColor(227, 119, 194), |r| r.err_tool),
    ("auth", RGBColor(188, 189, 34), |r| r.err_auth),
];

pub(crate) const TIME_DESC: &str = "simulated time (s)";
/// Height of the report figure's title block.
const REPORT_HEAD_H: u32 = 96;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Panel {
    Qps,
    Latency,
    Errors,
    /// The three panels stacked under a title block.
    Report,
}

#[derive(Debug)]
pub(crate) struct RunFigure<'a> {
    run: &'a RunData,
    panel: Panel,
    time: Axis,
}

/// The figures a run writes, with their file stems.
pub(crate) fn figures(run: &RunData) -> Vec<(&'static str, RunFigure<'_>)> {
    use super::plot::{ERRORS, P99 as P99_STEM, QPS, REPORT};
    [(QPS, Panel::Qps), (P99_STEM, Panel::Latency), (ERRORS, Panel::Errors), (REPORT, Panel::Report)]
        .into_iter()
        .map(|(stem, panel)| (stem, RunFigure::new(run, panel)))
        .collect()
}

impl<'a> RunFigure<'a> {
    pub(crate) fn new(run: &'a RunData, panel: Panel) -> Self {
        let end = run.seconds.iter().map(|r| r.t + 1).max().unwrap_or(0) as f64;
        RunFigure { run, panel, time: time_axis(finite(run.sim_seconds).max(end)) }
    }

    /// The fault labels' layout for a chart on `body` (see [`build`] for where the plot sits).
    fn lane<DB: DrawingBackend>(&self, body: &DrawingArea<DB, Shift>) -> PlotResult<Lane> {
        let (w, _) = body.dim_in_pixel();
        let plot_x = ((MARGIN_L + Y_AREA) as i32, (w - MARGIN_R - RIGHT_AREA) as i32);
        Lane::new(body, &self.run.faults, self.time.hi, plot_x)
    }

    fn title(&self, what: &str) -> String {
        if self.panel == Panel::Report {
            what.to_string()
        } else {
            format!("{what} — {} (seed {})", self.run.scenario, self.run.seed)
        }
    }

    fn qps<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> PlotResult<()> {
        let keys = [
            Key::new("offered", OFFERED, Swatch::Dashed),
            Key::new("attempts", ATTEMPTS, Swatch::Line),
            Key::new("completed", COMPLETED, Swatch::Line),
            Key::new("ok", OK, Swatch::Line),
        ];
        let body = header(area, &self.title("Calls per second"), &keys)?;
        let rows = &self.run.seconds;
        let max = rows.iter().map(|r| r.offered.max(r.attempts).max(r.completed).max(r.ok)).max().unwrap_or(0);
        let y = linear_axis(max as f64, 5);
        let lane = self.lane(&body)?;
        let mut chart = build(&body, &self.time, y.lin(), &lane, false)?;
        mesh(&mut chart, TIME_DESC, "calls / s", &|v| tick(*v))?;
        shade_faults(&chart, &self.run.faults, self.time.hi)?;
        let pts = |f: Count| rows.iter().map(move |r| (mid(r), f(r) as f64)).collect::<Vec<_>>();
        // Widest first and offered (dashed) last, so that lines which coincide (ok = completed, attempts = offered
        // when nothing fails) all stay visible.
        let lines: [(Count, RGBColor, u32); 3] = [
            (|r: &SecondRow| r.ok, OK, 4),
            (|r: &SecondRow| r.completed, COMPLETED, 2),
            (|r: &SecondRow| r.attempts, ATTEMPTS, 2),
        ];
        for (f, color, width) in lines {
            chart.draw_series(LineSeries::new(pts(f), color.stroke_width(width))).map_err(err)?;
        }
        chart.draw_series(DashedLineSeries::new(pts(|r| r.offered), 8, 5, OFFERED.stroke_width(2))).map_err(err)?;
        label_faults(&body, &chart, &self.run.faults, self.time.hi, &lane)
    }

    fn latency<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> PlotResult<()> {
        let keys = [
            Key::new("P50", P50, Swatch::Line),
            Key::new("P95", P95, Swatch::Line),
            Key::new("P99", P99, Swatch::Line),
        ];
        let body = header(area, &self.title("Latency of completed calls"), &keys)?;
        let done: Vec<&SecondRow> = self.run.seconds.iter().filter(|r| r.completed > 0).collect();
        let y = value_axis(done.iter().flat_map(|r| [finite(r.p50_ms), finite(r.p99_ms), finite(r.p95_ms)]), 20.0);
        if y.log {
            self.latency_chart(&body, y.log(), &y, "latency (ms, log scale)", &done)
        } else {
            self.latency_chart(&body, y.lin(), &y, "latency (ms)", &done)
        }
    }

    fn latency_chart<DB, Y>(
        &self,
        body: &DrawingArea<DB, Shift>,
        y_spec: Y,
        y: &Axis,
        y_desc: &str,
        done: &[&SecondRow],
    ) -> PlotResult<()>
    where
        DB: DrawingBackend,
        Y: AsRangedCoord<Value = f64>,
        Y::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let lane = self.lane(body)?;
        let mut chart = build(body, &self.time, y_spec, &lane, false)?;
        mesh(&mut chart, TIME_DESC, y_desc, &|v| tick(*v))?;
        shade_faults(&chart, &self.run.faults, self.time.hi)?;
        // On a log axis a 0 cannot be drawn; such seconds break the line.
        let floor = if y.log { y.lo } else { f64::NEG_INFINITY };
        let lines: [(Millis, RGBColor); 3] =
            [(|r: &SecondRow| r.p50_ms, P50), (|r: &SecondRow| r.p95_ms, P95), (|r: &SecondRow| r.p99_ms, P99)];
        for (f, color) in lines {
            let pts: Vec<(f64, f64)> = done
                .iter()
                .map(|r| (mid(r), finite(f(r))))
                .filter(|(_, v)| *v >= floor && (!y.log || *v > 0.0))
                .collect();
            draw_segments(&mut chart, &pts, color)?;
        }
        label_faults(body, &chart, &self.run.faults, self.time.hi, &lane)
    }

    fn errors<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> PlotResult<()> {
        let rows = &self.run.seconds;
        let present: Vec<usize> = (0..CLASSES.len()).filter(|&k| rows.iter().any(|r| (CLASSES[k].2)(r) > 0)).collect();
        let mut keys: Vec<Key> =
            present.iter().map(|&k| Key::new(CLASSES[k].0, lighten(CLASSES[k].1, 0.2), Swatch::Block)).collect();
        if present.is_empty() {
            keys.push(Key::new("no errors", lighten(OK, 0.2), Swatch::Block));
        }
        keys.push(Key::new("error rate (right axis)", RATE, Swatch::Line));
        let body = header(area, &self.title("Errors by class and error rate"), &keys)?;

        let max = rows.iter().map(SecondRow::errors).max().unwrap_or(0);
        let y = linear_axis(max as f64, 5);
        let done: Vec<&SecondRow> = rows.iter().filter(|r| r.completed > 0).collect();
        let max_rate = done.iter().map(|r| error_rate(r) * 100.0).fold(0.0, f64::max);
        let mut rate = linear_axis(max_rate.max(1.0), 5);
        if rate.hi > 100.0 {
            rate = Axis { hi: 100.0, ticks: (0..=4).map(|i| f64::from(i) * 25.0).collect(), ..rate };
        }
        let lane = self.lane(&body)?;
        let mut chart =
            build(&body, &self.time, y.lin(), &lane, true)?.set_secondary_coord(self.time.lin(), rate.lin());
        mesh(&mut chart, TIME_DESC, "failed calls / s", &|v| tick(*v))?;
        chart
            .configure_secondary_axes()
            .y_desc("error rate (%)")
            .y_label_formatter(&|v| tick(*v))
            .label_style(text(15.0))
            .axis_desc_style(text(16.0))
            .axis_style(RGBColor(120, 124, 130))
            .draw()
            .map_err(err)?;
        shade_faults(&chart, &self.run.faults, self.time.hi)?;

        // Stacked step areas: draw the tallest (all classes) first, each lower sum over it.
        for top in (0..present.len()).rev() {
            let sum = |r: &SecondRow| present[..=top].iter().map(|&k| (CLASSES[k].2)(r)).sum::<u64>() as f64;
            let pts: Vec<(f64, f64)> =
                rows.iter().flat_map(|r| [(r.t as f64, sum(r)), (r.t as f64 + 1.0, sum(r))]).collect();
            let color = CLASSES[present[top]].1;
            chart
                .draw_series(
                    AreaSeries::new(pts, 0.0, lighten(color, 0.2).filled()).border_style(color.stroke_width(1)),
                )
                .map_err(err)?;
        }
        let pts: Vec<(f64, f64)> = done.iter().map(|r| (mid(r), error_rate(r) * 100.0)).collect();
        for seg in segments(&pts, 1.0) {
            if let [p] = seg[..] {
                chart.draw_secondary_series([Circle::new(p, 3, RATE.filled())]).map_err(err)?;
            } else {
                chart.draw_secondary_series(LineSeries::new(seg, RATE.stroke_width(2))).map_err(err)?;
            }
        }
        label_faults(&body, &chart, &self.run.faults, self.time.hi, &lane)
    }

    fn report<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> PlotResult<()> {
        let (head, rest) = root.split_vertically(REPORT_HEAD_H);
        let run = self.run;
        let t = &run.totals;
        let left = Pos::new(HPos::Left, VPos::Top);
        let title = format!("mcpstorm · {} · seed {} · ", run.scenario, run.seed);
        let title_style = text(24.0).pos(left);
        head.draw_text(&title, &title_style, (16, 10)).map_err(err)?;
        let (tw, _) = head.estimate_text_size(&title, &title_style).map_err(err)?;
        let mut verdict_style = title_style.clone();
        verdict_style.color = (if run.passed() { PASS_INK } else { FAIL_INK }).to_backend_color();
        head.draw_text(verdict(run.passed()), &verdict_style, (16 + tw as i32, 10)).map_err(err)?;
        let note = "shaded bands: fault windows";
        let note_style = text(14.0).color(&MUTED).pos(Pos::new(HPos::Right, VPos::Top));
        head.draw_text(note, &note_style, (FIG_W as i32 - 24, 16)).map_err(err)?;
        let mut desc = run.description.split_whitespace().collect::<Vec<_>>().join(" ");
        if desc.chars().count() > 150 {
            desc = desc.chars().take(147).collect::<String>() + "...";
        }
        head.draw_text(&desc, &text(15.0).color(&MUTED).pos(left), (16, 44)).map_err(err)?;
        let line = format!(
            "offered {} · ok {} · errors {} ({}) · lost {} · attempts {} ({}x) · P99 {} · goodput {} ok/s · {} s simulated",
            grouped(t.offered),
            grouped(t.ok),
            grouped(t.errors),
            pct(finite(t.error_rate)),
            grouped(t.lost),
            grouped(t.attempts),
            short(t.amplification, 2),
            ms(t.p99_ms),
            short(t.ok_per_s, 1),
            short(run.sim_seconds, 1),
        );
        head.draw_text(&line, &text(15.0).pos(left), (16, 68)).map_err(err)?;
        let panels = rest.split_evenly((3, 1));
        self.qps(&panels[0])?;
        self.latency(&panels[1])?;
        self.errors(&panels[2])
    }
}

impl Figure for RunFigure<'_> {
    fn size(&self) -> (u32, u32) {
        match self.panel {
            Panel::Report => (FIG_W, REPORT_HEAD_H + 3 * PANEL_H),
            _ => (FIG_W, PANEL_H),
        }
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> PlotResult<()> {
        root.fill(&WHITE).map_err(err)?;
        match self.panel {
            Panel::Qps => self.qps(root),
            Panel::Latency => self.latency(root),
            Panel::Errors => self.errors(root),
            Panel::Report => self.report(root),
        }
    }
}

/// The middle of the second a row covers.
pub(crate) fn mid(r: &SecondRow) -> f64 {
    r.t as f64 + 0.5
}

/// A chart over simulated time on `body`, below the lane of fault labels; with a secondary axis on the right
/// when `right_axis`, else the same width left blank (see [`RIGHT_AREA`]).
pub(crate) fn build<'a, DB, Y>(
    body: &'a DrawingArea<DB, Shift>,
    time: &Axis,
    y: Y,
    lane: &Lane,
    right_axis: bool,
) -> PlotResult<ChartContext<'a, DB, Cartesian2d<Lin, Y::CoordDescType>>>
where
    DB: DrawingBackend,
    Y: AsRangedCoord<Value = f64>,
{
    let mut b = ChartBuilder::on(body);
    b.margin_left(MARGIN_L).margin_top(lane.height()).margin_bottom(MARGIN_B);
    b.x_label_area_size(X_AREA).y_label_area_size(Y_AREA);
    if right_axis {
        b.margin_right(MARGIN_R).right_y_label_area_size(RIGHT_AREA);
    } else {
        b.margin_right(MARGIN_R + RIGHT_AREA);
    }
    b.build_cartesian_2d(time.lin(), y).map_err(err)
}

/// A line per run of consecutive seconds; a lone point gets a dot.
pub(crate) fn draw_segments<DB, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<Lin, Y>>,
    pts: &[(f64, f64)],
    color: RGBColor,
) -> PlotResult<()>
where
    DB: DrawingBackend,
    Y: Ranged<ValueType = f64>,
{
    draw_segments_width(chart, pts, color, 2)
}

/// [`draw_segments`] with lines `width` pixels wide (a wide line drawn first stays visible under a thin one that
/// coincides with it).
pub(crate) fn draw_segments_width<DB, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<Lin, Y>>,
    pts: &[(f64, f64)],
    color: RGBColor,
    width: u32,
) -> PlotResult<()>
where
    DB: DrawingBackend,
    Y: Ranged<ValueType = f64>,
{
    for seg in segments(pts, 1.0) {
        if let [p] = seg[..] {
            chart.draw_series([Circle::new(p, width + 1, color.filled())]).map_err(err)?;
        } else {
            chart.draw_series(LineSeries::new(seg, color.stroke_width(width))).map_err(err)?;
        }
    }
    Ok(())
}
