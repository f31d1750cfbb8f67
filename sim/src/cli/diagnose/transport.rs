//! The `transport` layer of an `--http` target: what the server's HTTP answers looked like. The status and content
//! type of the first exchange, JSON or SSE, whether a session id came (only a prefix is shown: it may work as a
//! bearer token), and the `MCP-Protocol-Version` header; then one line per exchange.

use std::sync::{Mutex, PoisonError};

use mcpstorm_core::transport::HttpResponseHead;
use serde::Serialize;
use serde_json::json;

use super::report::Check;

/// The most exchanges kept: the handshake's and the first few calls' tell what there is to tell.
const KEPT: usize = 32;
/// The most kinds of exchange listed below the summary.
const LISTED: usize = 8;
/// The most characters of a session id shown (fewer for short ids: at most a third of it).
const SESSION_PREFIX: usize = 6;

/// One response's head, as far as the report shows it.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Exchange {
    method: String,
    status: u16,
    content_type: String,
    /// `json`, `sse`, or `other` (the transport refuses that).
    body: &'static str,
    /// The first characters of `Mcp-Session-Id`, and its length; never the whole id.
    session_prefix: Option<String>,
    session_len: Option<usize>,
    /// `MCP-Protocol-Version` as the server sent it, and as we sent it on the request.
    protocol_version: Option<String>,
    sent_version: Option<String>,
}

impl Exchange {
    fn of(head: &HttpResponseHead<'_>) -> Exchange {
        let session = head.session_id.map(|id| {
            let shown = SESSION_PREFIX.min(id.chars().count() / 3);
            (id.chars().take(shown).collect::<String>(), id.len())
        });
        Exchange {
            method: head.method.to_owned(),
            status: head.status,
            content_type: head.content_type.chars().take(100).collect(),
            body: match head.json() {
                Some(true) => "json",
                Some(false) => "sse",
                None => "other",
            },
            session_len: session.as_ref().map(|(_, len)| *len),
            session_prefix: session.map(|(prefix, _)| prefix),
            protocol_version: head.protocol_version.map(str::to_owned),
            sent_version: head.sent_version.map(str::to_owned),
        }
    }

    /// Whether this answer carries JSON-RPC the way Streamable HTTP allows: a 2xx with JSON or an SSE stream.
    fn usable(&self) -> bool {
        (200..300).contains(&self.status) && self.body != "other"
    }

    /// `initialize: HTTP 200 application/json (JSON), session id "3f2a9c…" (36 characters)`.
    fn line(&self) -> String {
        let content = match (self.content_type.as_str(), self.body) {
            ("", _) => "no content type".to_owned(),
            (ct, "other") => ct.to_owned(),
            (ct, body) => format!("{ct} ({})", body.to_uppercase()),
        };
        let session = match (&self.session_prefix, self.session_len) {
            (Some(prefix), Some(len)) => format!(", session id \"{prefix}…\" ({len} characters)"),
            _ => String::new(),
        };
        format!("{}: HTTP {} {content}{session}", self.method, self.status)
    }
}

/// The exchanges of a diagnosis, in the order their responses came: the first [`KEPT`], and how many in all.
#[derive(Debug, Default)]
pub(super) struct ExchangeLog(Mutex<(Vec<Exchange>, usize)>);

impl ExchangeLog {
    pub(super) fn record(&self, head: &HttpResponseHead<'_>) {
        let mut log = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        log.1 += 1;
        if log.0.len() < KEPT {
            log.0.push(Exchange::of(head));
        }
    }

