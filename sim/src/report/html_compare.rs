//! `compare`'s `report.html`: the paired tables (the fault-window figures among them), each saying whether lower or
//! higher is better, the overlay plot inline, every variant's checks, and the reproduce line.

use std::fmt::Write as _;

use super::compare::{COMPARE_CSV, COMPARE_JSON, COMPARE_MD, NOTES, heading, metric_header, metric_rows};
use super::html::{Cell, badge, escape, figure, link, page, pre, section, table};
use super::num::fixed;
use crate::compare::CompareData;

/// The page; `overlay` is `compare.svg` (every panel stacked).
pub(crate) fn render(data: &CompareData, overlay: &str) -> String {
    let mut s = String::new();
    let passed = data.failed_checks().is_empty();
    let _ = writeln!(s, "<h1>{} — paired comparison {}</h1>", escape(&data.scenario), badge(passed));
    let variants: Vec<String> = data.labels.iter().map(|l| format!("<code>{}</code>", escape(l))).collect();
    let (first, last) = (data.seeds.first().copied().unwrap_or(0), data.seeds.last().copied().unwrap_or(0));
    let _ = writeln!(
        s,
        "<p>Variants {} (the first is the baseline), on {} seeds ({first} to {last}): on each seed every variant saw \
         the same arrivals and the same fault timeline.</p>",
        variants.join(", "),
        data.seeds.len()
    );
    s.push_str("<nav><a href=\"#tables\">Tables</a><a href=\"#overlay\">Overlay</a><a href=\"#checks\">Checks</a>");
    s.push_str("<a href=\"#reproduce\">Reproduce</a><a href=\"#files\">Files</a></nav>\n");

    s.push_str(&section("tables", "Paired tables"));
    s.push_str("<ul class=\"muted\">");
    for note in NOTES {
        let _ = write!(s, "<li>{}</li>", escape(note));
    }
    s.push_str("</ul>\n");
    for m in data.metrics() {
        let t = data.table(m);
        let _ = writeln!(s, "<h3>{}</h3>", escape(&heading(m.name, m.lower_is_better)));
        let head = metric_header(data, &t);
        let rows = metric_rows(data, &t)
            .into_iter()
            .map(|row| {
                let mut cells = row.into_iter();
                let label = Cell::Text(cells.next().unwrap_or_default());
                let cells: Vec<Cell> = std::iter::once(label).chain(cells.map(Cell::Num)).collect();
                (cells, false)
            })
            .collect();
        s.push_str(&table(&head.each_ref().map(String::as_str), rows));
    }

    s.push_str(&section("overlay", "Overlay"));
    s.push_str(&figure(
        overlay,
        "One line per variant: the mean over seeds per simulated second; shaded: fault windows",
    ));

    s.push_str(&section("checks", "Checks"));
    let failed = data.failed_checks();
    let rows = data
        .labels
        .iter()
        .zip(data.pass_rates())
        .map(|(label, rate)| {
            let prefix = format!("{label}: ");
            let why = failed.iter().find_map(|l| l.strip_prefix(&prefix)).unwrap_or("").to_owned();
            let cells = vec![
                Cell::Text(label.clone()),
                Cell::Num(format!("{}%", fixed(rate * 100.0, 0))),
                Cell::Html(badge(why.is_empty())),
                Cell::Text(why.clone()),
            ];
            (cells, !why.is_empty())
        })
        .collect();
    s.push_str(&table(&["variant", "runs whose [checks] passed", "verdict", "failed"], rows));
    s.push_str("<p class=\"muted\">The exit code is 1 when any variant failed any check on any seed.</p>\n");

    s.push_str(&section("reproduce", "Reproduce"));
    s.push_str(&pre(&data.reproduce));
    s.push_str(&section("files", "Files"));
    let names = [COMPARE_MD, COMPARE_JSON, COMPARE_CSV, "compare.png", "compare.svg"];
    let links: Vec<String> = names.iter().map(|n| link(n, n)).collect();
    let _ = writeln!(s, "<p>{}</p>", links.join(" · "));
    page(&format!("mcpstorm compare · {} · {} seeds", data.scenario, data.seeds.len()), &s)
}
