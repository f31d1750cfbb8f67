//! The `[[faults]]` timeline: each fault's kind, window, target and the keys its kind takes.

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use strum::{AsRefStr, Display};

use mcpstorm_core::AuthScheme;

use std::time::Duration;

use super::idp::IDP_HOST;
use super::ranges::{self, MAX_MULTIPLIER, Ranges, Upper};
use super::redis::RedisHost;
use super::rules::{Rules, fmt};
use super::servers::{ServerSpec, auth_schemes_schema};
use super::target::{GATEWAY, resolve_target};
use super::units::{Dur, SignedDur};
use mcpstorm_fake::Transport;

/// One fault on the timeline: active from `start` for `duration`. Which of the optional keys apply depends on
/// `kind` (validation rejects the others):
///
/// | kind            | keys                                  | effect                                                |
/// |-----------------|---------------------------------------|-------------------------------------------------------|
/// | `latency_spike` | `extra` (duration), `multiplier`      | each call on the target takes `latency × multiplier + extra` |
/// | `error_burst`   | `rate`                                | the target's calls fail with probability `rate`       |
/// | `hang`          |                                       | the target accepts requests and answers nothing       |
/// | `crash`         | `mode`                                | the target goes down as `mode` says; it restarts afresh at the end |
/// | `partition`     | `from`                                | the target is cut off from every load host, or every gateway node with `[nodes] count` (or from the one host `from` only); repaired at the end |
/// | `schema_drift`  | `tool`, `what`, `param`, `schema`, `to`, `version`, `notify` | at `start`, `what = "add_required"` (`param`, its property `schema` with a `default`), `"replace"` (the new input `schema`), `"rename"` (`to`) or `"version"` (`version`); `notify` sends `list_changed` |
/// | `clock_skew`    | `offset`, `drift`, `jump`, `reset`    | the target's wall clock (`gateway`: every load host's, or every node's with `nodes`): skew set to `offset`, drifting at rate `drift`, stepped by `jump`; reset at the end only with `reset = true` |
/// | `session_expiry`|                                       | at `start`, the target forgets every session                 |
/// | `auth_rotation` | `schemes`                             | at `start`, the target accepts only `schemes` from then on    |
/// | `http_status`   | `status`, `rate`, `retry_after`       | HTTP servers: a share `rate` (default 1) of requests is answered `status` (400 to 599; 429 and 503 with `Retry-After: retry_after` if given) |
/// | `stream_reset`  | `rate`                                | HTTP servers: each SSE response stream is cut before its response with probability `rate` |
/// | `slow_headers`  | `extra`                               | HTTP servers: every response's status line waits `extra` |
/// | `token_expiry`  |                                       | target `idp`: at `start`, every token issued until then expires (the servers answer 401 `invalid_token`; the holders were told a later expiry) |
/// | `key_rotation`  |                                       | target `idp`: at `start`, a new signing key; the old one is withdrawn, and the tokens signed with it refused |
/// | `idp_outage`    | `extra`, `status`, `rate`             | target `idp`: its token endpoint is slow (`extra` on every request), erroring (a share `rate`, default 1, answered `status`), or with neither, down (every connection closed unanswered) |
///
/// `session_expiry` on an HTTP server also forgets its `Mcp-Session-Id` sessions (their next request gets 404).
/// `schema_drift`, `session_expiry`, `auth_rotation`, `token_expiry` and `key_rotation` happen at an instant: they
/// take no `duration`.
///
/// A `crash`'s `mode` ([`CrashMode`]) says what went down: `"refuse"` (a replica's default) the process, on a host
/// that stays up, so its connections end and a new connect is refused at once; `"hang"` the whole host, so a new
/// connect hangs until the caller's connect timeout; `"reset"` a process that resets every connection once its
/// request has arrived, before any answer (the caller cannot tell whether it ran).
///
/// With `[gateway.sync]`, the Redis host its URL names (`redis`) is a target too, of `crash` (`mode = "hang"`, its
/// only mode: Redis's host vanishes; it restarts with its data), `partition` (cut off from the load hosts), `latency_spike` (`extra` only: every reply
/// and message waits that much longer) and `hang` (nothing answered until the end).
///
/// With `[nodes] count`, each gateway node (`gateway-0`, ...) is a target of `crash` (by default `mode = "hang"`;
/// it restarts afresh, as a process would) and `partition` (cut off from every load host, or from the load host `from` only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// `latency_spike`, `error_burst`, `hang`, `crash`, `partition`, `schema_drift`, `clock_skew`, `session_expiry`,
    /// `auth_rotation`, `http_status`, `stream_reset`, `slow_headers`, `token_expiry`, `key_rotation` or
    /// `idp_outage`.
    pub kind: FaultKind,
    /// A server name (every replica) or `name#i` (replica i, from 0); for `clock_skew` also `gateway` (every load
    /// host, or every gateway node with `nodes`); with `[gateway.sync]`, also the Redis host (`redis`); with
    /// `[nodes] count`, also a node (`gateway-0`, ...) for `crash` and `partition`; with `[identity_provider]`,
    /// `idp` for `token_expiry`, `key_rotation` and `idp_outage` (which take no other target).
    pub target: String,
    /// `partition`: cut the target off from this one of its callers only, not from all of them: a load host
    /// (`load-0`, `load-1`, ...), or with `[nodes] count` a node (`gateway-0`, ...; a node's own partition takes
    /// a load host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
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
    /// `crash`: `"refuse"` (the process died, the host is up: connects are refused at once; a replica's default),
    /// `"hang"` (the host is gone: connects hang; a gateway node's default, Redis's only mode) or `"reset"`
    /// (connections are reset once their request arrives, before any answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<CrashMode>,
}

