//! Loading a scenario: read (UTF-8), parse (spanned), apply `--set`, deserialize strictly, validate (ranges
//! included), hold each run to the cost limits, expand the sweep.
//!
//! Each stage reports every problem it can find, each with `file:line:column` (or the `--set` argument) and the key
//! path; a later stage runs only when the earlier ones found nothing, since its findings would be noise. serde stops
//! at the first error, so deserialization is retried with the offending key removed until it succeeds, which reports
//! every unknown key and wrong type in one go.

use std::ops::Range;
use std::path::Path;

use serde::de::DeserializeOwned;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::cost::{self, Limits};
use super::doc::{self, Node, Source};
use super::error::{Location, Problem, ScenarioError};
use super::model::Scenario;
use super::overrides;
use super::path::KeyPath;
use super::replay::{self, TraceError};
use super::rules::Issue;
use super::validate;

/// At most this many problems from deserialization (each one costs a retry).
const MAX_SERDE_PROBLEMS: usize = 32;

/// Reads, parses and validates the scenario at `path`, with `--set` arguments `sets` (`key=value`) applied, under
/// the default run-cost limits ([`Limits::DEFAULT`]). Errors name `path` as given.
pub fn load_file(path: &Path, sets: &[String]) -> Result<Scenario, ScenarioError> {
    load_file_with(path, sets, &Limits::DEFAULT)
}

/// [`load_file`] under the run-cost limits `limits` ([`Limits::NONE`] for `--allow-large`).
pub fn load_file_with(path: &Path, sets: &[String], limits: &Limits) -> Result<Scenario, ScenarioError> {
    let origin = path.display().to_string();
    let bytes =
        std::fs::read(path).map_err(|e| ScenarioError::Read { path: origin.clone(), message: e.to_string() })?;
    let text = String::from_utf8(bytes).map_err(|e| not_utf8(&origin, &e))?;
    load_str_with(&text, &origin, sets, limits)
}

/// Reads, parses, deserializes and checks a file that is not a scenario (`T`, e.g. the gateway's tables) by the same
/// strict path as a scenario, so that its problems read the same, at the same `file:line:column`. `check` gives the
/// file's semantic issues. No `--set`, sweep or run cost applies.
pub(crate) fn read_other<T: DeserializeOwned>(
    path: &Path,
    check: impl Fn(&T) -> Vec<Issue>,
) -> Result<T, ScenarioError> {
    let origin = path.display().to_string();
    let bytes =
        std::fs::read(path).map_err(|e| ScenarioError::Read { path: origin.clone(), message: e.to_string() })?;
    let text = String::from_utf8(bytes).map_err(|e| not_utf8(&origin, &e))?;
    read_other_str(&text, &origin, check)
}

/// [`read_other`] of text; `origin` names it in errors.
pub(crate) fn read_other_str<T: DeserializeOwned>(
    text: &str,
    origin: &str,
    check: impl Fn(&T) -> Vec<Issue>,
) -> Result<T, ScenarioError> {
    let src = Source { origin, text, sets: &[] };
    let table = DeTable::parse(text).map_err(|e| ScenarioError::Invalid(vec![syntax_problem(&src, &e)]))?;
    let root: Node<'_> = Spanned::new(table.span(), DeValue::Table(table.into_inner()));
    let value = deserialize(&root, &src).map_err(|found| invalid(found, &src))?;
    fail_if_any(locate(check(&value), &root, &src), &src)?;
    Ok(value)
}

