//! `report.html`: what the page shows (a failed check as failed, every fault, the contrast run beside the run), that
//! text from a scenario comes out inert, that it asks for nothing outside itself, and that the same run gives the same
//! bytes wherever it is written — for `sim` (synthetic runs and the real command) and `swarm`.

use std::path::{Path, PathBuf};

use mcpstorm_sim::report::{write_contrast, write_run, write_run_html, write_sweep};
use mcpstorm_sim::run::{RunData, WallClock};
use mcpstorm_sim::scenario::CallsMode;

use crate::common::{mcpstorm, scratch_in, sim, text};
use crate::report::{knee_sweep, storm_run};

fn scratch(name: &str) -> PathBuf {
    scratch_in("html", name)
}

fn wall() -> WallClock {
    WallClock { wall: std::time::Duration::from_millis(200), sim: std::time::Duration::from_secs(60) }
}

/// A scenario text with markup and URLs in it, as a user may well write in a description or a comment.
const SCENARIO: &str = "# see https://example.org/runbook <script src=\"http://evil.test/x.js\"></script>\n\
                        name = \"retry_storm\"\ndescription = \"<script>alert(1)</script>\"\n";

/// The page's run written into `dir`, with `other` as its contrast run when given.
fn page(dir: &Path, run: &RunData, other: Option<&RunData>) -> String {
    write_run(dir, run, &wall(), CallsMode::All).expect("write_run");
    if let Some(other) = other {
        write_contrast(dir, run, other).expect("write_contrast");
    }
    let path = write_run_html(dir, run, SCENARIO, CallsMode::All, other.map(|o| (o, "contrast-naive")))
        .expect("write_run_html");
    assert_eq!(path, dir.join("report.html"));
    std::fs::read_to_string(path).expect("report.html")
}

/// The page without its `scenario.toml` block (a run's page has one), the one place where the user's own text may
/// hold a URL (escaped).
fn outside_scenario(page: &str) -> String {
    match (page.find("<h2 id=\"scenario\">"), page.find("<h2 id=\"reproduce\">")) {
        (Some(start), Some(end)) => format!("{}{}", &page[..start], &page[end..]),
        _ => page.to_owned(),
    }
}

/// Nothing on the page can make a request: no URL, no `src`, no stylesheet link or import, no script.
fn assert_self_contained(page: &str) {
    let outside = outside_scenario(page).to_lowercase();
    for needle in ["http://", "https://", "src=", "url(", "@import", "<link", "<img", "<iframe", "<script", "//cdn"] {
        assert!(!outside.contains(needle), "the page holds {needle:?} outside the escaped scenario");
    }
    assert!(!page.to_lowercase().contains("<script"), "a script element made it into the page");
}

#[test]
fn a_failed_check_every_fault_and_the_plots_are_on_the_page() {
    let dir = scratch("storm");
    let html = page(&dir, &storm_run(), None);
    assert!(html.starts_with("<!DOCTYPE html>\n") && html.ends_with("</html>\n"));
    assert!(html.contains("<title>mcpstorm · retry_storm · seed 42 · FAIL</title>"));
    // The fixture's p99_ms check failed and its lost check passed: each row says so.
    let row = |name: &str| {
        let at = html.find(&format!("<td>{name}</td>")).unwrap_or_else(|| panic!("no {name} row"));
        let start = html[..at].rfind("<tr").expect("row start");
        html[start..at + html[at..].find("</tr>").expect("row end")].to_owned()
    };
    let (p99, lost) = (row("p99_ms"), row("lost"));
    assert!(p99.starts_with("<tr class=\"failed\">") && p99.contains(">FAIL<") && !p99.contains(">PASS<"), "{p99}");
    assert!(p99.contains("<td class=\"n\">500</td><td class=\"n\">1480.125</td>"), "{p99}");
    assert!(lost.starts_with("<tr>") && lost.contains(">PASS<"), "{lost}");
    // Every fault, with its window, and the one that runs past the end clipped to the run on its lane.
    let faults = &html[html.find("<h2 id=\"faults\">").unwrap()..html.find("<h2 id=\"totals\">").unwrap()];
    for (label, start, end) in
        [("latency_spike api", 20, 35), ("error_burst search", 28, 40), ("partition api-2", 50, 75)]
    {
        let expected = format!("<td>{label}</td><td class=\"n\">{start} s</td><td class=\"n\">{end} s</td>");
        assert!(faults.contains(&expected), "{label} missing: {faults}");
    }
    assert!(faults.contains("left:83.33%;width:16.67%"), "{faults}");
    // The plots inline (one figure: the three panels stacked), the reproduce line, the scenario escaped.
    assert_eq!(html.matches("<svg ").count(), 1);
    assert!(html.contains("<pre>mcpstorm sim scenarios/retry_storm.toml --seed 42</pre>"));
    assert!(html.contains("description = &quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot;"));
    assert_self_contained(&html);
}