/// What a `crash` takes down, and so what its callers see (see [`Fault`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema, AsRefStr, Display)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum CrashMode {
    /// The process died on a host that stays up: its connections end, and a connect is refused at once (nothing
    /// listens on the port).
    Refuse,
    /// The host is gone: its connections end, and a connect hangs until the caller's connect timeout (nothing
    /// answers the SYN).
    Hang,
    /// The process resets every connection once its request has arrived, before any answer: each request may have
    /// been delivered.
    Reset,
}

impl CrashMode {
    pub const ALL: [CrashMode; 3] = [CrashMode::Refuse, CrashMode::Hang, CrashMode::Reset];
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
    TokenExpiry,
    KeyRotation,
    IdpOutage,
}

impl FaultKind {
    /// Whether the fault happens at one instant (no `duration`).
    pub fn instant(self) -> bool {
        matches!(
            self,
            FaultKind::SchemaDrift
                | FaultKind::SessionExpiry
                | FaultKind::AuthRotation
                | FaultKind::TokenExpiry
                | FaultKind::KeyRotation
        )
    }

    /// Whether the fault acts on the identity provider, and only there.
    pub fn of_idp(self) -> bool {
        matches!(self, FaultKind::TokenExpiry | FaultKind::KeyRotation | FaultKind::IdpOutage)
    }
}

impl Fault {
    /// What this `crash` takes down: its `mode`, else a replica's default (`refuse`: a process dies far more often
    /// than its host) or, for a gateway node or Redis (`replica` false), the host, as before modes were named.
    pub fn crash_mode(&self, replica: bool) -> CrashMode {
        self.mode.unwrap_or(if replica { CrashMode::Refuse } else { CrashMode::Hang })
    }

