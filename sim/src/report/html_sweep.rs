//! A sweep's `report.html` (`sim` on a scenario with a `[sweep]`): the table of every swept value, each linking to
//! its own run's page, the sweep's plots inline, and the reproduce line.

use std::fmt::Write as _;

use super::html::{Cell, badge, escape, figure, link, page, pre, section, table};
use super::sweep::{SWEEP_CSV, SWEEP_MD, table_header, table_rows};
use crate::run::SweepData;

/// The page; `figures` are the sweep's SVGs with their captions, in order.
pub(crate) fn render(sweep: &SweepData, figures: &[(String, &str)]) -> String {
    let passed = sweep.rows.iter().all(|r| r.passed);
    let mut s = String::new();
    let _ = writeln!(s, "<h1>{} — sweep of {} {}</h1>", escape(&sweep.scenario), escape(&sweep.param), badge(passed));
    let _ = writeln!(
        s,
        "<p>seed {} · {} values, {} passed their checks. Each value's own run has its page: follow its link.</p>",
        sweep.seed,
        sweep.rows.len(),
        sweep.rows.iter().filter(|r| r.passed).count()
    );
    s.push_str(&section("table", "Table"));
    let head = table_header(sweep);
    let rows = table_rows(sweep)
        .into_iter()
        .zip(&sweep.rows)
        .map(|(row, r)| {
            let mut cells = row.into_iter();
            let value = cells.next().unwrap_or_default();
            let dir = format!("{}={value}/report.html", sweep.param);
            let mut out = vec![Cell::Html(link(&dir, &value))];
            // Every figure but the last column, the verdict, which is a badge.
            out.extend(cells.take(head.len() - 2).map(Cell::Num));
            out.push(Cell::Html(badge(r.passed)));
            (out, !r.passed)
        })
        .collect();
    s.push_str(&table(&head.each_ref().map(String::as_str), rows));
    s.push_str(&section("plots", "Plots"));
    for (svg, caption) in figures {
        s.push_str(&figure(svg, caption));
    }
    s.push_str(&section("reproduce", "Reproduce"));
    s.push_str(&pre(&sweep.reproduce));
    let _ =
        writeln!(s, "<p>The table as text and data: {} · {}</p>", link(SWEEP_MD, SWEEP_MD), link(SWEEP_CSV, SWEEP_CSV));
    page(&format!("mcpstorm · {} · sweep of {}", sweep.scenario, sweep.param), &s)
}
