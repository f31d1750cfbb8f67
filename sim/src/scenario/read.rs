//! Loading a scenario: read (UTF-8), parse (spanned), apply `--set`, deserialize strictly, put in the gateway
//! config file that `gateway_config` names (see `reference`), validate (ranges included), hold each run to the cost
//! limits, expand the sweep.
//!
//! Each stage reports every problem it can find, each with `file:line:column` (or the `--set` argument) and the key
//! path; a later stage runs only when the earlier ones found nothing, since its findings would be noise. Syntax
//! errors are the exception: the rest of the file is still read and checked (see the gateway's `config::recover`). serde stops
//! at the first error, so deserialization is retried with the offending key removed until it succeeds, which reports
//! every unknown key and wrong type in one go.

use std::path::Path;

use mcpstorm_gateway::config::read::{deserialize, fail_if_any, invalid, locate, read_text};
use mcpstorm_gateway::config::recover;
use toml::Spanned;
use toml::de::DeValue;

use super::cost::{self, Limits};
use super::doc::{self, Node, Source};
use super::model::Scenario;
use super::overrides;
use super::path::KeyPath;
use super::reference::{self, Taken};
use super::replay::{self, TraceError};
use super::rules::Issue;
use super::validate;
use super::{Problem, ScenarioError};

/// Reads, parses and validates the scenario at `path`, with `--set` arguments `sets` (`key=value`) applied, under
/// the default run-cost limits ([`Limits::DEFAULT`]). Errors name `path` as given.
pub fn load_file(path: &Path, sets: &[String]) -> Result<Scenario, ScenarioError> {
    load_file_with(path, sets, &Limits::DEFAULT)
}

/// [`load_file`] under the run-cost limits `limits` ([`Limits::NONE`] for `--allow-large`).
pub fn load_file_with(path: &Path, sets: &[String], limits: &Limits) -> Result<Scenario, ScenarioError> {
    load_str_with(&read_text(path)?, &path.display().to_string(), sets, limits)
}

/// Parses and validates scenario text under the default run-cost limits; `origin` names it in errors (usually the
/// file's path). When the scenario has a sweep, every value is applied and checked too, so a loaded scenario's
/// [`expand_sweep`] cannot fail.
///
/// [`expand_sweep`]: super::expand_sweep
pub fn load_str(text: &str, origin: &str, sets: &[String]) -> Result<Scenario, ScenarioError> {
    load_str_with(text, origin, sets, &Limits::DEFAULT)
}

/// [`load_str`] under the run-cost limits `limits`. The whole pipeline: a sweep's rows are built here, from the
/// parsed file, and kept in the scenario's [`Sweep`](super::Sweep).
pub fn load_str_with(text: &str, origin: &str, sets: &[String], limits: &Limits) -> Result<Scenario, ScenarioError> {
    let src = Source { origin, text, sets };
    let mut root = recover::parse(&src).map_err(|repair| {
        // The rest of the file is read and checked as it would be without the lines the syntax errors damaged, its
        // sweep aside; the run-cost limits wait for a file that parses.
        let problems = repair.problems(
            &src,
            |root| overrides::apply_sets(root, &src),
            |mut scenario: Scenario, root| {
                prepared(&mut scenario, false, limits, root, &src)
                    .err()
                    .map(|e| e.problems().to_vec())
                    .unwrap_or_default()
            },
        );
        invalid(problems, &src)
    })?;

    // A `--set` that cannot be applied is left out, so that serde still reports everything else.
    let mut problems = overrides::apply_sets(&mut root, &src);
    let mut scenario = match deserialize::<Scenario>(&root, &src) {
        Ok(scenario) if problems.is_empty() => scenario,
        Ok(_) => return Err(invalid(problems, &src)),
        Err(found) => {
            problems.extend(found);
            return Err(invalid(problems, &src));
        }
    };
    // With a sweep, only the rows run, so only they are held to the cost limits.
    let runs_itself = scenario.sweep.is_none();
    prepared(&mut scenario, runs_itself, limits, &root, &src)?;

    let rows = expand(&root, &scenario, &src, limits)?;
    if let Some(sweep) = &mut scenario.sweep {
        sweep.rows = rows;
    }
    Ok(scenario)
}