#[test]
fn scenario_and_server_text_comes_out_inert() {
    let mut run = storm_run();
    run.description = "<script>alert('d')</script> & <img src=x onerror=alert(2)>".into();
    run.checks[0].name = "<b onmouseover=alert(3)>p99</b>".into();
    run.faults[0].label = "latency_spike <i>api</i>".into();
    run.audit.servers.insert("<svg onload=alert(4)>".into(), Default::default());
    let html = page(&scratch("inert"), &run, None);
    // (`src=` is on the page here, as text: the description says it.)
    assert!(!html.to_lowercase().contains("<script"), "a script element made it into the page");
    for raw in ["<img", "<b onmouseover", "<i>api", "<svg onload"] {
        assert!(!html.contains(raw), "{raw:?} came through unescaped");
    }
    for escaped in [
        "&lt;script&gt;alert(&#39;d&#39;)&lt;/script&gt; &amp; &lt;img src=x onerror=alert(2)&gt;",
        "<td>&lt;b onmouseover=alert(3)&gt;p99&lt;/b&gt;</td>",
        "<td>latency_spike &lt;i&gt;api&lt;/i&gt;</td>",
        "<td>&lt;svg onload=alert(4)&gt;</td>",
    ] {
        assert!(html.contains(escaped), "{escaped:?} missing");
    }
}

#[test]
fn the_contrast_run_stands_beside_the_run() {
    let run = storm_run();
    let mut other = storm_run();
    other.profile = "naive".into();
    other.totals.retries = 123_456;
    let html = page(&scratch("contrast"), &run, Some(&other));
    assert_eq!(html.matches("<svg ").count(), 2, "the run's plots and the contrast figure");
    assert!(html.contains("<th>metric</th><th>default (this run)</th><th>naive (contrast)</th>"));
    // The contrast run's figure in its column, in bold where it differs from the run's, plain where not.
    assert!(html.contains("<td>retries</td><td class=\"n differs\">"), "the totals table");
    assert!(html.contains("<td class=\"n differs\">123,456</td></tr>"), "the contrast run's figure in its column");
    assert!(html.contains("<td>lost</td><td class=\"n\">0</td><td class=\"n\">0</td></tr>"), "equal figures");
    assert!(html.contains("<a href=\"contrast-naive/report.html\">"));
    assert_self_contained(&html);
}

/// A sweep's page links every row's own page, tints a row that failed its checks and inlines both sweep plots.
#[test]
fn a_sweep_page_links_every_row() {
    let dir = scratch("sweep");
    let mut sweep = knee_sweep(true);
    sweep.rows[2].passed = false;
    write_sweep(&dir, &sweep).expect("write_sweep");
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    for r in &sweep.rows {
        let href = format!("<a href=\"load.concurrency={0}/report.html\">{0}</a>", r.value);
        assert!(html.contains(&href), "no link to row {}", r.value);
    }
    let failed: Vec<&str> = html.lines().filter(|l| l.starts_with("<tr class=\"failed\">")).collect();
    assert_eq!(failed.len(), sweep.rows.iter().filter(|r| !r.passed).count(), "{failed:?}");
    let third = format!(">{}</a>", sweep.rows[2].value);
    assert!(failed.iter().any(|row| row.contains(&third) && row.contains(">FAIL<")), "{failed:?}");
    assert!(failed.iter().all(|row| !row.contains(">PASS<")), "{failed:?}");
    assert_eq!(html.matches("<svg ").count(), 2);
    assert_self_contained(&html);
}

