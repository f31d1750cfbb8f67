//! `swarm`'s `report.html`: every seed with the faults it drew (on a timeline), its verdict, and for a failure the
//! shrunk file (a relative link) and the line that replays it.
//!
//! The swarm fills a [`SwarmPage`] with plain data, so that the report writers need nothing of the swarm's types.

use std::fmt::Write as _;

use super::html::{Cell, badge, escape, lane, link, page, pre, section, table};
use super::num::{finite, short};
use crate::run::FaultWindow;

/// One swarm's results, for its page.
#[derive(Debug)]
pub struct SwarmPage<'a> {
    pub scenario: &'a str,
    pub description: &'a str,
    /// The run's length, for the fault timelines.
    pub duration_s: f64,
    /// `1/1`, or the shard this run was.
    pub shard: String,
    /// Simulations run, shrinking included.
    pub simulations: usize,
    pub seeds: Vec<SwarmSeed>,
    /// The command that runs this swarm again.
    pub reproduce: &'a str,
}

/// One seed: what it drew and how it fared.
#[derive(Debug)]
pub struct SwarmSeed {
    pub seed: u64,
    /// The drawn faults, labelled `kind target`.
    pub faults: Vec<FaultWindow>,
    /// `(invariant, detail)` for every violation; empty when every invariant held.
    pub violations: Vec<(String, String)>,
    /// `2 faults in 12 shrink runs` when the failure was shrunk.
    pub shrunk: Option<String>,
    /// The failure file, relative to the report directory (`failures/3-checks.toml`).
    pub file: Option<String>,
    /// The command that replays it, run from the report directory.
    pub replay: Option<String>,
}

impl SwarmSeed {
    fn passed(&self) -> bool {
        self.violations.is_empty()
    }
}

pub(crate) fn render(p: &SwarmPage<'_>) -> String {
    let failing = p.seeds.iter().filter(|s| !s.passed()).count();
    let mut s = String::new();
    let _ = writeln!(s, "<h1>swarm: {} {}</h1>", escape(p.scenario), badge(failing == 0));
    if !p.description.trim().is_empty() {
        let _ = writeln!(s, "<p class=\"desc\">{}</p>", escape(p.description.trim()));
    }
    let _ = writeln!(
        s,
        "<p>{} seeds (shard {}), {failing} failing, {} simulations. Each seed draws its own fault timeline within the \
         scenario's [swarm] bounds and is checked against the invariants; a failure is shrunk to a smaller timeline \
         that still breaks the same invariant.</p>",
        p.seeds.len(),
        escape(&p.shard),
        p.simulations
    );
    s.push_str("<nav><a href=\"#seeds\">Seeds</a>");
    if failing > 0 {
        s.push_str("<a href=\"#failures\">Failures</a>");
    }
    s.push_str("<a href=\"#reproduce\">Reproduce</a></nav>\n");

    s.push_str(&section("seeds", "Seeds"));
    let run_s = finite(p.duration_s);
    let rows = p.seeds.iter().map(|seed| (seed_cells(seed, run_s), !seed.passed())).collect();
    s.push_str(&table(
        &["seed", "faults drawn", &format!("timeline (0 to {} s)", short(run_s, 3)), "verdict", "shrunk to", "file"],
        rows,
    ));

    if failing > 0 {
        s.push_str(&section("failures", "Failures"));
        s.push_str(
            "<p>Each file is a scenario that replays its failure; run these from this report's directory.</p>\n",
        );
        for seed in p.seeds.iter().filter(|s| !s.passed()) {
            let _ = writeln!(s, "<h3>seed {}</h3>", seed.seed);
            s.push_str("<ul>");
            for (invariant, detail) in &seed.violations {
                let _ = write!(s, "<li><b>{}</b>: {}</li>", escape(invariant), escape(detail));
            }
            s.push_str("</ul>\n");
            if let Some(replay) = &seed.replay {
                s.push_str(&pre(replay));
            }
        }
    }

    s.push_str(&section("reproduce", "Reproduce"));
    s.push_str(&pre(p.reproduce));
    let _ = writeln!(s, "<p>The table as text: {}</p>", link("swarm.md", "swarm.md"));
    page(&format!("mcpstorm swarm · {} · {} seeds", p.scenario, p.seeds.len()), &s)
}

fn seed_cells(seed: &SwarmSeed, run_s: f64) -> Vec<Cell> {
    let faults: Vec<String> = seed
        .faults
        .iter()
        .map(|f| format!("{} ({} s to {} s)", f.label, short(finite(f.start_s), 3), short(finite(f.end_s), 3)))
        .collect();
    let lanes: String = seed.faults.iter().map(|f| lane(f, run_s)).collect();
    let verdict = if seed.passed() {
        badge(true)
    } else {
        let names: Vec<String> = seed.violations.iter().map(|(i, _)| escape(i)).collect();
        format!("{} {}", badge(false), names.join(", "))
    };
    vec![
        Cell::Num(seed.seed.to_string()),
        Cell::Html(faults.iter().map(|f| escape(f)).collect::<Vec<_>>().join("<br>")),
        Cell::Html(lanes),
        Cell::Html(verdict),
        Cell::Text(seed.shrunk.clone().unwrap_or_default()),
        Cell::Html(seed.file.as_deref().map(|f| link(f, f)).unwrap_or_default()),
    ]
}
