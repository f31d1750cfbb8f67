//! The diagnose report: one line per check, coloured only on a terminal, or the same as JSON.
//!
//! A check keeps its text exactly as found (server messages, tool names, versions), so the JSON report is exact;
//! [`Report::render`] is the one place that text meets the terminal, escaped and bounded there.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::cli::terminal::{Bound, show};

/// A check's outcome: lowercase in JSON, upper case (`as_ref()`) on the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, strum::AsRefStr)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "UPPERCASE")]
pub enum Status {
    Pass,
    Fail,
    Skip,
}

impl Status {
    /// ANSI SGR colour: green, red, yellow.
    fn color(self) -> &'static str {
        match self {
            Status::Pass => "\x1b[32m",
            Status::Fail => "\x1b[1;31m",
            Status::Skip => "\x1b[33m",
        }
    }
}

/// One layer's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub status: Status,
    /// Wall time the check took; `None` when it measured nothing of its own (skipped, or derived from another).
    pub ms: Option<f64>,
    pub summary: String,
    /// Further lines: the failing tools, the failing JSON pointers, ...
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
    /// On failure, what to look at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// Machine-readable figures (JSON output only).
    #[serde(skip_serializing_if = "Value::is_null")]
    pub data: Value,
}

impl Check {
    fn new(name: &'static str, status: Status, took: Option<Duration>, summary: impl Into<String>) -> Check {
        Check {
            name,
            status,
            ms: took.map(ms),
            summary: summary.into(),
            details: Vec::new(),
            hint: None,
            data: Value::Null,
        }
    }

    pub fn pass(name: &'static str, took: Option<Duration>, summary: impl Into<String>) -> Check {
        Check::new(name, Status::Pass, took, summary)
    }

    pub fn fail(
        name: &'static str,
        took: Option<Duration>,
        summary: impl Into<String>,
        hint: impl Into<String>,
    ) -> Check {
        Check { hint: Some(hint.into()), ..Check::new(name, Status::Fail, took, summary) }
    }

    pub fn skip(name: &'static str, summary: impl Into<String>) -> Check {
        Check::new(name, Status::Skip, None, summary)
    }

    pub fn details(mut self, details: Vec<String>) -> Check {
        self.details = details;
        self
    }

    pub fn data(mut self, data: Value) -> Check {
        self.data = data;
        self
    }
}

/// Milliseconds with microsecond resolution, for JSON.
pub fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub target: String,
    pub ok: bool,
    pub checks: Vec<Check>,
}

impl Report {
    pub fn new(target: String, checks: Vec<Check>) -> Report {
        let ok = checks.iter().all(|c| c.status != Status::Fail);
        Report { target, ok, checks }
    }

    pub fn failed(&self) -> usize {
        self.count(Status::Fail)
    }

    fn count(&self, status: Status) -> usize {
        self.checks.iter().filter(|c| c.status == status).count()
    }

    /// The report as lines like `PASS  connect           12 ms   stdio python3`, with details and hints indented
    /// below their check. `color` adds ANSI colours (for a terminal only). Every text is one line, escaped and bounded
    /// by [`Bound::MESSAGE`]: a server can neither colour nor add lines of its own.
    pub fn render(&self, color: bool) -> String {
        let line = |text: &str| show(text, Bound::MESSAGE);
        let paint = |status: Status, text: &str| {
            if color { format!("{}{text}\x1b[0m", status.color()) } else { text.to_owned() }
        };
        let mut out = String::new();
        for c in &self.checks {
            // "-" under the digits when the check timed nothing of its own.
            let took = c.ms.map_or_else(|| "-   ".to_owned(), format_ms);
            let summary = line(&c.summary);
            let _ = writeln!(out, "{}  {:<10}{took:>11}   {summary}", paint(c.status, c.status.as_ref()), c.name);
            for d in &c.details {
                let _ = writeln!(out, "{:6}  {}", "", line(d));
            }
            if let Some(hint) = &c.hint {
                let hint = format!("hint: {}", line(hint));
                let _ = writeln!(out, "{:6}{}", "", if color { format!("\x1b[1m{hint}\x1b[0m") } else { hint });
            }
        }
        let verdict = if self.ok { paint(Status::Pass, "ok") } else { paint(Status::Fail, "FAILED") };
        let _ = writeln!(
            out,
            "{verdict}: {} passed, {} failed, {} skipped",
            self.count(Status::Pass),
            self.count(Status::Fail),
            self.count(Status::Skip)
        );
        out
    }
}

fn format_ms(ms: f64) -> String {
    if ms < 10.0 { format!("{ms:.1} ms") } else { format!("{ms:.0} ms") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Report {
        Report::new(
            "stdio python3".into(),
            vec![
                Check::pass("connect", Some(Duration::from_micros(12_400)), "stdio python3"),
                Check::fail("call", Some(Duration::from_micros(300)), "not sent", "fix it")
                    .details(vec!["/message: 3 is not of type \"string\"".into()]),
                Check::skip("renewal", "needs the tool list"),
            ],
        )
    }

    #[test]
    fn plain_lines_align_and_carry_details_and_hints() {
        let r = sample();
        assert!(!r.ok);
        assert_eq!(r.failed(), 1);
        assert_eq!(
            r.render(false),
            "PASS  connect         12 ms   stdio python3\n\
             FAIL  call           0.3 ms   not sent\n\
             \x20       /message: 3 is not of type \"string\"\n\
             \x20     hint: fix it\n\
             SKIP  renewal          -      needs the tool list\n\
             FAILED: 1 passed, 1 failed, 1 skipped\n"
        );
    }

    #[test]
    fn colour_only_when_asked() {
        let r = sample();
        assert!(!r.render(false).contains('\x1b'));
        let coloured = r.render(true);
        assert!(coloured.contains("\x1b[32mPASS\x1b[0m"), "{coloured}");
        assert!(coloured.contains("\x1b[1;31mFAIL\x1b[0m"), "{coloured}");
        assert!(coloured.contains("\x1b[33mSKIP\x1b[0m"), "{coloured}");
    }

    #[test]
    fn json_has_status_words_and_omits_empty_fields() {
        let v = serde_json::to_value(sample()).unwrap();
        assert_eq!(v["ok"], false);
        assert_eq!(v["checks"][0]["status"], "pass");
        assert_eq!(v["checks"][0]["ms"], 12.4);
        assert!(v["checks"][0].get("hint").is_none());
        assert_eq!(v["checks"][1]["hint"], "fix it");
        assert_eq!(v["checks"][2]["ms"], Value::Null);
    }
}