/// The real command, twice, into two directories: the same bytes (no clock, no output path in the page), for the
/// run and its contrast run.
#[test]
fn the_same_run_gives_the_same_page_wherever_it_is_written() {
    let smoke = Path::new("scenarios/smoke.toml");
    let (a, b) = (scratch("run-a"), scratch("run-b"));
    let sets = ["duration=\"3s\"", "report.contrast=\"naive\""];
    for dir in [&a, &b] {
        let o = sim(smoke, dir, &sets);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    for name in ["report.html", "contrast-naive/report.html"] {
        let (x, y) = (std::fs::read(a.join(name)).expect(name), std::fs::read(b.join(name)).expect(name));
        assert!(x == y, "{name} differs between two runs of the same scenario and seed");
        let page = String::from_utf8(x).expect("UTF-8");
        assert!(!page.contains("run-a") && !page.contains(env!("CARGO_TARGET_TMPDIR")), "{name} names its path");
        assert_self_contained(&page);
        assert!(page.contains("<td>latency_spike echo</td>"), "{name}: the scenario's one fault");
    }
    let page = std::fs::read_to_string(a.join("report.html")).unwrap();
    // The two plots (the run's, both profiles'), and the calls' waterfalls (docs/traces.md).
    let waterfalls = page.matches("class=\"waterfall\"").count();
    assert!(page.contains("<h2 id=\"contrast\">") && page.matches("<svg ").count() == 2 + waterfalls);
    assert!(page.contains("<h2 id=\"waterfall\">") && waterfalls >= 1, "the slowest call at least");
    assert!(page.contains("<pre># The scenario as run: every --set applied, secrets redacted. Seed 1."));
}

/// Every seed is on the swarm's page with its verdict and the faults it drew; a failure links its shrunk file
/// (relative, and there) and gives a replay line that runs from the report's directory.
#[test]
fn a_swarm_page_lists_every_seed_and_links_its_failures() {
    let out = scratch("swarm");
    let dir = out.to_string_lossy();
    // A P99 limit no run meets: every seed fails the scenario's checks.
    let args = [
        "swarm",
        "scenarios/smoke.toml",
        "--seeds",
        "2",
        "--checks",
        "--no-differential",
        "--shrink-runs",
        "1",
        "--set",
        "checks.p99_ms=0.001",
        "--set",
        "duration=\"12s\"",
        "--set",
        "swarm.recovery_within=\"2s\"",
        "--out",
        &dir,
    ];
    let o = mcpstorm(&args);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    assert_eq!(html.matches("<tr class=\"failed\">").count(), 2, "both seeds failed");
    for seed in [1, 2] {
        let file = format!("failures/{seed}-checks.toml");
        assert!(out.join(&file).is_file(), "{file}");
        assert!(html.contains(&format!("<a href=\"{file}\">{file}</a>")), "no link to {file}");
        assert!(html.contains(&format!("<pre>mcpstorm swarm {file} --replay --checks --no-differential</pre>")));
    }
    assert!(html.contains("<span class=\"badge fail\">FAIL</span> checks"));
    assert!(!html.contains(&*dir), "the page names its own path");
    assert!(!html.contains("http") && !html.contains("src=") && !html.contains("<script"), "not self-contained");
    // Each seed's drawn faults are listed as the failure file holds them.
    let drawn = std::fs::read_to_string(out.join("failures/1-checks.toml")).unwrap();
    let kept = drawn.lines().filter(|l| l.starts_with("kind = ")).count();
    assert!(kept >= 1 && html.matches("<div class=\"lane\"").count() >= kept, "{html}");
}
