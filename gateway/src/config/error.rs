//! What goes wrong with a config file (the gateway's or a scenario), and where. The `Display` of [`ConfigError`] is exactly what the CLI prints: one
//! line per problem, each starting with where it is (`file:line:column`, or the `--set` argument that caused it).

use std::fmt;

/// Where a problem is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Location {
    /// A position in the scenario text: 1-based line and column (the column counts characters, not bytes).
    File { origin: String, line: usize, column: usize },
    /// The scenario as a whole, when no closer position is known.
    Origin { origin: String },
    /// A `--set key=value` argument (as given, without `--set`).
    Set { arg: String },
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File { origin, line, column } => write!(f, "{origin}:{line}:{column}"),
            Location::Origin { origin } => write!(f, "{origin}"),
            Location::Set { arg } => write!(f, "--set {arg}"),
        }
    }
}

/// One problem: where, which key (`servers[1].tools[0].latency.p99_ms`; none for a syntax error), and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub location: Location,
    pub key: Option<String>,
    pub message: String,
}

impl Problem {
    /// `(line, column)` when the problem is located in the file.
    pub fn line_column(&self) -> Option<(usize, usize)> {
        match self.location {
            Location::File { line, column, .. } => Some((line, column)),
            _ => None,
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some(key) if !key.is_empty() => write!(f, "{}: {key}: {}", self.location, self.message),
            _ => write!(f, "{}: {}", self.location, self.message),
        }
    }
}

/// A config file (the gateway's or a scenario) that cannot be used. Every variant is bad input: the CLI exits 2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{path}: cannot read it: {message}")]
    Read { path: String, message: String },
    /// Syntax, shape or meaning: every problem found, in file order, one per line.
    #[error("{}", Lines(.0))]
    Invalid(Vec<Problem>),
}

impl ConfigError {
    /// The problems (empty for [`ConfigError::Read`]).
    pub fn problems(&self) -> &[Problem] {
        match self {
            ConfigError::Read { .. } => &[],
            ConfigError::Invalid(problems) => problems,
        }
    }

    /// How many errors this is (at least 1).
    pub fn count(&self) -> usize {
        self.problems().len().max(1)
    }
}

struct Lines<'a>(&'a [Problem]);

impl fmt::Display for Lines<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, problem) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}
