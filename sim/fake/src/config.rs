//! Configuration of one fake server: what becomes a `[[servers]]` entry of a scenario file.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use mcpstorm_core::AuthScheme;

use crate::args;
use crate::latency::LatencyDist;

/// A scripted fake MCP server.
///
/// | field       | default         | meaning                                                                |
/// |-------------|-----------------|------------------------------------------------------------------------|
/// | `name`      | required        | `serverInfo.name`                                                      |
/// | `version`   | `"0.0.0"`       | `serverInfo.version`                                                   |
/// | `workers`   | unlimited       | worker pool shared by every connection; calls beyond it queue FIFO     |
/// | `max_in_flight_per_connection` | 4096 | requests one connection may have running; beyond it -32000 "server busy" |
/// | `page_size` | one page        | `tools/list` page size; `nextCursor` is sent while more remain         |
/// | `seed`      | 0               | seed of the RNG for latency and error draws                            |
/// | `tools`     | none            | the tools, listed in this order                                        |
/// | `eras`      | both            | protocol eras served: `"legacy"` (`initialize`), `"modern"` (2026-07-28) |
/// | `cache_ttl_ms` | 0            | `ttlMs` of modern cacheable results (`server/discover`, `tools/list`)  |
/// | `legacy_discover` | `"method_not_found"` | a legacy-only server's answer to `server/discover`        |
/// | `session_ttl_ms` | none (no sessions) | grant a session (mcpstorm extension) of this TTL on `initialize`/`server/discover` |
/// | `renew`     | true            | answer `mcpstorm/session/renew` with a fresh grant (false: -32601)     |
/// | `auth_schemes` | none (no auth) | schemes accepted (`"bearer"`, `"api-key"`, `"mcp-jwt"`); others get -32003 |
/// | `validation_error` | `"tool_error"` | how bad arguments are refused: `"tool_error"` (`isError`, the Python SDK) or `"invalid_params"` (-32602, the TypeScript SDK) |
/// | `meta`      | none            | extra `_meta` entries of the handshake result: router hints and capability matrix rows |
/// | `transport` | `"ndjson"`      | the wire: `"ndjson"` (newline-delimited JSON-RPC) or `"http"` (MCP Streamable HTTP, both eras) |
/// | `http_response` | `"sse"`     | HTTP: answer a request with an SSE stream (`"sse"`: progress, then the response) or one JSON body (`"json"`) |
/// | `http_get`  | `"stream"`      | HTTP 2025-11-25: a GET opens the session's server-message stream (`"stream"`) or gets 405 (`"method_not_allowed"`) |
/// | `http_sessions` | true        | HTTP 2025-11-25: issue an `Mcp-Session-Id` on `initialize` and require it afterwards |
/// | `http_session_ttl_ms` | none (never) | HTTP: an `Mcp-Session-Id` expires this long after it was issued (by the server's clock) |
/// | `http_max_sessions` | 1024    | HTTP: most live sessions; an `initialize` beyond it gets 503             |
/// | `http_max_body` | 4 MiB       | HTTP: largest request body; larger ones get 413                          |
///
/// Sessions live per server (shared by its connections) and expire by the server's own wall clock (see
/// `sessions.rs`), so skewing that clock changes when they expire, as in life. With sessions on, every request but
/// `initialize`, `server/discover` and `ping` needs a live session id, and with auth schemes a credential of an
/// accepted scheme, or it is refused before it runs.
///
/// A server serving both eras decides per connection, by the first request, as the Python SDK does: one carrying
/// the modern `_meta` envelope (other than `initialize`) makes the connection modern, anything else legacy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FakeServerConfig {
    pub name: String,
    #[serde(default = "default_version")]
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<usize>,
    /// Bounds the task table a flooding client can grow; at least 1.
    #[serde(default = "default_max_in_flight", skip_serializing_if = "is_default_max_in_flight")]
    pub max_in_flight_per_connection: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<usize>,
    #[serde(default)]
    pub seed: u64,
    #[serde(default)]
    pub tools: Vec<ToolConfig>,
    #[serde(default = "both_eras")]
    pub eras: Vec<ProtocolEra>,
    #[serde(default)]
    pub cache_ttl_ms: u64,
    #[serde(default)]
    pub legacy_discover: LegacyDiscover,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_ttl_ms: Option<u64>,
    #[serde(default = "yes", skip_serializing_if = "Clone::clone")]
    pub renew: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_schemes: Option<Vec<AuthScheme>>,
    #[serde(default)]
    pub validation_error: ValidationError,
    /// Extra `_meta` entries of the handshake result (`initialize`, `server/discover`): router hints
    /// (`latency_p95_ms`, `max_concurrent_requests`) and capability matrix rows (`language_support`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<serde_json::Map<String, Value>>,
    #[serde(default, skip_serializing_if = "is_default")]
    pub transport: Transport,
    #[serde(default, skip_serializing_if = "is_default")]
    pub http_response: HttpResponse,
    #[serde(default, skip_serializing_if = "is_default")]
    pub http_get: HttpGet,
    #[serde(default = "yes", skip_serializing_if = "Clone::clone")]
    pub http_sessions: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_session_ttl_ms: Option<u64>,
    #[serde(default = "default_max_sessions", skip_serializing_if = "is_default_max_sessions")]
    pub http_max_sessions: usize,
    #[serde(default = "default_max_body", skip_serializing_if = "is_default_max_body")]
    pub http_max_body: usize,
}

