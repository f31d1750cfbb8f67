//! `sim`'s `report.html`: one run on one page — its verdict, the checks, the plots inline, the faults on a timeline,
//! the totals (beside the contrast run's, with `[report] contrast`), the totals per server, the scenario as run and
//! the command that reproduces it.

use std::fmt::Write as _;

use super::html::{Cell, badge, escape, fault_table, figure, link, page, pre, section, table};
use super::num::{finite, grouped, ms, short};
use super::summary::{actual, total_rows, verdict};
use super::{calls, csv_out, plot, summary};
use crate::run::RunData;

/// The same scenario and seed under the other gateway profile, shown beside the run.
pub(crate) struct ContrastPage<'a> {
    pub other: &'a RunData,
    /// Its report's directory, relative to the page (`contrast-naive`).
    pub dir: &'a str,
    /// `contrast.svg`: both runs on shared axes.
    pub svg: &'a str,
}

/// What the page shows besides the run itself.
pub(crate) struct RunPage<'a> {
    pub run: &'a RunData,
    /// `scenario.toml`: the scenario as run.
    pub scenario: &'a str,
    /// `report.svg`: the three panels stacked.
    pub svg: &'a str,
    /// Whether the run wrote `calls.csv`.
    pub calls: bool,
    pub contrast: Option<ContrastPage<'a>>,
}

pub(crate) fn render(p: &RunPage<'_>) -> String {
    let run = p.run;
    let mut s = String::new();
    let _ = writeln!(s, "<h1>{} {}</h1>", escape(&run.scenario), badge(run.passed()));
    if !run.description.trim().is_empty() {
        let _ = writeln!(s, "<p class=\"desc\">{}</p>", escape(run.description.trim()));
    }
    let _ = writeln!(
        s,
        "<p class=\"muted\">seed {} · gateway profile {} · routing formula {} · {} s simulated</p>",
        run.seed,
        escape(&run.profile),
        escape(&run.formula),
        short(finite(run.sim_seconds), 3)
    );
    let mut nav = vec![("checks", "Checks"), ("plots", "Plots")];
    if p.contrast.is_some() {
        nav.push(("contrast", "Profiles side by side"));
    }
    nav.extend([
        ("faults", "Faults"),
        (super::waterfall::WATERFALL, "Calls"),
        ("totals", "Totals"),
        ("servers", "Per server"),
        ("scenario", "Scenario"),
        ("reproduce", "Reproduce"),
        ("files", "Files"),
    ]);
    s.push_str("<nav>");
    for (id, name) in nav {
        let _ = write!(s, "<a href=\"#{id}\">{name}</a>");
    }
    s.push_str("</nav>\n");

    s.push_str(&section("checks", "Checks"));
    s.push_str(&checks(run));
    s.push_str(&section("plots", "Plots"));
    let over = if run.mode == crate::run::RunMode::Live { "time, live" } else { "simulated time" };
    s.push_str(&figure(p.svg, &format!("Calls per second, latency and errors over {over}; shaded: fault windows")));
    if let Some(c) = &p.contrast {
        s.push_str(&section("contrast", "Gateway profiles side by side"));
        let _ = writeln!(
            s,
            "<p>The same scenario and seed under the {} profile: its figures stand beside this run's in the totals \
             below, and its own report is {}. Only this run's checks decide the exit code.</p>",
            escape(&c.other.profile),
            link(&format!("{}/report.html", c.dir), &format!("{}/report.html", c.dir))
        );
        s.push_str(&figure(c.svg, "Both gateway profiles on shared axes; shaded: fault windows"));
    }
    s.push_str(&section("faults", "Faults"));
    s.push_str(&fault_table(&run.faults, run.sim_seconds));
    s.push_str(&section(super::waterfall::WATERFALL, "Calls as traces"));
    s.push_str(&super::waterfall::section(run));
    s.push_str(&section("totals", "Totals"));
    s.push_str(&totals(run, p.contrast.as_ref().map(|c| c.other)));
    s.push_str(&section("servers", "Per server"));
    s.push_str(&servers(run));
    s.push_str(&section("scenario", "Scenario as run"));
    s.push_str("<details open>\n<summary>scenario.toml: every --set applied, secrets redacted</summary>\n");
    s.push_str(&pre(p.scenario));
    s.push_str("</details>\n");
    s.push_str(&section("reproduce", "Reproduce"));
    s.push_str(&pre(&run.reproduce));
    s.push_str(&section("files", "Files"));
    s.push_str(&files(p));
    page(&format!("mcpstorm · {} · seed {} · {}", run.scenario, run.seed, verdict(run.passed())), &s)
}

