//! The scenario file format, as serde types. One story per file: servers, load, agents, faults, checks, a sweep.
//!
//! Every table rejects unknown keys. Durations are strings with a unit (`"250ms"`, `"2s"`, `"1m"`).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use mcpstorm_core::gateway::GatewayConfig;
use mcpstorm_core::router::RouterConfig;
use mcpstorm_core::session::ext::{AuthScheme, Credential, GatewayProfile, Secret};

use super::layers::{BreakerSpec, BudgetSpec, BulkheadSpec, LayerSpecs, LimiterSpec, RetrySpec, ThrottleSpec};
use super::ranges;
use crate::fake::{FakeServerConfig, LegacyDiscover, ProtocolEra, ToolConfig, ValidationError, both_eras};

/// A duration written with a unit: `"250ms"`, `"2s"`, `"1m30s"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Dur(pub Duration);

impl Serialize for Dur {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(self.0).to_string())
    }
}

impl JsonSchema for Dur {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "A duration with a unit: \"250ms\", \"2s\", \"1m30s\" (units: ns, us, ms, s, m, h, d); at most 7 days.",
            "pattern": "^\\s*([0-9]+\\s*[a-zA-Zµ]+\\s*)+$",
            "examples": ["250ms", "2s", "1m30s"]
        })
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        humantime::parse_duration(&text).map(Dur).map_err(|e| {
            serde::de::Error::custom(format!("invalid duration {text:?} ({e}); write e.g. \"250ms\", \"2s\", \"1m\""))
        })
    }
}

/// A signed duration: `"-3m"`, `"+30s"`, `"90s"` (a clock's offset or step: ahead when positive, behind when
/// negative).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct SignedDur {
    pub negative: bool,
    pub magnitude: Duration,
}

impl SignedDur {
    pub fn as_millis(self) -> i64 {
        let ms = i64::try_from(self.magnitude.as_millis()).unwrap_or(i64::MAX);
        if self.negative { -ms } else { ms }
    }
}

impl std::fmt::Display for SignedDur {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sign = if self.negative && !self.magnitude.is_zero() { "-" } else { "" };
        write!(f, "{sign}{}", humantime::format_duration(self.magnitude))
    }
}

impl Serialize for SignedDur {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl JsonSchema for SignedDur {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "SignedDuration".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "A duration with a unit and an optional sign: \"-3m\" (behind), \"+30s\", \"90s\" (ahead); at most 7 days either way.",
            "pattern": "^\\s*[+-]?\\s*([0-9]+\\s*[a-zA-Zµ]+\\s*)+$",
            "examples": ["-3m", "+30s", "90s"]
        })
    }
}

impl<'de> Deserialize<'de> for SignedDur {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let trimmed = text.trim();
        let (negative, rest) = match trimmed.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, trimmed.strip_prefix('+').unwrap_or(trimmed)),
        };
        humantime::parse_duration(rest.trim()).map(|magnitude| SignedDur { negative, magnitude }).map_err(|e| {
            serde::de::Error::custom(format!(
                "invalid signed duration {text:?} ({e}); write e.g. \"-3m\", \"+30s\", \"90s\""
            ))
        })
    }
}

/// A whole scenario file.
///
/// | key           | default  | meaning                                                         |
/// |---------------|----------|-----------------------------------------------------------------|
/// | `name`        | required | names the report directory                                      |
/// | `description` | `""`     | shown in the summary                                            |
/// | `seed`        | 1        | the run's seed; `--seed` overrides                              |
/// | `duration`    | required | simulated time to run (a closed loop with `calls` may end early), at most 7 days |
/// | `tick`        | `"1ms"`  | turmoil's step, 1 µs to 1 s                                     |
///
/// Every duration is at most 7 days and every count has a maximum (see [`ranges`](super::ranges)); a run whose
/// estimated cost exceeds the limits of [`cost`](super::cost) is refused unless `--allow-large` is given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Names the report directory: letters, digits, `_`, `-` and `.`.
    pub name: String,
    /// Shown in the summary.
    #[serde(default)]
    pub description: String,
    /// The run's seed; `--seed` overrides it.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Simulated time to run (a closed loop with `calls` may end early); at most 7 days.
    pub duration: Dur,
    /// turmoil's step, 1 µs to 1 s (and at most `duration`): every tick is executed, so a finer tick costs wall time.
    #[serde(default = "default_tick")]
    pub tick: Dur,
    #[serde(default)]
    pub network: Network,
    /// The fake MCP servers (`[[servers]]`), each with its `[[servers.tools]]`.
    pub servers: Vec<ServerSpec>,
    pub load: Load,
    #[serde(default)]
    pub agent: Agent,
    #[serde(default)]
    pub client: ClientSpec,
    /// The fault timeline (`[[faults]]`).
    #[serde(default)]
    pub faults: Vec<Fault>,
    #[serde(default)]
    pub checks: Checks,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<Sweep>,
    #[serde(default)]
    pub gateway: Gateway,
    #[serde(default)]
    pub report: ReportSpec,
}