fn yes() -> bool {
    true
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// The default `http_max_sessions`: far more than the clients of one test or scenario open, small enough that a
/// client opening sessions in a loop costs little.
pub const DEFAULT_HTTP_MAX_SESSIONS: usize = 1024;

/// The default `http_max_body`: the largest JSON-RPC request a real client sends is far smaller.
pub const DEFAULT_HTTP_MAX_BODY: usize = 4 << 20;

fn default_max_sessions() -> usize {
    DEFAULT_HTTP_MAX_SESSIONS
}

fn is_default_max_sessions(n: &usize) -> bool {
    *n == DEFAULT_HTTP_MAX_SESSIONS
}

fn default_max_body() -> usize {
    DEFAULT_HTTP_MAX_BODY
}

fn is_default_max_body(n: &usize) -> bool {
    *n == DEFAULT_HTTP_MAX_BODY
}

/// The wire a fake server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// Newline-delimited JSON-RPC over a byte stream (stdio's framing, on TCP).
    #[default]
    Ndjson,
    /// MCP Streamable HTTP (HTTP/1.1): 2025-11-25 with sessions, GET streams and resumption; 2026-07-28 POST only.
    Http,
}

/// How a Streamable HTTP server answers a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HttpResponse {
    /// An SSE stream: the request's notifications (progress), then its response (as the Python SDK's server).
    #[default]
    Sse,
    /// One `application/json` body with the response (notifications on the way are dropped).
    Json,
}

/// What a 2025-11-25 GET on the MCP endpoint gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HttpGet {
    /// The session's stream of server messages (`notifications/tools/list_changed`), or a resumed request stream
    /// when it carries `Last-Event-ID`.
    #[default]
    Stream,
    /// 405 Method Not Allowed: the server offers no GET stream (and no resumption).
    MethodNotAllowed,
}

/// The default `max_in_flight_per_connection`: far above what a well-behaved client keeps in flight on one connection
/// (the core's default is 256), small enough that a flood costs a few MB of tasks, not the machine.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 4096;

/// [`DEFAULT_MAX_IN_FLIGHT`], as a serde default for configurations that embed a server's settings.
pub fn default_max_in_flight() -> usize {
    DEFAULT_MAX_IN_FLIGHT
}

/// Whether `n` is [`DEFAULT_MAX_IN_FLIGHT`] (serde's `skip_serializing_if`).
pub fn is_default_max_in_flight(n: &usize) -> bool {
    *n == DEFAULT_MAX_IN_FLIGHT
}

