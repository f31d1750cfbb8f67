//! What every plot shares: rendering one figure to SVG and to PNG, the palette, axes with chosen ticks, a panel
//! header with its legend, and fault windows shaded and labelled as Jepsen does.
//!
//! A figure draws itself on any plotters backend, so the SVG and the PNG come from the same code. Both are
//! deterministic: the same data gives the same bytes. Ticks are computed here rather than left to plotters so that
//! they land on round numbers and the axes read the same from run to run. Legends sit in a header strip above each
//! panel, never over the data, and the fault labels sit in rows at the top of the plotting area.

use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::font;
use super::num::{finite, grouped, short};
use crate::run::FaultWindow;

/// File stems of a run's plots (each written as `.svg` and `.png`).
pub(crate) const QPS: &str = "qps";
pub(crate) const P99: &str = "p99";
pub(crate) const ERRORS: &str = "errors";
pub(crate) const REPORT: &str = "report";

/// Width of every figure, in pixels.
pub(crate) const FIG_W: u32 = 1200;
/// Height of one panel (header strip included).
pub(crate) const PANEL_H: u32 = 420;
/// Height of a panel's header strip: its title and legend.
const HEAD_H: u32 = 40;

/// Layout of a chart inside a panel's body, in pixels: plotters puts the label areas inside the margins, so the
/// plotting area spans `MARGIN_L + Y_AREA .. width - MARGIN_R - RIGHT_AREA`.
pub(crate) const MARGIN_L: u32 = 10;
pub(crate) const MARGIN_R: u32 = 12;
pub(crate) const MARGIN_B: u32 = 8;
pub(crate) const Y_AREA: u32 = 84;
pub(crate) const X_AREA: u32 = 48;
/// Kept on the right of every time panel for the errors panel's secondary axis, so that stacked panels share
/// their x pixels and a moment reads straight down the report.
pub(crate) const RIGHT_AREA: u32 = 80;

pub(crate) const TEXT: RGBColor = RGBColor(33, 37, 41);
pub(crate) const MUTED: RGBColor = RGBColor(100, 106, 115);
const GRID: RGBColor = RGBColor(228, 230, 233);
const AXIS: RGBColor = RGBColor(120, 124, 130);

/// Fault bands cycle through these; they are drawn at low alpha, so they stay behind the series.
const BAND_COLORS: [RGBColor; 5] = [
    RGBColor(245, 166, 35),
    RGBColor(0, 150, 136),
    RGBColor(92, 107, 192),
    RGBColor(158, 157, 36),
    RGBColor(233, 30, 99),
];

pub(crate) type PlotResult<T> = Result<T, String>;

/// plotters' errors are generic over the backend; the report only needs their text.
pub(crate) fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// Something drawn the same way on the SVG and the bitmap backend.
pub(crate) trait Figure {
    fn size(&self) -> (u32, u32);
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> PlotResult<()>;
}

#[derive(Debug)]
pub(crate) enum RenderError {
    Plot(String),
    Png(png::EncodingError),
}

pub(crate) fn render_svg(fig: &impl Figure) -> PlotResult<String> {
    font::ensure_registered()?;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, fig.size()).into_drawing_area();
        fig.draw(&root)?;
        root.present().map_err(err)?;
    }
    Ok(out)
}

/// Draws into an RGB buffer and encodes it with `png` directly (no `image` crate): 8-bit RGB, default compression,
/// deterministic.
pub(crate) fn render_png(fig: &impl Figure) -> Result<Vec<u8>, RenderError> {
    font::ensure_registered().map_err(RenderError::Plot)?;
    let (w, h) = fig.size();
    let mut pixels = vec![0u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, (w, h)).into_drawing_area();
        fig.draw(&root).map_err(RenderError::Plot)?;
        root.present().map_err(|e| RenderError::Plot(e.to_string()))?;
    }
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc.write_header().map_err(RenderError::Png)?;
        writer.write_image_data(&pixels).map_err(RenderError::Png)?;
        writer.finish().map_err(RenderError::Png)?;
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------------------------
// Styles

pub(crate) fn text(size: f64) -> TextStyle<'static> {
    TextStyle::from((font::FAMILY, size).into_font()).color(&TEXT)
}

fn darken(c: RGBColor, f: f64) -> RGBColor {
    let d = |v: u8| (f64::from(v) * f).round().clamp(0.0, 255.0) as u8;
    RGBColor(d(c.0), d(c.1), d(c.2))
}