/// The gateway on every load host: its session and schema behaviour, credentials, routing and resilience layers
/// (see [`layers`](super::layers) for each resilience table's keys). Each load host is one gateway process with its
/// own router (formula state, statistics, health checks).
///
/// | key            | default           | meaning                                                                    |
/// |----------------|-------------------|----------------------------------------------------------------------------|
/// | `profile`      | `"default"`       | `"naive"`: expiry from the server's wall clock, no renewal, schemas cached forever, every resilience layer off |
/// | `credentials`  | none              | `[{ scheme = "bearer", secret = "..." }]`, offered to servers declaring schemes; the secret never reaches any output |
/// | `formula`      | `"seed_weighted"` | the routing formula: `seed_weighted`, `round_robin`, `random`, `least_outstanding`, `p2c_peak_ewma`, `best_score` or `expr:<expression>` |
/// | `requirements` | none              | `[{ argument = "language", attribute = "language_support" }]`: a string argument `language = "rust"` routes only to servers whose `capabilities.language_support` holds `"rust"` |
/// | `[gateway.router]` | see [`RouterSpec`] | health checks, statistics windows, drift penalty                      |
/// | `[gateway.breaker]`  | on (default profile) | a circuit breaker per (replica, tool)                     |
/// | `[gateway.retry]`    | on          | idempotent tools retried on another replica, backoff, one deadline         |
/// | `[gateway.budget]`   | on          | retries per server ≤ ratio × requests + a floor                            |
/// | `[gateway.throttle]` | on          | SRE adaptive throttling per replica                                        |
/// | `[gateway.bulkhead]` | on          | a permit pool per replica (declared `max_concurrent_requests`, configured, or the client's cap) |
/// | `[gateway.limiter]`  | aimd        | the adaptive limit inside each pool, from its cap down (`gradient2`, `fixed`) |
/// | `gossip`             | false       | share breaker openings between load hosts (a pub/sub host `gossip`)        |
/// | `[gateway.fallbacks]`| none        | `tool = "fallback_tool"`, named in degraded results                        |
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct Gateway {
    /// `"default"` or `"naive"` (the naive first design, kept to show the failures the default prevents).
    #[serde(default)]
    #[schemars(schema_with = "profile_schema")]
    pub profile: GatewayProfile,
    /// Offered to servers that declare auth schemes, the first accepted one wins. Secrets are printed redacted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub credentials: Vec<CredentialSpec>,
    /// Circuit breakers per (replica, tool); absent = on with defaults (default profile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breaker: Option<BreakerSpec>,
    /// The gateway's own retries of idempotent tools; absent = on with defaults (default profile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetrySpec>,
    /// The per-server retry budget; absent = on with defaults (default profile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetSpec>,
    /// SRE adaptive throttling per replica; absent = on with defaults (default profile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttle: Option<ThrottleSpec>,
    /// A permit pool per server; absent = on with defaults (default profile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bulkhead: Option<BulkheadSpec>,
    /// The adaptive limit inside each bulkhead; absent = fixed (the cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limiter: Option<LimiterSpec>,
    /// Share breaker openings between the load hosts' gateways through a pub/sub host (`gossip`): when one opens,
    /// the others follow. A `partition` fault with `target = "gossip"` cuts it off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gossip: bool,
    /// Fallback tools named in degraded results: `inventory_lookup = "query_cached_inventory"`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fallbacks: BTreeMap<String, String>,
    /// The routing formula: a built-in name or `expr:<expression>` over the router's statistics (`error_rate`,
    /// `latency_ratio`, `capacity`, `uptime`, `in_flight`, `peak_ewma_ms`, `score`, ...). The linear
    /// health score, `seed_weighted`, by default.
    #[serde(default)]
    pub formula: FormulaName,
    /// The rules that turn call arguments into capability requirements.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requirements: Vec<RequirementRule>,
    #[serde(default)]
    pub router: RouterSpec,
}

