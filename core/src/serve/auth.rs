//! Who an agent is. Every `/mcp` request's `Authorization` header is checked before anything else of the request
//! is read: by the front's static tokens (`FrontLimits::agent_tokens`), then by an [`AgentAuth`] when one is set
//! (an OAuth 2.1 resource server: the gateway's `auth` module validates access tokens against an identity
//! provider). A refusal is an HTTP status with a `WWW-Authenticate` challenge the agent can act on (RFC 6750 §3,
//! the MCP authorization spec): where to find the resource's metadata (RFC 9728), which scopes to ask for, and why.
//!
//! Scopes per tool are checked once the body is read (`http/post.rs`): a `tools/call` of a tool whose scopes the
//! token lacks gets 403 `insufficient_scope` naming them, so the agent can step up.

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;

use ring::hmac;
use ring::rand::SystemRandom;

use super::keys::KeyError;
use crate::credential::Secret;

/// An authenticated agent.
#[derive(Clone, Default)]
pub struct Principal {
    /// The token's `sub`, when it has one.
    pub subject: Option<String>,
    /// The OAuth client the token was issued to (`client_id` or `azp`).
    pub client_id: Option<String>,
    /// Granted scopes. `None`: every scope (an operator's static token).
    pub scopes: Option<Vec<String>>,
    /// The token itself, for delegation (token exchange); never sent upstream as it is.
    pub token: Option<Secret>,
}

impl Debug for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Principal")
            .field("subject", &self.subject)
            .field("client_id", &self.client_id)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl Principal {
    /// The operator's own token: every scope, no identity.
    pub fn operator() -> Principal {
        Principal::default()
    }

    /// Those of `needed` this principal was not granted.
    pub fn missing<'a>(&self, needed: &'a [String]) -> Vec<&'a str> {
        match &self.scopes {
            None => Vec::new(),
            Some(granted) => needed.iter().filter(|s| !granted.contains(s)).map(String::as_str).collect(),
        }
    }
}

/// Why a request was refused: a label for logs and metrics, and what the agent is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum DenyReason {
    /// No `Authorization: Bearer` header (RFC 6750: the challenge then carries no error code).
    Missing,
    /// Not a token we can read: not a JWT, bad base64 or JSON, an unknown opaque token.
    Malformed,
    /// Signed by a key we do not have, even after refreshing the issuer's keys.
    UnknownKey,
    /// The signature does not verify.
    Signature,
    /// An algorithm outside the allow-list (`none`, HMAC, or one the key's type does not match).
    Algorithm,
    /// `iss` is not the configured issuer.
    Issuer,
    /// `aud` does not name this gateway.
    Audience,
    Expired,
    /// `nbf` or `iat` is in the future beyond the allowed skew.
    NotYetValid,
    /// Introspection answered `active: false`.
    Inactive,
    /// The token lacks a scope the request needs (403).
    InsufficientScope,
    /// The token could not be checked now: the identity provider is unreachable (503, retry later).
    Unverifiable,
}

/// A refusal, with a detail safe to log and to send (never the token or a secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    pub reason: DenyReason,
    pub detail: String,
    /// The scopes the request needed, for the challenge.
    pub scopes: Vec<String>,
}

impl Denied {
    pub fn new(reason: DenyReason, detail: impl Into<String>) -> Denied {
        Denied { reason, detail: detail.into(), scopes: Vec::new() }
    }

    /// 401, 403 for a missing scope, 503 when the token could not be checked.
    pub fn status(&self) -> u16 {
        match self.reason {
            DenyReason::InsufficientScope => 403,
            DenyReason::Unverifiable => 503,
            _ => 401,
        }
    }

    /// The RFC 6750 error code (none when no token was sent).
    pub fn error_code(&self) -> Option<&'static str> {
        match self.reason {
            DenyReason::Missing | DenyReason::Unverifiable => None,
            DenyReason::InsufficientScope => Some("insufficient_scope"),
            _ => Some("invalid_token"),
        }
    }
}

/// What an OAuth resource server publishes (RFC 9728) and names in its challenges.
#[derive(Debug, Clone)]
pub struct ResourceMetadata {
    /// The metadata document's absolute URL (`resource_metadata` in a challenge).
    pub url: String,
    /// The paths the front serves the document at: RFC 9728's path-suffixed form first, the root one too.
    pub paths: Vec<String>,
    /// The document (`resource`, `authorization_servers`, `scopes_supported`, `bearer_methods_supported`).
    pub document: serde_json::Value,
    /// The scopes every request needs, named in the challenge to a request without a token.
    pub scopes: Vec<String>,
}

pub type AuthFuture<'a> = Pin<Box<dyn Future<Output = Result<Principal, Denied>> + Send + 'a>>;