/// `c` blended towards white by `f` (0: unchanged, 1: white), as an opaque color.
pub(crate) fn lighten(c: RGBColor, f: f64) -> RGBColor {
    let l = |v: u8| (f64::from(v) + (255.0 - f64::from(v)) * f).round().clamp(0.0, 255.0) as u8;
    RGBColor(l(c.0), l(c.1), l(c.2))
}

// ---------------------------------------------------------------------------------------------------------------
// Axes

/// A coordinate with exactly the ticks we chose (plotters' own `WithKeyPoints` loses the f64 label formatter).
pub(crate) struct Ticked<R> {
    inner: R,
    ticks: Vec<f64>,
}

impl<R: Ranged<ValueType = f64>> Ranged for Ticked<R> {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    /// Grid lines and labels at our ticks only; no light lines.
    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() { Vec::new() } else { self.ticks.clone() }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }

    fn axis_pixel_range(&self, limit: (i32, i32)) -> std::ops::Range<i32> {
        self.inner.axis_pixel_range(limit)
    }
}

/// A linear axis with chosen ticks.
pub(crate) type Lin = Ticked<RangedCoordf64>;
/// A log axis with chosen (1-2-5) ticks.
pub(crate) type Log = Ticked<LogCoord<f64>>;

/// The axis range and its ticks.
#[derive(Debug, Clone)]
pub(crate) struct Axis {
    pub lo: f64,
    pub hi: f64,
    pub ticks: Vec<f64>,
    pub log: bool,
}

impl Axis {
    pub(crate) fn lin(&self) -> Lin {
        Ticked { inner: (self.lo..self.hi).into(), ticks: self.ticks.clone() }
    }

    pub(crate) fn log(&self) -> Log {
        Ticked { inner: (self.lo..self.hi).log_scale().into(), ticks: self.ticks.clone() }
    }
}

/// The smallest of 1, 2, 2.5, 5 x 10^k that is at least `raw`.
fn nice_step(raw: f64) -> f64 {
    let raw = if raw.is_finite() && raw > 0.0 { raw } else { 1.0 };
    let mag = 10f64.powf(raw.log10().floor());
    let m = raw / mag;
    let f = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 2.5 {
        2.5
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    f * mag
}

/// `0..hi` covering `max` with a little headroom and about `target` round ticks.
pub(crate) fn linear_axis(max: f64, target: usize) -> Axis {
    let max = if max.is_finite() && max > 0.0 { max } else { 1.0 };
    let step = nice_step(max * 1.05 / target.max(1) as f64);
    let n = (max * 1.05 / step).ceil().max(1.0) as usize;
    let ticks = (0..=n).map(|i| i as f64 * step).collect();
    Axis { lo: 0.0, hi: n as f64 * step, ticks, log: false }
}

/// The 1-2-5 values (..., 0.5, 1, 2, 5, 10, ...) just below and just above `v`.
fn one_two_five(v: f64) -> (f64, f64) {
    let mag = 10f64.powf(v.log10().floor());
    let steps = [1.0, 2.0, 5.0, 10.0];
    let below = steps.iter().rev().map(|m| m * mag).find(|x| *x <= v * 1.0001).unwrap_or(mag);
    let above = steps.iter().map(|m| m * mag).find(|x| *x >= v * 0.9999).unwrap_or(mag * 10.0);
    (below, above)
}

/// A log axis from the 1-2-5 value below `min` to the one above `max` (both positive), with 1-2-5 ticks when
/// there is room for them, else one per decade.
pub(crate) fn log_axis(min: f64, max: f64) -> Axis {
    let lo = one_two_five(min).0;
    let mut hi = one_two_five(max * 1.08).1;
    if hi <= lo {
        hi = lo * 10.0;
    }
    let decades = (hi / lo).log10();
    let mults: &[f64] = if decades <= 3.5 { &[1.0, 2.0, 5.0] } else { &[1.0] };
    let mut ticks = Vec::new();
    let mut base = 10f64.powf(lo.log10().floor());
    while base <= hi * 1.0001 {
        for m in mults {
            let v = base * m;
            if v >= lo * 0.9999 && v <= hi * 1.0001 {
                ticks.push(v);
            }
        }
        base *= 10.0;
    }
    Axis { lo, hi, ticks, log: true }
}

/// A latency-style axis: log when the values span more than `span` times, else linear from 0.
pub(crate) fn value_axis(values: impl Iterator<Item = f64> + Clone, span: f64) -> Axis {
    let pos = values.filter(|v| v.is_finite() && *v > 0.0);
    let min = pos.clone().fold(f64::INFINITY, f64::min);
    let max = pos.fold(0.0, f64::max);
    if max > 0.0 && max / min > span { log_axis(min, max) } else { linear_axis(max, 5) }
}

/// The time axis of a run: `0..max` seconds with round ticks every 1, 2, 5, 10, 15, 30 or 60 x 10^k seconds.
pub(crate) fn time_axis(max: f64) -> Axis {
    let max = if max.is_finite() && max > 0.0 { max } else { 1.0 };
    let raw = max / 12.0;
    let step = [1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0]
        .into_iter()
        .find(|s| *s >= raw)
        .unwrap_or_else(|| nice_step(raw));
    // Short runs get sub-second ticks.
    let step = if max < 5.0 { nice_step(max / 5.0) } else { step };
    let n = (max / step + 1e-9).floor() as usize;
    let ticks = (0..=n).map(|i| i as f64 * step).collect();
    Axis { lo: 0.0, hi: max, ticks, log: false }
}

/// A tick label: no trailing zeros, thousands grouped.
pub(crate) fn tick(v: f64) -> String {
    let v = finite(v);
    if v.abs() >= 1000.0 && v.fract() == 0.0 && v > 0.0 { grouped(v as u64) } else { short(v, 3) }
}

/// Grid, axes and their labels, in the report's style.
pub(crate) fn mesh<DB, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    x_desc: &str,
    y_desc: &str,
    x_fmt: &dyn Fn(&f64) -> String,
) -> PlotResult<()>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(x_fmt)
        .y_label_formatter(&|v| tick(*v))
        .label_style(text(15.0))
        .axis_desc_style(text(16.0))
        .bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .axis_style(AXIS)
        .draw()
        .map_err(err)
}

