//! The gateway as an OAuth 2.1 resource server (`[auth]`): the core front's [`AgentAuth`]. It publishes its metadata
//! (RFC 9728), finds the issuer's metadata once (`discovery`), and checks each agent's token: a JWT against the
//! issuer's keys (`jwt`, `keys`), anything else by introspection when configured (`introspect`).
//!
//! The issuer is found lazily and again after a failure, at most once per backoff: a gateway whose identity provider
//! is down at start serves 503 with `Retry-After` to agents (their tokens cannot be checked), and recovers by itself.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use jsonwebtoken::Algorithm;
use mcpstorm_core::serve::auth::{
    AgentAuth, AuthFuture, Denied, DenyReason, Principal, ResourceMetadata, bearer_token,
};
use mcpstorm_core::transport::Fetcher;
use mcpstorm_core::{Clock, Dialer, Secret};
use serde_json::json;
use tokio::sync::OnceCell;
use tokio::time::Instant;

use super::discovery::{ServerMetadata, discover};
use super::introspect::Introspector;
use super::jwt::{self, Expect};
use super::keys::KeySet;
use crate::config::AuthSpec;

/// Told of every refusal (the process counts them by reason in its metrics).
pub type OnRefused = Arc<dyn Fn(&Denied) + Send + Sync>;

/// What discovery gives: the keys, and the introspection endpoint when configured.
#[derive(Debug)]
struct Issuer {
    keys: Option<KeySet>,
    introspector: Option<Introspector>,
}

/// The resource server of one `[auth]` table.
pub struct ResourceServer {
    spec: AuthSpec,
    expect: Expect,
    metadata: ResourceMetadata,
    introspection_secret: Option<Secret>,
    clock: Arc<dyn Clock>,
    dialer: Option<Arc<dyn Dialer>>,
    issuer: OnceCell<Issuer>,
    /// When discovery may be tried again after a failure, and the failures so far.
    retry: Mutex<(Option<Instant>, u32)>,
    on_refused: Option<OnRefused>,
}

impl std::fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceServer")
            .field("issuer", &self.spec.issuer)
            .field("audience", &self.spec.audience)
            .finish_non_exhaustive()
    }
}

/// Discovery's first backoff; doubled per failure up to `keys_min_interval`.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);

impl ResourceServer {
    /// The resource server `spec` describes. `introspection_secret` is the value of its client secret variable;
    /// `dialer` reaches the identity provider (`None`: TCP to each URL's host).
    pub fn new(
        spec: &AuthSpec,
        introspection_secret: Option<Secret>,
        clock: Arc<dyn Clock>,
        dialer: Option<Arc<dyn Dialer>>,
        on_refused: Option<OnRefused>,
    ) -> ResourceServer {
        let algorithms = spec.algorithms.iter().filter_map(|a| a.parse::<Algorithm>().ok()).collect();
        let expect =
            Expect { issuer: spec.issuer.clone(), audience: spec.audience.clone(), algorithms, leeway: spec.leeway.0 };
        ResourceServer {
            expect,
            metadata: metadata(spec),
            spec: spec.clone(),
            introspection_secret,
            clock,
            dialer,
            issuer: OnceCell::new(),
            retry: Mutex::new((None, 0)),
            on_refused,
        }
    }

    /// Finds the issuer now (the process calls it at start, so the first agent does not wait for it).
    pub async fn warm(&self) {
        let _ = self.issuer().await;
    }

    async fn issuer(&self) -> Result<&Issuer, Denied> {
        if let Some(found) = self.issuer.get() {
            return Ok(found);
        }
        let unverifiable = || Denied::new(DenyReason::Unverifiable, "the identity provider cannot be reached now");
        if self.retry.lock().unwrap_or_else(PoisonError::into_inner).0.is_some_and(|t| self.clock.now() < t) {
            return Err(unverifiable());
        }
        let found = self
            .issuer
            .get_or_try_init(|| async {
                let timeout = self.spec.timeout.0;
                let meta = discover(&self.spec.issuer, self.dialer.clone(), self.clock.clone(), timeout).await;
                meta.map_err(|e| e.to_string()).and_then(|meta| self.issuer_of(&meta))
            })
            .await;
        match found {
            Ok(found) => Ok(found),
            Err(why) => {
                let mut retry = self.retry.lock().unwrap_or_else(PoisonError::into_inner);
                let backoff = FIRST_BACKOFF.saturating_mul(1 << retry.1.min(16)).min(self.spec.keys_min_interval.0);
                *retry = (Some(self.clock.now() + backoff), retry.1 + 1);
                tracing::warn!(issuer = %self.spec.issuer, error = %why, "the identity provider's metadata could not be had");
                Err(unverifiable())
            }
        }
    }

