//! `mcpstorm fidelity`'s outputs: the table (on the console and in `fidelity.md`: per seed, each row's simulator and
//! live figures, their difference, the tolerance and the verdict), `fidelity.json` (the same, and every second of
//! both runs), and the overlay plot `fidelity.svg`/`.png` (the simulator against the live run per second: goodput,
//! P99, error rate; fault windows shaded).

use std::fmt::Write as _;

use serde::Serialize;

use super::compare::PANELS;
use super::num::{fixed, grouped, md_cell, ms, pct, short};
use super::overlay::{Overlay, Series};
use crate::fidelity::{Comparison, FidelityData, Figure, Row, Tolerance, Unit, Verdict};

pub(crate) const FIDELITY_MD: &str = "fidelity.md";
pub(crate) const FIDELITY_JSON: &str = "fidelity.json";
/// The overlay plot's file stem.
pub(crate) const FIDELITY: &str = "fidelity";

/// The table's columns.
pub(crate) const HEAD: [&str; 6] = ["row", "sim", "live", "difference", "tolerance", "verdict"];

/// What each row's verdict rests on, for the page and `fidelity.md`.
pub(crate) const NOTES: [&str; 4] = [
    "the live run is the reference: a relative tolerance is a share of its figure, and a difference is sim − live",
    "onset: the first second, from the one a fault window starts in to the one after it ends, in which goodput (an \
     open loop's share of offered calls served) falls under 95% of its pre-fault level or P99 rises above twice its \
     median pre-fault second plus 5 ms",
    "recovery: the recovery_s check's measure from the window's end: the first 3-second stretch back at 95% of the \
     pre-fault goodput, as seconds into the run",
    "per-second rows are shown, not judged: each run's mean per second and the mean per-second |difference| (one \
     second of a Poisson load swings by about √rate in either run)",
];

/// A row's cells: name, sim, live, difference, tolerance, verdict.
pub(crate) fn cells(row: &Row) -> [String; 6] {
    let shown = |m: &Figure| match m {
        Figure::Num(x) => value(row.unit, *x, row.verdict == Verdict::Info),
        Figure::Missing(why) => (*why).to_owned(),
    };
    let difference =
        row.difference.map_or_else(|| "—".to_owned(), |d| signed(row.unit, d, row.verdict == Verdict::Info));
    let tolerance = row.tolerance.map_or_else(|| "—".to_owned(), |t| tolerance(row.unit, t));
    let verdict = match row.verdict {
        Verdict::Pass => "PASS",
        Verdict::Fail => "FAIL",
        Verdict::Info => "info",
    };
    [row.name.clone(), shown(&row.sim), shown(&row.live), difference, tolerance, verdict.to_owned()]
}

/// A figure for people; `mean`: a per-second mean (calls with a decimal).
fn value(unit: Unit, x: f64, mean: bool) -> String {
    match unit {
        Unit::Calls if mean => short(x, 1),
        Unit::Calls => grouped(x.max(0.0).round() as u64),
        Unit::Share => pct(x),
        Unit::Ms => ms(x),
        Unit::Seconds => format!("{} s", short(x, 1)),
    }
}

/// A difference with its sign (none on a mean absolute difference).
fn signed(unit: Unit, d: f64, absolute: bool) -> String {
    let sign = if absolute || d == 0.0 {
        ""
    } else if d > 0.0 {
        "+"
    } else {
        "-"
    };
    let body = match unit {
        Unit::Share => format!("{} pp", fixed(d.abs() * 100.0, 2)),
        other => value(other, d.abs(), absolute),
    };
    format!("{sign}{body}")
}

fn tolerance(unit: Unit, t: Tolerance) -> String {
    match (unit, t) {
        (_, Tolerance::Relative { share, floor }) if floor > 0.0 => {
            let floor = if unit == Unit::Ms { format!("{} ms", short(floor, 2)) } else { value(unit, floor, true) };
            format!("±{}% or {floor}", short(share * 100.0, 2))
        }
        (_, Tolerance::Relative { share, .. }) => format!("±{}%", short(share * 100.0, 2)),
        (Unit::Share, Tolerance::Absolute { amount }) => format!("±{} pp", short(amount * 100.0, 2)),
        (_, Tolerance::Absolute { amount }) => format!("±{}", value(unit, amount, true)),
    }
}