// ---------------------------------------------------------------------------------------------------------------
// Panel header: title on the left, legend on the right

#[derive(Debug, Clone, Copy)]
pub(crate) enum Swatch {
    Line,
    Dashed,
    Block,
}

#[derive(Debug, Clone)]
pub(crate) struct Key {
    pub label: String,
    pub color: RGBColor,
    pub swatch: Swatch,
}

impl Key {
    pub(crate) fn new(label: impl Into<String>, color: RGBColor, swatch: Swatch) -> Self {
        Key { label: label.into(), color, swatch }
    }
}

/// Draws the header strip of a panel and returns the area left for the chart.
pub(crate) fn header<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    keys: &[Key],
) -> PlotResult<DrawingArea<DB, Shift>> {
    let (head, body) = area.split_vertically(HEAD_H);
    let (w, h) = head.dim_in_pixel();
    let mid = h as i32 / 2 + 2;
    let title_style = text(20.0).pos(Pos::new(HPos::Left, VPos::Center));
    head.draw_text(title, &title_style, (16, mid)).map_err(err)?;

    let key_style = text(15.0).pos(Pos::new(HPos::Left, VPos::Center));
    let mut x = w as i32 - 24;
    for k in keys.iter().rev() {
        let (tw, _) = head.estimate_text_size(&k.label, &key_style).map_err(err)?;
        x -= tw as i32;
        head.draw_text(&k.label, &key_style, (x, mid)).map_err(err)?;
        x -= 6 + 24;
        let c = k.color;
        match k.swatch {
            Swatch::Line => {
                head.draw(&PathElement::new(vec![(x, mid), (x + 24, mid)], c.stroke_width(3))).map_err(err)?;
            }
            Swatch::Dashed => {
                for (a, b) in [(x, x + 7), (x + 10, x + 17), (x + 20, x + 24)] {
                    head.draw(&PathElement::new(vec![(a, mid), (b, mid)], c.stroke_width(3))).map_err(err)?;
                }
            }
            Swatch::Block => {
                head.draw(&Rectangle::new([(x + 4, mid - 7), (x + 20, mid + 7)], c.filled())).map_err(err)?;
            }
        }
        x -= 20;
    }
    Ok(body)
}

// ---------------------------------------------------------------------------------------------------------------
// Fault windows

