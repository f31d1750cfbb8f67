//! `--set key=value` and sweeps: both put a value at a key path of the parsed TOML before serde sees it, so a wrong
//! type or an unknown key is caught by the same strict parsing as the file itself, and reported as the `--set`
//! argument (or the sweep value) that caused it.
//!
//! The key is a dotted path with array indices (`load.sessions`, `servers[0].tools[0].error_rate`, `faults[1].start`).
//! The value is a TOML value (`200`, `0.5`, `"10s"`, `true`, `[1, 2]`, `{ ms = 5 }`); text that does not parse as
//! one is taken as a string, so `--set name=foo` and `--set load.think_time=50ms` need no quotes. Missing tables on
//! the way are created (`--set agent.retry=immediate` works in a file without `[agent]`); array entries must exist.
//!
//! `--set` arguments apply first, in order (a later one wins); a sweep's values then win over a `--set` of the same
//! key.

use std::borrow::Cow;

use toml::Spanned;
use toml::de::DeValue;

use super::doc::{self, Node, Source};
use super::model::{Scenario, label};
use super::path::KeyPath;
use super::{Location, Problem, ScenarioError};

/// Applies every `--set` argument of `src` to `root`, in order (a later one wins). Every bad argument is reported.
pub(crate) fn apply_sets<'i>(root: &mut Node<'i>, src: &Source<'i>) -> Vec<Problem> {
    let mut problems = Vec::new();
    for (i, arg) in src.sets.iter().enumerate() {
        let problem = |key: Option<String>, message: String| Problem {
            location: Location::Set { arg: arg.clone() },
            key,
            message,
        };
        let Some((key, value)) = arg.split_once('=') else {
            problems.push(problem(None, "expected key=value, e.g. --set load.sessions=200".to_owned()));
            continue;
        };
        let path = match KeyPath::parse(key.trim()) {
            Ok(path) => path,
            Err(e) => {
                problems.push(problem(None, format!("bad key path: {e}")));
                continue;
            }
        };
        let value = match parse_value(value) {
            Ok(value) => value,
            Err(e) => {
                problems.push(problem(Some(path.to_string()), e));
                continue;
            }
        };
        // The key (and any table created for it) spans the whole block: a problem anywhere in it is this one's.
        let block = src.set_block(i);
        if let Err((at, message)) = doc::insert(root, &path, block.clone(), doc::respan(value, &block)) {
            problems.push(problem(Some(at.to_string()), message));
        }
    }
    problems
}

/// A TOML value, or the text itself as a string when it is not one. Text that starts like a TOML string, array or
/// inline table must parse: `[1, 2` is a mistake, not a string.
fn parse_value(text: &str) -> Result<Node<'_>, String> {
    match DeValue::parse(text) {
        Ok(value) => Ok(value),
        Err(e) if text.trim_start().starts_with(['"', '\'', '[', '{']) => {
            Err(format!("not a TOML value: {}", e.message().trim_end()))
        }
        Err(_) => Ok(Spanned::new(0..text.len(), DeValue::String(Cow::Borrowed(text)))),
    }
}

/// One scenario per value of `base.sweep`, in order, each labelled by its value (see [`label`]) and with the value
/// put at `sweep.param`; the expanded scenarios have no sweep. Without a sweep, the result is empty.
///
/// Loading built the rows, on the parsed file (its `--set` arguments applied) by the same strict path as the file
/// itself, so they hold what the file says, secrets included. A seed set on the scenario after loading reaches every
/// row, unless the sweep is over the seed. A sweep that was not loaded (built or changed in code) has no rows for its
/// values, and is an error.
pub fn expand_sweep(base: &Scenario) -> Result<Vec<(String, Scenario)>, ScenarioError> {
    let Some(sweep) = &base.sweep else { return Ok(Vec::new()) };
    let loaded = sweep.rows.len() == sweep.values.len()
        && sweep.rows.iter().zip(&sweep.values).all(|((row, _), value)| *row == label(value));
    if !loaded {
        return Err(ScenarioError::Invalid(vec![Problem {
            location: Location::Origin { origin: base.name.clone() },
            key: Some("sweep".to_owned()),
            message: "this sweep was not loaded from TOML: load the scenario (load_str, load_file) to expand it"
                .to_owned(),
        }]));
    }
    let sweeps_seed = sweep.param.trim() == "seed";
    let rows = sweep.rows.iter().cloned().map(|(label, mut row)| {
        if !sweeps_seed {
            row.seed = base.seed;
        }
        (label, row)
    });
    Ok(rows.collect())
}