/// How a server refuses arguments its current input schema rejects, as the two SDK families do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ValidationError {
    /// A tool result with `isError: true` whose text starts `Input validation error:` (the Python SDK).
    #[default]
    ToolError,
    /// A JSON-RPC error -32602 naming the argument (the TypeScript SDK).
    InvalidParams,
}

fn default_version() -> String {
    "0.0.0".to_owned()
}

/// Both eras, legacy first: the default of every fake server.
pub fn both_eras() -> Vec<ProtocolEra> {
    vec![ProtocolEra::Legacy, ProtocolEra::Modern]
}

/// A protocol era a fake server serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProtocolEra {
    /// The `initialize` handshake (2025-11-25 and earlier).
    Legacy,
    /// No handshake: `server/discover`, and the `_meta` envelope on every request (2026-07-28).
    Modern,
}

/// How a server without the modern era answers `server/discover`, as real legacy servers do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LegacyDiscover {
    /// -32601 method not found (`@modelcontextprotocol/server-everything`, the TypeScript SDK).
    #[default]
    MethodNotFound,
    /// -32602 invalid params (the Python `mcp` 1.x SDK, whose request union rejects the unknown method).
    InvalidParams,
    /// No answer at all: the client must give up on its probe by a timeout.
    Silent,
}

impl FakeServerConfig {
    pub fn serves(&self, era: ProtocolEra) -> bool {
        self.eras.contains(&era)
    }
}

/// One tool (`[[servers.tools]]`): what `tools/list` shows of it, and how its calls behave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolConfig {
    /// The tool's name, unique within the server.
    pub name: String,
    /// Passed through to `tools/list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Passed through to `tools/list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The `inputSchema` listed (absent: `{"type": "object"}`); the server checks each call's arguments against its
    /// top level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
    /// MCP tool annotations, passed through to `tools/list` (`readOnlyHint`, `idempotentHint`, `destructiveHint`,
    /// `openWorldHint`, `title`). A tool without `idempotentHint` or `readOnlyHint` is not idempotent: the gateway
    /// does not retry it after a request that may have been sent, and `possible_duplicates` counts its retries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// How long a call takes: `{ dist = "...", ... }`, one of the shapes of [`LatencyDist`] (default: fixed 0 ms).
    #[serde(default)]
    pub latency: LatencyDist,
    /// Probability in [0, 1] that a call fails (as `error_kind` says).
    #[serde(default)]
    pub error_rate: f64,
    /// How an injected failure (`error_rate`, an `error_burst` fault) reaches the caller.
    #[serde(default)]
    pub error_kind: ErrorKind,
    /// Progress period while a call runs, ms, when the call has a progress token (absent: none; a `steps` latency
    /// reports after every step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = MAX_PROGRESS_MS))]
    pub progress_ms: Option<u64>,
    /// The result's text (absent: `"ok {tool} {latency_ms}ms"`); placeholders `{tool}`, `{latency_ms}` and
    /// `{arg:NAME}` (the call's argument NAME).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    /// Also return `structuredContent: {"result": text}`, and list an `outputSchema`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub structured_content: bool,
    /// The `outputSchema` listed when `structured_content` is on (absent: an object with a string `result`); it may
    /// contradict the result, to script a server that breaks its own contract.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
}

/// How an injected failure reaches the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// A tool result with `isError: true`: the tool ran and failed (MCP's tool execution error).
    #[default]
    IsError,
    /// A JSON-RPC error `-32603`: the server itself failed.
    Jsonrpc,
}

/// The smallest `http_max_body`: room for any request of the built-in tools.
pub const MIN_HTTP_MAX_BODY: usize = 1024;

pub const DEFAULT_REPLY: &str = "ok {tool} {latency_ms}ms";

/// The longest progress period: the longest latency a call can have.
pub const MAX_PROGRESS_MS: u64 = crate::latency::MAX_LATENCY.as_secs() * 1000;

impl ToolConfig {
    /// A tool with every default: instant, never failing, `{"type": "object"}` input.
    pub fn new(name: impl Into<String>) -> Self {
        ToolConfig {
            name: name.into(),
            title: None,
            description: None,
            input_schema: None,
            annotations: None,
            latency: LatencyDist::default(),
            error_rate: 0.0,
            error_kind: ErrorKind::default(),
            progress_ms: None,
            reply: None,
            structured_content: false,
            output_schema: None,
        }
    }

