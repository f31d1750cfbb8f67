//! Report writers: CSV, summaries and plots for one run or a sweep.
//!
//! A run writes, into its directory:
//!
//! | file | for | deterministic |
//! |---|---|---|
//! | `timeseries.csv` | one row per simulated second ([`SecondRow`](crate::run::SecondRow) plus `errors`, `error_rate`) | yes |
//! | `events.csv` | faults and state changes ([`EventRow`](crate::run::EventRow)) | yes |
//! | `calls.csv` | the call history, one row per attempt (or a sample: `sim --calls`), streamed as the run goes ([`CallsCsv`], given to the run) | yes |
//! | `summary.json` | totals, checks, faults, seed, reproduce command, mode (`sim` or `live`) | yes |
//! | `scenario.toml` | the scenario as run, every `--set` applied, secrets redacted (written by the CLI) | yes |
//! | `summary.md` | the same for people, plus wall-clock time and links to the plots | no (wall clock) |
//! | `qps`, `p99`, `errors` `.svg`/`.png` | one panel each, fault windows shaded and labelled | yes |
//! | `report.svg`/`report.png` | the three panels stacked under a title block | yes |
//! | `contrast.svg`/`contrast.png` | with `[report] contrast`: both gateway profiles side by side ([`write_contrast`]; the other run's own report is in `contrast-<profile>/`) | yes |
//! | `report.html` | one self-contained page, written last ([`write_run_html`]): the checks, the plots inline, the faults, the totals (beside the contrast run's), per server, the scenario as run, the reproduce line; no external requests | yes |
//!
//! A sweep writes a `report.html` of its own beside `sweep.md` ([`write_sweep`]), linking each row's; `compare`,
//! `fidelity` and `swarm` write theirs too ([`write_compare`], [`write_fidelity`], [`write_swarm_html`]).
//!
//! Determinism is the rule for everything but `summary.md`: floats are written with fixed decimals and never as NaN
//! or inf, JSON fields keep declaration order, and plots draw with an embedded font (see `font.rs`), so the same
//! [`RunData`] gives the same bytes on any machine, with or without system fonts.

mod calls;
mod compare;
mod console;
mod contrast;
mod csv_out;
pub mod dir;
mod drain;
mod error;
mod fidelity;
mod font;
mod html;
mod html_compare;
mod html_fidelity;
mod html_run;
mod html_swarm;
mod html_sweep;
pub(crate) mod num;
mod overlay;
mod plot;
mod summary;
mod sweep;
mod timeline;
mod traces;
mod waterfall;

use std::path::{Path, PathBuf};

pub use calls::CallsCsv;
pub use console::console_summary;
pub use contrast::contrast_table;
pub use error::ReportError;
pub use fidelity::fidelity_table;
pub use html::REPORT_HTML;
pub use html_swarm::{SwarmPage, SwarmSeed};

use crate::run::{RunData, SweepData, WallClock};
use crate::scenario::CallsMode;
use plot::{Figure, RenderError};

/// Writes a run's report into `dir` (created if missing) and returns the paths written, in order.
/// `calls` says what the run's `calls.csv` (written as it ran) holds, for `summary.md`.
pub fn write_run(dir: &Path, run: &RunData, wall: &WallClock, calls: CallsMode) -> Result<Vec<PathBuf>, ReportError> {
    let mut out = Out::new(dir)?;
    let path = dir.join(csv_out::TIMESERIES);
    out.write(
        csv_out::timeseries(&run.seconds).map_err(|source| ReportError::Csv { path, source })?,
        csv_out::TIMESERIES,
    )?;
    let path = dir.join(csv_out::EVENTS);
    out.write(csv_out::events(&run.events).map_err(|source| ReportError::Csv { path, source })?, csv_out::EVENTS)?;
    let path = dir.join(summary::SUMMARY_JSON);
    out.write(summary::json(run).map_err(|source| ReportError::Json { path, source })?, summary::SUMMARY_JSON)?;
    for (stem, fig) in timeline::figures(run) {
        out.figure(stem, &fig)?;
    }
    out.write(summary::markdown(run, wall, calls).into_bytes(), summary::SUMMARY_MD)?;
    if let Some(kept) = &run.traces.kept {
        out.write(traces::otlp_json(run.seed, kept), traces::TRACES)?;
    }
    Ok(out.paths)
}

