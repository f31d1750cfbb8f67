//! The `[gateway]` table: profile, credentials, routing formula and requirements, and `[gateway.router]` (the
//! resilience tables it names are in [`layers`](super::layers)).

use std::borrow::Cow;
use std::collections::BTreeMap;
use tokio::time::Instant;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use mcpstorm_core::router::{FormulaSpec, Router, RouterConfig};
use mcpstorm_core::session::GatewayProfile;
use mcpstorm_core::{AuthScheme, Credential, GatewayConfig, Secret, SeededRng};

use super::layers::{BreakerSpec, BudgetSpec, BulkheadSpec, LayerSpecs, LimiterSpec, RetrySpec, ThrottleSpec};
use super::ranges::{self, MAX_THRESHOLD, Ranges, Upper};
use super::rules::Rules;
use super::sync::SyncSpec;
use super::units::Dur;

/// `[gateway]`, in the gateway's file and a scenario alike: its session and schema behaviour, credentials, routing
/// and resilience layers (see [`layers`](super::layers) for each resilience table's keys). Each gateway process (in a
/// scenario: each load host or node) has its own router (formula state, statistics, health checks).
///
/// | key            | default           | meaning                                                                    |
/// |----------------|-------------------|----------------------------------------------------------------------------|
/// | `profile`      | `"default"`       | `"naive"`: expiry from the server's wall clock, no renewal, schemas cached forever, every resilience layer off |
/// | `credentials`  | none              | `[{ scheme = "bearer", secret = "..." }]`, offered to servers declaring schemes; the secret never reaches any output |
/// | `formula`      | `"health_weighted"` | the routing formula: `health_weighted`, `round_robin`, `random`, `least_outstanding`, `p2c_peak_ewma`, `best_score` or `expr:<expression>` |
/// | `requirements` | none              | `[{ argument = "language", attribute = "language_support" }]`: a string argument `language = "rust"` routes only to servers whose `capabilities.language_support` holds `"rust"` |
/// | `[gateway.router]` | see [`RouterSpec`] | health checks, statistics windows, drift penalty                      |
/// | `[gateway.breaker]`  | on (default profile) | a circuit breaker per (replica, tool)                     |
/// | `[gateway.retry]`    | on          | idempotent tools retried on another replica, backoff, one deadline         |
/// | `[gateway.budget]`   | on          | retries per server ≤ ratio × requests + a floor                            |
/// | `[gateway.throttle]` | on          | SRE adaptive throttling per replica                                        |
/// | `[gateway.bulkhead]` | on          | a permit pool per replica (declared `max_concurrent_requests`, configured, or the client's cap) |
/// | `[gateway.limiter]`  | aimd        | the adaptive limit inside each pool, from its cap down (`gradient2`, `fixed`) |
/// | `[gateway.sync]`     | off         | the gateway nodes share breakers through Redis ([`SyncSpec`]); in a scenario, the load hosts (or its `[nodes]`), through a simulated Redis host named by the URL |
/// | `[gateway.fallbacks]`| none        | `tool = "fallback_tool"`, named in degraded results                        |
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct GatewaySpec {
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
    /// Breaker sync between gateway nodes through Redis (in a scenario: between the load hosts, or the gateway nodes
    /// with `[nodes]`, through a simulated Redis host named by the URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync: Option<SyncSpec>,
    /// Fallback tools named in degraded results: `inventory_lookup = "query_cached_inventory"`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fallbacks: BTreeMap<String, String>,
    /// The routing formula: a built-in name or `expr:<expression>` over the router's statistics (`error_rate`,
    /// `latency_ratio`, `capacity`, `uptime`, `in_flight`, `peak_ewma_ms`, `score`, ...). The linear
    /// health score, `health_weighted` (once `seed_weighted`, still accepted), by default.
    #[serde(default)]
    pub formula: FormulaName,
    /// The rules that turn call arguments into capability requirements.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requirements: Vec<RequirementRule>,
    #[serde(default)]
    pub router: RouterSpec,
    /// How `mcpstorm gateway` names the tools of its servers to agents (the simulator's agents call tools by their
    /// upstream names).
    #[serde(default, skip_serializing_if = "ToolsSpec::is_default")]
    pub tools: ToolsSpec,
}

