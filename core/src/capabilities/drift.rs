//! Schema drift: noticing that a server's tools changed under a cached capability record.
//!
//! Servers change schemas mid-run, sometimes without `notifications/tools/list_changed` and sometimes without
//! bumping their version (the worst case: a required field added, nothing else). The client treats
//! these as signals that its record may be stale:
//!
//! | signal                                                        | reason            | the call                        |
//! |---------------------------------------------------------------|-------------------|---------------------------------|
//! | `notifications/tools/list_changed`                            | `list_changed`    | (between calls)                 |
//! | a modern tools/list `ttlMs` ran out                           | `ttl`             | (between calls)                 |
//! | `tools/call` answered -32602 invalid params                   | `invalid_params`  | re-checked, resent once if valid |
//! | an `isError` result whose text reads as argument validation   | `tool_error_text` | re-checked, resent once if valid |
//! | a result stamped with a `serverInfo.version` we have not seen | `server_version`  | kept (it succeeded)             |
//!
//! A rejection of either kind happens before the tool runs (argument validation is the servers' first step), so a
//! call that passes the *fresh* schema is resent once; one that fails it comes back as a local
//! `InvalidArguments` naming the pointer, and nothing stale is sent again. When the re-fetched list hashes the same
//! as before, the rejection was about the arguments, not the schema, and is returned unchanged.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Deserialize;
use serde_json::Value;
use strum::VariantArray;

use super::Capabilities;
use crate::error::{CallError, LocalError};
use crate::jsonrpc::ErrorCode;
use crate::mcp::{CallToolResult, Implementation};
use crate::observe::RefetchReason;
use crate::session::META_SERVER_INFO;

/// Phrases with which real servers report argument validation failures in an `isError` result: the Python SDK
/// ("Input validation error: ..."), the TypeScript SDK ("Invalid arguments for tool ...", "Tool x not found"), and
/// JSON Schema validators' own wording. Lower case.
const VALIDATION_PHRASES: &[&str] = &[
    "input validation error",
    "invalid arguments",
    "invalid params",
    "validation error",
    "is a required property",
    "required property",
    "missing required",
    "unknown tool",
    "tool not found",
];

/// A drift signal: why the tool list is fetched again, and the newer `serverInfo` a result was stamped with (for
/// [`RefetchReason::ServerVersion`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Signal {
    pub reason: RefetchReason,
    pub server: Option<Implementation>,
}

impl Signal {
    fn of(reason: RefetchReason) -> Signal {
        Signal { reason, server: None }
    }
}

/// The drift signal in a `tools/call` outcome, if any. `known` is the record the call was checked against.
pub(crate) fn signal(outcome: &Result<CallToolResult, CallError>, known: &Capabilities) -> Option<Signal> {
    match outcome {
        Err(CallError::Protocol(e)) if e.code() == ErrorCode::INVALID_PARAMS => {
            Some(Signal::of(RefetchReason::InvalidParams))
        }
        Ok(r) if r.is_error && reads_as_validation(&r.joined_text()) => Some(Signal::of(RefetchReason::ToolErrorText)),
        Ok(r) => stamp_signal(r, known).map(|s| Signal { reason: RefetchReason::ServerVersion, server: Some(s) }),
        Err(_) => None,
    }
}

fn reads_as_validation(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    VALIDATION_PHRASES.iter().any(|p| text.contains(p))
}

/// [`stamped_server`] against `known`'s version, remembering the first `_meta` text that carried no signal: the
/// decision is a function of that text and the version, so equal bytes decide alike without a parse.
fn stamp_signal(result: &CallToolResult, known: &Capabilities) -> Option<Implementation> {
    let meta = result.meta.as_ref()?;
    let memo = known.quiet_stamp();
    if memo.get().is_some_and(|quiet| **quiet == *meta.get()) {
        return None;
    }
    let server = stamped_server(result, &known.server().version);
    if server.is_none() {
        let _ = memo.set(meta.get().into());
    }
    server
}