/// Writes `contrast.svg`/`contrast.png` into `dir` (the primary run's directory): the primary run and the same
/// scenario under the other gateway profile, side by side. Returns the paths written.
pub fn write_contrast(dir: &Path, primary: &RunData, other: &RunData) -> Result<Vec<PathBuf>, ReportError> {
    let mut out = Out::new(dir)?;
    let (labels, series) = contrast::series(primary, other);
    out.figure(contrast::CONTRAST, &contrast::figure(primary, other, &labels, &series))?;
    Ok(out.paths)
}

/// Writes `report.html` into `dir`, a run's directory whose report ([`write_run`]) and, with `contrast`, whose
/// [`write_contrast`] figure are already there: the page inlines their SVGs. `scenario` is `scenario.toml`'s text;
/// `contrast` is the other profile's run and its report's directory name under `dir`. Returns the path written.
pub fn write_run_html(
    dir: &Path,
    run: &RunData,
    scenario: &str,
    calls: CallsMode,
    contrast: Option<(&RunData, &str)>,
) -> Result<PathBuf, ReportError> {
    let svg = read_svg(dir, plot::REPORT)?;
    let contrast_svg = match contrast {
        Some(_) => Some(read_svg(dir, contrast::CONTRAST)?),
        None => None,
    };
    let page = html_run::RunPage {
        run,
        scenario,
        svg: &svg,
        calls: calls != CallsMode::Off,
        contrast: contrast.zip(contrast_svg.as_deref()).map(|((other, sub), svg)| html_run::ContrastPage {
            other,
            dir: sub,
            svg,
        }),
    };
    let mut out = Out::new(dir)?;
    out.write(html_run::render(&page).into_bytes(), REPORT_HTML)?;
    Ok(dir.join(REPORT_HTML))
}

/// Writes a swarm's `report.html` into `dir` (created if missing) and returns its path.
pub fn write_swarm_html(dir: &Path, page: &SwarmPage<'_>) -> Result<PathBuf, ReportError> {
    let mut out = Out::new(dir)?;
    out.write(html_swarm::render(page).into_bytes(), REPORT_HTML)?;
    Ok(dir.join(REPORT_HTML))
}

/// `<stem>.svg` as written into `dir`, for a page to inline.
fn read_svg(dir: &Path, stem: &str) -> Result<String, ReportError> {
    let path = dir.join(format!("{stem}.svg"));
    std::fs::read_to_string(&path).map_err(|source| ReportError::Io { path, source })
}

/// Writes a sweep's table, plots and `report.html` (linking each row's own page) into `dir` (created if missing) and
/// returns the paths written, in order.
pub fn write_sweep(dir: &Path, data: &SweepData) -> Result<Vec<PathBuf>, ReportError> {
    let mut out = Out::new(dir)?;
    let path = dir.join(sweep::SWEEP_CSV);
    out.write(sweep::csv(data).map_err(|source| ReportError::Csv { path, source })?, sweep::SWEEP_CSV)?;
    let mut svgs = Vec::new();
    for (stem, fig) in sweep::figures(data) {
        let caption = match stem {
            sweep::SWEEP_QPS => "Throughput and goodput against the swept value",
            _ => "Latency P50/P95/P99 against the swept value",
        };
        svgs.push((out.figure(stem, &fig)?, caption));
    }
    out.write(sweep::markdown(data).into_bytes(), sweep::SWEEP_MD)?;
    out.write(html_sweep::render(data, &svgs).into_bytes(), REPORT_HTML)?;
    Ok(out.paths)
}

