//! The `[[faults]]` timeline: each fault's kind, window, target and the keys its kind takes.

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use strum::{AsRefStr, Display};

use mcpstorm_core::AuthScheme;

use super::ranges;
use super::servers::auth_schemes_schema;
use super::units::{Dur, SignedDur};

/// One fault on the timeline: active from `start` for `duration`. Which of the optional keys apply depends on
/// `kind` (validation rejects the others):
///
/// | kind            | keys                                  | effect                                                |
/// |-----------------|---------------------------------------|-------------------------------------------------------|
/// | `latency_spike` | `extra` (duration), `multiplier`      | each call on the target takes `latency × multiplier + extra` |
/// | `error_burst`   | `rate`                                | the target's calls fail with probability `rate`       |
/// | `hang`          |                                       | the target accepts requests and answers nothing       |
/// | `crash`         |                                       | the target's host crashes; it restarts at the end     |
/// | `partition`     |                                       | the target is cut off from every load host; repaired at the end |
/// | `schema_drift`  | `tool`, `what`, `param`, `schema`, `to`, `version`, `notify` | at `start`, `what = "add_required"` (`param`, its property `schema` with a `default`), `"replace"` (the new input `schema`), `"rename"` (`to`) or `"version"` (`version`); `notify` sends `list_changed` |
/// | `clock_skew`    | `offset`, `drift`, `jump`, `reset`    | the target's wall clock (`gateway`: every load host's): skew set to `offset`, drifting at rate `drift`, stepped by `jump`; reset at the end only with `reset = true` |
/// | `session_expiry`|                                       | at `start`, the target forgets every session                 |
/// | `auth_rotation` | `schemes`                             | at `start`, the target accepts only `schemes` from then on    |
/// | `http_status`   | `status`, `rate`, `retry_after`       | HTTP servers: a share `rate` (default 1) of requests is answered `status` (400 to 599; 429 and 503 with `Retry-After: retry_after` if given) |
/// | `stream_reset`  | `rate`                                | HTTP servers: each SSE response stream is cut before its response with probability `rate` |
/// | `slow_headers`  | `extra`                               | HTTP servers: every response's status line waits `extra` |
///
/// `session_expiry` on an HTTP server also forgets its `Mcp-Session-Id` sessions (their next request gets 404).
/// `schema_drift`, `session_expiry` and `auth_rotation` happen at an instant: they take no `duration`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// `latency_spike`, `error_burst`, `hang`, `crash`, `partition`, `schema_drift`, `clock_skew`, `session_expiry`,
    /// `auth_rotation`, `http_status`, `stream_reset` or `slow_headers`.
    pub kind: FaultKind,
    /// A server name (every replica) or `name#i` (replica i, from 0); for `clock_skew` also `gateway` (every load
    /// host).
    pub target: String,
    /// When the fault begins, from the start of the run.
    pub start: Dur,
    /// How long it lasts; `start + duration` must fit in the run. Instant faults take none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub duration: Dur,
    /// `latency_spike`: added to every call's latency; `slow_headers`: how long every HTTP response's status line
    /// waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Dur>,
    /// `latency_spike`: every call's latency is multiplied by it (>= 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = ranges::MAX_MULTIPLIER))]
    pub multiplier: Option<f64>,
    /// `error_burst`: probability in [0, 1] that a call fails; `http_status`: the share of requests answered with
    /// `status` (default 1); `stream_reset`: the probability a response stream is cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// `http_status`: the HTTP status answered, 400 to 599.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 400, max = 599))]
    pub status: Option<u16>,
    /// `http_status`: sent as `Retry-After` (whole seconds, rounded up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<Dur>,
    /// `schema_drift`: the tool that changes (not needed for `what = "version"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// `schema_drift`: `"add_required"`, `"replace"`, `"rename"` or `"version"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub what: Option<DriftKind>,
    /// `schema_drift` `add_required`: the new required parameter's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub param: Option<String>,
    /// `schema_drift`: the new parameter's property schema (`add_required`; give it a `default`), or the tool's whole
    /// new input schema (`replace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "optional_object_schema")]
    pub schema: Option<Value>,
    /// `schema_drift` `rename`: the tool's new name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// `schema_drift` `version`: the new `serverInfo.version`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// `schema_drift`: send `notifications/tools/list_changed` on every open connection after the change.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub notify: bool,
    /// `clock_skew`: set the clock this far from true time (`"-3m"`: behind, `"+3m"`: ahead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<SignedDur>,
    /// `clock_skew`: linear drift from the start on, seconds gained per second (0.02 = 2% fast; negative: slow).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<f64>,
    /// `clock_skew`: a step applied once at the start (`"+30s"`, `"-1m"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jump: Option<SignedDur>,
    /// `clock_skew`: at the end, put the clock back to true time. Real clocks do not jump back, so the default keeps
    /// the skew (and any drift) after the fault window.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reset: bool,
    /// `auth_rotation`: the schemes the target accepts from then on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "optional_schemes_schema")]
    pub schemes: Option<Vec<AuthScheme>>,
}

fn is_zero(d: &Dur) -> bool {
    d.0.is_zero()
}

fn optional_object_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "object" })
}

fn optional_schemes_schema(g: &mut SchemaGenerator) -> Schema {
    auth_schemes_schema(g)
}

/// What a `schema_drift` changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema, AsRefStr, Display)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum DriftKind {
    /// A new required parameter (`param`, property `schema`).
    AddRequired,
    /// A new input schema (`schema`).
    Replace,
    /// A new name (`to`); agents do not chase renames, so calls by the old name keep failing.
    Rename,
    /// A new `serverInfo.version` (`version`).
    Version,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema, AsRefStr, Display)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum FaultKind {
    LatencySpike,
    ErrorBurst,
    Hang,
    Crash,
    Partition,
    SchemaDrift,
    ClockSkew,
    SessionExpiry,
    AuthRotation,
    HttpStatus,
    StreamReset,
    SlowHeaders,
}

impl FaultKind {
    /// Whether the fault happens at one instant (no `duration`).
    pub fn instant(self) -> bool {
        matches!(self, FaultKind::SchemaDrift | FaultKind::SessionExpiry | FaultKind::AuthRotation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names printed on the timeline and in messages are the ones the file uses.
    #[test]
    fn names_are_serdes() {
        use FaultKind::*;
        let kinds =
            [LatencySpike, ErrorBurst, Hang, Crash, Partition, SchemaDrift, ClockSkew, SessionExpiry, AuthRotation];
        let kinds = kinds.into_iter().chain([HttpStatus, StreamReset, SlowHeaders]);
        for kind in kinds {
            assert_eq!(serde_json::to_value(kind).ok(), Some(Value::from(kind.as_ref())));
            assert_eq!(kind.to_string(), kind.as_ref());
        }
        for what in [DriftKind::AddRequired, DriftKind::Replace, DriftKind::Rename, DriftKind::Version] {
            assert_eq!(serde_json::to_value(what).ok(), Some(Value::from(what.as_ref())));
        }
        assert_eq!(FaultKind::SessionExpiry.as_ref(), "session_expiry");
    }
}