/// The `serverInfo` a modern result carries in its `_meta`, when it names a version other than `known`.
fn stamped_server(result: &CallToolResult, known: &str) -> Option<Implementation> {
    let meta = result.meta.as_ref()?;
    // Nearly every stamp names the version we know: decided from the one string, read straight from `_meta`'s text
    // without building the rest of it.
    if serde_json::from_str::<StampView>(meta.get()).is_ok_and(|s| s.version() == Some(known)) {
        return None;
    }
    let meta = meta.to_value().ok()?;
    let info = meta.get(META_SERVER_INFO)?;
    if info.get("version").and_then(Value::as_str) == Some(known) {
        return None;
    }
    Implementation::deserialize(info).ok().filter(|s| s.version != known)
}

/// The one string of `_meta` the common case needs. Anything it cannot read borrowed (escapes, repeated members,
/// other shapes) goes to the full read, which decides every case; this view only ever shortcuts to "no signal", and
/// only when the full read would too (a stamp whose `version` is the known string).
#[derive(Deserialize)]
struct StampView<'a> {
    // `META_SERVER_INFO` (serde's `rename` takes no constants; the tests build stamps with it).
    #[serde(rename = "io.modelcontextprotocol/serverInfo", borrow)]
    server_info: Option<VersionView<'a>>,
}

#[derive(Deserialize)]
struct VersionView<'a> {
    #[serde(borrow)]
    version: Option<&'a str>,
}

impl StampView<'_> {
    fn version(&self) -> Option<&str> {
        self.server_info.as_ref().and_then(|i| i.version)
    }
}

/// The `ttlMs` a modern cacheable result carries (`None` when absent or zero: zero promises no freshness, and
/// re-listing before every call would double the traffic, so such lists are re-fetched on signals only).
pub fn ttl_ms(result_extra: &serde_json::Map<String, Value>) -> Option<u64> {
    result_extra.get("ttlMs").and_then(Value::as_u64).filter(|t| *t > 0)
}

/// Drift counters of one client.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DriftStats {
    /// Re-fetches of the tool list, by [`RefetchReason`] in [`RefetchReason::VARIANTS`] order.
    pub refetches: [u64; RefetchReason::VARIANTS.len()],
    /// Rejected calls that passed the fresh schema and were sent again.
    pub resent: u64,
    /// Rejected calls the fresh schema stopped locally (invalid arguments, or the tool is gone).
    pub stopped: u64,
}

impl DriftStats {
    pub fn refetched(&self, reason: RefetchReason) -> u64 {
        self.refetches[reason as usize]
    }

    pub fn total_refetches(&self) -> u64 {
        self.refetches.iter().sum()
    }
}

#[derive(Debug, Default)]
pub(crate) struct DriftCounters {
    refetches: [AtomicU64; RefetchReason::VARIANTS.len()],
    resent: AtomicU64,
    stopped: AtomicU64,
}

