//! A run's plots over simulated time: QPS, latency and errors, alone and stacked in one report figure.
//!
//! Rates are per simulated second; row `t` covers `[t, t+1)`, so lines put its value at `t + 0.5` and the stacked
//! error areas span the whole second. Seconds in which no call completed have no latency and no error rate: those
//! lines break there instead of dropping to zero. The per-second rates stop where the drain starts (see
//! [`Drain`]); latencies and the error rate, which are not rates, go on through it.

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::csv_out::error_rate;
use super::drain::{self, Drain};
use super::num::{finite, grouped, ms, pct, short};
use super::plot::palette::{ATTEMPTS, COMPLETED, OFFERED, OK, P50, P95, P99};
use super::plot::{
    Axis, FIG_W, Figure, Key, Lane, Lin, MARGIN_B, MARGIN_L, MARGIN_R, MUTED, PANEL_H, PlotResult, RIGHT_AREA, Swatch,
    X_AREA, Y_AREA, err, header, label_faults, lighten, linear_axis, mesh, segments, shade_faults, text, tick,
    time_axis, value_axis,
};
use super::summary::verdict;
use crate::run::{FailureClass, RunData, RunMode, SecondRow};

const RATE: RGBColor = RGBColor(33, 37, 41);
const PASS_INK: RGBColor = RGBColor(30, 130, 50);
const FAIL_INK: RGBColor = RGBColor(200, 30, 30);

/// Reads one count or one latency from a row.
type Count = fn(&SecondRow) -> u64;
type Millis = fn(&SecondRow) -> f64;

/// Each failure class's colour in the error panel (stacked in [`FailureClass::ALL`]'s order, bottom first).
fn class_color(class: FailureClass) -> RGBColor {
    match class {
        FailureClass::Transport => RGBColor(214, 39, 40),
        FailureClass::Protocol => RGBColor(148, 103, 189),
        FailureClass::Lifecycle => RGBColor(140, 86, 75),
        FailureClass::Local => RGBColor(127, 127, 127),
        FailureClass::Tool => RGBColor(227, 119, 194),
        // Orange: the gateway's own answer, a contained failure rather than a broken one.
        FailureClass::Degraded => RGBColor(255, 127, 14),
        FailureClass::Auth => RGBColor(188, 189, 34),
    }
}

/// The longest description the report's title block shows, in characters.
const DESC_MAX: usize = 150;

pub(crate) const TIME_DESC: &str = "simulated time (s)";