    /// Fault `k`'s rules: a target that exists (and speaks HTTP for the HTTP faults), a window inside the run, and
    /// exactly the keys its kind takes, each in range. `world` says which hosts there are besides the servers'.
    pub(super) fn problems(&self, k: usize, run: Duration, servers: &[ServerSpec], world: &Hosts<'_>, c: &mut Rules) {
        let fault = self;
        let at = |field: &str| format!("faults[{k}].{field}");
        let redis = world.redis.is_some_and(|r| r.name == fault.target);
        let gateway = fault.kind == FaultKind::ClockSkew && fault.target == GATEWAY;
        // A gateway node (`gateway-N`, with `[nodes] count`): a host that crashes or is cut off.
        let node = host_index(&fault.target, NODE_PREFIX).is_some_and(|i| i < world.nodes);
        let idp = world.idp && fault.target == IDP_HOST;
        if fault.kind.of_idp() != idp {
            let message = match (world.idp, idp) {
                (false, _) => format!("{} needs an `[identity_provider]`, its target", fault.kind),
                (true, false) => format!("{} targets the identity provider: target = {IDP_HOST:?}", fault.kind),
                (true, true) => format!(
                    "{} does not apply to the identity provider: token_expiry, key_rotation or idp_outage",
                    fault.kind
                ),
            };
            c.fail(at(if idp { "kind" } else { "target" }), message);
        } else if idp {
            check_idp_fault(c, k, fault);
        } else if redis {
            check_redis_fault(c, k, fault);
            if fault.mode.is_some_and(|m| m != CrashMode::Hang) {
                c.fail(at("mode"), "a crash of Redis takes mode = \"hang\" only (its host vanishes)");
            }
        } else if node {
            if !matches!(fault.kind, FaultKind::Crash | FaultKind::Partition) {
                c.fail(at("kind"), format!("{} does not apply to a gateway node: crash or partition", fault.kind));
            }
        } else if !gateway && let Err(message) = resolve_target(&fault.target, servers) {
            c.fail(at("target"), message);
        }
        // The link `from` names is one of the target's callers: the load hosts' (`load-N`, see
        // `placement::load_host`) for a node, or when the load hosts run their gateways in-process; the nodes'
        // (`gateway-N`) for anything else when there are nodes.
        if let Some(from) = &fault.from {
            let (prefix, count) =
                if world.nodes == 0 || node { ("load-", world.load_hosts) } else { (NODE_PREFIX, world.nodes) };
            if host_index(from, prefix).is_none_or(|i| i >= count) {
                let what = if prefix == NODE_PREFIX { "gateway node" } else { "load host" };
                let last = count.saturating_sub(1);
                c.fail(at("from"), format!("{from:?} is not a {what} ({prefix}0 to {prefix}{last})"));
            }
        }
        check_window(c, run, k, fault);
        let kind: &str = fault.kind.as_ref();
        let allowed = allowed_keys(fault.kind);
        for (field, present) in present_keys(fault) {
            if present && !allowed.contains(&field) {
                let hint = owner_of(field).map(|o| format!(" (it belongs to {o})")).unwrap_or_default();
                c.fail(at(field), format!("does not apply to kind = {kind:?}{hint}"));
            }
        }
        match fault.kind {
            FaultKind::LatencySpike => {
                if fault.extra.is_none() && fault.multiplier.is_none() {
                    c.fail(at("kind"), "latency_spike needs `extra` (a duration), `multiplier` (>= 1), or both");
                }
                if let Some(extra) = fault.extra
                    && extra.0.is_zero()
                    && fault.multiplier.is_none()
                {
                    c.fail(at("extra"), "must be longer than 0 (or give a multiplier)");
                }
                if let Some(m) = fault.multiplier
                    && !(m.is_finite() && m >= 1.0)
                {
                    c.fail(at("multiplier"), format!("must be a finite number >= 1, got {m}"));
                }
            }
            FaultKind::ErrorBurst => match fault.rate {
                None => c.fail(at("kind"), "error_burst needs `rate`, the probability in [0, 1] a call fails"),
                Some(r) => c.probability(&at("rate"), r),
            },
            FaultKind::SchemaDrift => check_drift(c, servers, k, fault),
            FaultKind::ClockSkew => {
                if fault.offset.is_none() && fault.drift.is_none() && fault.jump.is_none() {
                    c.fail(at("kind"), "clock_skew needs `offset`, `drift` or `jump` (or several)");
                }
                if let Some(d) = fault.drift
                    && !(d.is_finite() && d > -1.0 && d <= 10.0)
                {
                    c.fail(at("drift"), format!("must be a rate in (-1, 10] (0.02 = 2% fast), got {d}"));
                }
                if fault.reset && fault.duration.0.is_zero() {
                    c.fail(at("reset"), "needs a `duration`: the clock is reset when the fault ends");
                }
            }
            FaultKind::AuthRotation => match &fault.schemes {
                None => c.fail(at("kind"), "auth_rotation needs `schemes`, the schemes accepted from then on"),
                Some(list) if list.is_empty() => c.fail(at("schemes"), "must name at least one scheme"),
                Some(_) => {}
            },
            FaultKind::HttpStatus | FaultKind::StreamReset | FaultKind::SlowHeaders => {
                check_http_fault(c, servers, k, fault)
            }
            FaultKind::Hang
            | FaultKind::Crash
            | FaultKind::Partition
            | FaultKind::SessionExpiry
            | FaultKind::TokenExpiry
            | FaultKind::KeyRotation
            | FaultKind::IdpOutage => {}
        }
    }