    fn issuer_of(&self, meta: &ServerMetadata) -> Result<Issuer, String> {
        let fetcher = |url: &str| {
            Fetcher::new(url, self.dialer.clone(), self.clock.clone(), self.spec.timeout.0)
                .map_err(|e| format!("{url}: {e}"))
        };
        let keys = match &meta.jwks_uri {
            Some(url) => Some(KeySet::new(
                fetcher(url)?,
                self.clock.clone(),
                self.spec.keys_ttl.0,
                self.spec.keys_min_interval.0,
            )),
            None => None,
        };
        let introspector = match (&self.spec.introspection, &self.introspection_secret) {
            (Some(intro), Some(secret)) => {
                let url =
                    meta.introspection_endpoint.as_deref().ok_or("the issuer publishes no introspection_endpoint")?;
                Some(Introspector::new(
                    fetcher(url)?,
                    &intro.client_id,
                    secret,
                    (&self.spec.issuer, &self.spec.audience),
                    self.clock.clone(),
                    intro.cache_entries,
                    intro.cache_ttl.0,
                ))
            }
            _ => None,
        };
        if keys.is_none() && introspector.is_none() {
            return Err("the issuer publishes no jwks_uri and no introspection is configured".to_owned());
        }
        Ok(Issuer { keys, introspector })
    }

    async fn check(&self, authorization: Option<&[u8]>) -> Result<Principal, Denied> {
        let Some(raw) = authorization.and_then(bearer_token) else {
            return Err(Denied::new(DenyReason::Missing, "an access token is required"));
        };
        let token = std::str::from_utf8(raw).map_err(|_| Denied::new(DenyReason::Malformed, "not a token"))?;
        let issuer = self.issuer().await?;
        if jwt::looks_like_jwt(token) {
            let Some(keys) = &issuer.keys else {
                return Err(Denied::new(DenyReason::Malformed, "JWTs are not accepted: the issuer publishes no keys"));
            };
            let principal = jwt::check(token, &self.expect, keys, self.clock.wall_ms()).await?;
            return self.with_base_scopes(principal);
        }
        match &issuer.introspector {
            Some(introspector) => self.with_base_scopes(introspector.check(token).await?),
            None => Err(Denied::new(DenyReason::Malformed, "not a JWT, and opaque tokens are not accepted")),
        }
    }

    /// The principal, when it holds every scope each request needs.
    fn with_base_scopes(&self, principal: Principal) -> Result<Principal, Denied> {
        let missing = principal.missing(&self.spec.scopes);
        if missing.is_empty() {
            return Ok(principal);
        }
        let mut denied =
            Denied::new(DenyReason::InsufficientScope, format!("every request needs {}", missing.join(" ")));
        denied.scopes = self.spec.scopes.clone();
        Err(denied)
    }
}

impl AgentAuth for ResourceServer {
    fn authenticate<'a>(&'a self, authorization: Option<&'a [u8]>) -> AuthFuture<'a> {
        Box::pin(self.check(authorization))
    }

    fn tool_scopes(&self, tool: &str) -> &[String] {
        self.spec.tool_scopes.get(tool).map_or(&[], Vec::as_slice)
    }

    fn metadata(&self) -> Option<&ResourceMetadata> {
        Some(&self.metadata)
    }

    fn refused(&self, denied: &Denied) {
        if let Some(hook) = &self.on_refused {
            hook(denied);
        }
    }
}

/// The RFC 9728 document and where it is served: for `https://gw.example/mcp`, at
/// `/.well-known/oauth-protected-resource/mcp` (the path-suffixed form clients try first) and at the root form.
fn metadata(spec: &AuthSpec) -> ResourceMetadata {
    let (origin, path) = split_url(&spec.audience);
    let root = "/.well-known/oauth-protected-resource".to_owned();
    let suffixed = format!("{root}{path}");
    let mut supported: Vec<String> = spec.scopes.clone();
    let by_tool: BTreeMap<_, _> = spec.tool_scopes.iter().collect();
    for scope in by_tool.values().flat_map(|s| s.iter()) {
        if !supported.contains(scope) {
            supported.push(scope.clone());
        }
    }
    ResourceMetadata {
        url: format!("{origin}{suffixed}"),
        paths: if path.is_empty() { vec![root] } else { vec![suffixed, root] },
        document: json!({
            "resource": spec.audience,
            "authorization_servers": [spec.issuer],
            "scopes_supported": supported,
            "bearer_methods_supported": ["header"],
            "resource_name": "mcpstorm gateway",
        }),
        scopes: spec.scopes.clone(),
    }
}

/// `https://host:port/path` as (`https://host:port`, `/path`), with no trailing slash on the path.
fn split_url(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let path_at = url[after_scheme..].find('/').map_or(url.len(), |i| after_scheme + i);
    let (origin, path) = url.split_at(path_at);
    (origin, path.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_names_the_resource_its_issuer_and_every_scope() {
        let mut spec =
            AuthSpec { issuer: "https://idp".into(), audience: "https://gw.example/mcp".into(), ..AuthSpec::default() };
        spec.scopes = vec!["mcp".into()];
        spec.tool_scopes.insert("add".into(), vec!["tools:add".into(), "mcp".into()]);
        let m = metadata(&spec);
        assert_eq!(m.url, "https://gw.example/.well-known/oauth-protected-resource/mcp");
        assert_eq!(m.paths, ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]);
        assert_eq!(m.document["scopes_supported"], json!(["mcp", "tools:add"]));
        assert_eq!(m.document["authorization_servers"], json!(["https://idp"]));
        assert_eq!(m.document["resource"], "https://gw.example/mcp");
    }

    #[test]
    fn a_url_splits_into_origin_and_path() {
        assert_eq!(split_url("http://127.0.0.1:8/mcp/"), ("http://127.0.0.1:8", "/mcp"));
        assert_eq!(split_url("https://gw"), ("https://gw", ""));
    }
}