impl Gateway {
    /// The resilience layers' specs as one view.
    pub fn layers(&self) -> LayerSpecs<'_> {
        LayerSpecs {
            profile: self.profile,
            breaker: self.breaker.as_ref(),
            retry: self.retry.as_ref(),
            budget: self.budget.as_ref(),
            throttle: self.throttle.as_ref(),
            bulkhead: self.bulkhead.as_ref(),
            limiter: self.limiter.as_ref(),
            fallbacks: &self.fallbacks,
        }
    }
}

/// The formula every gateway routes with unless the scenario says otherwise: the linear health score.
pub const DEFAULT_FORMULA: &str = "seed_weighted";

/// A routing formula as the scenario spells it (checked by validation, parsed by each gateway).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FormulaName(pub String);

impl Default for FormulaName {
    fn default() -> Self {
        FormulaName(DEFAULT_FORMULA.to_owned())
    }
}

impl std::ops::Deref for FormulaName {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl JsonSchema for FormulaName {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Formula".into()
    }

    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        formula_schema(g)
    }
}

fn formula_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "default": DEFAULT_FORMULA,
        "anyOf": [
            { "enum": ["seed_weighted", "round_robin", "random", "least_outstanding", "p2c_peak_ewma", "best_score"] },
            { "pattern": "^\\s*expr:" }
        ]
    })
}

/// One rule turning a call argument into a requirement on the capability matrix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequirementRule {
    /// The call argument whose (string) value is required, e.g. `language`.
    pub argument: String,
    /// The server capability that must hold it, e.g. `language_support`.
    pub attribute: String,
}

/// The router's tunables (the core's `RouterConfig`), per gateway.
///
/// | key                 | default  | meaning                                                                 |
/// |---------------------|----------|-------------------------------------------------------------------------|
/// | `check_interval`    | `"15s"`  | active health checks per replica (and per declared health tool)         |
/// | `check_timeout`     | `"5s"`   | a check slower than this failed                                          |
/// | `failure_threshold` | 3        | consecutive failed checks that take a replica's weight to 0 (one success restores it) |
/// | `error_window`      | `"5m"`   | the sliding window of passive error rate and P95                         |
/// | `ewma_decay`        | `"10s"`  | Peak-EWMA latency decay                                                  |
/// | `drift_drop`        | 0.15     | a score drop larger than this share within `drift_window` ...            |
/// | `drift_window`      | `"5m"`   | ...                                                                     |
/// | `drift_penalty`     | `"10m"`  | ... halves the replica's weight for this long                            |
/// | `refresh_every`     | `"1s"`   | how often the gateway folds statistics and starts due checks             |
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouterSpec {
    #[serde(default = "RouterSpec::check_interval")]
    pub check_interval: Dur,
    #[serde(default = "RouterSpec::check_timeout")]
    pub check_timeout: Dur,
    #[serde(default = "RouterSpec::failure_threshold")]
    #[schemars(range(min = 1, max = ranges::MAX_THRESHOLD))]
    pub failure_threshold: u32,
    #[serde(default = "RouterSpec::error_window")]
    pub error_window: Dur,
    #[serde(default = "RouterSpec::ewma_decay")]
    pub ewma_decay: Dur,
    #[serde(default = "RouterSpec::drift_drop")]
    pub drift_drop: f64,
    #[serde(default = "RouterSpec::drift_window")]
    pub drift_window: Dur,
    #[serde(default = "RouterSpec::drift_penalty")]
    pub drift_penalty: Dur,
    #[serde(default = "RouterSpec::refresh_every")]
    pub refresh_every: Dur,
}

/// The defaults are the core's, so a scenario without `[gateway.router]` runs the router as shipped.
impl RouterSpec {
    fn check_interval() -> Dur {
        Dur(RouterConfig::default().check_interval)
    }
    fn check_timeout() -> Dur {
        Dur(RouterConfig::default().check_timeout)
    }
    fn failure_threshold() -> u32 {
        RouterConfig::default().failure_threshold
    }
    fn error_window() -> Dur {
        Dur(RouterConfig::default().error_window)
    }
    fn ewma_decay() -> Dur {
        Dur(RouterConfig::default().ewma_decay)
    }
    fn drift_drop() -> f64 {
        RouterConfig::default().drift_drop
    }
    fn drift_window() -> Dur {
        Dur(RouterConfig::default().drift_window)
    }
    fn drift_penalty() -> Dur {
        Dur(RouterConfig::default().drift_penalty)
    }
    fn refresh_every() -> Dur {
        Dur(GatewayConfig::default().refresh_every)
    }

