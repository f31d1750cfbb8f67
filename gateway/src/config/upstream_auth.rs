//! A server's `[servers.oauth]` table: the gateway reaches an OAuth-protected upstream with access tokens of its
//! own, never an agent's. The client itself is `crate::oauth::client`.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ranges::{Ranges, Upper};
use super::rules::Rules;
use super::units::Dur;

/// The algorithms a `private_key_jwt` key may sign with.
pub const KEY_ALGORITHMS: [&str; 5] = ["RS256", "PS256", "ES256", "ES384", "EdDSA"];

/// How the gateway gets tokens for one upstream server (shared by its replicas).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
// An absent key takes its value from `Default`: a default is declared once, there.
#[serde(default, deny_unknown_fields)]
pub struct UpstreamAuthSpec {
    /// The OAuth grant: `client_credentials` (the gateway as itself, the spec's machine-to-machine extension
    /// `io.modelcontextprotocol/oauth-client-credentials`), or `token_exchange` (RFC 8693: each agent's validated
    /// token, from `[auth]`, exchanged for a token of this server's, so the server sees the agent as the subject and
    /// the gateway as the actor; the gateway's own requests, such as listing tools, still use client credentials).
    pub grant: Grant,
    /// The gateway's client id at the upstream's authorization server.
    pub client_id: String,
    /// The environment variable holding the client secret (sent with HTTP Basic). Or `private_key_file`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub client_secret_env: String,
    /// Instead of a secret: a private key (PEM; PKCS#8, or PKCS#1 for RSA) that signs a short-lived assertion the
    /// authorization server checks against the public key it holds for the client (`private_key_jwt`, RFC 7523).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub private_key_file: Option<String>,
    /// The key's algorithm: RS256, PS256, ES256, ES384 or EdDSA.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub private_key_alg: Option<String>,
    /// The key's id (`kid`), when the authorization server holds several for the client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub private_key_id: Option<String>,
    /// Scopes asked for. Empty: none named (the authorization server's default).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// The authorization server's issuer. Absent: the one the server's protected resource metadata names (RFC
    /// 9728, found at its well-known URL or from its 401's `resource_metadata`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// The `resource` of every token request (RFC 8707), the audience the upstream checks. Absent: the resource
    /// its metadata names, else the first replica's URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// A token is renewed this long before it expires (at most half its lifetime), in the background: calls go on
    /// with the old one meanwhile, and only one request for a new one is made per server.
    pub refresh_before: Dur,
    /// After a failed token request, calls needing a new token fail at once (`token_unavailable`) for this long
    /// at first, doubling per failure up to `max_backoff`: an outage of the token endpoint is not hammered.
    pub backoff: Dur,
    pub max_backoff: Dur,
    /// Each request to the authorization server gives up after this long.
    pub timeout: Dur,
    /// With `token_exchange`: the most agents whose exchanged tokens are kept (each until it expires).
    pub max_delegated: usize,
}

/// The grants the gateway can use for an upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum Grant {
    #[default]
    ClientCredentials,
    TokenExchange,
}

impl Default for UpstreamAuthSpec {
    fn default() -> Self {
        UpstreamAuthSpec {
            grant: Grant::ClientCredentials,
            client_id: String::new(),
            client_secret_env: String::new(),
            private_key_file: None,
            private_key_alg: None,
            private_key_id: None,
            scopes: Vec::new(),
            issuer: None,
            resource: None,
            refresh_before: Dur(Duration::from_secs(30)),
            backoff: Dur(Duration::from_secs(1)),
            max_backoff: Dur(Duration::from_secs(30)),
            timeout: Dur(Duration::from_secs(5)),
            max_delegated: 10_000,
        }
    }
}

impl UpstreamAuthSpec {
    pub fn problems(&self, at: &str, rules: &mut Rules) {
        if self.client_id.is_empty() {
            rules.fail(format!("{at}.client_id"), "must be the gateway's client id at the authorization server");
        }
        match (&self.private_key_file, self.client_secret_env.is_empty()) {
            (None, true) => rules.fail(
                format!("{at}.client_secret_env"),
                "must name an environment variable (or give private_key_file)",
            ),
            (Some(_), false) => rules.fail(
                format!("{at}.private_key_file"),
                "give client_secret_env or private_key_file, not both: a client authenticates one way",
            ),
            (Some(_), true) => match self.private_key_alg.as_deref() {
                Some(alg) if KEY_ALGORITHMS.contains(&alg) => {}
                _ => rules.fail(
                    format!("{at}.private_key_alg"),
                    format!("must be one of {} with private_key_file", KEY_ALGORITHMS.join(", ")),
                ),
            },
            (None, false) => {}
        }
        for (key, url) in [("issuer", &self.issuer), ("resource", &self.resource)] {
            if url.as_deref().is_some_and(|u| !(u.starts_with("https://") || u.starts_with("http://"))) {
                rules.fail(format!("{at}.{key}"), "must be an absolute http(s) URL");
            }
        }
        rules.at_least_one(&format!("{at}.max_delegated"), self.max_delegated);
        if self.backoff.0 > self.max_backoff.0 {
            rules.fail(format!("{at}.backoff"), "must not be longer than max_backoff");
        }
    }

    pub fn ranges(&self, at: &str, out: &mut Ranges) {
        out.duration(format!("{at}.refresh_before"), self.refresh_before.0, Upper::Week);
        out.duration(format!("{at}.backoff"), self.backoff.0, Upper::Week);
        out.duration(format!("{at}.max_backoff"), self.max_backoff.0, Upper::Week);
        out.duration(format!("{at}.timeout"), self.timeout.0, Upper::Week);
        out.count(format!("{at}.max_delegated"), self.max_delegated as f64, 1e7);
    }
}
