//! The gateway process's `[[servers]]` tables: real MCP servers, each with its replicas (`[[servers.replicas]]`,
//! one of `http`, `stdio` or `tcp`), and what a scenario's server may declare for the router (tags, the capability
//! matrix row, `latency_p95_ms`, `max_concurrent_requests`, a health tool).
//!
//! A header's value that could be a secret is never written in the file: it is `env:NAME`, read from the
//! environment when the gateway starts, so the file can be committed and the secret never reaches a log.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::declared::{Declared, HealthCheckSpec};
use super::ranges::{self, MAX_CONCURRENCY, MAX_DURATION_MS, MAX_HOSTS, Ranges};
use super::rules::Rules;
use super::upstream_auth::UpstreamAuthSpec;
use crate::filter;

/// One real MCP server behind the gateway.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpstreamSpec {
    /// Unique. Agents see its tools under their own names, or `name__tool` when two servers offer one name (see
    /// `[gateway.tools] prefix`); the admin API and the metrics name it.
    pub name: String,
    /// Where the server runs: identical replicas the router chooses between, in this order.
    #[schemars(length(min = 1, max = ranges::MAX_HOSTS))]
    pub replicas: Vec<ReplicaSpec>,
    /// Free-form labels for the router. Every server also carries `server:<name>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The capability matrix row: attribute (ending in `_support`) → supported values, e.g.
    /// `{ language_support = ["python", "rust"] }`, for `[gateway] requirements`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub capabilities: BTreeMap<String, Vec<String>>,
    /// Declared P95 latency (ms): the router's `latency_ratio` divides by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = ranges::MAX_DURATION_MS))]
    pub latency_p95_ms: Option<f64>,
    /// Declared concurrency limit: the router's `capacity`, and each replica's bulkhead cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = ranges::MAX_CONCURRENCY))]
    pub max_concurrent_requests: Option<u32>,
    /// Active health checks call this tool instead of `ping`; three failures in a row take the replica out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check: Option<HealthCheckSpec>,
    /// An OAuth-protected server: the gateway gets access tokens for it (absent: `headers` alone, or none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<UpstreamAuthSpec>,
    /// Which of its tools agents see and may call, by the server's own tool names, e.g.
    /// `{ deny = ["delete_*"] }`. Absent: every tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<NameFilterSpec>,
    /// Which of its prompts agents see and may get, by the server's own prompt names. Absent: every prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<NameFilterSpec>,
    /// Which of its resources agents see and may read, by URI (a template by its `uriTemplate`; a read is checked on
    /// the URI it asks for), e.g. `{ allow = ["file:///srv/docs/*"] }`. Absent: every resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<NameFilterSpec>,
    /// Which protocol era the gateway speaks to it. `"handshake-first"`: 2025-11-25's `initialize`, and 2026-07-28
    /// only for a server that refuses it, because a server can ask the agent mid-call (sampling, elicitation, roots)
    /// and take subscriptions only in 2025-11-25, and SDKs' ask-the-user calls (the Python SDK's `ctx.elicit`) have
    /// no 2026-07-28 path; over Streamable HTTP, a server that speaks both eras is sent the tool calls of agents that
    /// cannot be asked anything in 2026-07-28, outside the session. `"discover-first"`: 2026-07-28 whenever the server
    /// speaks it. `"handshake"`: 2025-11-25 only. Default: `"handshake-first"`, but `"discover-first"` for a server with `oauth`, whose 2025-11-25
    /// session would be bound to the token that opened it while the gateway's calls carry renewed or per-agent ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub era: Option<UpstreamEra>,
}

/// See [`UpstreamSpec::era`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum UpstreamEra {
    HandshakeFirst,
    DiscoverFirst,
    Handshake,
}

impl UpstreamSpec {
    /// The era the gateway speaks to it: `era`, else the default [`UpstreamSpec::era`] describes.
    pub fn era(&self) -> UpstreamEra {
        self.era.unwrap_or(if self.oauth.is_some() { UpstreamEra::DiscoverFirst } else { UpstreamEra::HandshakeFirst })
    }
}

impl UpstreamEra {
    /// The core's era mode for it.
    pub fn mode(self) -> mcpstorm_core::session::EraMode {
        use mcpstorm_core::session::EraMode;
        match self {
            UpstreamEra::HandshakeFirst => EraMode::HandshakeFirst,
            UpstreamEra::DiscoverFirst => EraMode::Auto,
            UpstreamEra::Handshake => EraMode::Legacy,
        }
    }
}

/// Glob patterns (`*` any run of characters, `?` one) on a server's own names. Deny wins over allow; without
/// `allow`, everything not denied passes. What does not pass is absent from every list and refused like an unknown
/// name.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NameFilterSpec {
    /// Only names matching one of these pass (absent: every name). An empty list would hide everything: use
    /// `deny = ["*"]` for that.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<Vec<String>>,
    /// Names matching one of these never pass, whatever `allow` says.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
}