    /// Every duration of the table, by key: validation checks each one the same way.
    pub fn durations(&self) -> [(&'static str, Dur); 7] {
        [
            ("check_interval", self.check_interval),
            ("check_timeout", self.check_timeout),
            ("error_window", self.error_window),
            ("ewma_decay", self.ewma_decay),
            ("drift_window", self.drift_window),
            ("drift_penalty", self.drift_penalty),
            ("refresh_every", self.refresh_every),
        ]
    }

    /// The core's configuration with these values.
    pub fn to_core(&self) -> RouterConfig {
        RouterConfig {
            check_interval: self.check_interval.0,
            check_timeout: self.check_timeout.0,
            failure_threshold: self.failure_threshold,
            error_window: self.error_window.0,
            ewma_decay: self.ewma_decay.0,
            drift_drop: self.drift_drop,
            drift_window: self.drift_window.0,
            drift_penalty: self.drift_penalty.0,
            ..RouterConfig::default()
        }
    }
}

impl Default for RouterSpec {
    fn default() -> Self {
        RouterSpec {
            check_interval: Self::check_interval(),
            check_timeout: Self::check_timeout(),
            failure_threshold: Self::failure_threshold(),
            error_window: Self::error_window(),
            ewma_decay: Self::ewma_decay(),
            drift_drop: Self::drift_drop(),
            drift_window: Self::drift_window(),
            drift_penalty: Self::drift_penalty(),
            refresh_every: Self::refresh_every(),
        }
    }
}

/// One configured credential.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CredentialSpec {
    /// `"bearer"`, `"api-key"` or `"mcp-jwt"`.
    #[schemars(schema_with = "scheme_schema")]
    pub scheme: AuthScheme,
    /// Never written anywhere: reports and copies show `[redacted]`.
    #[schemars(with = "String")]
    pub secret: Secret,
}

impl CredentialSpec {
    pub fn to_core(&self) -> Credential {
        Credential { scheme: self.scheme, secret: self.secret.clone() }
    }
}

/// A profile's name as the scenario file spells it.
pub fn profile_name(profile: GatewayProfile) -> &'static str {
    match profile {
        GatewayProfile::Default => "default",
        GatewayProfile::Naive => "naive",
    }
}

fn profile_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "enum": ["default", "naive"], "default": "default" })
}

fn scheme_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "enum": ["bearer", "api-key", "mcp-jwt"] })
}

/// What the report adds to the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct ReportSpec {
    /// Run the same scenario and seed again with this gateway profile (the other one, if it is the primary's),
    /// into `contrast-<profile>/`, and draw `contrast.png` with both side by side. The exit code follows the
    /// primary run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "optional_profile_schema")]
    pub contrast: Option<GatewayProfile>,
}

fn optional_profile_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "enum": ["default", "naive"] })
}

fn default_seed() -> u64 {
    1
}

fn default_tick() -> Dur {
    Dur(Duration::from_millis(1))
}

/// The simulated network between every pair of hosts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Network {
    /// One-way message latency (turmoil's minimum); at most the run's `duration`.
    #[serde(default = "default_latency")]
    pub latency: Dur,
    /// Upper bound for latency jitter; defaults to `latency` (no jitter); at most the run's `duration`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_latency: Option<Dur>,
    /// Probability a message is dropped. turmoil never retransmits: a drop stalls that TCP stream for good.
    #[serde(default)]
    pub fail_rate: f64,
}

fn default_latency() -> Dur {
    Dur(Duration::from_millis(1))
}

impl Default for Network {
    fn default() -> Self {
        Network { latency: default_latency(), max_latency: None, fail_rate: 0.0 }
    }
}

/// A fake MCP server, possibly replicated (one turmoil host per replica).
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
        default = "crate::fake::default_max_in_flight",
        skip_serializing_if = "crate::fake::is_default_max_in_flight"
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

/// A declared health tool and its minimal arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HealthCheckSpec {
    /// One of the server's tools.
    pub tool: String,
    /// Its arguments, a table.
    #[serde(default = "empty_args")]
    #[schemars(schema_with = "object_schema")]
    pub arguments: Value,
}

