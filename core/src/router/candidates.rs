//! Candidates: which replicas may serve a request, and why the others may not.
//!
//! A replica is a candidate for a call when its server offers the tool, every [`Requirement`] of the request holds
//! for its server's capability matrix and tags, and no failing health check has taken its weight to zero (for the
//! whole server, or for this tool). Retry avoidance is not an exclusion: it only narrows a non-empty set.

use std::fmt;

use serde_json::Value;

use super::registry::ServerEntry;

/// What a request needs from the server that serves it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Requirement {
    /// The capability matrix attribute must contain the value: `language_support ∋ rust`.
    Supports { attribute: String, value: String },
    /// The server must carry the tag.
    Tag(String),
}

impl Requirement {
    pub fn supports(attribute: impl Into<String>, value: impl Into<String>) -> Self {
        Requirement::Supports { attribute: attribute.into(), value: value.into() }
    }

    /// Requirements read from a call's arguments: for each `(argument, attribute)` rule, a string argument
    /// `language: "rust"` becomes `language_support ∋ rust`. Absent or non-string arguments require nothing.
    pub fn from_arguments<A: AsRef<str>, B: AsRef<str>>(arguments: &Value, rules: &[(A, B)]) -> Vec<Requirement> {
        rules
            .iter()
            .filter_map(|(argument, attribute)| {
                let value = arguments.get(argument.as_ref()).and_then(Value::as_str)?;
                Some(Requirement::supports(attribute.as_ref(), value))
            })
            .collect()
    }

    pub fn holds_for(&self, server: &ServerEntry) -> bool {
        match self {
            Requirement::Supports { attribute, value } => {
                server.matrix.get(attribute).is_some_and(|s| s.contains(value))
            }
            Requirement::Tag(tag) => server.tags.contains(tag),
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Requirement::Supports { attribute, value } => write!(f, "{attribute} ∋ {value}"),
            Requirement::Tag(tag) => write!(f, "tag {tag}"),
        }
    }
}

/// Why one replica was not a candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExclusionReason {
    /// Its server does not meet this requirement.
    Unmet(Requirement),
    /// A health check failed `failures` times in a row; `capability` is the tool it guards (`None`: the server).
    Unhealthy { capability: Option<String>, failures: u32 },
}

/// One replica left out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exclusion {
    pub server: String,
    pub replica: String,
    pub reason: ExclusionReason,
}

impl fmt::Display for Exclusion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}: ", self.server, self.replica)?;
        match &self.reason {
            ExclusionReason::Unmet(requirement) => write!(f, "does not meet {requirement}"),
            ExclusionReason::Unhealthy { capability: None, failures } => {
                write!(f, "unhealthy ({failures} failed health checks in a row)")
            }
            ExclusionReason::Unhealthy { capability: Some(tool), failures } => {
                write!(f, "unhealthy for {tool} ({failures} failed health checks in a row)")
            }
        }
    }
}

/// A routing decision that could not be made. Returned at once: never a panic, never a wait.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    #[error("no candidate for tool `{tool}`: no registered server offers it")]
    UnknownTool { tool: String },
    #[error("no candidate for tool `{tool}`: {}", list(.excluded))]
    NoCandidate { tool: String, excluded: Vec<Exclusion> },
}

fn list(excluded: &[Exclusion]) -> String {
    excluded.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn requirements_from_arguments_and_the_matrix() {
        let reqs = Requirement::from_arguments(
            &json!({"language": "rust", "depth": 3, "code": "fn main() {}"}),
            &[("language", "language_support"), ("depth", "depth_support"), ("region", "region_support")],
        );
        assert_eq!(reqs, vec![Requirement::supports("language_support", "rust")]);
        let rusty = ServerEntry::new("r", ["r-1"]).with_support("language_support", ["rust", "go"]);
        let py = ServerEntry::new("p", ["p-1"]).with_support("language_support", ["python"]);
        assert!(reqs[0].holds_for(&rusty));
        assert!(!reqs[0].holds_for(&py));
        assert!(!Requirement::Tag("gpu".into()).holds_for(&rusty));
    }

    #[test]
    fn the_error_says_which_requirement_excluded_whom() {
        let err = RouteError::NoCandidate {
            tool: "review".into(),
            excluded: vec![
                Exclusion {
                    server: "py".into(),
                    replica: "py-1".into(),
                    reason: ExclusionReason::Unmet(Requirement::supports("language_support", "rust")),
                },
                Exclusion {
                    server: "rs".into(),
                    replica: "rs-1".into(),
                    reason: ExclusionReason::Unhealthy { capability: Some("review".into()), failures: 3 },
                },
            ],
        };
        assert_eq!(
            err.to_string(),
            "no candidate for tool `review`: py/py-1: does not meet language_support ∋ rust; \
             rs/rs-1: unhealthy for review (3 failed health checks in a row)"
        );
    }
}
