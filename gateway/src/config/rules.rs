//! What every table's rules share: the [`Issue`] a failed rule gives (its key path and message), and [`Rules`],
//! which collects them with the checks many keys use. Each table's own rules are in its module (`problems`); the
//! walk over the tables is in [`validate`](super::validate).

use std::time::Duration;

/// One failed rule: the key path (`load.mix[2].tool`) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    pub path: String,
    pub message: String,
}

/// The issues found so far, in the order the rules ran.
#[derive(Debug, Default)]
pub struct Rules {
    pub issues: Vec<Issue>,
}

impl Rules {
    pub fn fail(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.issues.push(Issue { path: path.into(), message: message.into() });
    }

    pub fn positive(&mut self, path: &str, d: Duration) {
        if d.is_zero() {
            self.fail(path, "must be longer than 0");
        }
    }

    pub fn at_least_one(&mut self, path: &str, n: usize) {
        if n == 0 {
            self.fail(path, "must be at least 1");
        }
    }

    pub fn probability(&mut self, path: &str, p: f64) {
        if !(p.is_finite() && (0.0..=1.0).contains(&p)) {
            self.fail(path, format!("must be between 0 and 1, got {p}"));
        }
    }
}

/// A duration as messages show it.
pub fn fmt(d: Duration) -> String {
    super::units::format_duration(d)
}