fn yes() -> bool {
    true
}

fn auth_schemes_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "minItems": 1,
        "items": { "enum": ["bearer", "api-key", "mcp-jwt"] }
    })
}

fn one() -> usize {
    1
}

fn default_version() -> String {
    "1.0.0".to_owned()
}

/// The offered load: many agent sessions multiplexed on a few load-generator hosts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Load {
    /// `"closed"` (needs `sessions`) or `"open"` (needs `rate`).
    pub mode: LoadMode,
    /// Closed loop: agent sessions, each calling, waiting for the outcome, thinking, calling again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = ranges::MAX_SESSIONS))]
    pub sessions: Option<usize>,
    /// Closed loop: pause between a call's outcome and the session's next call; at most the run's `duration`.
    #[serde(default)]
    pub think_time: Dur,
    /// Open loop: Poisson arrivals per second across all load hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = ranges::MAX_RATE))]
    pub rate: Option<f64>,
    /// Stop issuing after this many logical calls (the run then ends when they are done).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = ranges::MAX_CALLS))]
    pub calls: Option<u64>,
    /// Load-generator hosts; sessions and arrivals are spread across them.
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = ranges::MAX_HOSTS))]
    pub hosts: usize,
    /// What agents call, picked by weight for each logical call.
    pub mix: Vec<MixEntry>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LoadMode {
    Closed,
    Open,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MixEntry {
    /// A server's `name`: the call goes to that server's replicas only (the gateway is asked for the tag
    /// `server:<name>`). Absent: to any server offering the tool, as the router chooses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// One of that server's tools (without `server`: a tool some server offers).
    pub tool: String,
    /// Relative weight (> 0).
    #[serde(default = "unit_weight")]
    #[schemars(range(max = ranges::MAX_WEIGHT))]
    pub weight: f64,
    /// The call's arguments, a table.
    #[serde(default = "empty_args")]
    #[schemars(schema_with = "object_schema")]
    pub args: Value,
}

fn object_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "object" })
}

fn unit_weight() -> f64 {
    1.0
}

fn empty_args() -> Value {
    Value::Object(Default::default())
}

/// How agents react to a failed call (see `world::agent` for each model's behaviour).
///
/// | key           | default   | meaning                                                              |
/// |---------------|-----------|----------------------------------------------------------------------|
/// | `retry`       | `"none"`  | `"none"`, `"immediate"` (alias `"naive"`), `"reflective"`, `"polite"`, `"stubborn"` |
/// | `max_retries` | 0         | retries per logical call (at most `1 + max_retries` attempts)        |
/// | `backoff`     | `"500ms"` | `polite`: the first wait's ceiling (full jitter, doubling per retry)  |
/// | `backoff_cap` | `"10s"`   | `polite`: the longest wait                                           |
///
/// Every model but `stubborn` stops at a degraded result (`structuredContent.degraded == true`): the gateway said
/// "do not retry".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Agent {
    /// `"none"`, `"immediate"` (`"naive"`), `"reflective"`, `"polite"` or `"stubborn"`.
    #[serde(default)]
    pub retry: RetryMode,
    /// Retries per logical call (so at most `1 + max_retries` attempts).
    #[serde(default)]
    #[schemars(range(min = 0, max = ranges::MAX_ATTEMPTS))]
    pub max_retries: u32,
    /// `polite`: the ceiling of the first wait; each retry doubles it (full jitter: uniform below the ceiling).
    #[serde(default = "default_agent_backoff")]
    pub backoff: Dur,
    /// `polite`: the longest wait's ceiling.
    #[serde(default = "default_agent_backoff_cap")]
    pub backoff_cap: Dur,
}

fn default_agent_backoff() -> Dur {
    Dur(Duration::from_millis(500))
}

fn default_agent_backoff_cap() -> Dur {
    Dur(Duration::from_secs(10))
}