/// Writes a comparison's tables, overlay plots and `report.html` into `dir` (created if missing) and returns the paths
/// written.
pub fn write_compare(dir: &Path, data: &crate::compare::CompareData) -> Result<Vec<PathBuf>, ReportError> {
    let mut out = Out::new(dir)?;
    let path = dir.join(compare::COMPARE_CSV);
    out.write(compare::csv(data).map_err(|source| ReportError::Csv { path, source })?, compare::COMPARE_CSV)?;
    let path = dir.join(compare::COMPARE_JSON);
    out.write(compare::json(data).map_err(|source| ReportError::Json { path, source })?, compare::COMPARE_JSON)?;
    let series = compare::series(data);
    let mut overlay = String::new();
    for (stem, fig) in compare::figures(data, &series) {
        let svg = out.figure(stem, &fig)?;
        if overlay.is_empty() {
            // The first figure has every panel stacked: the one the page shows.
            overlay = svg;
        }
    }
    out.write(compare::markdown(data).into_bytes(), compare::COMPARE_MD)?;
    out.write(html_compare::render(data, &overlay).into_bytes(), REPORT_HTML)?;
    Ok(out.paths)
}

/// Writes a fidelity comparison's `fidelity.md`, `fidelity.json`, overlay plot (`fidelity.svg`/`.png`) and
/// `report.html` into `dir` (created if missing) and returns the paths written.
pub fn write_fidelity(dir: &Path, data: &crate::fidelity::FidelityData) -> Result<Vec<PathBuf>, ReportError> {
    let mut out = Out::new(dir)?;
    out.write(fidelity::markdown(data).into_bytes(), fidelity::FIDELITY_MD)?;
    let path = dir.join(fidelity::FIDELITY_JSON);
    out.write(fidelity::json(data).map_err(|source| ReportError::Json { path, source })?, fidelity::FIDELITY_JSON)?;
    let (labels, series) = (fidelity::labels(), fidelity::series(data));
    let svg = out.figure(fidelity::FIDELITY, &fidelity::figure(data, &labels, &series))?;
    out.write(html_fidelity::render(data, &svg).into_bytes(), REPORT_HTML)?;
    Ok(out.paths)
}

/// The markdown table of one metric of a comparison (for the console).
pub fn compare_table(data: &crate::compare::CompareData, metric: &crate::compare::Metric) -> String {
    compare::metric_table(data, &data.table(metric))
}

/// The files written so far into one directory.
struct Out<'a> {
    dir: &'a Path,
    paths: Vec<PathBuf>,
}

impl<'a> Out<'a> {
    fn new(dir: &'a Path) -> Result<Self, ReportError> {
        std::fs::create_dir_all(dir).map_err(|source| ReportError::Io { path: dir.to_path_buf(), source })?;
        Ok(Out { dir, paths: Vec::new() })
    }

    fn write(&mut self, bytes: Vec<u8>, name: &str) -> Result<(), ReportError> {
        let path = self.dir.join(name);
        std::fs::write(&path, bytes).map_err(|source| ReportError::Io { path: path.clone(), source })?;
        self.paths.push(path);
        Ok(())
    }

    /// `<stem>.svg` and `<stem>.png`; returns the SVG's text.
    fn figure(&mut self, stem: &str, fig: &impl Figure) -> Result<String, ReportError> {
        let svg_name = format!("{stem}.svg");
        let svg =
            plot::render_svg(fig).map_err(|message| ReportError::Plot { path: self.dir.join(&svg_name), message })?;
        self.write(svg.clone().into_bytes(), &svg_name)?;
        let png_name = format!("{stem}.png");
        let png = plot::render_png(fig).map_err(|e| {
            let path = self.dir.join(&png_name);
            match e {
                RenderError::Plot(message) => ReportError::Plot { path, message },
                RenderError::Png(source) => ReportError::Png { path, source },
            }
        })?;
        self.write(png, &png_name)?;
        Ok(svg)
    }
}