/// Where a file stops being UTF-8: the byte offset, line and column (in characters) of its first invalid byte.
fn not_utf8(origin: &str, e: &std::string::FromUtf8Error) -> ScenarioError {
    let at = e.utf8_error().valid_up_to();
    let bytes = e.as_bytes();
    // The prefix up to `at` is valid by definition; the empty fallback is never taken.
    let valid = bytes.get(..at).and_then(|b| std::str::from_utf8(b).ok()).unwrap_or_default();
    let (line, column) = doc::line_column(valid, at);
    let byte = bytes.get(at).map_or_else(String::new, |b| format!(" (0x{b:02x})"));
    ScenarioError::Invalid(vec![Problem {
        location: Location::File { origin: origin.to_owned(), line, column },
        key: None,
        message: format!("not UTF-8: invalid byte{byte} at byte offset {at}; a scenario file is UTF-8 text"),
    }])
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
    let table = DeTable::parse(text).map_err(|e| ScenarioError::Invalid(vec![syntax_problem(&src, &e)]))?;
    let mut root: Node<'_> = Spanned::new(table.span(), DeValue::Table(table.into_inner()));

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
    fail_if_any(checked(&mut scenario, runs_itself, limits, &root, &src), &src)?;

    let rows = expand(&root, &scenario, &src, limits)?;
    if let Some(sweep) = &mut scenario.sweep {
        sweep.rows = rows;
    }
    Ok(scenario)
}

/// Validation; when it passes, a replay's trace (read relative to the scenario's file, its rows checked against the
/// servers); then, when `runs` (the scenario is run as it is), the run-cost limits: the estimate is only meaningful
/// for values in their ranges, and a replay's counts the trace's calls.
fn checked(scenario: &mut Scenario, runs: bool, limits: &Limits, root: &Node<'_>, src: &Source<'_>) -> Vec<Problem> {
    let issues = validate::check(scenario);
    if !issues.is_empty() {
        return locate(issues, root, src);
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

fn fail_if_any(problems: Vec<Problem>, src: &Source<'_>) -> Result<(), ScenarioError> {
    if problems.is_empty() { Ok(()) } else { Err(invalid(problems, src)) }
}

fn invalid(mut problems: Vec<Problem>, src: &Source<'_>) -> ScenarioError {
    // Problems of the whole file first, then file order, then `--set` arguments in the order given. The sort is
    // stable, so problems at one place keep the order the checks found them in.
    problems.sort_by_key(|p| match &p.location {
        Location::Origin { .. } => (0, 0, 0),
        Location::File { line, column, .. } => (1, *line, *column),
        Location::Set { arg } => (2, src.sets.iter().position(|s| s == arg).unwrap_or(usize::MAX), 0),
    });
    ScenarioError::Invalid(problems)
}

fn syntax_problem(src: &Source<'_>, e: &toml::de::Error) -> Problem {
    let mut message = e.message().trim_end().to_owned();
    if let Some(span) = e.span()
        && message == "duplicate key"
        && let Some(key) = src.text.get(span.clone())
    {
        message = format!("duplicate key `{key}`: each key may appear once per table");
    }
    Problem {
        location: e.span().map_or_else(|| src.whole(), |span| src.location(&span)),
        key: None,
        message: format!("TOML syntax: {message}"),
    }
}

fn as_table<'i>(root: &Node<'i>) -> Spanned<DeTable<'i>> {
    match root.get_ref() {
        DeValue::Table(t) => Spanned::new(root.span(), t.clone()),
        _ => Spanned::new(root.span(), DeTable::default()),
    }
}

/// serde, strictly, reporting every error it can reach: after each one the offending key is removed and serde runs
/// again. A "missing key" caused by such a removal is not reported (and ends the search).
fn deserialize<T: DeserializeOwned>(root: &Node<'_>, src: &Source<'_>) -> Result<T, Vec<Problem>> {
    let mut root = root.clone();
    let mut problems = Vec::new();
    let mut removed: Vec<KeyPath> = Vec::new();
    while problems.len() < MAX_SERDE_PROBLEMS {
        let error = match T::deserialize(toml::de::Deserializer::from(as_table(&root))) {
            Ok(value) if problems.is_empty() => return Ok(value),
            Ok(_) => break,
            Err(e) => e,
        };
        let (path, span, missing) = explain(&root, &error);
        if missing && removed.contains(&path) {
            break;
        }
        problems.push(Problem {
            location: if span.is_empty() { src.whole() } else { src.location(&span) },
            key: (!path.is_root()).then(|| path.to_string()),
            message: friendly(error.message()),
        });
        if !doc::remove(&mut root, &path) {
            break;
        }
        removed.push(path);
    }
    Err(problems)
}