    /// Fault `k`'s durations and counts with their bounds.
    pub(super) fn ranges(&self, k: usize, out: &mut Ranges) {
        let at = |key: &str| format!("faults[{k}].{key}");
        out.duration(at("start"), self.start.0, Upper::RunByOwnRule);
        out.duration(at("duration"), self.duration.0, Upper::RunByOwnRule);
        for (key, d) in [("extra", self.extra), ("retry_after", self.retry_after)] {
            if let Some(d) = d {
                out.duration(at(key), d.0, Upper::Week);
            }
        }
        for (key, signed) in [("offset", self.offset), ("jump", self.jump)] {
            if let Some(d) = signed {
                out.duration(at(key), d.magnitude, Upper::Week);
            }
        }
        if let Some(m) = self.multiplier {
            out.count(at("multiplier"), m, MAX_MULTIPLIER);
        }
        // Checked to be 400 to 599 by the fault's own rule; listed so that every integer key has a range.
        if let Some(status) = self.status {
            out.count(at("status"), f64::from(status), 599.0);
        }
    }
}

/// The hosts a fault may name besides the servers': the load hosts (`load-N`, for `from`), the gateway nodes
/// (`gateway-N`) and the Redis host.
#[derive(Debug, Clone, Copy)]
pub(super) struct Hosts<'a> {
    pub load_hosts: usize,
    pub nodes: usize,
    pub redis: Option<&'a RedisHost>,
    /// The scenario has an `[identity_provider]`.
    pub idp: bool,
}

/// The gateway nodes' host names start so (see `placement::node_host`).
pub(super) const NODE_PREFIX: &str = "gateway-";

/// `N` of a host named `{prefix}N` (digits only, no leading sign or space).
pub(super) fn host_index(name: &str, prefix: &str) -> Option<usize> {
    let digits = name.strip_prefix(prefix).filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))?;
    let i = digits.parse::<usize>().ok()?;
    // `load-01` names no host: only the spelling the world uses does.
    (format!("{prefix}{i}") == name).then_some(i)
}

/// A fault on the Redis host: only the kinds that make sense for Redis, and a latency spike as a fixed extra.
fn check_redis_fault(c: &mut Rules, k: usize, fault: &Fault) {
    let at = |field: &str| format!("faults[{k}].{field}");
    match fault.kind {
        FaultKind::Crash | FaultKind::Partition | FaultKind::Hang => {}
        FaultKind::LatencySpike => {
            if fault.multiplier.is_some() {
                c.fail(at("multiplier"), "Redis's latency spike is a fixed `extra` on every reply: give no multiplier");
            }
        }
        kind => c.fail(
            at("kind"),
            format!("{kind} does not apply to Redis ({:?}): crash, partition, latency_spike or hang", fault.target),
        ),
    }
}

/// An `idp_outage`'s status is an error status; its rate a probability.
fn check_idp_fault(c: &mut Rules, k: usize, fault: &Fault) {
    let at = |field: &str| format!("faults[{k}].{field}");
    if let Some(code) = fault.status.filter(|code| !(400..=599).contains(code)) {
        c.fail(at("status"), format!("must be an error status, 400 to 599, got {code}"));
    }
    match (fault.rate, fault.status) {
        (Some(_), None) => c.fail(at("rate"), "is the share answered `status`: give `status` too"),
        (Some(r), Some(_)) => c.probability(&at("rate"), r),
        _ => {}
    }
}