impl DriftCounters {
    pub fn refetched(&self, reason: RefetchReason) {
        self.refetches[reason as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts the second attempt of a rejected call by how it ended.
    pub fn after_recheck(&self, outcome: &Result<CallToolResult, CallError>) {
        let stopped =
            matches!(outcome, Err(CallError::Local(LocalError::InvalidArguments(_) | LocalError::UnknownTool(_))));
        if stopped { &self.stopped } else { &self.resent }.fetch_add(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> DriftStats {
        DriftStats {
            refetches: std::array::from_fn(|i| self.refetches[i].load(Ordering::Relaxed)),
            resent: self.resent.load(Ordering::Relaxed),
            stopped: self.stopped.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::capabilities::SchemaCache;
    use crate::jsonrpc::ErrorObject;

    fn caps(version: &str) -> Capabilities {
        SchemaCache::default().record(Implementation::new("s", version), None, Vec::new())
    }

    fn result(v: Value) -> Result<CallToolResult, CallError> {
        Ok(serde_json::from_value(v).unwrap())
    }

    #[test]
    fn classifies_outcomes() {
        let known = caps("1.0");
        let invalid = Err(CallError::Protocol(ErrorObject::new(ErrorCode::INVALID_PARAMS, "Invalid arguments")));
        assert_eq!(signal(&invalid, &known).map(|s| s.reason), Some(RefetchReason::InvalidParams));
        let text = result(json!({"isError": true, "content": [{"type": "text",
            "text": "Input validation error: 'region' is a required property"}]}));
        assert_eq!(signal(&text, &known).map(|s| s.reason), Some(RefetchReason::ToolErrorText));
        let business = result(json!({"isError": true, "content": [{"type": "text", "text": "disk full"}]}));
        assert_eq!(signal(&business, &known), None);
        let other = Err(CallError::Protocol(ErrorObject::new(ErrorCode::INTERNAL_ERROR, "Invalid arguments")));
        assert_eq!(signal(&other, &known), None, "only -32602 counts among protocol errors");
    }

    #[test]
    fn a_new_stamped_version_is_a_signal_and_the_same_is_not() {
        let known = caps("1.0");
        let stamped =
            |v: &str| result(json!({"content": [], "_meta": {META_SERVER_INFO: {"name": "s", "version": v}}}));
        let Signal { reason, server } = signal(&stamped("1.1"), &known).unwrap();
        assert_eq!((reason, server.unwrap().version.as_str()), (RefetchReason::ServerVersion, "1.1"));
        assert_eq!(signal(&stamped("1.0"), &known), None);
        assert!(!RefetchReason::ServerVersion.rejected_call());
        // A stamp that is not an implementation (no name, a numeric version) is no signal, whatever its version.
        for info in [json!({"version": "1.0"}), json!({"version": "1.1"}), json!({"name": "s", "version": 1.1})] {
            let odd = result(json!({"_meta": {META_SERVER_INFO: info}}));
            assert_eq!(signal(&odd, &known), None, "{info}");
        }
        let extended = result(json!({"_meta": {META_SERVER_INFO: {"name": "s", "version": "2", "title": "S"}}}));
        let server = signal(&extended, &known).and_then(|s| s.server).unwrap();
        assert_eq!(server.extra.get("title"), Some(&json!("S")), "the whole stamp is read once it differs");
    }

    #[test]
    fn a_remembered_quiet_stamp_decides_only_for_its_own_bytes() {
        let known = caps("1.0");
        let stamped =
            |v: &str| result(json!({"content": [], "_meta": {META_SERVER_INFO: {"name": "s", "version": v}}}));
        assert_eq!(signal(&stamped("1.0"), &known), None);
        assert!(known.clone().quiet_stamp().get().is_some(), "the quiet stamp is remembered, for the clones too");
        assert_eq!(signal(&stamped("1.0"), &known), None);
        let Signal { server, .. } = signal(&stamped("1.1"), &known).unwrap();
        assert_eq!(server.unwrap().version, "1.1", "other bytes are parsed");
        assert_eq!(signal(&stamped("1.1"), &caps("1.1")), None, "a record of its own remembers its own stamp");
    }

    #[test]
    fn counters_index_by_reason() {
        for (i, r) in RefetchReason::VARIANTS.iter().enumerate() {
            assert_eq!(*r as usize, i, "{r:?}");
        }
        let c = DriftCounters::default();
        c.refetched(RefetchReason::ServerVersion);
        c.after_recheck(&Err(CallError::Local(LocalError::UnknownTool("x".into()))));
        c.after_recheck(&Ok(CallToolResult::text("ok", false)));
        let s = c.snapshot();
        assert_eq!((s.refetched(RefetchReason::ServerVersion), s.total_refetches(), s.resent, s.stopped), (1, 1, 1, 1));
    }

    #[test]
    fn zero_ttl_is_no_ttl() {
        let m = |v: Value| v.as_object().cloned().unwrap();
        assert_eq!(ttl_ms(&m(json!({"ttlMs": 0}))), None);
        assert_eq!(ttl_ms(&m(json!({"ttlMs": 1500}))), Some(1500));
        assert_eq!(ttl_ms(&m(json!({}))), None);
    }
}
