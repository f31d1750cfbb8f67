//! The `[[servers]]` tables: the fake MCP servers, their replicas and declared health tools, and how each becomes a
//! fake server's configuration.

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use mcpstorm_core::AuthScheme;

use super::ranges::{self, MAX_CONCURRENCY, MAX_DURATION_MS, MAX_HOSTS, Ranges, Upper};
use super::rules::{Rules, fmt};
use super::shared::{GATEWAY, one, yes};
use super::units::Dur;
use super::{Declared, HealthCheckSpec};
use crate::seed::Seed;
use mcpstorm_fake::{ConfigError, DEFAULT_MAX_IN_FLIGHT};
use mcpstorm_fake::{FakeServerConfig, LegacyDiscover, ProtocolEra, ToolConfig, Transport, ValidationError, both_eras};

/// A fake MCP server, possibly replicated (its replicas' hosts: see `network.hosts`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    /// Unique; faults target it as `name` (every replica) or `name#i` (replica i).
    pub name: String,
    /// Identical replicas, one host each.
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = ranges::MAX_HOSTS))]
    pub replicas: usize,
    /// `serverInfo.version`.
    #[serde(default = "default_version")]
    pub version: String,
    /// Server-side worker pool per replica; absent = unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = ranges::MAX_CONCURRENCY))]
    pub workers: Option<usize>,
    /// Requests one connection may have in flight at a replica; beyond it they are refused (-32000 "server busy"),
    /// so a flooding client cannot grow the replica's task table without bound. At least 1; default 4096.
    #[schemars(range(min = 1, max = ranges::MAX_CONCURRENCY))]
    #[serde(
        default = "mcpstorm_fake::default_max_in_flight",
        skip_serializing_if = "mcpstorm_fake::is_default_max_in_flight"
    )]
    pub max_in_flight_per_connection: usize,
    /// `tools/list` page size; absent = one page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = ranges::MAX_CONCURRENCY))]
    pub page_size: Option<usize>,
    /// The tools (`[[servers.tools]]`), listed in this order.
    pub tools: Vec<ToolConfig>,
    /// Protocol eras served: `"legacy"` (the `initialize` handshake), `"modern"` (2026-07-28: `server/discover` and
    /// the per-request `_meta` envelope). Both by default; the first request of a connection picks one.
    #[serde(default = "both_eras")]
    pub eras: Vec<ProtocolEra>,
    /// `ttlMs` of modern cacheable results (`server/discover`, `tools/list`).
    #[serde(default)]
    #[schemars(range(min = 0, max = ranges::MAX_DURATION_MS))]
    pub cache_ttl_ms: u64,
    /// A legacy-only server's answer to `server/discover`: `"method_not_found"` (-32601), `"invalid_params"`
    /// (-32602, as Python `mcp` 1.x) or `"silent"` (none: the client's probe times out).
    #[serde(default)]
    pub legacy_discover: LegacyDiscover,
    /// Grant sessions (the mcpstorm extension) of this lifetime; absent = no sessions. They expire by the replica's
    /// own (skewable) wall clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_ttl: Option<Dur>,
    /// Answer `mcpstorm/session/renew` with a fresh grant (false: -32601, the client must re-handshake).
    #[serde(default = "yes")]
    pub renew: bool,
    /// Auth schemes accepted (`"bearer"`, `"api-key"`, `"mcp-jwt"`); absent = no auth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "auth_schemes_schema")]
    pub auth_schemes: Option<Vec<AuthScheme>>,
    /// How arguments the current schema rejects are refused: `"tool_error"` (`isError` "Input validation error: ...",
    /// the Python SDK) or `"invalid_params"` (-32602, the TypeScript SDK).
    #[serde(default)]
    pub validation_error: ValidationError,
    /// Every HTTP request needs a bearer token from the scenario's `[identity_provider]` that it still honours
    /// (401 `invalid_token` otherwise): the gateways get theirs with client credentials. Needs `transport = "http"`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub require_token: bool,
    /// The wire the replicas speak: `"ndjson"` (newline-delimited JSON-RPC, the default) or `"http"` (MCP
    /// Streamable HTTP; refused until the gateway's HTTP client is wired into the simulator).
    #[serde(default, skip_serializing_if = "is_ndjson")]
    pub transport: Transport,
    /// Free-form labels for the router. Every server also carries `server:<name>`, which a `[[load.mix]]` entry
    /// naming the server requires.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The capability matrix row: attribute (ending in `_support`) → supported values, e.g.
    /// `{ language_support = ["python", "rust"] }`. Sent in the handshake's `_meta` too.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub capabilities: BTreeMap<String, Vec<String>>,
    /// Declared P95 latency (ms): the router's `latency_ratio` divides by it. Sent in `_meta`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = ranges::MAX_DURATION_MS))]
    pub latency_p95_ms: Option<f64>,
    /// Declared concurrency limit: the router's `capacity` is the share of it free. Sent in `_meta`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = ranges::MAX_CONCURRENCY))]
    pub max_concurrent_requests: Option<u32>,
    /// Active health checks call this tool instead of `ping`; three failures in a row take the replica out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check: Option<HealthCheckSpec>,
    /// The server registers with the gateways at this time (absent: from the start). Its hosts run throughout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join_at: Option<Dur>,
    /// The server deregisters at this time: no new call is routed to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leave_at: Option<Dur>,
}