/// Authenticates agents. Implementations must bound their own work: a flood of bad tokens must not make them
/// hammer an identity provider.
pub trait AgentAuth: Send + Sync + Debug + 'static {
    /// Checks a request's `Authorization` header value (`None` without one; [`bearer_token`] reads it).
    fn authenticate<'a>(&'a self, authorization: Option<&'a [u8]>) -> AuthFuture<'a>;

    /// The scopes a call of `tool` needs, besides those every request needs.
    fn tool_scopes(&self, tool: &str) -> &[String];

    /// The resource metadata to serve and to name in challenges.
    fn metadata(&self) -> Option<&ResourceMetadata>;

    /// Told of every refusal, for metrics.
    fn refused(&self, denied: &Denied) {
        let _ = denied;
    }
}

/// The `WWW-Authenticate` value for a refusal (RFC 6750 §3, RFC 9728 §5.1). Quotes and backslashes in the detail
/// are dropped: it is our own text, and a header value must stay one quoted string.
pub fn challenge(denied: &Denied, metadata: Option<&ResourceMetadata>) -> String {
    let mut parts = Vec::new();
    if let Some(m) = metadata {
        parts.push(format!("resource_metadata=\"{}\"", m.url));
    } else {
        parts.push("realm=\"mcpstorm\"".to_owned());
    }
    let scopes = if denied.scopes.is_empty() {
        metadata.map(|m| m.scopes.clone()).unwrap_or_default()
    } else {
        denied.scopes.clone()
    };
    if !scopes.is_empty() {
        parts.push(format!("scope=\"{}\"", scopes.join(" ")));
    }
    if let Some(code) = denied.error_code() {
        parts.push(format!("error=\"{code}\""));
        let detail: String = denied.detail.chars().filter(|c| *c != '"' && *c != '\\' && !c.is_control()).collect();
        parts.push(format!("error_description=\"{detail}\""));
    }
    format!("Bearer {}", parts.join(", "))
}

/// The front's static agent tokens, kept as HMAC tags under a random key of this process: checking one is a
/// constant-time tag comparison whatever the lengths, and the tokens themselves are not kept.
pub(crate) struct StaticTokens {
    key: hmac::Key,
    tags: Vec<hmac::Tag>,
}

impl StaticTokens {
    pub fn new(tokens: &[Secret]) -> Result<StaticTokens, KeyError> {
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &SystemRandom::new()).map_err(|_| KeyError::Random)?;
        let tags = tokens.iter().map(|t| hmac::sign(&key, t.expose().as_bytes())).collect();
        Ok(StaticTokens { key, tags })
    }

    pub fn is_empty(&self) -> bool {
        self.tags.is_empty()
    }

    /// Whether `token` is one of them. Every tag is tried: the time taken does not say which one matched.
    pub fn matches(&self, token: &[u8]) -> bool {
        self.tags.iter().fold(false, |found, tag| hmac::verify(&self.key, token, tag.as_ref()).is_ok() | found)
    }
}

/// The token of an `Authorization: Bearer <token>` value. The scheme is case-insensitive (RFC 9110); the token is
/// not.
pub fn bearer_token(authorization: &[u8]) -> Option<&[u8]> {
    let (scheme, token) = authorization.split_at_checked(7)?;
    let token = token.trim_ascii();
    (scheme.eq_ignore_ascii_case(b"bearer ") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> ResourceMetadata {
        ResourceMetadata {
            url: "https://gw.example/.well-known/oauth-protected-resource/mcp".into(),
            paths: vec![],
            document: serde_json::json!({}),
            scopes: vec!["mcp".into()],
        }
    }

    #[test]
    fn a_request_without_a_token_is_told_where_the_metadata_is_and_no_error() {
        let c = challenge(&Denied::new(DenyReason::Missing, "no token"), Some(&meta()));
        assert_eq!(
            c,
            "Bearer resource_metadata=\"https://gw.example/.well-known/oauth-protected-resource/mcp\", scope=\"mcp\""
        );
    }

    #[test]
    fn a_missing_scope_names_the_scopes_to_step_up_to() {
        let mut d = Denied::new(DenyReason::InsufficientScope, "add needs \"tools:add\"");
        d.scopes = vec!["mcp".into(), "tools:add".into()];
        let c = challenge(&d, Some(&meta()));
        assert!(c.contains("scope=\"mcp tools:add\""), "{c}");
        assert!(c.contains("error=\"insufficient_scope\""), "{c}");
        assert!(c.ends_with("error_description=\"add needs tools:add\""), "{c}");
        assert_eq!(d.status(), 403);
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive_and_the_token_is_not_empty() {
        assert_eq!(bearer_token(b"bEaReR abc"), Some(&b"abc"[..]));
        assert_eq!(bearer_token(b"Bearer "), None);
        assert_eq!(bearer_token(b"Basic abcdef"), None);
        assert_eq!(bearer_token(b"Bear"), None);
    }

    #[test]
    fn a_static_token_matches_only_itself() {
        let t = StaticTokens::new(&[Secret::new("s3cret")]).expect("key");
        assert!(t.matches(b"s3cret"));
        assert!(!t.matches(b"s3cre"));
        assert!(!t.matches(b"s3crett"));
    }
}
