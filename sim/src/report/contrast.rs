//! The same scenario and seed under two gateway profiles, side by side: `contrast.png`/`.svg` (goodput, P99, error
//! rate and stale sends over time, one colour per profile, fault windows shaded) and a two-row summary table.
//!
//! Both runs share the scenario, so their fault windows are the same and are shaded once per panel.

use std::fmt::Write as _;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::csv_out::error_rate;
use super::data::{RunData, SecondRow};
use super::num::{finite, grouped, ms, pct};
use super::plot::{
    FIG_W, Figure, Key, Lane, MARGIN_L, MARGIN_R, MUTED, PANEL_H, PlotResult, RIGHT_AREA, Swatch, Y_AREA, err, header,
    label_faults, linear_axis, mesh, shade_faults, text, tick, time_axis,
};
use super::summary::verdict;
use super::timeline::{TIME_DESC, build, draw_segments_width, mid};

pub(crate) const CONTRAST: &str = "contrast";
const HEAD_H: u32 = 70;
/// The primary run's colour, and the contrast run's.
const PRIMARY: RGBColor = RGBColor(31, 119, 180);
const OTHER: RGBColor = RGBColor(214, 39, 40);

type Metric = fn(&SecondRow) -> Option<f64>;

/// The four panels: title, y axis, the value of one second (`None`: nothing to show that second).
const PANELS: [(&str, &str, Metric); 4] = [
    ("Goodput (ok calls per second)", "ok / s", |r| Some(r.ok as f64)),
    ("P99 latency of completed calls", "P99 (ms)", |r| (r.completed > 0).then_some(finite(r.p99_ms))),
    ("Error rate", "failed calls (%)", |r| (r.completed > 0).then(|| error_rate(r) * 100.0)),
    ("Stale sends (refused for a schema the gateway could have known was stale)", "stale sends / s", |r| {
        Some(r.stale_sends as f64)
    }),
];

#[derive(Debug)]
pub(crate) struct ContrastFigure<'a> {
    pub primary: &'a RunData,
    pub other: &'a RunData,
}

impl ContrastFigure<'_> {
    fn runs(&self) -> [(&RunData, RGBColor); 2] {
        [(self.primary, PRIMARY), (self.other, OTHER)]
    }

    fn panel<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>, p: usize) -> PlotResult<()> {
        let (title, y_desc, metric) = PANELS[p];
        let keys: Vec<Key> = self
            .runs()
            .iter()
            .map(|(run, color)| Key::new(format!("{} profile", run.profile), *color, Swatch::Line))
            .collect();
        let body = header(area, title, &keys)?;
        let end = self.runs().iter().flat_map(|(r, _)| r.seconds.iter().map(|s| s.t + 1)).max().unwrap_or(0) as f64;
        let sim = self.runs().iter().map(|(r, _)| finite(r.sim_seconds)).fold(0.0, f64::max);
        let time = time_axis(sim.max(end));
        let max = self.runs().iter().flat_map(|(r, _)| r.seconds.iter().filter_map(metric)).fold(0.0, f64::max);
        let y = linear_axis(max.max(1.0), 5);
        let (w, _) = body.dim_in_pixel();
        let plot_x = ((MARGIN_L + Y_AREA) as i32, (w - MARGIN_R - RIGHT_AREA) as i32);
        let faults = &self.primary.faults;
        let lane = Lane::new(&body, faults, time.hi, plot_x)?;
        let mut chart = build(&body, &time, y.lin(), &lane, false)?;
        mesh(&mut chart, TIME_DESC, y_desc, &|v| tick(*v))?;
        shade_faults(&chart, faults, time.hi)?;
        // The primary run wide and first, the contrast thin on top: where they coincide both stay visible.
        for ((run, color), width) in self.runs().into_iter().zip([5, 2]) {
            let pts: Vec<(f64, f64)> = run.seconds.iter().filter_map(|r| Some((mid(r), metric(r)?))).collect();
            draw_segments_width(&mut chart, &pts, color, width)?;
        }
        label_faults(&body, &chart, faults, time.hi, &lane)
    }
}

impl Figure for ContrastFigure<'_> {
    fn size(&self) -> (u32, u32) {
        (FIG_W, HEAD_H + PANELS.len() as u32 * PANEL_H)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> PlotResult<()> {
        root.fill(&WHITE).map_err(err)?;
        let (head, rest) = root.split_vertically(HEAD_H);
        let left = Pos::new(HPos::Left, VPos::Top);
        let title = format!(
            "mcpstorm · {} · seed {} · gateway profiles side by side",
            self.primary.scenario, self.primary.seed
        );
        head.draw_text(&title, &text(24.0).pos(left), (16, 10)).map_err(err)?;
        let line = self
            .runs()
            .iter()
            .map(|(r, _)| {
                format!("{}: {} ({} errors)", r.profile, verdict(r.passed()), pct(finite(r.totals.error_rate)))
            })
            .collect::<Vec<_>>()
            .join("   ·   ");
        head.draw_text(&format!("{line}   ·   shaded: fault windows"), &text(15.0).color(&MUTED).pos(left), (16, 44))
            .map_err(err)?;
        let panels = rest.split_evenly((PANELS.len(), 1));
        for (p, area) in panels.iter().enumerate() {
            self.panel(area, p)?;
        }
        Ok(())
    }
}

/// The two runs' key figures, one row each, for the console and `summary.md`.
pub fn contrast_table(primary: &RunData, other: &RunData) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "  {:<8} {:>6} {:>10} {:>8} {:>10} {:>12} {:>12} {:>14} {:>13} {:>9}",
        "profile",
        "checks",
        "ok",
        "errors",
        "P99",
        "stale sends",
        "error window",
        "session errors",
        "re-handshakes",
        "renewals"
    );
    for run in [primary, other] {
        let t = &run.totals;
        let _ = writeln!(
            s,
            "  {:<8} {:>6} {:>10} {:>8} {:>10} {:>12} {:>12} {:>14} {:>13} {:>9}",
            run.profile,
            verdict(run.passed()),
            grouped(t.ok),
            pct(finite(t.error_rate)),
            ms(t.p99_ms),
            grouped(t.stale_sends),
            format!("{} s", t.error_window_s),
            grouped(t.session_errors),
            grouped(t.rehandshakes),
            grouped(t.renewals)
        );
    }
    s
}