fn is_ndjson(t: &Transport) -> bool {
    *t == Transport::Ndjson
}

pub(super) fn auth_schemes_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "minItems": 1,
        "items": { "enum": ["bearer", "api-key", "mcp-jwt"] }
    })
}

fn default_version() -> String {
    "1.0.0".to_owned()
}

impl ServerSpec {
    /// The fake server configuration of one replica. `seed` is the run's seed: each replica's RNG seed is forked from
    /// it by the server's name and the replica index, so replicas draw differently and the same run draws the same.
    pub fn fake_config(&self, replica: usize, seed: u64) -> FakeServerConfig {
        // Both sides are spelled out with no `..` rest pattern on purpose: a field added to either struct fails to
        // compile here until this one conversion says where it goes. (serde's `flatten` would share the fields, but
        // it cannot be combined with `deny_unknown_fields` and loses the file:line:column of a wrong value.)
        let ServerSpec {
            name,
            replicas: _,
            version,
            workers,
            max_in_flight_per_connection,
            page_size,
            tools,
            eras,
            cache_ttl_ms,
            legacy_discover,
            session_ttl,
            renew,
            auth_schemes,
            validation_error,
            transport,
            // The world gives the replica the identity provider's token authority.
            require_token: _,
            // Read by the router (tags, capabilities and hints through `router_meta`) and the registry.
            tags: _,
            capabilities: _,
            latency_p95_ms: _,
            max_concurrent_requests: _,
            health_check: _,
            join_at: _,
            leave_at: _,
        } = self;
        // The HTTP transport as real servers ship it: SSE answers, sessions, GET streams, the default bounds.
        let FakeServerConfig {
            http_response,
            http_get,
            http_sessions,
            http_session_ttl_ms,
            http_max_sessions,
            http_max_body,
            ..
        } = FakeServerConfig::named(name);
        FakeServerConfig {
            name: name.clone(),
            version: version.clone(),
            workers: *workers,
            max_in_flight_per_connection: *max_in_flight_per_connection,
            page_size: *page_size,
            seed: Seed::new(seed).fork("replica").fork(name).fork(&replica.to_string()).value(),
            tools: tools.clone(),
            eras: eras.clone(),
            cache_ttl_ms: *cache_ttl_ms,
            legacy_discover: *legacy_discover,
            session_ttl_ms: session_ttl.map(|d| u64::try_from(d.0.as_millis()).unwrap_or(u64::MAX)),
            renew: *renew,
            auth_schemes: auth_schemes.clone(),
            validation_error: *validation_error,
            meta: self.router_meta(),
            transport: *transport,
            http_response,
            http_get,
            http_sessions,
            http_session_ttl_ms,
            http_max_sessions,
            http_max_body,
        }
    }

    /// What the replica declares in its handshake's `_meta` for routers: the capability matrix row and the hints.
    fn router_meta(&self) -> Option<serde_json::Map<String, Value>> {
        let mut meta = serde_json::Map::new();
        for (attribute, values) in &self.capabilities {
            meta.insert(attribute.clone(), Value::from(values.clone()));
        }
        if let Some(ms) = self.latency_p95_ms {
            meta.insert("latency_p95_ms".to_owned(), Value::from(ms));
        }
        if let Some(n) = self.max_concurrent_requests {
            meta.insert("max_concurrent_requests".to_owned(), Value::from(n));
        }
        (!meta.is_empty()).then_some(meta)
    }