/// The key a serde error is about, the span to report, and whether the key is missing.
fn explain(root: &Node<'_>, error: &toml::de::Error) -> (KeyPath, Range<usize>, bool) {
    let span = error.span().unwrap_or(0..0);
    let (mut path, mut at) = doc::path_at(root, &span);
    if span.is_empty() {
        at = span.clone();
    }
    let message = error.message();
    if let Some(key) = quoted_after(message, "missing field ") {
        return (path.key(key), at, true);
    }
    // Inside an internally tagged enum (a tool's `latency`), serde reports an unknown key at the enclosing table.
    if let Some(key) = quoted_after(message, "unknown field ")
        && path.last_key() != Some(key)
        && let Some(DeValue::Table(table)) = doc::get(root, &path).map(Spanned::get_ref)
        && let Some((k, _)) = table.get_key_value(key)
    {
        at = k.span();
        path = path.key(key);
    }
    (path, at, false)
}

/// `X` in a message that starts with `prefix` followed by `` `X` ``.
fn quoted_after<'m>(message: &'m str, prefix: &str) -> Option<&'m str> {
    let rest = message.strip_prefix(prefix)?.strip_prefix('`')?;
    rest.split_once('`').map(|(key, _)| key)
}

/// serde's wording, in TOML terms.
fn friendly(message: &str) -> String {
    let message = message.trim_end();
    if quoted_after(message, "missing field ").is_some() {
        return "is required".to_owned();
    }
    if let Some(rest) = message.strip_prefix("unknown field ") {
        return match rest.split_once(", expected ") {
            Some((key, expected)) => match nearest(key.trim_matches('`'), expected) {
                Some(name) => format!("unknown key; did you mean `{name}`? expected {expected}"),
                None => format!("unknown key; expected {expected}"),
            },
            None if rest.contains("there are no fields") => "unknown key: this table takes no keys".to_owned(),
            None => "unknown key".to_owned(),
        };
    }
    let Some((what, expected)) = message.rsplit_once(", expected ") else { return message.to_owned() };
    let expected = match expected {
        "usize" | "u64" | "u32" | "u16" | "u8" => "an integer >= 0",
        "isize" | "i64" | "i32" | "i16" | "i8" => "an integer",
        "f64" | "f32" => "a number",
        "a sequence" => "an array",
        "a map" | "map" => "a table",
        "a boolean" | "bool" => "true or false",
        e if e.starts_with("struct ") || e.starts_with("internally tagged enum") => "a table",
        e if e.starts_with("enum ") => "a string",
        e => e,
    };
    format!("{}, expected {expected}", what.replace(" as i128", ""))
}

/// The valid key of `expected` (serde's "`a`, `b` or `c`" list) nearest to the unknown `key`, when it is near
/// enough to be a typo: at most a third of its letters changed (one at least), swaps counted as one change.
fn nearest<'e>(key: &str, expected: &'e str) -> Option<&'e str> {
    let names = expected.split('`').skip(1).step_by(2);
    let limit = (key.chars().count() / 3).max(1);
    let scored = names.map(|name| (strsim::damerau_levenshtein(&key.to_lowercase(), name), name));
    // The first of the nearest names, in the order serde lists them: the same suggestion every time.
    scored.filter(|(d, _)| *d <= limit).min_by_key(|(d, _)| *d).map(|(_, name)| name)
}

/// Validation issues as problems: each at the value its path names, or the nearest enclosing key that exists in the
/// file (a defaulted key is reported at its table).
fn locate(issues: Vec<Issue>, root: &Node<'_>, src: &Source<'_>) -> Vec<Problem> {
    issues
        .into_iter()
        .map(|issue| {
            let location = KeyPath::parse(&issue.path)
                .ok()
                .and_then(|path| doc::nearest_span(root, &path))
                .map_or_else(|| src.whole(), |(span, _)| src.location(&span));
            Problem { location, key: Some(issue.path), message: issue.message }
        })
        .collect()
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
            Ok(mut scenario) => {
                let issues = checked(&mut scenario, true, limits, &run, src);
                if issues.is_empty() {
                    runs.push((label, scenario));
                    continue;
                }
                issues
            }
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