impl Default for Agent {
    fn default() -> Self {
        Agent {
            retry: RetryMode::None,
            max_retries: 0,
            backoff: default_agent_backoff(),
            backoff_cap: default_agent_backoff_cap(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum RetryMode {
    /// Give up on the first failure.
    #[default]
    None,
    /// The naive agent: retry at once on every failure (the storm-maker).
    #[serde(alias = "naive")]
    Immediate,
    /// Retry at once with changed arguments, as LLM agents do (a rephrased string argument, or an added `retry_note`):
    /// caches and idempotency keys do not recognise the retry.
    Reflective,
    /// Retry after a full-jitter backoff (`backoff`, doubling, capped at `backoff_cap`).
    Polite,
    /// Like `immediate`, and it ignores degraded results too: what happens when agents do not listen.
    Stubborn,
}

impl RetryMode {
    /// Whether the mode retries at all.
    pub fn retries(self) -> bool {
        self != RetryMode::None
    }
}

/// The gateway core's settings on each load host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientSpec {
    /// Global in-flight limit per load host (a default of 50 in-flight calls, the measured client's).
    #[serde(default = "default_max_in_flight")]
    #[schemars(range(min = 1, max = ranges::MAX_CONCURRENCY))]
    pub max_in_flight: usize,
    /// Per-connection in-flight limit.
    #[serde(default = "default_per_connection")]
    #[schemars(range(min = 1, max = ranges::MAX_CONCURRENCY))]
    pub per_connection: usize,
    /// Longest wait for an in-flight slot.
    #[serde(default = "default_queue_wait")]
    pub queue_wait: Dur,
    /// Longest wait for the first byte of a response (or progress).
    #[serde(default = "default_first_response")]
    pub first_response: Dur,
    #[serde(default = "default_connect_timeout")]
    pub connect_timeout: Dur,
    /// Overall deadline per attempt.
    #[serde(default = "default_deadline")]
    pub deadline: Dur,
}

fn default_max_in_flight() -> usize {
    50
}
fn default_per_connection() -> usize {
    256
}
fn default_queue_wait() -> Dur {
    Dur(Duration::from_secs(10))
}
fn default_first_response() -> Dur {
    Dur(Duration::from_secs(5))
}
fn default_connect_timeout() -> Dur {
    Dur(Duration::from_secs(10))
}
fn default_deadline() -> Dur {
    Dur(Duration::from_secs(30))
}

impl Default for ClientSpec {
    fn default() -> Self {
        ClientSpec {
            max_in_flight: default_max_in_flight(),
            per_connection: default_per_connection(),
            queue_wait: default_queue_wait(),
            first_response: default_first_response(),
            connect_timeout: default_connect_timeout(),
            deadline: default_deadline(),
        }
    }
}

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
///
/// `schema_drift`, `session_expiry` and `auth_rotation` happen at an instant: they take no `duration`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// `latency_spike`, `error_burst`, `hang`, `crash`, `partition`, `schema_drift`, `clock_skew`, `session_expiry`
    /// or `auth_rotation`.
    pub kind: FaultKind,
    /// A server name (every replica) or `name#i` (replica i, from 0); for `clock_skew` also `gateway` (every load
    /// host).
    pub target: String,
    /// When the fault begins, from the start of the run.
    pub start: Dur,
    /// How long it lasts; `start + duration` must fit in the run. Instant faults take none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub duration: Dur,
    /// `latency_spike`: added to every call's latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Dur>,
    /// `latency_spike`: every call's latency is multiplied by it (>= 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = ranges::MAX_MULTIPLIER))]
    pub multiplier: Option<f64>,
    /// `error_burst`: probability in [0, 1] that a call fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
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

impl DriftKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DriftKind::AddRequired => "add_required",
            DriftKind::Replace => "replace",
            DriftKind::Rename => "rename",
            DriftKind::Version => "version",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
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
}

impl FaultKind {
    /// Whether the fault happens at one instant (no `duration`).
    pub fn instant(self) -> bool {
        matches!(self, FaultKind::SchemaDrift | FaultKind::SessionExpiry | FaultKind::AuthRotation)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::SchemaDrift => "schema_drift",
            FaultKind::ClockSkew => "clock_skew",
            FaultKind::SessionExpiry => "session_expiry",
            FaultKind::AuthRotation => "auth_rotation",
            FaultKind::LatencySpike => "latency_spike",
            FaultKind::ErrorBurst => "error_burst",
            FaultKind::Hang => "hang",
            FaultKind::Crash => "crash",
            FaultKind::Partition => "partition",
        }
    }
}

/// Thresholds whose failure makes the run exit 1. Absent = not checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Checks {
    /// Whole-run P99 of logical-call latency, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ms: Option<f64>,
    /// Whole-run share of logical calls that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_rate: Option<f64>,
    /// Calls issued that never reached an outcome; the default check is 0.
    #[serde(default = "zero_lost")]
    pub lost: Option<u64>,
    /// Attempts a server refused for a stale schema, sent after that load host had already been refused so by that
    /// replica (since its last drift): sends the gateway could have known were stale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale_sends: Option<u64>,
    /// Seconds, from the first fault's start on, whose share of failed calls exceeds 1%.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_window_s: Option<u64>,
    /// Attempts that ended, as the agent sees them, with session-not-found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_errors: Option<u64>,
    /// Attempts that ended with an auth mismatch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_errors: Option<u64>,
    /// Attempts (the gateway's retries included) per logical call, over the seconds of the fault windows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amplification_during_fault: Option<f64>,
    /// P99 of logical calls to servers no fault targets, during the fault windows, over their P99 before the first
    /// fault: whether a sick server hurt the healthy ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healthy_p99_ratio: Option<f64>,
    /// Seconds after the last fault ends until goodput is back to ≥ 95% of its pre-fault level for 3 seconds in a
    /// row (never back: the rest of the run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_s: Option<f64>,
    /// Attempts served by a replica whose server does not meet the call's needs (judged from the server tables:
    /// mix entry's server, tool, `<argument>_support` capabilities), independently of the router.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub misroutes: Option<u64>,
    /// Calls the gateway answered with a degraded result (any reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<u64>,
    /// With `[report] contrast`: this run's whole-run P99 over the contrast profile's on the same seed (1.0: no worse
    /// than the other profile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contrast_p99_ratio: Option<f64>,
    /// With `[report] contrast`: this run's failed calls minus the contrast profile's on the same seed (0: it fails
    /// no more calls than the other profile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contrast_extra_errors: Option<i64>,
}

