//! MCP logging: the syslog severities of `notifications/message`, and what a call that asked for log messages gets
//! them through.
//!
//! A 2025-11-25 client sets a session's level with `logging/setLevel`; a 2026-07-28 client puts the level in each
//! request's `_meta` ([`META_LOG_LEVEL`]), and a server of that era must not send a
//! request's log messages without it.

use serde_json::Value;
use tokio::sync::mpsc;

/// Request `_meta` key (2026-07-28): the level a request asks its log messages at.
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// The method of a log message notification.
pub const MESSAGE: &str = "notifications/message";
/// The 2025-11-25 request that sets a session's level.
pub const SET_LEVEL: &str = "logging/setLevel";

/// A log message's severity (RFC 5424), least severe first: a level lets through itself and everything after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl LogLevel {
    pub const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }

    /// The level a wire string names (`None`: not one of the eight).
    pub fn parse(s: &str) -> Option<LogLevel> {
        LogLevel::ALL.into_iter().find(|l| l.as_str() == s)
    }

    /// The level of a JSON value (a `level` member or a `_meta` entry).
    pub fn of(value: Option<&Value>) -> Option<LogLevel> {
        value.and_then(Value::as_str).and_then(LogLevel::parse)
    }

    /// Whether a message at `level` passes this threshold. A message whose level is unknown passes: a later
    /// revision's severity is not silently lost.
    pub fn admits(self, level: Option<LogLevel>) -> bool {
        level.is_none_or(|l| l >= self)
    }
}

/// A call's request for log messages: the level the server is asked for, and where the call's
/// `notifications/message` params go (lossy when full, as progress is).
#[derive(Debug, Clone)]
pub struct LogSink {
    pub level: LogLevel,
    pub tx: mpsc::Sender<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn levels_order_from_debug_to_emergency_and_round_trip() {
        for pair in LogLevel::ALL.windows(2) {
            assert!(pair[0] < pair[1]);
        }
        for level in LogLevel::ALL {
            assert_eq!(LogLevel::parse(level.as_str()), Some(level));
        }
        assert_eq!(LogLevel::parse("verbose"), None);
        assert_eq!(LogLevel::of(Some(&json!("warning"))), Some(LogLevel::Warning));
        assert_eq!(LogLevel::of(Some(&json!(3))), None);
    }

    #[test]
    fn a_threshold_admits_its_level_and_the_more_severe() {
        assert!(LogLevel::Info.admits(Some(LogLevel::Info)));
        assert!(LogLevel::Info.admits(Some(LogLevel::Error)));
        assert!(!LogLevel::Info.admits(Some(LogLevel::Debug)));
        assert!(LogLevel::Emergency.admits(None), "an unknown level passes");
    }
}