/// The HTTP faults act on the Streamable HTTP layer, so their target must speak it.
fn check_http_fault(c: &mut Rules, servers: &[ServerSpec], k: usize, fault: &Fault) {
    let at = |field: &str| format!("faults[{k}].{field}");
    if let Ok((server, _)) = resolve_target(&fault.target, servers)
        && servers[server].transport != Transport::Http
    {
        let name = &servers[server].name;
        c.fail(at("target"), format!("{} needs an HTTP server: give {name:?} transport = \"http\"", fault.kind));
    }
    match fault.kind {
        FaultKind::HttpStatus => {
            match fault.status {
                None => c.fail(at("kind"), "http_status needs `status`, the HTTP status answered (400 to 599)"),
                Some(code) if !(400..=599).contains(&code) => {
                    c.fail(at("status"), format!("must be an error status, 400 to 599, got {code}"))
                }
                Some(_) => {}
            }
            if let Some(r) = fault.rate {
                c.probability(&at("rate"), r);
            }
        }
        FaultKind::StreamReset => match fault.rate {
            None => c.fail(at("kind"), "stream_reset needs `rate`, the probability in [0, 1] a stream is cut"),
            Some(r) => c.probability(&at("rate"), r),
        },
        _ => match fault.extra {
            Some(d) if !d.0.is_zero() => {}
            _ => c.fail(at("kind"), "slow_headers needs `extra`, how long each status line waits (longer than 0)"),
        },
    }
}

/// The fault's window: a positive duration that ends inside the run, or none at all for an instant fault.
fn check_window(c: &mut Rules, run: Duration, k: usize, fault: &Fault) {
    let at = |field: &str| format!("faults[{k}].{field}");
    if fault.kind.instant() {
        if !fault.duration.0.is_zero() {
            c.fail(at("duration"), format!("{} happens at an instant: give no duration", fault.kind));
        }
    } else if fault.kind != FaultKind::ClockSkew {
        c.positive(&at("duration"), fault.duration.0);
    }
    match fault.start.0.checked_add(fault.duration.0) {
        Some(end) if end <= run && (!fault.kind.instant() || end < run) => {}
        // A zero-length run is reported once, at `duration`.
        _ if run.is_zero() => {}
        _ if fault.kind.instant() => {
            c.fail(at("start"), format!("the fault happens at or after the end of the run ({})", fmt(run)))
        }
        _ => c.fail(
            at("duration"),
            format!(
                "the fault ends at {} (start + duration), after the run ends ({})",
                fault.start.0.checked_add(fault.duration.0).map_or("never".into(), fmt),
                fmt(run)
            ),
        ),
    }
}

fn check_drift(c: &mut Rules, servers: &[ServerSpec], k: usize, fault: &Fault) {
    let at = |field: &str| format!("faults[{k}].{field}");
    let Some(what) = fault.what else {
        c.fail(at("kind"), "schema_drift needs `what`: \"add_required\", \"replace\", \"rename\" or \"version\"");
        return;
    };
    let require = |c: &mut Rules, field: &str, present: bool, meaning: &str| {
        if !present {
            c.fail(at("what"), format!("what = {:?} needs `{field}` ({meaning})", what.as_ref()));
        }
    };
    let needs_tool = what != DriftKind::Version;
    require(c, "tool", fault.tool.is_some() || !needs_tool, "the tool that changes");
    match what {
        DriftKind::AddRequired => {
            require(c, "param", fault.param.as_deref().is_some_and(|p| !p.is_empty()), "the new parameter's name");
            require(c, "schema", fault.schema.is_some(), "its property schema, with a `default`");
        }
        DriftKind::Replace => {
            require(c, "schema", fault.schema.is_some(), "the tool's new input schema");
            if let Some(schema) = &fault.schema
                && schema.get("type").and_then(Value::as_str) != Some("object")
            {
                c.fail(at("schema"), format!("must be a JSON Schema with \"type\": \"object\", got {schema}"));
            }
        }
        DriftKind::Rename => require(c, "to", fault.to.as_deref().is_some_and(|t| !t.is_empty()), "the new name"),
        DriftKind::Version => require(c, "version", fault.version.is_some(), "the new serverInfo.version"),
    }
    for (field, present, applies) in [
        ("param", fault.param.is_some(), what == DriftKind::AddRequired),
        ("schema", fault.schema.is_some(), matches!(what, DriftKind::AddRequired | DriftKind::Replace)),
        ("to", fault.to.is_some(), what == DriftKind::Rename),
        ("version", fault.version.is_some(), what == DriftKind::Version),
        ("tool", fault.tool.is_some(), needs_tool),
    ] {
        if present && !applies {
            c.fail(at(field), format!("does not apply to what = {:?}", what.as_ref()));
        }
    }
    // The tool must exist on the target server as configured (drifts in one run do not chain renames).
    if let (Some(tool), Ok((server, _))) = (&fault.tool, resolve_target(&fault.target, servers))
        && !servers[server].tools.iter().any(|t| &t.name == tool)
    {
        c.fail(at("tool"), format!("server {:?} has no tool {tool:?}", servers[server].name));
    }
}