    /// The listed (and checked) input schema.
    pub fn schema(&self) -> Value {
        self.input_schema.clone().unwrap_or_else(|| json!({"type": "object"}))
    }
}

/// A configuration that cannot be used. The message names the field: `tools[1] "query": latency.p99_ms ...`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// The TOML did not parse or did not fit the schema; toml's message carries line and column.
    #[error("{0}")]
    Parse(String),
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
}

impl FakeServerConfig {
    /// Parses and validates one server's TOML.
    pub fn from_toml_str(text: &str) -> Result<Self, ConfigError> {
        let config: FakeServerConfig = toml::from_str(text).map_err(|e| ConfigError::Parse(e.to_string()))?;
        config.validate()?;
        Ok(config)
    }

    /// Checks everything serde cannot: ranges, uniqueness, templates.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |field: String, message: String| Err(ConfigError::Invalid { field, message });
        if self.name.is_empty() {
            return invalid("name".into(), "must not be empty".into());
        }
        if self.workers == Some(0) {
            return invalid("workers".into(), "must be at least 1 (omit it for an unlimited pool)".into());
        }
        if self.max_in_flight_per_connection == 0 {
            return invalid(
                "max_in_flight_per_connection".into(),
                "must be at least 1 (every request needs a slot)".into(),
            );
        }
        if self.page_size == Some(0) {
            return invalid("page_size".into(), "must be at least 1 (omit it for a single page)".into());
        }
        if self.eras.is_empty() {
            return invalid("eras".into(), "must name at least one of \"legacy\", \"modern\"".into());
        }
        if self.eras.iter().collect::<BTreeSet<_>>().len() != self.eras.len() {
            return invalid("eras".into(), format!("lists an era twice: {:?}", self.eras));
        }
        if self.session_ttl_ms == Some(0) {
            return invalid("session_ttl".into(), "must be longer than 0 (omit it for no sessions)".into());
        }
        if self.http_session_ttl_ms == Some(0) {
            return invalid("http_session_ttl_ms".into(), "must be longer than 0 (omit it for no expiry)".into());
        }
        if self.http_max_sessions == 0 {
            return invalid("http_max_sessions".into(), "must be at least 1".into());
        }
        if self.http_max_body < MIN_HTTP_MAX_BODY {
            let message = format!("must be at least {MIN_HTTP_MAX_BODY} bytes, got {}", self.http_max_body);
            return invalid("http_max_body".into(), message);
        }
        if self.auth_schemes.as_ref().is_some_and(Vec::is_empty) {
            return invalid("auth_schemes".into(), "must name at least one scheme (omit it for no auth)".into());
        }
        let mut seen = BTreeSet::new();
        for (i, tool) in self.tools.iter().enumerate() {
            let at = |field: &str| format!("tools[{i}] {:?}: {field}", tool.name);
            if tool.name.is_empty() {
                return invalid(format!("tools[{i}].name"), "must not be empty".into());
            }
            if !seen.insert(tool.name.as_str()) {
                return invalid(at("name"), "duplicate tool name".into());
            }
            if let Some(schema) = &tool.input_schema
                && schema.get("type").and_then(Value::as_str) != Some("object")
            {
                return invalid(
                    at("input_schema"),
                    format!("must be a JSON Schema with \"type\": \"object\", got {schema}"),
                );
            }
            if !(tool.error_rate.is_finite() && (0.0..=1.0).contains(&tool.error_rate)) {
                return invalid(at("error_rate"), format!("must be between 0 and 1, got {}", tool.error_rate));
            }
            if tool.output_schema.is_some() && !tool.structured_content {
                return invalid(at("output_schema"), "needs structured_content = true".into());
            }
            if let Some(schema) = &tool.output_schema
                && !schema.is_object()
            {
                return invalid(at("output_schema"), format!("must be a JSON Schema object, got {schema}"));
            }
            if tool.progress_ms == Some(0) {
                return invalid(at("progress_ms"), "must be at least 1".into());
            }
            if let Some(ms) = tool.progress_ms
                && ms > MAX_PROGRESS_MS
            {
                return invalid(at("progress_ms"), format!("must be at most {MAX_PROGRESS_MS} (one day), got {ms}"));
            }
            if let Some(reply) = &tool.reply
                && let Err(e) = args::check_template(reply)
            {
                return invalid(at("reply"), e);
            }
            if let Err((field, message)) = tool.latency.validate() {
                return invalid(at(&format!("latency.{field}")), message);
            }
        }
        Ok(())
    }

    /// A server named `name` with no tools and every other key at its default, as a file with only `name` gives.
    pub fn named(name: impl Into<String>) -> Self {
        FakeServerConfig {
            name: name.into(),
            version: default_version(),
            workers: None,
            max_in_flight_per_connection: DEFAULT_MAX_IN_FLIGHT,
            page_size: None,
            seed: 0,
            tools: Vec::new(),
            eras: both_eras(),
            cache_ttl_ms: 0,
            legacy_discover: LegacyDiscover::default(),
            session_ttl_ms: None,
            renew: true,
            auth_schemes: None,
            validation_error: ValidationError::default(),
            meta: None,
            transport: Transport::default(),
            http_response: HttpResponse::default(),
            http_get: HttpGet::default(),
            http_sessions: true,
            http_session_ttl_ms: None,
            http_max_sessions: DEFAULT_HTTP_MAX_SESSIONS,
            http_max_body: DEFAULT_HTTP_MAX_BODY,
        }
    }

    /// The built-in server, a stand-in for the Python test peer (`tests/peers/py_server.py`): `sleep_ms`, `echo` and
    /// `slow_progress`. `scenarios/fake/builtin.toml` is the same configuration as a file.
    pub fn builtin() -> Self {
        let int = json!({"type": "integer", "minimum": 0});
        FakeServerConfig {
            version: "1.0.0".into(),
            tools: vec![
                ToolConfig {
                    description: Some("Sleep for `ms` milliseconds, then return.".into()),
                    input_schema: Some(json!({"type": "object", "properties": {"ms": int}, "required": ["ms"]})),
                    latency: LatencyDist::Arg { name: "ms".into(), default_ms: 0.0 },
                    reply: Some("slept {arg:ms}ms".into()),
                    ..ToolConfig::new("sleep_ms")
                },
                ToolConfig {
                    description: Some("Return `message` unchanged.".into()),
                    input_schema: Some(json!({"type": "object", "properties": {"message": {"type": "string"}},
                        "required": ["message"]})),
                    reply: Some("{arg:message}".into()),
                    ..ToolConfig::new("echo")
                },
                ToolConfig {
                    description: Some(
                        "Run `steps` steps of `step_ms` ms each, reporting progress after each step.".into(),
                    ),
                    input_schema: Some(json!({"type": "object", "properties": {"steps": int, "step_ms": int},
                        "required": ["steps", "step_ms"]})),
                    latency: LatencyDist::Steps {
                        steps_arg: "steps".into(),
                        step_ms_arg: "step_ms".into(),
                        default_steps: 1,
                        default_step_ms: 100.0,
                    },
                    reply: Some("done {arg:steps} steps".into()),
                    ..ToolConfig::new("slow_progress")
                },
            ],
            ..FakeServerConfig::named("mcpstorm-fake")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUILTIN_TOML: &str = include_str!("../../../scenarios/fake/builtin.toml");

    fn invalid_field(text: &str) -> String {
        match FakeServerConfig::from_toml_str(text) {
            Err(ConfigError::Invalid { field, .. }) => field,
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    #[test]
    fn named_is_what_a_file_with_only_a_name_gives() {
        assert_eq!(FakeServerConfig::from_toml_str("name = \"x\"\n"), Ok(FakeServerConfig::named("x")));
    }

    #[test]
    fn builtin_toml_file_equals_builtin() {
        let parsed = FakeServerConfig::from_toml_str(BUILTIN_TOML).expect("builtin.toml is valid");
        assert_eq!(parsed, FakeServerConfig::builtin());
    }

    #[test]
    fn full_tool_table_parses() {
        let text = r#"
            name = "fake-db"
            version = "1.0.0"
            workers = 8
            page_size = 50
            seed = 1
            [[tools]]
            name = "query"
            description = "run SQL"
            input_schema = { type = "object", properties = { sql = { type = "string" } } }
            annotations = { readOnlyHint = true }
            latency = { dist = "lognormal", p50_ms = 40, p99_ms = 400 }
            error_rate = 0.01
            error_kind = "jsonrpc"
            progress_ms = 100
        "#;
        let c = FakeServerConfig::from_toml_str(text).expect("valid");
        assert_eq!((c.workers, c.page_size, c.seed), (Some(8), Some(50), 1));
        let t = &c.tools[0];
        assert_eq!(t.latency, LatencyDist::Lognormal { p50_ms: 40.0, p99_ms: 400.0 });
        assert_eq!((t.error_kind, t.progress_ms), (ErrorKind::Jsonrpc, Some(100)));
        assert_eq!(t.schema().pointer("/properties/sql/type"), Some(&json!("string")));
    }

    #[test]
    fn unknown_fields_are_rejected_with_a_location() {
        for text in [
            "name = \"x\"\nwrkers = 3\n",
            "name = \"x\"\n[[tools]]\nname = \"t\"\nlatency = { dist = \"fixed\", ms = 1, extra = 2 }\n",
            "name = \"x\"\n[[tools]]\nname = \"t\"\nlatency = { dist = \"gamma\" }\n",
        ] {
            let err = FakeServerConfig::from_toml_str(text).expect_err("must be rejected");
            assert!(matches!(err, ConfigError::Parse(_)), "{err:?}");
            assert!(err.to_string().contains("line"), "no location in: {err}");
        }
    }

    #[test]
    fn validation_names_tool_and_field() {
        let tool = |body: &str| format!("name = \"x\"\n[[tools]]\nname = \"q\"\n{body}\n");
        assert_eq!(
            invalid_field(&tool("latency = { dist = \"lognormal\", p50_ms = 40, p99_ms = 10 }")),
            "tools[0] \"q\": latency.p99_ms"
        );
        assert_eq!(
            invalid_field(&tool("latency = { dist = \"uniform\", min_ms = 9, max_ms = 1 }")),
            "tools[0] \"q\": latency.max_ms"
        );
        assert_eq!(invalid_field(&tool("error_rate = 1.5")), "tools[0] \"q\": error_rate");
        assert_eq!(invalid_field(&tool("reply = \"{bogus}\"")), "tools[0] \"q\": reply");
        assert_eq!(invalid_field(&tool("input_schema = { type = \"string\" }")), "tools[0] \"q\": input_schema");
        assert_eq!(invalid_field(&tool("progress_ms = 0")), "tools[0] \"q\": progress_ms");
        assert_eq!(invalid_field(&tool("output_schema = { type = \"object\" }")), "tools[0] \"q\": output_schema");
        assert_eq!(
            invalid_field(&tool("structured_content = true\noutput_schema = 3")),
            "tools[0] \"q\": output_schema"
        );
        assert_eq!(
            invalid_field("name = \"x\"\n[[tools]]\nname = \"a\"\n[[tools]]\nname = \"a\"\n"),
            "tools[1] \"a\": name"
        );
        assert_eq!(invalid_field("name = \"x\"\nworkers = 0\n"), "workers");
        assert_eq!(invalid_field("name = \"x\"\nmax_in_flight_per_connection = 0\n"), "max_in_flight_per_connection");
        assert_eq!(invalid_field("name = \"x\"\npage_size = 0\n"), "page_size");
        let msg = FakeServerConfig::from_toml_str(&tool("error_rate = -0.1")).expect_err("invalid").to_string();
        assert!(msg.contains("between 0 and 1") && msg.contains("\"q\""), "{msg}");
    }
}