    /// The rules of the `[[servers]]` array: at least one server, unique names, and each server's own rules
    /// (`run` is the scenario's duration, which `join_at` and `leave_at` fall inside).
    pub(super) fn problems_of(servers: &[ServerSpec], run: Duration, rules: &mut Rules) {
        if servers.is_empty() {
            rules.fail("servers", "at least one server is needed");
        }
        let mut first_index: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, server) in servers.iter().enumerate() {
            let at = |field: &str| format!("servers[{i}].{field}");
            if server.name.is_empty() {
                rules.fail(at("name"), "must not be empty");
            } else if server.name == GATEWAY {
                rules.fail(
                    at("name"),
                    format!("{GATEWAY:?} is reserved: a clock_skew fault targets every load host by it"),
                );
            } else if server.name.contains('#') {
                rules.fail(at("name"), "must not contain `#` (faults use `name#i` for replica i)");
            } else if let Some(first) = first_index.get(server.name.as_str()) {
                rules.fail(at("name"), format!("duplicate server name {:?} (also servers[{first}])", server.name));
            } else {
                first_index.insert(&server.name, i);
            }
            rules.at_least_one(&at("replicas"), server.replicas);
            // The fake server's own checks, one tool at a time so that every bad tool is reported.
            // The fake's checks stop at the first problem, so each part is checked on its own: the server's fields
            // without tools, then every tool on a server with nothing else to complain about.
            let mut server_only = server.fake_config(0, 0);
            server_only.tools.clear();
            if server_only.name.is_empty() {
                server_only.name = "_".to_owned();
            }
            if let Err(ConfigError::Invalid { field, message }) = server_only.validate() {
                rules.fail(at(&field), message);
            }
            let tool_base = FakeServerConfig {
                workers: None,
                max_in_flight_per_connection: DEFAULT_MAX_IN_FLIGHT,
                page_size: None,
                ..server_only
            };
            let mut tool_index: BTreeMap<&str, usize> = BTreeMap::new();
            for (t, tool) in server.tools.iter().enumerate() {
                let tool_at = |field: &str| format!("servers[{i}].tools[{t}].{field}");
                if let Some(first) = tool_index.get(tool.name.as_str()) {
                    rules.fail(tool_at("name"), format!("duplicate tool name {:?} (also tools[{first}])", tool.name));
                } else {
                    tool_index.insert(&tool.name, t);
                }
                let one = FakeServerConfig { tools: vec![tool.clone()], ..tool_base.clone() };
                if let Err(ConfigError::Invalid { field, message }) = one.validate() {
                    // The fake names fields `tools[0] "query": latency.p99_ms` (or `tools[0].name`).
                    let prefix = format!("tools[0] {:?}: ", tool.name);
                    let field = field
                        .strip_prefix(&prefix)
                        .or_else(|| field.strip_prefix("tools[0]."))
                        .map(str::to_owned)
                        .unwrap_or(field);
                    // The fake stops at the tool's first problem; the latency is checked last, so check it here too.
                    if !field.starts_with("latency.")
                        && let Err((latency_field, latency_message)) = tool.latency.validate()
                    {
                        rules.fail(tool_at(&field), message);
                        rules.fail(tool_at(&format!("latency.{latency_field}")), latency_message);
                    } else {
                        rules.fail(tool_at(&field), message);
                    }
                }
            }
            server.routing_problems(i, run, rules);
        }
    }

    /// What the server declares for routing, and when it joins and leaves.
    fn routing_problems(&self, i: usize, run: Duration, rules: &mut Rules) {
        let at = |field: &str| format!("servers[{i}].{field}");
        self.declared().problems(&format!("servers[{i}]"), rules);
        if let Some(check) = &self.health_check
            && !self.tools.iter().any(|t| t.name == check.tool)
        {
            rules.fail(at("health_check.tool"), format!("server {:?} has no tool {:?}", self.name, check.tool));
        }
        let end = run;
        if let Some(join) = self.join_at
            && !end.is_zero()
            && join.0 >= end
        {
            rules.fail(at("join_at"), format!("must be before the end of the run ({})", fmt(end)));
        }
        if let Some(leave) = self.leave_at {
            if !end.is_zero() && leave.0 > end {
                rules.fail(at("leave_at"), format!("must not be after the end of the run ({})", fmt(end)));
            }
            if leave.0 <= self.join_at.unwrap_or_default().0 {
                rules.fail(at("leave_at"), "must be after join_at (and after the start)");
            }
        }
    }

    /// The server's durations and counts with their bounds.
    pub(super) fn ranges(&self, i: usize, out: &mut Ranges) {
        let at = |key: &str| format!("servers[{i}].{key}");
        if let Some(ttl) = self.session_ttl {
            out.duration(at("session_ttl"), ttl.0, Upper::Week);
        }
        if let Some(join) = self.join_at {
            out.duration(at("join_at"), join.0, Upper::RunByOwnRule);
        }
        if let Some(leave) = self.leave_at {
            out.duration(at("leave_at"), leave.0, Upper::RunByOwnRule);
        }
        let concurrency = MAX_CONCURRENCY as f64;
        out.count(at("replicas"), self.replicas as f64, MAX_HOSTS as f64);
        for (key, n) in [("workers", self.workers), ("page_size", self.page_size)] {
            if let Some(n) = n {
                out.count(at(key), n as f64, concurrency);
            }
        }
        if let Some(n) = self.max_concurrent_requests {
            out.count(at("max_concurrent_requests"), f64::from(n), concurrency);
        }
        out.count(at("max_in_flight_per_connection"), self.max_in_flight_per_connection as f64, concurrency);
        if let Some(ms) = self.latency_p95_ms {
            out.count(at("latency_p95_ms"), ms, MAX_DURATION_MS as f64);
        }
        out.count(at("cache_ttl_ms"), self.cache_ttl_ms as f64, MAX_DURATION_MS as f64);
    }

    /// What the server declares to the router.
    pub fn declared(&self) -> Declared<'_> {
        Declared {
            tags: &self.tags,
            capabilities: &self.capabilities,
            latency_p95_ms: self.latency_p95_ms,
            max_concurrent_requests: self.max_concurrent_requests,
            health_check: self.health_check.as_ref(),
        }
    }
}