    fn snapshot(&self) -> (Vec<Exchange>, usize) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// The layer's check, from every exchange seen so far.
pub(super) fn transport(log: &ExchangeLog) -> Check {
    let (seen, total) = log.snapshot();
    let Some(first) = seen.first() else {
        return Check::fail(
            "transport",
            None,
            "no HTTP response to any request",
            "the connection opened but nothing answered over HTTP: is this an HTTP server, and is the URL's scheme \
             (http or https) the one it speaks?",
        );
    };
    let session = match (&first.session_prefix, seen.iter().find(|e| e.session_len.is_some())) {
        (Some(_), _) => String::new(),
        (None, Some(later)) => format!("; session id from {}", later.method),
        (None, None) => "; no session id".to_owned(),
    };
    // The version we sent once the era was settled: the era probe carries the modern version whatever the server
    // speaks, and `initialize` carries none.
    let settled = seen.iter().filter(|e| !matches!(e.method.as_str(), "server/discover" | "initialize"));
    let sent = settled.chain(&seen).find_map(|e| e.sent_version.as_deref());
    let version = match (seen.iter().find_map(|e| e.protocol_version.as_deref()), sent) {
        (Some(v), _) => format!("; MCP-Protocol-Version {v} (from the server)"),
        (None, Some(v)) => format!("; MCP-Protocol-Version {v} (sent)"),
        (None, None) => "; no MCP-Protocol-Version header".to_owned(),
    };
    let summary = format!("{}{session}{version}", first.line());
    let mut details = distinct(&seen);
    if total > seen.len() {
        details.push(format!("… and {} more", total - seen.len()));
    }
    let data = json!({"exchanges": seen, "total": total});
    if seen.iter().any(Exchange::usable) {
        return Check::pass("transport", None, summary).details(details).data(data);
    }
    let last = seen.last().unwrap_or(first);
    Check::fail("transport", None, summary, hint(last)).details(details).data(data)
}

/// One line per kind of exchange, in the order first seen, with how many there were: `server/discover: HTTP 200
/// text/event-stream (SSE) (×6)`. At most [`LISTED`].
fn distinct(seen: &[Exchange]) -> Vec<String> {
    let mut lines: Vec<(String, usize)> = Vec::new();
    for line in seen.iter().map(Exchange::line) {
        match lines.iter_mut().find(|(l, _)| *l == line) {
            Some((_, n)) => *n += 1,
            None => lines.push((line, 1)),
        }
    }
    let listed = lines.iter().take(LISTED).map(|(l, n)| if *n > 1 { format!("{l} (×{n})") } else { l.clone() });
    let mut listed: Vec<String> = listed.collect();
    if lines.len() > LISTED {
        listed.push(format!("… {} more kinds", lines.len() - LISTED));
    }
    listed
}

/// What to look at when no answer was usable, by the last one.
fn hint(last: &Exchange) -> String {
    match last.status {
        401 | 403 => "the server wants credentials: send them with --header NAME=ENV_VAR (e.g. Authorization)".into(),
        404 => "nothing at this path: is the URL the MCP endpoint (often /mcp)?".into(),
        405 => "the server does not take POST here: is the URL the MCP endpoint?".into(),
        406 | 415 => {
            "the server refused our Accept or Content-Type: is it a Streamable HTTP MCP server (not SSE-only)?".into()
        }
        200..=299 => format!("{:?} is neither JSON nor an SSE stream: is this an MCP endpoint?", last.content_type),
        status => format!("HTTP {status}: see the server's log"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::diagnose::report::Status;

    fn head<'a>(method: &'a str, status: u16, ct: &'a str, session: Option<&'a str>) -> HttpResponseHead<'a> {
        HttpResponseHead {
            method,
            status,
            content_type: ct,
            session_id: session,
            protocol_version: None,
            sent_version: None,
        }
    }

    #[test]
    fn shows_the_first_exchange_and_only_a_prefix_of_the_session_id() {
        let log = ExchangeLog::default();
        log.record(&HttpResponseHead {
            sent_version: Some("2026-07-28"),
            ..head("server/discover", 400, "application/json", None)
        });
        let id = "3f2a9c41-0000-4000-8000-123456789abc";
        log.record(&head("initialize", 200, "text/event-stream", Some(id)));
        for _ in 0..3 {
            let tools = head("tools/list", 200, "application/json", None);
            log.record(&HttpResponseHead { sent_version: Some("2025-11-25"), ..tools });
        }
        let check = transport(&log);
        assert_eq!(check.status, Status::Pass);
        assert_eq!(
            check.summary,
            "server/discover: HTTP 400 application/json (JSON); session id from initialize; \
             MCP-Protocol-Version 2025-11-25 (sent)"
        );
        assert_eq!(
            check.details,
            [
                "server/discover: HTTP 400 application/json (JSON)",
                "initialize: HTTP 200 text/event-stream (SSE), session id \"3f2a9c…\" (36 characters)",
                "tools/list: HTTP 200 application/json (JSON) (×3)",
            ]
        );
        let json = serde_json::to_string(&check).unwrap();
        assert!(!json.contains(id) && !check.details.iter().any(|d| d.contains("3f2a9c4")), "{json}");
    }

    #[test]
    fn fails_when_no_answer_is_json_rpc_and_says_why() {
        let log = ExchangeLog::default();
        log.record(&head("initialize", 404, "text/html", None));
        let check = transport(&log);
        assert_eq!(
            (check.status, check.summary.as_str()),
            (Status::Fail, "initialize: HTTP 404 text/html; no session id; no MCP-Protocol-Version header")
        );
        assert!(check.hint.unwrap().contains("/mcp"));
        let short = ExchangeLog::default();
        short.record(&head("initialize", 200, "application/json", Some("abc")));
        assert!(transport(&short).summary.contains("session id \"a…\" (3 characters)"));
        assert_eq!(transport(&ExchangeLog::default()).status, Status::Fail);
    }
}
