//! An agent's log level and where its requests' log messages go.
//!
//! A 2025-11-25 session's level is what its last `logging/setLevel` set (the front keeps it per session, on this
//! process: another process behind the same load balancer serves the session at its own record of it). A
//! 2026-07-28 request brings its own in `_meta`. Without a level, an agent is sent no log message: a 2026-07-28
//! server must not send any then, and the front treats a 2025-11-25 session that never asked the same way.

use std::sync::atomic::{AtomicU8, Ordering};

use serde_json::Value;
use tokio::sync::mpsc;

use crate::jsonrpc::Message;
use crate::mcp::logging::{self, LogLevel, META_LOG_LEVEL};

/// A 2025-11-25 session's level (unset until `logging/setLevel`).
#[derive(Debug, Default)]
pub(crate) struct LevelCell(AtomicU8);

impl LevelCell {
    pub fn get(&self) -> Option<LogLevel> {
        let n = self.0.load(Ordering::Relaxed) as usize;
        n.checked_sub(1).and_then(|i| LogLevel::ALL.get(i).copied())
    }

    pub fn set(&self, level: LogLevel) {
        let i = LogLevel::ALL.iter().position(|l| *l == level).unwrap_or(0);
        self.0.store(i as u8 + 1, Ordering::Relaxed);
    }
}

/// The level a 2026-07-28 request asks its log messages at (`_meta`).
pub(crate) fn requested_level(params: Option<&Value>) -> Option<LogLevel> {
    LogLevel::of(params?.get("_meta")?.get(META_LOG_LEVEL))
}

/// Where one request's log messages go: its agent's level, and the request's stream (an SSE answer, stdio) when
/// it has one.
#[derive(Debug, Clone, Default)]
pub struct Logs {
    level: Option<LogLevel>,
    out: Option<mpsc::Sender<Message>>,
}

impl Logs {
    pub(crate) fn new(level: Option<LogLevel>, out: Option<mpsc::Sender<Message>>) -> Logs {
        Logs { level, out }
    }

    /// The agent's level, when it asked for log messages and they can reach it.
    pub fn level(&self) -> Option<LogLevel> {
        self.level.filter(|_| self.out.is_some())
    }

    /// Sends one `notifications/message` with `params` to the agent (waiting while its stream is full), if its
    /// level admits the message's. False when the message goes nowhere or the agent has gone.
    pub async fn send(&self, params: Value) -> bool {
        let (Some(level), Some(out)) = (self.level, &self.out) else {
            return false;
        };
        if !level.admits(LogLevel::of(params.get("level"))) {
            return false;
        }
        out.send(Message::notification(logging::MESSAGE, Some(params))).await.is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_session_level_is_unset_until_set() {
        let cell = LevelCell::default();
        assert_eq!(cell.get(), None);
        for level in LogLevel::ALL {
            cell.set(level);
            assert_eq!(cell.get(), Some(level));
        }
        assert_eq!(requested_level(Some(&json!({ "_meta": { META_LOG_LEVEL: "notice" } }))), Some(LogLevel::Notice));
        assert_eq!(requested_level(Some(&json!({ "_meta": { META_LOG_LEVEL: "loud" } }))), None);
    }

    #[tokio::test]
    async fn an_agent_gets_the_messages_its_level_admits() {
        let (tx, mut rx) = mpsc::channel(4);
        let logs = Logs::new(Some(LogLevel::Warning), Some(tx));
        assert!(!logs.send(json!({ "level": "info", "data": "quiet" })).await);
        assert!(logs.send(json!({ "level": "error", "data": "loud" })).await);
        let Some(Message::Notification(n)) = rx.recv().await else { panic!("a notification") };
        assert_eq!(
            (n.method.as_str(), n.params),
            (logging::MESSAGE, Some(json!({ "level": "error", "data": "loud" })))
        );
        assert_eq!(Logs::new(None, None).level(), None);
        let (tx, _rx) = mpsc::channel(1);
        assert_eq!(Logs::new(None, Some(tx)).level(), None, "no level, no messages");
    }
}
