//! `mcpstorm fidelity`'s outputs: the table (on the console and in `fidelity.md`: per seed, each row's simulator and
//! live figures, their difference, the tolerance and the verdict), `fidelity.json` (the same, and every second of
//! both runs), and the overlay plot `fidelity.svg`/`.png` (the simulator against the live run per second: goodput,
//! P99, error rate; fault windows shaded).

use std::fmt::Write as _;

use serde::Serialize;

use super::compare::PANELS;
use super::num::{fixed, grouped, md_cell, ms, pct, short};
use super::overlay::{Overlay, Series};
use crate::fidelity::{BUSY_HOST, Comparison, FidelityData, Figure, Outcome, Row, Tolerance, Unit, Verdict, host_line};

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

/// What the live run's host was doing, and what that means for the verdict.
pub(crate) fn host_note(c: &Comparison) -> String {
    let bound = format!("{:.0}%", BUSY_HOST * 100.0);
    match c.host {
        None => "host during the live run: not read (no /proc here); judged as if quiet".to_owned(),
        Some(h) if c.outcome() == Outcome::NotJudged => format!(
            "host during the live run: {}, over the {bound} bound: a busy host slows every live call, so the failed \
             rows say nothing of the simulator; run it again on a quieter machine",
            host_line(&h)
        ),
        Some(h) if c.busy_host() => {
            format!("host during the live run: {}, over the {bound} bound, yet every row passed", host_line(&h))
        }
        Some(h) => format!("host during the live run: {} (a failed row is not judged over {bound})", host_line(&h)),
    }
}

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
        let _ = writeln!(s, "seed {}: {}", c.seed, c.outcome().label());
        let _ = writeln!(s, "  {}", host_note(c));
        let _ = writeln!(s, "{}", line(&HEAD.map(str::to_owned)));
        for r in &rows {
            let _ = writeln!(s, "{}", line(r));
        }
    }
    s
}

pub(crate) fn markdown(data: &FidelityData) -> String {
    let mut s = String::new();
    let verdict = data.outcome().label();
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
        let _ = writeln!(s, "## Seed {}: {}\n", c.seed, c.outcome().label());
        let _ = writeln!(s, "{}\n", md_cell(&host_note(c)));
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
    /// `pass`, `fail`, or `not_judged` (a failure on a busy host).
    outcome: Outcome,
    #[serde(flatten)]
    data: &'a FidelityData,
}

pub(crate) fn json(data: &FidelityData) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = serde_json::to_vec_pretty(&Json { passed: data.passed(), outcome: data.outcome(), data })?;
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
    let verdict = data.outcome().label();
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
    use crate::live::host_load::HostLoad;
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
            seeds: vec![Comparison { seed: 7, rows, seconds: Vec::new(), host: None }],
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
        assert_eq!(lines[1], "  host during the live run: not read (no /proc here); judged as if quiet");
        assert!(lines[2].starts_with("  row") && lines[2].ends_with("verdict"), "{t}");
        // Right-aligned figures: every verdict column ends where the header's does.
        let end = lines[2].chars().count();
        assert!(lines[3..].iter().all(|l| l.chars().count() == end), "{t}");
        assert_eq!(data().failures(), ["seed 7: error rate, onset: crash db"]);
        let md = markdown(&data());
        assert!(md.contains("| per second: ok (mean \\|difference\\|) | 154.7 |"), "{md}");
    }

    /// A failed row on a busy host is not judged, on every output; on a quiet host it fails; a pass stays a pass
    /// however busy the host was.
    #[test]
    fn a_failure_on_a_busy_host_is_not_judged_and_says_why() {
        let busy = HostLoad { others: 0.38, steal: 0.03 };
        let mut d = data();
        d.seeds[0].host = Some(busy);
        assert_eq!(d.outcome(), Outcome::NotJudged);
        assert!(!d.passed(), "not judged is not a pass: the exit code stays 1");
        assert_eq!(
            d.failures(),
            ["seed 7: error rate, onset: crash db (not judged: the host was busy during the live run, other \
                 processes 38% of the CPU, steal 3%)"]
        );
        let t = fidelity_table(&d);
        assert!(t.starts_with("seed 7: NOT JUDGED\n  host during the live run: other processes 38% of the CPU, steal 3%, over the 25% bound"), "{t}");
        let md = markdown(&d);
        assert!(md.starts_with("# s — simulator against live: NOT JUDGED"), "{md}");
        assert!(md.contains("## Seed 7: NOT JUDGED\n\nhost during the live run: other processes 38%"), "{md}");

        let quiet = HostLoad { others: 0.1, steal: 0.02 };
        d.seeds[0].host = Some(quiet);
        assert_eq!(d.outcome(), Outcome::Fail);
        assert_eq!(d.failures(), ["seed 7: error rate, onset: crash db"]);
        assert!(
            fidelity_table(&d)
                .contains("other processes 10% of the CPU, steal 2% (a failed row is not judged over 25%)")
        );

        for row in &mut d.seeds[0].rows {
            row.verdict = if row.verdict == Verdict::Fail { Verdict::Pass } else { row.verdict };
        }
        d.seeds[0].host = Some(busy);
        assert_eq!(d.outcome(), Outcome::Pass);
        assert!(fidelity_table(&d).contains("over the 25% bound, yet every row passed"));
    }
}