fn zero_lost() -> Option<u64> {
    Some(0)
}

impl Default for Checks {
    fn default() -> Self {
        Checks {
            p99_ms: None,
            error_rate: None,
            lost: zero_lost(),
            stale_sends: None,
            error_window_s: None,
            session_errors: None,
            auth_errors: None,
            amplification_during_fault: None,
            healthy_p99_ratio: None,
            recovery_s: None,
            misroutes: None,
            degraded: None,
            contrast_p99_ratio: None,
            contrast_extra_errors: None,
        }
    }
}

/// Run once per value of one scalar parameter, named by its dotted path (e.g. `load.sessions`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Sweep {
    /// The dotted path of a scalar key, with array indices: `load.sessions`, `servers[0].workers`.
    pub param: String,
    /// One run per value, in this order; each a string, number or boolean that fits the key.
    #[schemars(schema_with = "scalar_values_schema")]
    pub values: Vec<toml::Value>,
}

fn scalar_values_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "minItems": 1,
        "maxItems": ranges::MAX_SWEEP_VALUES,
        "items": { "type": ["string", "number", "integer", "boolean"] }
    })
}

impl ServerSpec {
    /// The fake server configuration of one replica. `seed` is the run's seed: each replica's RNG seed is derived from
    /// it, the server's name and the replica index, so replicas draw differently and the same run draws the same.
    pub fn fake_config(&self, replica: usize, seed: u64) -> FakeServerConfig {
        FakeServerConfig {
            name: self.name.clone(),
            version: self.version.clone(),
            workers: self.workers,
            max_in_flight_per_connection: self.max_in_flight_per_connection,
            page_size: self.page_size,
            seed: replica_seed(seed, &self.name, replica),
            tools: self.tools.clone(),
            eras: self.eras.clone(),
            cache_ttl_ms: self.cache_ttl_ms,
            legacy_discover: self.legacy_discover,
            session_ttl_ms: self.session_ttl.map(|d| u64::try_from(d.0.as_millis()).unwrap_or(u64::MAX)),
            renew: self.renew,
            auth_schemes: self.auth_schemes.clone(),
            validation_error: self.validation_error,
            meta: self.router_meta(),
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

    /// The tag every server carries and a `[[load.mix]]` entry naming it requires.
    pub fn server_tag(name: &str) -> String {
        format!("server:{name}")
    }
}

/// A stable mix of the run seed, a server name and a replica index (FNV-1a, then SplitMix64's finaliser): never
/// `std`'s `Hasher`, whose output may change between Rust releases.
fn replica_seed(seed: u64, name: &str, replica: usize) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes().chain((replica as u64).to_le_bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    let mut z = seed ^ h;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
