//! The gateway process's `[listen]` and `[admin]` tables: where it serves agents and operators, and the bounds a
//! hostile agent meets. Loopback by default; a bind any other host can reach requires agent tokens.

use std::net::SocketAddr;

use mcpstorm_core::serve::FrontLimits;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ranges::{MAX_CONCURRENCY, Ranges, Upper};
use super::rules::Rules;
use super::units::Dur;

/// Where agents reach the gateway (MCP Streamable HTTP at `/mcp`) and what each may do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
// An absent key takes its value from `Default`: a default is declared once, there.
#[serde(default, deny_unknown_fields)]
pub struct ListenSpec {
    /// `host:port` of the MCP endpoint (`/mcp`, with `/healthz`, `/readyz` and `/metrics`). A host other than
    /// loopback needs `[auth]` or `agent_tokens_env`.
    pub http: String,
    /// Environment variables each holding one bearer token an agent may present (`Authorization: Bearer ...`).
    /// Empty: no agent auth, allowed only on a loopback bind.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agent_tokens_env: Vec<String>,
    /// `Origin` values accepted besides loopback ones (`http://localhost:*`, `http://127.0.0.1:*`, `http://[::1]:*`);
    /// any other origin is refused with 403 (the MCP specification's guard against DNS rebinding).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_origins: Vec<String>,
    /// The largest request body, in bytes (413 beyond).
    pub max_body_bytes: usize,
    /// The most agent sessions this process keeps state for at once. A session id costs nothing while idle: when the
    /// table is full, the least recently used idle session's state is dropped, and only with none idle does a new
    /// session get 503.
    pub max_sessions: usize,
    /// The most agent calls running at once in this process, over every session. Up to it nothing waits, whoever
    /// sends; beyond it a call waits (up to `[client] deadline`) and each freed slot goes to the waiting session with
    /// the fewest running: a fair share that bites only under contention, never a per-session cap.
    pub max_calls_in_flight: usize,
    /// The most calls waiting for a slot, over every session. When full, the session queueing the most sheds its
    /// newest call (HTTP 429 with `Retry-After`), never another session's.
    pub max_queued_calls: usize,
    /// On SIGTERM: how long calls in flight may still finish before the process closes them and exits.
    pub drain: Dur,
    /// When `/readyz` answers 200: `all` (every configured server listed: a node that cannot reach one takes no
    /// traffic, so a rollout with a broken upstream stalls rather than spreads) or `any` (one server listed: some
    /// tools rather than none). A server listed once keeps its listing if it dies later.
    pub ready: ReadyRule,
}

/// See [`ListenSpec::ready`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReadyRule {
    #[default]
    All,
    Any,
}

/// The operators' API (`/admin/breakers`, `/admin/drain`) on its own listener, behind a bearer token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
// An absent key takes its value from `Default`: a default is declared once, there.
#[serde(default, deny_unknown_fields)]
pub struct AdminSpec {
    /// `host:port` of the admin API.
    pub listen: String,
    /// The environment variable holding the bearer token every admin request must present (401 without it).
    pub token_env: String,
}

impl Default for ListenSpec {
    /// Loopback, no tokens, and the bounds the front itself defaults to ([`FrontLimits::default`]).
    fn default() -> Self {
        let front = FrontLimits::default();
        ListenSpec {
            http: "127.0.0.1:8848".to_owned(),
            agent_tokens_env: Vec::new(),
            allowed_origins: Vec::new(),
            max_body_bytes: front.max_body,
            max_sessions: front.max_sessions,
            max_calls_in_flight: front.max_calls_in_flight,
            max_queued_calls: front.max_queued_calls,
            drain: Dur(std::time::Duration::from_secs(10)),
            ready: ReadyRule::default(),
        }
    }
}

impl Default for AdminSpec {
    /// Loopback, on the port after the MCP endpoint's.
    fn default() -> Self {
        AdminSpec { listen: "127.0.0.1:8849".to_owned(), token_env: "MCPSTORM_ADMIN_TOKEN".to_owned() }
    }
}

/// `addr` as a socket address, or the problem with it.
fn socket(addr: &str) -> Result<SocketAddr, String> {
    addr.parse().map_err(|_| format!("{addr:?} is not host:port with a numeric host, e.g. \"127.0.0.1:8848\""))
}

impl ListenSpec {
    /// The bound address (validation has checked it parses).
    pub fn addr(&self) -> Option<SocketAddr> {
        socket(&self.http).ok()
    }

    /// `authorized`: an `[auth]` table makes agents authenticate, as agent tokens do.
    pub fn problems(&self, rules: &mut Rules, authorized: bool) {
        match socket(&self.http) {
            Err(message) => rules.fail("listen.http", message),
            Ok(addr) if !addr.ip().is_loopback() && self.agent_tokens_env.is_empty() && !authorized => rules.fail(
                "listen.http",
                format!(
                    "{addr} is reachable from other hosts: set [auth] or listen.agent_tokens_env so agents must \
                     authenticate"
                ),
            ),
            Ok(_) => {}
        }
        for (i, var) in self.agent_tokens_env.iter().enumerate() {
            if var.is_empty() {
                rules.fail(format!("listen.agent_tokens_env[{i}]"), "must name an environment variable");
            }
        }
        for (i, origin) in self.allowed_origins.iter().enumerate() {
            if !(origin.starts_with("http://") || origin.starts_with("https://")) {
                rules.fail(format!("listen.allowed_origins[{i}]"), format!("{origin:?} is not an http(s) origin"));
            }
        }
        rules.at_least_one("listen.max_body_bytes", self.max_body_bytes);
        rules.at_least_one("listen.max_sessions", self.max_sessions);
        rules.at_least_one("listen.max_calls_in_flight", self.max_calls_in_flight);
    }

    pub fn ranges(&self, out: &mut Ranges) {
        out.count("listen.max_body_bytes", self.max_body_bytes as f64, f64::from(1u32 << 30));
        out.count("listen.max_sessions", self.max_sessions as f64, 1e6);
        out.count("listen.max_calls_in_flight", self.max_calls_in_flight as f64, MAX_CONCURRENCY as f64);
        out.count("listen.max_queued_calls", self.max_queued_calls as f64, MAX_CONCURRENCY as f64);
        out.duration("listen.drain", self.drain.0, Upper::Week);
    }
}

impl AdminSpec {
    /// The bound address (validation has checked it parses).
    pub fn addr(&self) -> Option<SocketAddr> {
        socket(&self.listen).ok()
    }

    pub fn problems(&self, rules: &mut Rules) {
        if let Err(message) = socket(&self.listen) {
            rules.fail("admin.listen", message);
        }
        if self.token_env.is_empty() {
            rules.fail("admin.token_env", "must name an environment variable");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ClientSpec;

    #[test]
    fn an_absent_key_takes_the_tables_default_and_the_bounds_are_the_fronts() {
        assert_eq!(toml::from_str::<ListenSpec>("").unwrap(), ListenSpec::default());
        assert_eq!(toml::from_str::<AdminSpec>("").unwrap(), AdminSpec::default());
        assert_eq!(toml::from_str::<ClientSpec>("").unwrap(), ClientSpec::default());
        let listen: ListenSpec = toml::from_str("drain = \"3s\"").unwrap();
        assert_eq!(listen, ListenSpec { drain: Dur(std::time::Duration::from_secs(3)), ..ListenSpec::default() });
        assert_eq!(listen.max_sessions, FrontLimits::default().max_sessions);
    }
}