impl NameFilterSpec {
    /// Whether `name` (the server's own) passes.
    pub fn admits(&self, name: &str) -> bool {
        filter::admits(self.allow.as_deref(), &self.deny, name)
    }

    fn problems(&self, at: &str, rules: &mut Rules) {
        if self.allow.as_ref().is_some_and(Vec::is_empty) {
            rules.fail(
                format!("{at}.allow"),
                "an empty allow-list would hide every name: leave `allow` out to allow all, or write deny = [\"*\"]",
            );
        }
        let lists = [("allow", self.allow.as_deref().unwrap_or_default()), ("deny", self.deny.as_slice())];
        for (key, patterns) in lists {
            for (i, pattern) in patterns.iter().enumerate() {
                if let Some(why) = filter::problem(pattern) {
                    rules.fail(format!("{at}.{key}[{i}]"), format!("{pattern:?}: {why}"));
                }
            }
        }
    }
}

/// How to reach one replica: exactly one of `http`, `stdio`, `tcp`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct ReplicaSpec {
    /// MCP Streamable HTTP at this URL (either protocol era, detected), e.g. `"http://127.0.0.1:9001/mcp"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<String>,
    /// A command the gateway starts, speaking MCP over its stdin and stdout, e.g. `"python3 ledger.py"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdio: Option<String>,
    /// Newline-delimited MCP over TCP at `host:port`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<String>,
    /// Headers sent on every request to an `http` replica. A value is `env:NAME` (read from the environment at
    /// start), or a literal for a header whose name cannot hold a secret.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Variables added to a `stdio` replica's environment (it inherits the gateway's), e.g.
    /// `{ MEMORY_FILE_PATH = "/var/lib/memory.json", GITHUB_TOKEN = "env:GITHUB_TOKEN" }`. A value is a literal or
    /// `env:NAME`, read from the gateway's environment at start; a variable whose name could hold a secret must be
    /// `env:NAME`, as a header's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// A `stdio` replica's working directory (a repository's path, say); relative paths are the gateway process's
    /// working directory's. Absent: the gateway's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// Where a replica is, once its one key is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaAddr<'a> {
    Http(&'a str),
    Stdio(&'a str),
    Tcp(&'a str),
}

/// A header value read from the environment rather than written in the file.
pub const ENV_PREFIX: &str = "env:";

/// Header names whose value may be a secret: such a value must be `env:NAME`.
fn may_hold_secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["authorization", "cookie", "token", "secret", "key", "password", "credential"].iter().any(|w| name.contains(w))
}

impl ReplicaSpec {
    /// The one address this replica names (validation has checked there is exactly one).
    pub fn addr(&self) -> Option<ReplicaAddr<'_>> {
        match (&self.http, &self.stdio, &self.tcp) {
            (Some(url), None, None) => Some(ReplicaAddr::Http(url)),
            (None, Some(cmd), None) => Some(ReplicaAddr::Stdio(cmd)),
            (None, None, Some(addr)) => Some(ReplicaAddr::Tcp(addr)),
            _ => None,
        }
    }

    fn problems(&self, at: &str, rules: &mut Rules) {
        let given = [&self.http, &self.stdio, &self.tcp].iter().filter(|v| v.is_some()).count();
        if given != 1 {
            rules.fail(at.to_owned(), format!("give exactly one of `http`, `stdio`, `tcp` (found {given})"));
        }
        let empty = [("http", &self.http), ("stdio", &self.stdio), ("tcp", &self.tcp)];
        for (key, value) in empty {
            if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
                rules.fail(format!("{at}.{key}"), "must not be empty");
            }
        }
        if let Some(cmd) = &self.stdio
            && !cmd.trim().is_empty()
            && shlex::split(cmd).is_none_or(|w| w.is_empty())
        {
            rules.fail(format!("{at}.stdio"), format!("cannot split {cmd:?} into words (an unclosed quote?)"));
        }
        if let Some(url) = &self.http
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            rules.fail(format!("{at}.http"), format!("{url:?} is not an http:// or https:// URL"));
        }
        if !self.headers.is_empty() && self.http.is_none() {
            rules.fail(format!("{at}.headers"), "headers are sent only to an `http` replica");
        }
        if !self.env.is_empty() && self.stdio.is_none() {
            rules.fail(format!("{at}.env"), "an environment is given only to a `stdio` replica's command");
        }
        if self.cwd.is_some() && self.stdio.is_none() {
            rules.fail(format!("{at}.cwd"), "a working directory is given only to a `stdio` replica's command");
        }
        if self.cwd.as_deref().is_some_and(|d| d.trim().is_empty()) {
            rules.fail(format!("{at}.cwd"), "must not be empty");
        }
        for name in self.env.keys() {
            if name.is_empty() || name.contains(['=', '\0']) {
                rules.fail(format!("{at}.env"), format!("{name:?} is not an environment variable's name"));
            }
        }
        let secrets = [("headers", &self.headers, "header"), ("env", &self.env, "variable")];
        for (table, values, what) in secrets {
            for (name, value) in values {
                let key = format!("{at}.{table}.{name}");
                match value.strip_prefix(ENV_PREFIX) {
                    Some("") => rules.fail(key, "`env:` needs a variable name, e.g. \"env:API_TOKEN\""),
                    Some(_) => {}
                    None if may_hold_secret(name) => rules.fail(
                        key,
                        format!(
                            "this {what} may hold a secret: write \"env:NAME\" and set NAME in the gateway's \
                             environment"
                        ),
                    ),
                    None => {}
                }
            }
        }
    }
}