/// The part of a fault window inside `[0, x_max]`, or `None` when it lies outside the run or ends before it starts.
fn visible(f: &FaultWindow, x_max: f64) -> Option<(f64, f64)> {
    let (start, end) = (finite(f.start_s), finite(f.end_s));
    if start > x_max || end < 0.0 || end < start { None } else { Some((start.max(0.0), end.min(x_max))) }
}

/// Height of one row of fault labels.
const LANE_ROW_H: i32 = 22;
/// At most this many rows; more labels than fit overlap rather than push the plot away.
const LANE_MAX_ROWS: usize = 3;

fn label_style(color: RGBColor) -> TextStyle<'static> {
    let mut style = text(13.0).pos(Pos::new(HPos::Left, VPos::Top));
    style.color = darken(color, 0.5).to_backend_color();
    style
}

/// Where the fault labels go: a lane of rows above the plotting area, so that labels never cover data. Each label
/// starts at its window's left edge; one that would overlap the previous label in a row moves up a row.
#[derive(Debug, Clone, Default)]
pub(crate) struct Lane {
    /// (fault index, row) for each labelled window; row 0 is the one just above the plot.
    slots: Vec<(usize, usize)>,
    rows: usize,
}

impl Lane {
    /// Lays the labels out for a plot spanning `plot_x` pixels of `body` for `0..x_max` seconds.
    pub(crate) fn new<DB: DrawingBackend>(
        body: &DrawingArea<DB, Shift>,
        faults: &[FaultWindow],
        x_max: f64,
        plot_x: (i32, i32),
    ) -> PlotResult<Lane> {
        let mut row_ends: Vec<i32> = Vec::new();
        let mut slots = Vec::new();
        for (i, f) in faults.iter().enumerate() {
            let Some((start, _)) = visible(f, x_max) else { continue };
            let (tw, _) = body.estimate_text_size(&f.label, &label_style(BAND_COLORS[0])).map_err(err)?;
            let left = plot_x.0 + (start / x_max * f64::from(plot_x.1 - plot_x.0)) as i32;
            let x = left.min(plot_x.1 - tw as i32 - 8);
            let row = match row_ends.iter().position(|end| *end <= x) {
                Some(r) => r,
                None if row_ends.len() < LANE_MAX_ROWS => {
                    row_ends.push(i32::MIN);
                    row_ends.len() - 1
                }
                None => (0..row_ends.len()).min_by_key(|r| row_ends[*r]).unwrap_or(0),
            };
            row_ends[row] = x + tw as i32 + 14;
            slots.push((i, row));
        }
        Ok(Lane { slots, rows: row_ends.len() })
    }

    /// Pixels to keep free above the plot.
    pub(crate) fn height(&self) -> u32 {
        self.rows as u32 * LANE_ROW_H as u32 + 6
    }
}

/// Shades each fault window behind the series (call before drawing them). Windows are clipped to `[0, x_max]`; a
/// window of zero width is drawn as a line, one entirely outside the run is skipped.
pub(crate) fn shade_faults<DB, Y>(
    chart: &ChartContext<'_, DB, Cartesian2d<Lin, Y>>,
    faults: &[FaultWindow],
    x_max: f64,
) -> PlotResult<()>
where
    DB: DrawingBackend,
    Y: Ranged<ValueType = f64>,
{
    let area = chart.plotting_area().strip_coord_spec();
    let (_, h) = area.dim_in_pixel();
    for (i, f) in faults.iter().enumerate() {
        let Some((start, end)) = visible(f, x_max) else { continue };
        let (left, right) = (band_x(chart, start), band_x(chart, end));
        let right = right.max(left + 2);
        let color = BAND_COLORS[i % BAND_COLORS.len()];
        area.draw(&Rectangle::new([(left, 0), (right, h as i32)], color.mix(0.16).filled())).map_err(err)?;
        for x in [left, right] {
            area.draw(&PathElement::new(vec![(x, 0), (x, h as i32)], color.mix(0.55).stroke_width(1))).map_err(err)?;
        }
    }
    Ok(())
}

