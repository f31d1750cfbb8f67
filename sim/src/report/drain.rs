//! The drain: the seconds after the load stopped, while the calls still in flight finish.
//!
//! `offered` counts a call in the second it started and `completed` in the second it ended, so such a second has
//! calls completed and none offered, and it is usually cut short by the run's end as well. Drawn as a rate it
//! looks like goodput collapsing; so the plots stop their per-second rates where it starts, shade it, and say in a
//! note what it holds, and `summary.md` explains it where a reader meets the numbers.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::plot::{Lin, MUTED, PlotResult, err, text};
use crate::run::SecondRow;

/// The drain of a run: from which second, and what completed in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Drain {
    /// The first second of the drain: the one after the last second that offered a call.
    pub from: u64,
    pub completed: u64,
    pub failed: u64,
}

impl Drain {
    /// The trailing seconds that offered no call after some second did, if any call completed in them.
    pub(crate) fn of(rows: &[SecondRow]) -> Option<Drain> {
        let last_offered = rows.iter().rposition(|r| r.offered > 0)?;
        let tail = &rows[last_offered + 1..];
        let completed = tail.iter().map(|r| r.completed).sum::<u64>();
        (completed > 0).then(|| Drain {
            from: rows[last_offered].t + 1,
            completed,
            failed: tail.iter().map(SecondRow::errors).sum(),
        })
    }

    /// Whether second `t` is drawn as a rate (it is not in the drain).
    pub(crate) fn before(drain: Option<Drain>, t: u64) -> bool {
        drain.is_none_or(|d| t < d.from)
    }

    /// The figure's note: `after 5 s: the drain, 11 calls started earlier finishing (not a rate)`.
    pub(crate) fn note(&self) -> String {
        let failed = if self.failed > 0 { format!(", {} failed", self.failed) } else { String::new() };
        format!(
            "grey after {} s: the drain, {} calls in flight finishing{failed} (not drawn as a rate)",
            self.from, self.completed
        )
    }
}

const BAND: RGBColor = RGBColor(120, 124, 130);

/// Shades the drain of a chart over simulated time (call before drawing the series), labelled "drain" at the foot.
pub(crate) fn shade<DB, Y>(
    chart: &ChartContext<'_, DB, Cartesian2d<Lin, Y>>,
    drain: Option<Drain>,
    x_max: f64,
) -> PlotResult<()>
where
    DB: DrawingBackend,
    Y: Ranged<ValueType = f64>,
{
    let Some(d) = drain else { return Ok(()) };
    let from = d.from as f64;
    if from >= x_max {
        return Ok(());
    }
    let y = chart.as_coord_spec().y_spec().range();
    let (lo, hi) = (y.start, y.end);
    chart.plotting_area().draw(&Rectangle::new([(from, lo), (x_max, hi)], BAND.mix(0.12).filled())).map_err(err)?;
    let base = chart.backend_coord(&(from, lo));
    let area = chart.plotting_area().strip_coord_spec();
    let origin = area.get_base_pixel();
    let style = text(12.0).color(&MUTED).pos(Pos::new(HPos::Left, VPos::Bottom));
    area.draw_text("drain", &style, (base.0 - origin.0 + 3, base.1 - origin.1 - 3)).map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: u64, offered: u64, completed: u64, failed: u64) -> SecondRow {
        SecondRow { t, offered, completed, ok: completed - failed, err_transport: failed, ..SecondRow::default() }
    }

    #[test]
    fn the_drain_is_the_tail_that_offered_nothing() {
        let rows = [row(0, 10, 8, 0), row(1, 10, 10, 1), row(2, 0, 11, 2), row(3, 0, 1, 0)];
        let d = Drain::of(&rows).expect("a drain");
        assert_eq!(d, Drain { from: 2, completed: 12, failed: 2 });
        assert!(Drain::before(Some(d), 1) && !Drain::before(Some(d), 2) && Drain::before(None, 9));
        assert_eq!(d.note(), "grey after 2 s: the drain, 12 calls in flight finishing, 2 failed (not drawn as a rate)");
        // A run whose last second still offered calls, or whose tail completed nothing, has none.
        assert_eq!(Drain::of(&rows[..2]), None);
        assert_eq!(Drain::of(&[row(0, 5, 5, 0), row(1, 0, 0, 0)]), None);
        assert_eq!(Drain::of(&[]), None);
    }
}