fn checks(run: &RunData) -> String {
    if run.checks.is_empty() {
        return "<p>No checks configured.</p>\n".to_owned();
    }
    let rows = run
        .checks
        .iter()
        .map(|c| {
            let cells = vec![
                Cell::Text(c.name.clone()),
                Cell::Num(short(c.limit, 4)),
                Cell::Num(actual(c)),
                Cell::Html(badge(c.passed)),
            ];
            (cells, !c.passed)
        })
        .collect();
    table(&["check", "limit", "actual", "result"], rows)
}

/// The totals, with the contrast run's beside them; where the two differ (the story) both figures are in bold.
fn totals(run: &RunData, other: Option<&RunData>) -> String {
    let mine = total_rows(run);
    match other {
        None => {
            let rows = mine.into_iter().map(|(name, v)| (vec![Cell::Text(name.to_owned()), Cell::Num(v)], false));
            table(&["metric", "value"], rows.collect())
        }
        Some(other) => {
            let head = [format!("{} (this run)", run.profile), format!("{} (contrast)", other.profile)];
            let mut rows = vec![(
                vec![
                    Cell::Text("checks".to_owned()),
                    Cell::Html(badge(run.passed())),
                    Cell::Html(badge(other.passed())),
                ],
                false,
            )];
            rows.extend(mine.into_iter().zip(total_rows(other)).map(|((name, a), (_, b))| {
                let cell = if a == b { Cell::Num } else { Cell::Differs };
                (vec![Cell::Text(name.to_owned()), cell(a), cell(b)], false)
            }));
            table(&["metric", &head[0], &head[1]], rows)
        }
    }
}

fn servers(run: &RunData) -> String {
    if run.audit.servers.is_empty() {
        return "<p>No calls were made.</p>\n".to_owned();
    }
    let rows = run
        .audit
        .servers
        .iter()
        .map(|(name, t)| {
            let cells = vec![
                Cell::Text(name.clone()),
                Cell::Num(grouped(t.calls)),
                Cell::Num(grouped(t.ok())),
                Cell::Num(grouped(t.failed)),
                Cell::Num(grouped(t.waited_out)),
                Cell::Num(ms(t.p99_ms)),
            ];
            (cells, false)
        })
        .collect();
    let mut s = table(&["server", "logical calls", "ok", "failed", "ok, waited out a fault", "P99"], rows);
    s.push_str(
        "<p class=\"muted\">failed: an error, an isError result or a degraded result. Waited out: ok calls sent \
         inside a fault window on their replica and answered after it ended.</p>\n",
    );
    s
}

fn files(p: &RunPage<'_>) -> String {
    let mut names = vec![
        summary::SUMMARY_JSON.to_owned(),
        summary::SUMMARY_MD.to_owned(),
        csv_out::TIMESERIES.to_owned(),
        csv_out::EVENTS.to_owned(),
    ];
    if p.calls {
        names.push(calls::CALLS.to_owned());
    }
    if p.run.traces.kept.is_some() {
        names.push(super::traces::TRACES.to_owned());
    }
    names.push(super::dir::SCENARIO_COPY.to_owned());
    for stem in [plot::REPORT, plot::QPS, plot::P99, plot::ERRORS] {
        names.extend([format!("{stem}.png"), format!("{stem}.svg")]);
    }
    if p.contrast.is_some() {
        names.extend([format!("{}.png", super::contrast::CONTRAST), format!("{}.svg", super::contrast::CONTRAST)]);
    }
    let links: Vec<String> = names.iter().map(|n| link(n, n)).collect();
    format!("<p>{}</p>\n", links.join(" · "))
}