/// Each optional fault key and whether it is given.
fn present_keys(f: &Fault) -> [(&'static str, bool); 19] {
    [
        ("mode", f.mode.is_some()),
        ("from", f.from.is_some()),
        ("status", f.status.is_some()),
        ("retry_after", f.retry_after.is_some()),
        ("extra", f.extra.is_some()),
        ("multiplier", f.multiplier.is_some()),
        ("rate", f.rate.is_some()),
        ("tool", f.tool.is_some()),
        ("what", f.what.is_some()),
        ("param", f.param.is_some()),
        ("schema", f.schema.is_some()),
        ("to", f.to.is_some()),
        ("version", f.version.is_some()),
        ("notify", f.notify),
        ("offset", f.offset.is_some()),
        ("drift", f.drift.is_some()),
        ("jump", f.jump.is_some()),
        ("reset", f.reset),
        ("schemes", f.schemes.is_some()),
    ]
}

const DRIFT_KEYS: [&str; 7] = ["tool", "what", "param", "schema", "to", "version", "notify"];
const SKEW_KEYS: [&str; 4] = ["offset", "drift", "jump", "reset"];

fn allowed_keys(kind: FaultKind) -> &'static [&'static str] {
    match kind {
        FaultKind::LatencySpike => &["extra", "multiplier"],
        FaultKind::ErrorBurst => &["rate"],
        FaultKind::SchemaDrift => &DRIFT_KEYS,
        FaultKind::ClockSkew => &SKEW_KEYS,
        FaultKind::AuthRotation => &["schemes"],
        FaultKind::HttpStatus => &["status", "rate", "retry_after"],
        FaultKind::StreamReset => &["rate"],
        FaultKind::SlowHeaders => &["extra"],
        FaultKind::Partition => &["from"],
        FaultKind::Crash => &["mode"],
        FaultKind::IdpOutage => &["extra", "status", "rate"],
        FaultKind::Hang | FaultKind::SessionExpiry | FaultKind::TokenExpiry | FaultKind::KeyRotation => &[],
    }
}

/// The kind a key belongs to, for the error message.
fn owner_of(field: &str) -> Option<&'static str> {
    match field {
        "extra" => Some("latency_spike, slow_headers, idp_outage"),
        "multiplier" => Some("latency_spike"),
        "rate" => Some("error_burst, http_status, stream_reset, idp_outage"),
        "status" => Some("http_status, idp_outage"),
        "retry_after" => Some("http_status"),
        "schemes" => Some("auth_rotation"),
        "from" => Some("partition"),
        "mode" => Some("crash"),
        f if DRIFT_KEYS.contains(&f) => Some("schema_drift"),
        f if SKEW_KEYS.contains(&f) => Some("clock_skew"),
        _ => None,
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
        let kinds =
            kinds.into_iter().chain([HttpStatus, StreamReset, SlowHeaders, TokenExpiry, KeyRotation, IdpOutage]);
        for kind in kinds {
            assert_eq!(serde_json::to_value(kind).ok(), Some(Value::from(kind.as_ref())));
            assert_eq!(kind.to_string(), kind.as_ref());
        }
        for what in [DriftKind::AddRequired, DriftKind::Replace, DriftKind::Rename, DriftKind::Version] {
            assert_eq!(serde_json::to_value(what).ok(), Some(Value::from(what.as_ref())));
        }
        assert_eq!(FaultKind::SessionExpiry.as_ref(), "session_expiry");
        for mode in CrashMode::ALL {
            assert_eq!(serde_json::to_value(mode).ok(), Some(Value::from(mode.as_ref())));
        }
    }
}
