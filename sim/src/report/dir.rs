//! The directory a report goes to (`--out`): a new one, or an earlier report of the same command, whose files are
//! then removed first so that nothing stale (an old contrast run, a sweep row, a failure file) sits beside the new
//! report and reads as part of it. A directory holding anything else is refused before anything runs: the command
//! never deletes what it did not write.

use std::path::{Path, PathBuf};

use super::html::REPORT_HTML;
use super::{calls, compare, contrast, csv_out, fidelity, plot, summary, sweep, traces};

/// The command whose report a directory holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// `sim`: one run (with its contrast run) or a sweep of runs.
    Sim,
    /// `compare` and `merge`, and the shard files of `compare --shard`.
    Compare,
    Swarm,
    /// `fidelity`: a scenario in the simulator against its live run.
    Fidelity,
}

#[derive(Debug, thiserror::Error)]
pub enum DirError {
    #[error("cannot write the report to {}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error(
        "--out {} is not empty and is not an earlier `{command}` report: it holds {}; choose a new or empty \
         directory, or remove these",
        dir.display(),
        entries.join(", ")
    )]
    Foreign { dir: PathBuf, command: &'static str, entries: Vec<String> },
}

impl Command {
    fn name(self) -> &'static str {
        match self {
            Command::Sim => "sim",
            Command::Compare => "compare",
            Command::Swarm => "swarm",
            Command::Fidelity => "fidelity",
        }
    }

    /// The file whose presence makes a directory a report of this command: without it, nothing in the directory
    /// is taken for the command's own (a lone `scenario.toml` may well be the user's).
    fn marker(self, dir: &Path) -> bool {
        let has = |name: &str| dir.join(name).is_file();
        match self {
            Command::Sim => has(summary::SUMMARY_JSON) || has(sweep::SWEEP_CSV),
            Command::Compare => {
                has(compare::COMPARE_JSON)
                    || std::fs::read_dir(dir)
                        .is_ok_and(|mut d| d.any(|e| e.is_ok_and(|e| is_shard(&e.file_name().to_string_lossy()))))
            }
            Command::Swarm => has(SWARM_MD),
            Command::Fidelity => has(fidelity::FIDELITY_JSON),
        }
    }

    /// Whether `name` in a report directory of this command is one of its files (`Some(false)`), one of its
    /// subdirectories holding a report of the same command (`Some(true)`: the caller checks inside), or neither.
    /// `nested`: inside such a subdirectory.
    fn owns(self, name: &str, is_dir: bool, nested: bool) -> Option<bool> {
        let (stem, ext) = name.rsplit_once('.').unwrap_or((name, ""));
        let figure = |stems: &[&str]| matches!(ext, "svg" | "png") && stems.contains(&stem);
        let owned = match (self, is_dir) {
            // A contrast run, or a sweep's row (`<param>=<value>`).
            (Command::Sim, true) => return (name.starts_with("contrast-") || name.contains('=')).then_some(true),
            (Command::Sim, false) => {
                [csv_out::TIMESERIES, csv_out::EVENTS, calls::CALLS, summary::SUMMARY_JSON, summary::SUMMARY_MD]
                    .contains(&name)
                    || [SCENARIO_COPY, REPORT_HTML, sweep::SWEEP_CSV, sweep::SWEEP_MD, traces::TRACES].contains(&name)
                    || figure(&[plot::QPS, plot::P99, plot::ERRORS, plot::REPORT, contrast::CONTRAST])
                    || figure(&[sweep::SWEEP_QPS, sweep::SWEEP_P99])
            }
            (Command::Compare, true) => false,
            (Command::Compare, false) => {
                [compare::COMPARE_CSV, compare::COMPARE_MD, compare::COMPARE_JSON, REPORT_HTML].contains(&name)
                    || figure(&compare::STEMS)
                    || is_shard(name)
            }
            (Command::Swarm, true) => return (name == SWARM_FAILURES && !nested).then_some(true),
            // `<seed>-<invariant>.toml` in `failures/`.
            (Command::Swarm, false) if nested => ext == "toml" && name.starts_with(|c: char| c.is_ascii_digit()),
            (Command::Swarm, false) => name == SWARM_MD || name == REPORT_HTML,
            (Command::Fidelity, true) => false,
            (Command::Fidelity, false) => {
                [fidelity::FIDELITY_MD, fidelity::FIDELITY_JSON, REPORT_HTML].contains(&name)
                    || figure(&[fidelity::FIDELITY])
            }
        };
        owned.then_some(false)
    }
}

/// `scenario.toml`: the scenario as run, written by `sim` beside its report.
pub const SCENARIO_COPY: &str = "scenario.toml";
/// `swarm`'s table, and its directory of failure files (`<seed>-<invariant>.toml`).
const SWARM_MD: &str = "swarm.md";
const SWARM_FAILURES: &str = "failures";
/// A file `write` checks with and removes at once (a leftover of a killed run is no one else's).
const PROBE: &str = ".mcpstorm-write-check";