/// The console's table: every seed's rows, aligned.
pub fn fidelity_table(data: &FidelityData) -> String {
    let mut s = String::new();
    for c in &data.seeds {
        let rows: Vec<[String; 6]> = c.rows.iter().map(cells).collect();
        let mut width = HEAD.map(str::len);
        for r in &rows {
            for (w, cell) in width.iter_mut().zip(r) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let line = |cells: &[String; 6]| {
            let mut l = format!("  {:<w$}", cells[0], w = width[0]);
            for (cell, w) in cells.iter().zip(width).skip(1) {
                let _ = write!(l, "  {cell:>w$}");
            }
            l.trim_end().to_owned()
        };
        let _ = writeln!(s, "seed {}: {}", c.seed, if c.passed() { "PASS" } else { "FAIL" });
        let _ = writeln!(s, "{}", line(&HEAD.map(str::to_owned)));
        for r in &rows {
            let _ = writeln!(s, "{}", line(r));
        }
    }
    s
}

pub(crate) fn markdown(data: &FidelityData) -> String {
    let mut s = String::new();
    let verdict = if data.passed() { "PASS" } else { "FAIL" };
    let _ = writeln!(s, "# {} — simulator against live: {verdict}\n", md_cell(&data.scenario));
    if !data.description.is_empty() {
        let _ = writeln!(s, "{}\n", md_cell(&data.description));
    }
    let seeds: Vec<String> = data.seeds.iter().map(|c| c.seed.to_string()).collect();
    let _ = writeln!(s, "- seeds: {}", seeds.join(", "));
    for note in NOTES {
        let _ = writeln!(s, "- {note}");
    }
    for line in data.failures() {
        let _ = writeln!(s, "- failed: {}", md_cell(&line));
    }
    let _ = writeln!(s, "- reproduce:\n\n```sh\n{}\n```\n", data.reproduce);
    for c in &data.seeds {
        let _ = writeln!(s, "## Seed {}: {}\n", c.seed, if c.passed() { "PASS" } else { "FAIL" });
        let _ = writeln!(s, "| {} |\n|---|---:|---:|---:|---:|---|", HEAD.join(" | "));
        for row in &c.rows {
            let _ = writeln!(s, "| {} |", cells(row).map(|c| md_cell(&c)).join(" | "));
        }
        s.push('\n');
        per_second_md(&mut s, c);
    }
    s
}

/// Every second of both runs, for one seed.
fn per_second_md(s: &mut String, c: &Comparison) {
    let _ = writeln!(s, "### Seed {}, per second (sim / live)\n", c.seed);
    s.push_str("| t (s) | offered | ok | errors | P50 | P99 |\n|---:|---:|---:|---:|---:|---:|\n");
    for p in &c.seconds {
        let _ = writeln!(
            s,
            "| {} | {} / {} | {} / {} | {} / {} | {} / {} | {} / {} |",
            p.t,
            p.sim.offered,
            p.live.offered,
            p.sim.ok,
            p.live.ok,
            p.sim.errors,
            p.live.errors,
            ms(p.sim.p50_ms),
            ms(p.live.p50_ms),
            ms(p.sim.p99_ms),
            ms(p.live.p99_ms)
        );
    }
    s.push('\n');
}

#[derive(Serialize)]
struct Json<'a> {
    passed: bool,
    #[serde(flatten)]
    data: &'a FidelityData,
}

pub(crate) fn json(data: &FidelityData) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = serde_json::to_vec_pretty(&Json { passed: data.passed(), data })?;
    out.push(b'\n');
    Ok(out)
}

/// The labels of the overlay's two lines.
pub(crate) fn labels() -> [String; 2] {
    ["simulator".to_owned(), "live".to_owned()]
}

/// The simulator's and the live run's per-second aggregates over the seeds.
pub(crate) fn series(data: &FidelityData) -> [Series; 2] {
    let sim: Vec<&[crate::run::SecondRow]> = data.series.iter().map(|(s, _)| s.as_slice()).collect();
    let live: Vec<&[crate::run::SecondRow]> = data.series.iter().map(|(_, l)| l.as_slice()).collect();
    [Series::of(&sim, &PANELS), Series::of(&live, &PANELS)]
}