/// The gateway config file the scenario names put in (its problems in their own order: the scenario's key, then
/// the file's), then [`checked`].
fn prepared(
    scenario: &mut Scenario,
    runs: bool,
    limits: &Limits,
    root: &Node<'_>,
    src: &Source<'_>,
) -> Result<(), ScenarioError> {
    let taken = reference::attach(scenario, root, src).map_err(ScenarioError::Invalid)?;
    fail_if_any(checked(scenario, runs, limits, root, src, taken.as_ref()), src)
}

/// Validation; when it passes, a replay's trace (read relative to the scenario's file, its rows checked against the
/// servers); then, when `runs` (the scenario is run as it is), the run-cost limits: the estimate is only meaningful
/// for values in their ranges, and a replay's counts the trace's calls.
fn checked(
    scenario: &mut Scenario,
    runs: bool,
    limits: &Limits,
    root: &Node<'_>,
    src: &Source<'_>,
    taken: Option<&Taken>,
) -> Vec<Problem> {
    let issues = validate::check(scenario);
    if !issues.is_empty() {
        return reference::place(issues, taken, root, src);
    }
    match replay::attach(scenario, src.origin) {
        Ok(()) => {}
        Err(TraceError::Key(issue)) => return locate(vec![issue], root, src),
        Err(TraceError::Rows(problems)) => return problems,
    }
    match cost::estimate(scenario).over(limits) {
        Some((path, message)) if runs => locate(vec![Issue { path, message }], root, src),
        _ => Vec::new(),
    }
}

/// Runs every sweep value through the same strict path as the file: put at the parameter, deserialized, validated.
fn expand(
    root: &Node<'_>,
    scenario: &Scenario,
    src: &Source<'_>,
    limits: &Limits,
) -> Result<Vec<(String, Scenario)>, ScenarioError> {
    let Some(sweep) = &scenario.sweep else { return Ok(Vec::new()) };
    let param_span = doc::get(root, &KeyPath::root().key("sweep").key("param")).map_or(0..0, Spanned::span);
    let at_param = |message: String| Problem {
        location: if param_span.is_empty() { src.whole() } else { src.location(&param_span) },
        key: Some("sweep.param".to_owned()),
        message,
    };
    let param = KeyPath::parse(&sweep.param).map_err(|e| ScenarioError::Invalid(vec![at_param(e)]))?;
    if let Some(node) = doc::get(root, &param)
        && matches!(node.get_ref(), DeValue::Table(_) | DeValue::Array(_))
    {
        return Err(ScenarioError::Invalid(vec![at_param(format!(
            "`{param}` is {}, not a single value: a sweep changes one scalar key",
            doc::describe(node.get_ref())
        ))]));
    }

    let mut base = root.clone();
    doc::remove(&mut base, &KeyPath::root().key("sweep"));
    let mut runs = Vec::new();
    let mut problems: Vec<Problem> = Vec::new();
    for (i, value) in sweep.values.iter().enumerate() {
        let label = super::model::label(value);
        let value_path = KeyPath::root().key("sweep").key("values").index(i);
        let Some(node) = doc::get(root, &value_path) else { continue };
        let mut run = base.clone();
        if let Err((at, message)) = doc::insert(&mut run, &param, param_span.clone(), node.clone()) {
            return Err(ScenarioError::Invalid(vec![at_param(format!("`{at}` {message}"))]));
        }
        let found = match deserialize::<Scenario>(&run, src) {
            Ok(mut scenario) => match prepared(&mut scenario, true, limits, &run, src) {
                Ok(()) => {
                    runs.push((label, scenario));
                    continue;
                }
                Err(e) => e.problems().to_vec(),
            },
            Err(found) => found,
        };
        for mut p in found {
            // The same problem for every value (an unknown parameter key) is reported once.
            if problems.iter().any(|q| q.location == p.location && q.key == p.key && q.message.starts_with(&p.message))
            {
                continue;
            }
            p.message = format!("{} (with sweep value {param} = {label})", p.message);
            problems.push(p);
        }
    }
    fail_if_any(problems, src)?;
    Ok(runs)
}