/// The time axis of a run's plots: simulated, or real time for a live run.
fn time_desc(mode: RunMode) -> &'static str {
    match mode {
        RunMode::Sim => TIME_DESC,
        RunMode::Live => "time since the start, live (s)",
    }
}
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
    drain: Option<Drain>,
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
        RunFigure { run, panel, time: time_axis(finite(run.sim_seconds).max(end)), drain: Drain::of(&run.seconds) }
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
        let rows: Vec<&SecondRow> = self.rates().collect();
        let max = rows.iter().map(|r| r.offered.max(r.attempts).max(r.completed).max(r.ok)).max().unwrap_or(0);
        let y = linear_axis(max as f64, 5);
        let lane = self.lane(&body)?;
        let mut chart = build(&body, &self.time, y.lin(), &lane, false)?;
        mesh(&mut chart, time_desc(self.run.mode), "calls / s", &|v| tick(*v))?;
        shade_faults(&chart, &self.run.faults, self.time.hi)?;
        drain::shade(&chart, self.drain, self.time.hi)?;
        let pts = |f: Count| rows.iter().map(|r| (mid(r), f(r) as f64)).collect::<Vec<_>>();
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
        mesh(&mut chart, time_desc(self.run.mode), y_desc, &|v| tick(*v))?;
        shade_faults(&chart, &self.run.faults, self.time.hi)?;
        drain::shade(&chart, self.drain, self.time.hi)?;
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

    /// The rows drawn as per-second rates: every second before the drain.
    fn rates(&self) -> impl Iterator<Item = &SecondRow> {
        self.run.seconds.iter().filter(|r| Drain::before(self.drain, r.t))
    }

    fn errors<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> PlotResult<()> {
        let all = &self.run.seconds;
        if all.iter().all(|r| r.errors() == 0) {
            return self.no_errors(area);
        }
        let rows: Vec<&SecondRow> = self.rates().collect();
        let present: Vec<FailureClass> =
            FailureClass::ALL.into_iter().filter(|&c| all.iter().any(|r| r.failed(c) > 0)).collect();
        let mut keys: Vec<Key> =
            present.iter().map(|&c| Key::new(c.label(), lighten(class_color(c), 0.2), Swatch::Block)).collect();
        keys.push(Key::new("error rate (right axis)", RATE, Swatch::Line));
        let body = header(area, &self.title("Errors by class and error rate"), &keys)?;

        let max = rows.iter().map(|r| r.errors()).max().unwrap_or(0);
        let y = linear_axis(max as f64, 5);
        let done: Vec<&SecondRow> = all.iter().filter(|r| r.completed > 0).collect();
        let max_rate = done.iter().map(|r| error_rate(r) * 100.0).fold(0.0, f64::max);
        let mut rate = linear_axis(max_rate.max(1.0), 5);
        if rate.hi > 100.0 {
            rate = Axis { hi: 100.0, ticks: (0..=4).map(|i| f64::from(i) * 25.0).collect(), ..rate };
        }
        let lane = self.lane(&body)?;
        let mut chart =
            build(&body, &self.time, y.lin(), &lane, true)?.set_secondary_coord(self.time.lin(), rate.lin());
        mesh(&mut chart, time_desc(self.run.mode), "failed calls / s", &|v| tick(*v))?;
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
        drain::shade(&chart, self.drain, self.time.hi)?;

        // Stacked step areas: draw the tallest (all classes) first, each lower sum over it.
        for top in (0..present.len()).rev() {
            let sum = |r: &SecondRow| present[..=top].iter().map(|&c| r.failed(c)).sum::<u64>() as f64;
            let pts: Vec<(f64, f64)> =
                rows.iter().flat_map(|r| [(r.t as f64, sum(r)), (r.t as f64 + 1.0, sum(r))]).collect();
            let color = class_color(present[top]);
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

    /// The error panel of a run without a failed call: its header and one line saying so, in the panel's usual
    /// size (the report figure keeps its height).
    fn no_errors<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> PlotResult<()> {
        let keys = [Key::new("no errors", lighten(OK, 0.2), Swatch::Block)];
        let body = header(area, &self.title("Errors by class and error rate"), &keys)?;
        let (w, h) = body.dim_in_pixel();
        let line = format!("No failed calls: all {} completed calls were ok.", grouped(self.run.totals.completed));
        let style = text(18.0).color(&MUTED).pos(Pos::new(HPos::Center, VPos::Center));
        body.draw_text(&line, &style, (w as i32 / 2, h as i32 / 2)).map_err(err)
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
        let mut desc = shorten(&run.description, DESC_MAX);
        if let Some(d) = self.drain {
            // The drain's note takes the description's line end: the description gives way to it.
            let note = d.note();
            let (nw, _) = head.estimate_text_size(&note, &note_style).map_err(err)?;
            head.draw_text(&note, &note_style, (FIG_W as i32 - 24, 44)).map_err(err)?;
            let room = FIG_W.saturating_sub(nw + 16 + 24 + 32);
            let desc_style = text(15.0);
            while !desc.is_empty() && head.estimate_text_size(&desc, &desc_style).map_err(err)?.0 > room {
                let n = desc.chars().count();
                desc = shorten(&desc, n.saturating_sub(8));
            }
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

/// `text` on one line of at most `max` characters, cut at a word boundary with an ellipsis when it is longer.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= max {
        return line;
    }
    // Room for the ellipsis; then back to the last space, unless the first word alone is longer than the room.
    let head: String = line.chars().take(max.saturating_sub(1)).collect();
    let cut = match head.rfind(' ') {
        Some(i) if i > 0 => &head[..i],
        _ => head.as_str(),
    };
    format!("{}…", cut.trim_end_matches([',', ';', ':', '.', ' ']))
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

#[cfg(test)]
mod tests {
    use super::shorten;

    #[test]
    fn a_long_description_is_cut_at_a_word_with_an_ellipsis() {
        assert_eq!(shorten("  short\n  enough ", 20), "short enough");
        assert_eq!(shorten("the default gateway contains the storm", 30), "the default gateway contains…");
        assert_eq!(shorten("a 3 s spike; the naive one does not", 16), "a 3 s spike…", "no dangling punctuation");
        assert_eq!(shorten("unbreakable_identifier_here", 10), "unbreakab…", "one long word is cut inside it");
        assert!(shorten(&"word ".repeat(100), 150).chars().count() <= 150);
    }
}