/// `x` seconds in pixels from the left of the plotting area.
fn band_x<DB, Y>(chart: &ChartContext<'_, DB, Cartesian2d<Lin, Y>>, x: f64) -> i32
where
    DB: DrawingBackend,
    Y: Ranged<ValueType = f64>,
{
    let y0 = chart.as_coord_spec().y_spec().range().start;
    chart.backend_coord(&(x, y0)).0 - chart.plotting_area().get_base_pixel().0
}

/// Draws the labels of `lane` above the plotting area of `chart`, which was built on `body`.
pub(crate) fn label_faults<DB, Y>(
    body: &DrawingArea<DB, Shift>,
    chart: &ChartContext<'_, DB, Cartesian2d<Lin, Y>>,
    faults: &[FaultWindow],
    x_max: f64,
    lane: &Lane,
) -> PlotResult<()>
where
    DB: DrawingBackend,
    Y: Ranged<ValueType = f64>,
{
    let (bx, by) = body.get_base_pixel();
    let (px, py) = chart.plotting_area().get_base_pixel();
    let (plot_left, plot_top) = (px - bx, py - by);
    let (plot_w, _) = chart.plotting_area().dim_in_pixel();
    for &(i, row) in &lane.slots {
        let (f, color) = (&faults[i], BAND_COLORS[i % BAND_COLORS.len()]);
        let Some((start, _)) = visible(f, x_max) else { continue };
        let style = label_style(color);
        let (tw, th) = body.estimate_text_size(&f.label, &style).map_err(err)?;
        let (tw, th) = (tw as i32, th as i32);
        let left = plot_left + band_x(chart, start);
        let x = left.min(plot_left + plot_w as i32 - tw - 8);
        let bottom = plot_top - 3 - row as i32 * LANE_ROW_H;
        let top = bottom - th - 7;
        body.draw(&Rectangle::new([(x, top), (x + tw + 8, bottom)], lighten(color, 0.84).filled())).map_err(err)?;
        body.draw(&Rectangle::new([(x, top), (x + tw + 8, bottom)], color.stroke_width(1))).map_err(err)?;
        if row > 0 || x != left {
            // Tie a raised or shifted label to its window's edge.
            body.draw(&PathElement::new(vec![(left, bottom), (left, plot_top)], color.stroke_width(1))).map_err(err)?;
        }
        body.draw_text(&f.label, &style, (x + 4, top + 3)).map_err(err)?;
    }
    Ok(())
}

/// Splits `(x, y)` points into runs of consecutive x (step `dx`), so that gaps (seconds without data) break a line
/// instead of being bridged.
pub(crate) fn segments(points: &[(f64, f64)], dx: f64) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut prev: Option<f64> = None;
    for &(x, y) in points {
        match (prev, out.last_mut()) {
            (Some(p), Some(seg)) if (x - p - dx).abs() < 1e-9 => seg.push((x, y)),
            _ => out.push(vec![(x, y)]),
        }
        prev = Some(x);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_have_round_ticks() {
        let a = linear_axis(93.0, 5);
        assert_eq!(a.ticks, vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        let a = linear_axis(0.0, 5);
        assert!(a.hi > 0.0);
        let a = log_axis(3.0, 1500.0);
        assert_eq!((a.lo, a.hi), (2.0, 2000.0));
        assert_eq!(a.ticks, [2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0]);
        let a = log_axis(0.3, 15000.0);
        assert_eq!((a.lo, a.hi), (0.2, 20000.0));
        assert_eq!(a.ticks, [1.0, 10.0, 100.0, 1000.0, 10000.0]);
        let t = time_axis(60.0);
        assert_eq!(
            t.ticks.iter().step_by(2).copied().collect::<Vec<_>>(),
            vec![0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0]
        );
        assert_eq!(tick(2500.0), "2,500");
        assert_eq!(tick(0.5), "0.5");
    }

    #[test]
    fn segments_break_at_gaps() {
        let s = segments(&[(0.5, 1.0), (1.5, 2.0), (3.5, 1.0), (4.5, 1.0)], 1.0);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].len(), 2);
    }
}

/// Series colours, shared by every figure so a metric looks the same in a run's plots and a sweep's.
pub(crate) mod palette {
    use plotters::style::RGBColor;

    pub(crate) const OFFERED: RGBColor = RGBColor(90, 90, 90);
    pub(crate) const ATTEMPTS: RGBColor = RGBColor(255, 127, 14);
    pub(crate) const COMPLETED: RGBColor = RGBColor(31, 119, 180);
    pub(crate) const OK: RGBColor = RGBColor(44, 160, 44);
    pub(crate) const P50: RGBColor = RGBColor(31, 119, 180);
    pub(crate) const P95: RGBColor = RGBColor(255, 127, 14);
    pub(crate) const P99: RGBColor = RGBColor(214, 39, 40);
}