/// `shard-K-of-N.json`: kept when a comparison's directory is reused, since the other shards and `merge` read them.
fn is_shard(name: &str) -> bool {
    name.strip_prefix("shard-").and_then(|r| r.strip_suffix(".json")).is_some_and(|r| r.contains("-of-"))
}

/// Makes `dir` ready for a report of `command`: created if missing; refused if it holds anything but an earlier
/// report of the same command; else that report's files are removed (a comparison's shard files stay). Then one
/// file is written and removed, since a directory can exist and still refuse files.
pub fn prepare(dir: &Path, command: Command) -> Result<(), DirError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| DirError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let mut foreign = Vec::new();
    let owned = scan(dir, command, "", &mut foreign).map_err(io(dir))?;
    if !owned.is_empty() && !command.marker(dir) {
        // Only names this command writes, but not its report: not ours to remove.
        foreign.extend(owned.iter().map(|(p, d)| shown("", p, *d)));
    }
    if !foreign.is_empty() {
        const SHOWN: usize = 8;
        let more = foreign.len().saturating_sub(SHOWN);
        foreign.truncate(SHOWN);
        if more > 0 {
            foreign.push(format!("and {more} more"));
        }
        return Err(DirError::Foreign { dir: dir.to_path_buf(), command: command.name(), entries: foreign });
    }
    for (path, is_dir) in owned {
        if is_dir {
            std::fs::remove_dir_all(&path).map_err(io(&path))?;
        } else if !is_shard(&path.file_name().unwrap_or_default().to_string_lossy()) {
            std::fs::remove_file(&path).map_err(io(&path))?;
        }
    }
    let probe = dir.join(PROBE);
    std::fs::write(&probe, b"").map_err(io(dir))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// The entries of `dir` that `command` wrote (files, and subdirectories holding nothing else), in name order; the
/// others' names (prefixed with `prefix`, a `/` for a directory) go to `foreign`.
fn scan(
    dir: &Path,
    command: Command,
    prefix: &str,
    foreign: &mut Vec<String>,
) -> std::io::Result<Vec<(PathBuf, bool)>> {
    let mut entries = std::fs::read_dir(dir)?.collect::<Result<Vec<_>, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    let mut owned = Vec::new();
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_dir = entry.file_type()?.is_dir();
        match command.owns(&name, is_dir, !prefix.is_empty()) {
            _ if name == PROBE => owned.push((entry.path(), false)),
            Some(true) => {
                let inner = format!("{prefix}{name}/");
                let before = foreign.len();
                let mine = scan(&entry.path(), command, &inner, foreign)?;
                // A contrast run or sweep row is a report itself; `failures/` is a part of one.
                let report = command == Command::Swarm || mine.is_empty() || command.marker(&entry.path());
                if !report {
                    foreign.extend(mine.iter().map(|(p, d)| shown(&inner, p, *d)));
                }
                if foreign.len() == before {
                    owned.push((entry.path(), true));
                }
            }
            Some(false) => owned.push((entry.path(), false)),
            None => foreign.push(shown(prefix, &entry.path(), is_dir)),
        }
    }
    Ok(owned)
}

/// An entry's name as the refusal lists it: under its parent's `prefix`, with a `/` for a directory.
fn shown(prefix: &str, path: &Path, is_dir: bool) -> String {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    format!("{prefix}{name}{}", if is_dir { "/" } else { "" })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("mcpstorm-dir-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn touch(dir: &Path, name: &str) {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"x").unwrap();
    }

    #[test]
    fn an_earlier_report_of_the_same_command_is_cleared_to_the_last_file() {
        let dir = scratch("same");
        for f in
            ["summary.json", "report.png", "report.html", "contrast.png", "contrast-naive/summary.json", "calls.csv"]
        {
            touch(&dir, f);
        }
        prepare(&dir, Command::Sim).unwrap();
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "stale contrast files would read as the new run's");
        // A comparison keeps its shards (merge reads them) and drops its old tables.
        touch(&dir, "shard-1-of-2.json");
        touch(&dir, "compare.md");
        prepare(&dir, Command::Compare).unwrap();
        assert!(dir.join("shard-1-of-2.json").exists() && !dir.join("compare.md").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn anything_else_is_refused_and_left_alone() {
        let dir = scratch("foreign");
        touch(&dir, "summary.json");
        touch(&dir, "notes.txt");
        touch(&dir, "contrast-naive/mine.txt");
        let e = prepare(&dir, Command::Sim).unwrap_err().to_string();
        assert!(e.contains("holds contrast-naive/mine.txt, notes.txt;"), "{e}");
        assert!(dir.join("summary.json").exists(), "nothing is removed when the directory is refused");
        // Another command's report is foreign too.
        let e = prepare(&dir, Command::Compare).unwrap_err().to_string();
        assert!(e.contains("not an earlier `compare` report") && e.contains("summary.json"), "{e}");
        // A name sim writes, without a sim report beside it, is not taken for sim's.
        let own = scratch("lone");
        touch(&own, "scenario.toml");
        let e = prepare(&own, Command::Sim).unwrap_err().to_string();
        assert!(e.contains("holds scenario.toml;"), "{e}");
        assert!(own.join("scenario.toml").exists());
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&own);
    }
}