pub(crate) fn figure<'a>(data: &'a FidelityData, labels: &'a [String], series: &'a [Series]) -> Overlay<'a> {
    let verdict = if data.passed() { "PASS" } else { "FAIL" };
    Overlay {
        title: format!("mcpstorm fidelity · {} · {} seed(s) · {verdict}", data.scenario, data.seeds.len()),
        subtitle: "the simulator against the live run, per second (mean over seeds); shaded bands: fault windows"
            .to_owned(),
        labels,
        series,
        metrics: &PANELS,
        faults: &data.faults,
        panel: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::FidelitySpec;

    fn row(name: &str, unit: Unit, sim: Figure, live: Figure, tolerance: Option<Tolerance>, verdict: Verdict) -> Row {
        let difference = match (&sim, &live) {
            (Figure::Num(s), Figure::Num(l)) => Some(s - l),
            _ => None,
        };
        Row { name: name.to_owned(), unit, sim, live, difference, tolerance, verdict }
    }

    fn data() -> FidelityData {
        let latency = Some(Tolerance::Relative { share: 0.1, floor: 5.0 });
        let rows = vec![
            row(
                "ok calls",
                Unit::Calls,
                Figure::Num(10_500.0),
                Figure::Num(10_000.0),
                Some(Tolerance::Relative { share: 0.05, floor: 0.0 }),
                Verdict::Pass,
            ),
            row(
                "error rate",
                Unit::Share,
                Figure::Num(0.02),
                Figure::Num(0.035),
                Some(Tolerance::Absolute { amount: 0.01 }),
                Verdict::Fail,
            ),
            row("P99", Unit::Ms, Figure::Num(23.0), Figure::Num(25.9), latency, Verdict::Pass),
            row(
                "onset: crash db",
                Unit::Seconds,
                Figure::Num(5.0),
                Figure::Missing("no effect"),
                Some(Tolerance::Absolute { amount: 1.0 }),
                Verdict::Fail,
            ),
            row(
                "per second: ok (mean |difference|)",
                Unit::Calls,
                Figure::Num(154.66),
                Figure::Num(150.0),
                None,
                Verdict::Info,
            ),
        ];
        FidelityData {
            scenario: "s".into(),
            description: String::new(),
            tolerances: FidelitySpec::default(),
            faults: Vec::new(),
            seeds: vec![Comparison { seed: 7, rows, seconds: Vec::new() }],
            reproduce: "mcpstorm fidelity s.toml --seeds 1 --first-seed 7".into(),
            series: Vec::new(),
        }
    }

    #[test]
    fn each_unit_reads_as_people_read_it() {
        let d = data();
        let cells: Vec<[String; 6]> = d.seeds[0].rows.iter().map(cells).collect();
        assert_eq!(cells[0].each_ref().map(String::as_str), ["ok calls", "10,500", "10,000", "+500", "±5%", "PASS"]);
        assert_eq!(
            cells[1].each_ref().map(String::as_str),
            ["error rate", "2.00%", "3.50%", "-1.50 pp", "±1 pp", "FAIL"]
        );
        assert_eq!(
            cells[2].each_ref().map(String::as_str),
            ["P99", "23.0 ms", "25.9 ms", "-2.90 ms", "±10% or 5 ms", "PASS"]
        );
        assert_eq!(
            cells[3].each_ref().map(String::as_str),
            ["onset: crash db", "5 s", "no effect", "—", "±1 s", "FAIL"]
        );
        assert_eq!(cells[4][1..].iter().map(String::as_str).collect::<Vec<_>>(), ["154.7", "150", "4.7", "—", "info"]);
    }

    #[test]
    fn the_console_table_is_aligned_and_names_the_verdict() {
        let t = fidelity_table(&data());
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "seed 7: FAIL");
        assert!(lines[1].starts_with("  row") && lines[1].ends_with("verdict"), "{t}");
        // Right-aligned figures: every verdict column ends where the header's does.
        let end = lines[1].chars().count();
        assert!(lines[2..].iter().all(|l| l.chars().count() == end), "{t}");
        assert_eq!(data().failures(), ["seed 7: error rate, onset: crash db"]);
        let md = markdown(&data());
        assert!(md.contains("| per second: ok (mean \\|difference\\|) | 154.7 |"), "{md}");
    }
}