impl GatewaySpec {
    /// The table's rules: the resilience tables', the formula's, the requirements', the router's.
    pub fn problems(&self, rules: &mut Rules) {
        for (key, message) in self.layers().problems() {
            rules.fail(key, message);
        }
        if let Err(e) = self.formula.parse::<FormulaSpec>() {
            rules.fail("gateway.formula", e.to_string());
        }
        for (i, rule) in self.requirements.iter().enumerate() {
            if rule.argument.is_empty() {
                rules.fail(format!("gateway.requirements[{i}].argument"), "must name a call argument");
            }
            if rule.attribute.is_empty() {
                rules.fail(format!("gateway.requirements[{i}].attribute"), "must name a server capability");
            }
        }
        self.router.problems(rules);
        if let Some(sync) = &self.sync {
            sync.problems(rules);
        }
    }

    /// The table's durations and counts with their bounds.
    pub fn ranges(&self, out: &mut Ranges) {
        self.router.ranges(out);
        self.layers().ranges(out);
    }

    /// The router this table configures: its formula, its settings and the random stream of its weighted choice.
    /// The formula was checked by [`problems`](Self::problems); the error names it for a table that was not.
    pub fn router(&self, rng: SeededRng, start: Instant) -> Result<Router, String> {
        let formula: FormulaSpec =
            self.formula.parse().map_err(|e| format!("gateway.formula {:?}: {e}", &*self.formula))?;
        Ok(Router::new(self.router.to_core(), formula.build(), rng, start))
    }

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

/// `[gateway.tools]`: the names agents see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct ToolsSpec {
    /// `"conditional"`: a tool keeps the name its server gave it while no other server offers that name; on a
    /// collision every server's copy becomes `server__tool`. `"always"`: every tool is `server__tool`. Nothing is
    /// ever shadowed.
    #[serde(default)]
    pub prefix: PrefixMode,
}

/// See [`ToolsSpec::prefix`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum PrefixMode {
    #[default]
    Conditional,
    Always,
}

impl ToolsSpec {
    fn is_default(&self) -> bool {
        *self == ToolsSpec::default()
    }
}

/// The formula every gateway routes with unless the scenario says otherwise: the linear health score.
pub const DEFAULT_FORMULA: &str = "health_weighted";

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
            { "enum": ["health_weighted", "round_robin", "random", "least_outstanding", "p2c_peak_ewma", "best_score"] },
            // The formula's name before issue 25, still accepted (core/src/router/formula).
            { "const": "seed_weighted", "deprecated": true },
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouterSpec {
    /// How often each replica gets an active health check (a ping, or its declared health tool).
    #[serde(default = "RouterSpec::check_interval")]
    pub check_interval: Dur,
    /// A check slower than this failed.
    #[serde(default = "RouterSpec::check_timeout")]
    pub check_timeout: Dur,
    /// Consecutive failed checks that take a replica's weight to 0; one success restores it.
    #[serde(default = "RouterSpec::failure_threshold")]
    #[schemars(range(min = 1, max = ranges::MAX_THRESHOLD))]
    pub failure_threshold: u32,
    /// The sliding window of the passive error rate and P95.
    #[serde(default = "RouterSpec::error_window")]
    pub error_window: Dur,
    /// Peak-EWMA latency decay.
    #[serde(default = "RouterSpec::ewma_decay")]
    pub ewma_decay: Dur,
    /// A replica whose score drops by more than this share within `drift_window` has its weight halved for
    /// `drift_penalty`.
    #[serde(default = "RouterSpec::drift_drop")]
    pub drift_drop: f64,
    /// The window a score drop (`drift_drop`) is measured over.
    #[serde(default = "RouterSpec::drift_window")]
    pub drift_window: Dur,
    /// How long a drifting replica's weight stays halved.
    #[serde(default = "RouterSpec::drift_penalty")]
    pub drift_penalty: Dur,
    /// How often the gateway folds statistics and starts due checks.
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

    fn problems(&self, rules: &mut Rules) {
        for (key, d) in self.durations() {
            rules.positive(&format!("gateway.router.{key}"), d.0);
        }
        if self.failure_threshold == 0 {
            rules.fail("gateway.router.failure_threshold", "must be at least 1");
        }
        if !(self.drift_drop.is_finite() && self.drift_drop > 0.0 && self.drift_drop <= 1.0) {
            rules.fail("gateway.router.drift_drop", format!("must be a share in (0, 1], got {}", self.drift_drop));
        }
    }

    fn ranges(&self, out: &mut Ranges) {
        for (key, d) in self.durations() {
            out.duration(format!("gateway.router.{key}"), d.0, Upper::Week);
        }
        out.count("gateway.router.failure_threshold", f64::from(self.failure_threshold), MAX_THRESHOLD as f64);
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
