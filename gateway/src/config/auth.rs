//! The gateway file's `[auth]` table: agents authorized by an identity provider. With it, the gateway is an OAuth 2.1
//! resource server as the MCP authorization spec describes one (RFC 9728 metadata, RFC 8707 audiences, RFC 6750
//! challenges, RFC 7662 introspection for opaque tokens); the checks themselves are `crate::auth`'s.

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ranges::{Ranges, Upper};
use super::rules::Rules;
use super::units::Dur;

/// Signature algorithms a token may use. Never `none`, and never HMAC: a shared-secret algorithm checked with a
/// public key is the classic forgery (whoever has the public key signs with it).
pub const ALGORITHMS: [&str; 9] = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA"];

/// The widest clock skew `leeway` may allow.
const MAX_LEEWAY: Duration = Duration::from_secs(300);

/// Agents must present an access token from `issuer` for `audience`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
// An absent key takes its value from `Default`: a default is declared once, there.
#[serde(default, deny_unknown_fields)]
pub struct AuthSpec {
    /// The authorization server's issuer identifier, e.g. "https://login.example.com/realms/agents". Its metadata
    /// (RFC 8414, else OpenID Connect discovery) must name exactly this issuer, and so must every token's `iss`.
    pub issuer: String,
    /// This gateway's canonical URL as agents reach it, e.g. "https://gw.example.com/mcp": the `resource` of its
    /// metadata, and what every token's `aud` must name (RFC 8707). A token for another server is refused.
    pub audience: String,
    /// Scopes every request needs, named in the challenge to an agent without a token.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// Scopes a `tools/call` needs besides, by the tool's name as agents see it, e.g. `{ deploy = ["tools:deploy"] }`.
    /// A token without them gets 403 `insufficient_scope` naming them (the agent steps up).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tool_scopes: BTreeMap<String, Vec<String>>,
    /// Signature algorithms accepted, from RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384 and EdDSA.
    pub algorithms: Vec<String>,
    /// Clock skew allowed on `exp`, `nbf` and `iat` (at most 5 min).
    pub leeway: Dur,
    /// How long the issuer's keys are used before they are fetched again.
    pub keys_ttl: Dur,
    /// The least time between two fetches of the keys for a token signed by a key we do not have (rotation), so a
    /// flood of made-up key ids cannot make the gateway hammer the issuer.
    pub keys_min_interval: Dur,
    /// Each request to the identity provider (metadata, keys, introspection) gives up after this long.
    pub timeout: Dur,
    /// Opaque (non-JWT) tokens are asked about at the issuer's introspection endpoint. Absent: only JWTs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub introspection: Option<IntrospectionSpec>,
}

/// RFC 7662 introspection of opaque tokens, as a confidential client of the issuer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct IntrospectionSpec {
    /// The gateway's client id at the issuer.
    pub client_id: String,
    /// The environment variable holding its client secret (sent with HTTP Basic).
    pub client_secret_env: String,
    /// The most answers kept. Each is kept until the token expires or `cache_ttl`, whichever is first.
    pub cache_entries: usize,
    /// The longest an answer is trusted: a revoked token is refused at most this long after its revocation.
    pub cache_ttl: Dur,
}

impl Default for AuthSpec {
    fn default() -> Self {
        AuthSpec {
            issuer: String::new(),
            audience: String::new(),
            scopes: Vec::new(),
            tool_scopes: BTreeMap::new(),
            algorithms: vec!["RS256".to_owned(), "ES256".to_owned(), "PS256".to_owned(), "EdDSA".to_owned()],
            leeway: Dur(Duration::from_secs(60)),
            keys_ttl: Dur(Duration::from_secs(600)),
            keys_min_interval: Dur(Duration::from_secs(30)),
            timeout: Dur(Duration::from_secs(5)),
            introspection: None,
        }
    }
}

impl Default for IntrospectionSpec {
    fn default() -> Self {
        IntrospectionSpec {
            client_id: String::new(),
            client_secret_env: String::new(),
            cache_entries: 10_000,
            cache_ttl: Dur(Duration::from_secs(60)),
        }
    }
}

/// Whether `url` is an absolute http(s) URL with a host and no fragment.
fn absolute(url: &str) -> bool {
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"));
    rest.is_some_and(|r| !r.is_empty() && !r.starts_with('/') && !url.contains('#'))
}

impl AuthSpec {
    pub fn problems(&self, rules: &mut Rules) {
        if !absolute(&self.issuer) {
            rules.fail("auth.issuer", "must be the issuer's absolute http(s) URL, e.g. \"https://login.example.com\"");
        }
        if !absolute(&self.audience) {
            rules.fail(
                "auth.audience",
                "must be this gateway's canonical URL as agents reach it, e.g. \"https://gw.example.com/mcp\"",
            );
        }
        if self.leeway.0 > MAX_LEEWAY {
            rules.fail("auth.leeway", "must be at most 5m: a wider skew lets an expired token in for longer");
        }
        if self.algorithms.is_empty() {
            rules.fail("auth.algorithms", "must name at least one algorithm");
        }
        for (i, alg) in self.algorithms.iter().enumerate() {
            if !ALGORITHMS.contains(&alg.as_str()) {
                let why = if alg.eq_ignore_ascii_case("none") || alg.to_ascii_uppercase().starts_with("HS") {
                    "is never accepted: an unsigned or shared-secret token can be forged by whoever holds the key"
                } else {
                    "is not one of RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, EdDSA"
                };
                rules.fail(format!("auth.algorithms[{i}]"), format!("{alg:?} {why}"));
            }
        }
        for (tool, scopes) in &self.tool_scopes {
            if scopes.is_empty() || scopes.iter().any(|s| s.is_empty() || s.contains(char::is_whitespace)) {
                rules.fail(format!("auth.tool_scopes.{tool}"), "must list scopes, each one word");
            }
        }
        if let Some(intro) = &self.introspection {
            if intro.client_id.is_empty() {
                rules.fail("auth.introspection.client_id", "must be the gateway's client id at the issuer");
            }
            if intro.client_secret_env.is_empty() {
                rules.fail("auth.introspection.client_secret_env", "must name an environment variable");
            }
            rules.at_least_one("auth.introspection.cache_entries", intro.cache_entries);
        }
    }

    pub fn ranges(&self, out: &mut Ranges) {
        out.duration("auth.leeway", self.leeway.0, Upper::Week);
        out.duration("auth.keys_ttl", self.keys_ttl.0, Upper::Week);
        out.duration("auth.keys_min_interval", self.keys_min_interval.0, Upper::Week);
        out.duration("auth.timeout", self.timeout.0, Upper::Week);
        if let Some(intro) = &self.introspection {
            out.count("auth.introspection.cache_entries", intro.cache_entries as f64, 1e7);
            out.duration("auth.introspection.cache_ttl", intro.cache_ttl.0, Upper::Week);
        }
    }
}
