//! `fidelity`'s `report.html`: the verdict, each seed's table (failed rows tinted), the overlay plot inline, the
//! fault windows, the tolerances, every second of both runs (folded), and the reproduce line.

use std::fmt::Write as _;

use super::fidelity::{FIDELITY, FIDELITY_JSON, FIDELITY_MD, HEAD, NOTES, cells, host_note};
use super::html::{Cell, badge, escape, fault_table, figure, link, page, pre, section, table};
use super::num::ms;
use crate::fidelity::{FidelityData, Outcome, Verdict};

/// The page; `overlay` is `fidelity.svg`.
pub(crate) fn render(data: &FidelityData, overlay: &str) -> String {
    let mut s = String::new();
    let _ =
        writeln!(s, "<h1>{} — simulator against live {}</h1>", escape(&data.scenario), outcome_badge(data.outcome()));
    if !data.description.is_empty() {
        let _ = writeln!(s, "<p class=\"desc\">{}</p>", escape(&data.description));
    }
    s.push_str("<nav><a href=\"#tables\">Tables</a><a href=\"#overlay\">Overlay</a><a href=\"#faults\">Faults</a>");
    s.push_str(
        "<a href=\"#seconds\">Per second</a><a href=\"#reproduce\">Reproduce</a><a href=\"#files\">Files</a></nav>\n",
    );

    s.push_str(&section("tables", "Tables"));
    s.push_str("<ul class=\"muted\">");
    for note in NOTES {
        let _ = write!(s, "<li>{}</li>", escape(note));
    }
    s.push_str("</ul>\n");
    for c in &data.seeds {
        let _ = writeln!(s, "<h3>Seed {} {}</h3>", c.seed, outcome_badge(c.outcome()));
        let _ = writeln!(s, "<p class=\"muted\">{}</p>", escape(&host_note(c)));
        let rows = c
            .rows
            .iter()
            .map(|row| {
                let [name, sim, live, difference, tolerance, verdict] = cells(row);
                let verdict = match row.verdict {
                    Verdict::Pass => Cell::Html(badge(true)),
                    Verdict::Fail => Cell::Html(badge(false)),
                    Verdict::Info => Cell::Text(verdict),
                };
                let cells = vec![
                    Cell::Text(name),
                    Cell::Num(sim),
                    Cell::Num(live),
                    Cell::Num(difference),
                    Cell::Text(tolerance),
                    verdict,
                ];
                (cells, row.verdict == Verdict::Fail)
            })
            .collect();
        s.push_str(&table(&HEAD, rows));
    }
    s.push_str(
        "<p class=\"muted\">The exit code is 1 when any judged row of any seed failed, on a quiet host or a busy \
         one.</p>\n",
    );

    s.push_str(&section("overlay", "Overlay"));
    s.push_str(&figure(
        overlay,
        "The simulator against the live run per second (mean over seeds); shaded: fault windows",
    ));

    s.push_str(&section("faults", "Faults"));
    let run_s = data.series.iter().map(|(sim, live)| sim.len().max(live.len())).max().unwrap_or(0) as f64;
    s.push_str(&fault_table(&data.faults, run_s));

    s.push_str(&section("seconds", "Per second"));
    for c in &data.seeds {
        let _ = writeln!(s, "<details><summary>Seed {}: every second, simulator / live</summary>", c.seed);
        let rows = c
            .seconds
            .iter()
            .map(|p| {
                let pair = |a: String, b: String| Cell::Num(format!("{a} / {b}"));
                let cells = vec![
                    Cell::Num(p.t.to_string()),
                    pair(p.sim.offered.to_string(), p.live.offered.to_string()),
                    pair(p.sim.ok.to_string(), p.live.ok.to_string()),
                    pair(p.sim.errors.to_string(), p.live.errors.to_string()),
                    pair(ms(p.sim.p50_ms), ms(p.live.p50_ms)),
                    pair(ms(p.sim.p99_ms), ms(p.live.p99_ms)),
                ];
                (cells, false)
            })
            .collect();
        s.push_str(&table(&["t (s)", "offered", "ok", "errors", "P50", "P99"], rows));
        s.push_str("</details>\n");
    }

    s.push_str(&section("reproduce", "Reproduce"));
    s.push_str(&pre(&data.reproduce));
    s.push_str(&section("files", "Files"));
    let (png, svg) = (format!("{FIDELITY}.png"), format!("{FIDELITY}.svg"));
    let names = [FIDELITY_MD, FIDELITY_JSON, png.as_str(), svg.as_str()];
    let links: Vec<String> = names.iter().map(|n| link(n, n)).collect();
    let _ = writeln!(s, "<p>{}</p>", links.join(" · "));
    page(&format!("mcpstorm fidelity · {}", data.scenario), &s)
}

/// PASS, FAIL, or NOT JUDGED (a failure on a busy host) in the badge's colours: the last in neither.
fn outcome_badge(outcome: Outcome) -> String {
    match outcome {
        Outcome::NotJudged => "<span class=\"badge\">NOT JUDGED</span>".to_owned(),
        o => badge(o == Outcome::Pass),
    }
}