impl UpstreamSpec {
    /// The endpoint id of replica `i` in the router, the admin API and the metrics: `name#i`, as a fault targets a
    /// scenario's replica.
    pub fn replica_id(&self, i: usize) -> String {
        format!("{}#{i}", self.name)
    }

    /// Whether agents may see and call the server's tool `name` (`tools`).
    pub fn admits_tool(&self, name: &str) -> bool {
        self.tools.as_ref().is_none_or(|f| f.admits(name))
    }

    /// Whether agents may see and get the server's prompt `name` (`prompts`).
    pub fn admits_prompt(&self, name: &str) -> bool {
        self.prompts.as_ref().is_none_or(|f| f.admits(name))
    }

    /// Whether agents may see and read the server's resource `uri`, or a template `uriTemplate` (`resources`).
    pub fn admits_resource(&self, uri: &str) -> bool {
        self.resources.as_ref().is_none_or(|f| f.admits(uri))
    }

    /// What this server declares to the router.
    pub fn declared(&self) -> Declared<'_> {
        Declared {
            tags: &self.tags,
            capabilities: &self.capabilities,
            latency_p95_ms: self.latency_p95_ms,
            max_concurrent_requests: self.max_concurrent_requests,
            health_check: self.health_check.as_ref(),
        }
    }

    /// The rules of the `[[servers]]` array: at least one server, unique non-empty names, each replica valid.
    pub fn problems_of(servers: &[UpstreamSpec], rules: &mut Rules) {
        if servers.is_empty() {
            rules.fail("servers", "at least one server is needed");
        }
        let mut seen = BTreeSet::new();
        for (i, server) in servers.iter().enumerate() {
            let at = format!("servers[{i}]");
            if server.name.is_empty() {
                rules.fail(format!("{at}.name"), "must not be empty");
            } else if server.name.contains('#') || server.name.contains("__") {
                rules.fail(
                    format!("{at}.name"),
                    "must not contain `#` (replica ids are `name#i`) or `__` (prefixed tools are `name__tool`)",
                );
            } else if !seen.insert(server.name.as_str()) {
                rules.fail(format!("{at}.name"), format!("duplicate server name {:?}", server.name));
            }
            if server.replicas.is_empty() {
                rules.fail(format!("{at}.replicas"), "at least one replica is needed");
            }
            for (r, replica) in server.replicas.iter().enumerate() {
                replica.problems(&format!("{at}.replicas[{r}]"), rules);
            }
            let filters = [("tools", &server.tools), ("prompts", &server.prompts), ("resources", &server.resources)];
            for (key, spec) in filters {
                if let Some(spec) = spec {
                    spec.problems(&format!("{at}.{key}"), rules);
                }
            }
            if let Some(oauth) = &server.oauth {
                oauth.problems(&format!("{at}.oauth"), rules);
                if server.replicas.iter().any(|r| r.http.is_none()) {
                    rules.fail(
                        format!("{at}.oauth"),
                        "OAuth is for `http` replicas: a stdio or tcp replica has no HTTP to carry a token",
                    );
                }
            }
        }
    }

    /// The counts and durations with their bounds.
    pub fn ranges(&self, i: usize, out: &mut Ranges) {
        out.count(format!("servers[{i}].replicas"), self.replicas.len() as f64, MAX_HOSTS as f64);
        if let Some(oauth) = &self.oauth {
            oauth.ranges(&format!("servers[{i}].oauth"), out);
        }
        if let Some(ms) = self.latency_p95_ms {
            out.count(format!("servers[{i}].latency_p95_ms"), ms, MAX_DURATION_MS as f64);
        }
        if let Some(n) = self.max_concurrent_requests {
            out.count(format!("servers[{i}].max_concurrent_requests"), f64::from(n), MAX_CONCURRENCY as f64);
        }
    }
}
