//! The strict path every config file takes, the gateway's and a scenario (whose loader adds `--set`, sweeps and
//! run costs on top): read (UTF-8), parse (spanned), deserialize strictly, validate.
//!
//! Each stage reports every problem it can find, each with `file:line:column` (or the `--set` argument) and the key
//! path; a later stage runs only when the earlier ones found nothing, since its findings would be noise. Syntax
//! errors are the exception: the rest of the file is still read and checked, see [`recover`](super::recover). serde stops
//! at the first error, so deserialization is retried with the offending key removed until it succeeds, which reports
//! every unknown key and wrong type in one go.

use std::ops::Range;
use std::path::Path;

use serde::de::DeserializeOwned;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::doc::{self, Node, Source};
use super::error::{ConfigError, Location, Problem};
use super::path::KeyPath;
use super::recover;
use super::rules::Issue;

/// At most this many problems from deserialization (each one costs a retry).
const MAX_SERDE_PROBLEMS: usize = 32;

/// Keys that were removed or moved, with what replaced them: an old file gets that, not only "unknown key".
const MOVED: &[(&str, &str)] = &[
    (
        "gateway.gossip",
        "is gone: gateway nodes share breakers through Redis, with `[gateway.sync] redis = \"redis://redis:6379\"` \
         (in a scenario, a simulated Redis host named `redis`)",
    ),
    (
        "gateway.nodes",
        "moved out of `[gateway]`: a scenario places gateway nodes with `[nodes] count = N`; a gateway process is \
         one node",
    ),
    (
        "gateway.front",
        "moved out of `[gateway]`: a scenario names how agents reach its nodes with `[nodes] front = \"http\"`; a \
         gateway process serves `[listen]`",
    ),
    (
        "listen.max_calls_per_session",
        "is gone: one agent's burst is no longer capped per session; the process-wide listen.max_calls_in_flight \
         is shared fairly between sessions under contention",
    ),
];

/// The text of the file at `path` (named as given in errors): unreadable or not UTF-8 is a [`ConfigError`].
pub fn read_text(path: &Path) -> Result<String, ConfigError> {
    let origin = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| ConfigError::Read { path: origin.clone(), message: e.to_string() })?;
    String::from_utf8(bytes).map_err(|e| not_utf8(&origin, &e))
}

/// Reads, parses, deserializes and checks the file `T` at `path` by the strict path, so that its problems read the
/// same as a scenario's, at the same `file:line:column`. `check` gives the file's semantic issues.
pub fn read_file<T: DeserializeOwned>(path: &Path, check: impl Fn(&T) -> Vec<Issue>) -> Result<T, ConfigError> {
    read_str(&read_text(path)?, &path.display().to_string(), check)
}

/// [`read_file`] of text; `origin` names it in errors.
pub fn read_str<T: DeserializeOwned>(
    text: &str,
    origin: &str,
    check: impl Fn(&T) -> Vec<Issue>,
) -> Result<T, ConfigError> {
    let src = Source { origin, text, sets: &[] };
    let root = recover::parse(&src).map_err(|repair| {
        let problems = repair.problems(&src, |_| Vec::new(), |value: T, root| locate(check(&value), root, &src));
        invalid(problems, &src)
    })?;
    let value = deserialize(&root, &src).map_err(|found| invalid(found, &src))?;
    fail_if_any(locate(check(&value), &root, &src), &src)?;
    Ok(value)
}

/// Where a file stops being UTF-8: the byte offset, line and column (in characters) of its first invalid byte.
fn not_utf8(origin: &str, e: &std::string::FromUtf8Error) -> ConfigError {
    let at = e.utf8_error().valid_up_to();
    let bytes = e.as_bytes();
    // The prefix up to `at` is valid by definition; the empty fallback is never taken.
    let valid = bytes.get(..at).and_then(|b| std::str::from_utf8(b).ok()).unwrap_or_default();
    let (line, column) = doc::line_column(valid, at);
    let byte = bytes.get(at).map_or_else(String::new, |b| format!(" (0x{b:02x})"));
    ConfigError::Invalid(vec![Problem {
        location: Location::File { origin: origin.to_owned(), line, column },
        key: None,
        message: format!("not UTF-8: invalid byte{byte} at byte offset {at}; a config file is UTF-8 text"),
    }])
}

pub fn fail_if_any(problems: Vec<Problem>, src: &Source<'_>) -> Result<(), ConfigError> {
    if problems.is_empty() { Ok(()) } else { Err(invalid(problems, src)) }
}

pub fn invalid(mut problems: Vec<Problem>, src: &Source<'_>) -> ConfigError {
    // Problems of the whole file first, then file order, then `--set` arguments in the order given. The sort is
    // stable, so problems at one place keep the order the checks found them in.
    problems.sort_by_key(|p| match &p.location {
        Location::Origin { .. } => (0, 0, 0),
        Location::File { line, column, .. } => (1, *line, *column),
        Location::Set { arg } => (2, src.sets.iter().position(|s| s == arg).unwrap_or(usize::MAX), 0),
    });
    ConfigError::Invalid(problems)
}

pub fn syntax_problem(src: &Source<'_>, e: &toml::de::Error) -> Problem {
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

pub fn as_table<'i>(root: &Node<'i>) -> Spanned<DeTable<'i>> {
    match root.get_ref() {
        DeValue::Table(t) => Spanned::new(root.span(), t.clone()),
        _ => Spanned::new(root.span(), DeTable::default()),
    }
}

/// serde, strictly, reporting every error it can reach: after each one the offending key is removed and serde runs
/// again. A "missing key" caused by such a removal is not reported (and ends the search).
pub fn deserialize<T: DeserializeOwned>(root: &Node<'_>, src: &Source<'_>) -> Result<T, Vec<Problem>> {
    deserialize_excusing(root, src, &|_| false, &KeyPath::clone)
}

/// [`deserialize`] of a tree that may lack keys through no fault of its own (a syntax error took their lines, see
/// [`recover`](super::recover)): a missing key that `excused` accepts is not reported and ends the search, with an
/// error that may then be empty. `restore` turns a path of `root` into the path the file wrote, when items were
/// taken out of its arrays.
pub(super) fn deserialize_excusing<T: DeserializeOwned>(
    root: &Node<'_>,
    src: &Source<'_>,
    excused: &dyn Fn(&KeyPath) -> bool,
    restore: &dyn Fn(&KeyPath) -> KeyPath,
) -> Result<T, Vec<Problem>> {
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
        let written = restore(&path);
        if missing && (removed.contains(&path) || excused(&written)) {
            break;
        }
        let key = written.to_string();
        let moved = MOVED.iter().find(|(old, _)| *old == key).filter(|_| error.message().starts_with("unknown field "));
        problems.push(Problem {
            location: if span.is_empty() { src.whole() } else { src.location(&span) },
            key: (!written.is_root()).then_some(key),
            message: moved.map_or_else(|| friendly(error.message()), |(_, message)| (*message).to_owned()),
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
pub fn locate(issues: Vec<Issue>, root: &Node<'_>, src: &Source<'_>) -> Vec<Problem> {
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
