//! The gateway as an OAuth client of one upstream server (`[servers.oauth]`): the core transport's
//! [`Authorizer`], shared by the server's replicas, so one token serves them all.
//!
//! - **Where to ask.** The server's protected resource metadata (RFC 9728: the URL its 401 names in
//!   `resource_metadata`, else its well-known URL), whose `resource` must be on the server's own origin, then its
//!   authorization server's metadata with an exact issuer match (`discovery`). A configured issuer or resource wins.
//! - **Asking.** `client_credentials`, with `resource` (RFC 8707) and the scopes, authenticated with HTTP Basic.
//! - **Keeping it fresh.** A token is renewed `refresh_before` its expiry in the background, by one task: calls go
//!   on with the old token meanwhile. Without a usable token, calls wait for the one request in flight (single
//!   flight: a thousand calls on an expired token make one token request).
//! - **Refusals.** A 401 forgets the token it refused (the transport then asks once more and resends once). A token
//!   fetched within `FRESH` of a refusal is kept: the second refusal then fails the call with `token_refused`, so
//!   a server that refuses every token costs no more than one token request per `FRESH`.
//! - **Delegation.** With `token_exchange`, a call made for an agent carries the agent's token (validated by
//!   `[auth]`), exchanged (RFC 8693) for a token of this server's audience, kept per agent (by its token's hash)
//!   until due for renewal, at most `max_delegated` agents; the gateway's own requests use client credentials.
//! - **Outages.** A failed token request makes calls that need a new token fail at once (`token_unavailable`) for
//!   a backoff that doubles up to `max_backoff`; a still-valid token keeps being used.
//! - **Naive** (`[gateway] profile = "naive"`): the first design, kept to show what the above prevents. Every call
//!   without a usable token asks for one itself, nothing is renewed ahead of expiry, every refusal forgets the token
//!   and nothing backs off: a mass expiry makes as many token requests as there are calls (the retry storm of
//!   docker-agent #3198, at the identity provider).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcpstorm_core::error::AuthError;
use mcpstorm_core::transport::{AuthorizationFuture, Authorizer, Fetcher};
use mcpstorm_core::{CallError, Clock, Dialer, Secret};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use super::assertion::ClientAuth;
use super::discovery::discover;
use super::{bearer, challenge_parameter as parameter, resource_covers, resource_metadata_urls};
use crate::config::{Grant, UpstreamAuthSpec};

/// How long after it was fetched a token is trusted over a refusal (see the module documentation).
const FRESH: Duration = Duration::from_secs(5);
/// RFC 8693's grant and token type.
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
/// A token without `expires_in` is used this long.
const DEFAULT_LIFETIME: Duration = Duration::from_secs(3600);

/// Told of every token request's outcome: `ok`, or why not (`http_NNN`, `unreachable`, `discovery`).
pub type OnTokenRequest = Arc<dyn Fn(&str) + Send + Sync>;

/// One agent's exchanged token; its lock makes the exchange single-flight per agent.
type Slot = Arc<tokio::sync::Mutex<Option<Token>>>;

#[derive(Debug, Clone)]
struct Token {
    secret: Secret,
    fetched: Instant,
    expires: Instant,
    refresh_at: Instant,
}

/// Where tokens come from, once found.
#[derive(Debug, Clone)]
struct Endpoint {
    token_url: String,
    resource: String,
}

#[derive(Debug, Default)]
struct State {
    token: Option<Token>,
    endpoint: Option<Endpoint>,
    /// The metadata URL a 401 named.
    named_metadata: Option<String>,
    backoff_until: Option<Instant>,
    failures: u32,
    last_error: Option<String>,
}

/// The OAuth client of one upstream server.
pub struct UpstreamAuth(Arc<Inner>);

struct Inner {
    server: String,
    spec: UpstreamAuthSpec,
    /// How the gateway proves who it is at the token endpoint.
    auth: ClientAuth,
    /// The first replica's URL: where the metadata is looked for, and the resource when nothing names one.
    url: String,
    clock: Arc<dyn Clock>,
    dialer: Option<Arc<dyn Dialer>>,
    state: Mutex<State>,
    /// Held by the one token request in flight.
    fetching: tokio::sync::Mutex<()>,
    /// A background renewal is running.
    renewing: AtomicBool,
    /// Exchanged tokens, by the SHA-256 of the agent's token (never the token).
    delegated: Mutex<HashMap<[u8; 32], Slot>>,
    on_request: Option<OnTokenRequest>,
    /// Per-call tokens, no renewal ahead, no backoff (see the module documentation).
    naive: bool,
}

impl std::fmt::Debug for UpstreamAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamAuth")
            .field("server", &self.0.server)
            .field("client_id", &self.0.spec.client_id)
            .finish()
    }
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default)]
    expires_in: Option<f64>,
}

impl UpstreamAuth {
    /// The client of server `server`, whose first replica is at `url`, authenticating with `auth`.
    pub fn new(
        server: &str,
        spec: &UpstreamAuthSpec,
        auth: ClientAuth,
        url: &str,
        clock: Arc<dyn Clock>,
        on_request: Option<OnTokenRequest>,
    ) -> UpstreamAuth {
        UpstreamAuth(Arc::new(Inner {
            server: server.to_owned(),
            spec: spec.clone(),
            auth,
            url: url.to_owned(),
            clock,
            dialer: None,
            state: Mutex::default(),
            fetching: tokio::sync::Mutex::new(()),
            renewing: AtomicBool::new(false),
            delegated: Mutex::default(),
            on_request,
            naive: false,
        }))
    }

    /// Reaches the metadata and token endpoints through `dialer` instead of TCP to their URLs' hosts (the
    /// simulator's network). Before the client is shared.
    pub fn with_dialer(mut self, dialer: Arc<dyn Dialer>) -> UpstreamAuth {
        if let Some(inner) = Arc::get_mut(&mut self.0) {
            inner.dialer = Some(dialer);
        }
        self
    }

    /// The naive client (see the module documentation). Before the client is shared.
    pub fn naive(mut self) -> UpstreamAuth {
        if let Some(inner) = Arc::get_mut(&mut self.0) {
            inner.naive = true;
        }
        self
    }
}

impl Inner {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn authorization(self: &Arc<Self>) -> Result<Option<Secret>, CallError> {
        let now = self.clock.now();
        let current = self.state().token.clone();
        if self.naive {
            return self.per_call(current.filter(|t| now < t.expires)).await;
        }
        if let Some(token) = current.as_ref().filter(|t| now < t.expires) {
            if now >= token.refresh_at && !self.renewing.swap(true, Ordering::AcqRel) {
                let (inner, seen) = (self.clone(), token.secret.clone());
                tokio::spawn(async move {
                    let _ = inner.fetch_single_flight(Some(&seen)).await;
                    inner.renewing.store(false, Ordering::Release);
                });
            }
            return Ok(Some(bearer(&token.secret)));
        }
        let token = self.fetch_single_flight(current.as_ref().map(|t| &t.secret)).await?;
        Ok(Some(bearer(&token.secret)))
    }

    /// The naive client's token: the one it holds while unexpired, else one this call asks for itself (no turn
    /// taken, no backoff honoured); the last to arrive is kept.
    async fn per_call(&self, current: Option<Token>) -> Result<Option<Secret>, CallError> {
        if let Some(token) = current {
            return Ok(Some(bearer(&token.secret)));
        }
        match self.fetch(None).await {
            Ok(token) => {
                let value = bearer(&token.secret);
                self.state().token = Some(token);
                Ok(Some(value))
            }
            Err((label, why)) => {
                self.count(label);
                Err(unavailable(&why))
            }
        }
    }

    /// A token other than `seen` (the one the caller found unusable, or is renewing): the one another caller got
    /// while this one waited its turn, or a new one.
    async fn fetch_single_flight(&self, seen: Option<&Secret>) -> Result<Token, CallError> {
        let _turn = self.fetching.lock().await;
        let now = self.clock.now();
        {
            let state = self.state();
            if let Some(token) = &state.token
                && Some(&token.secret) != seen
                && now < token.expires
            {
                return Ok(token.clone());
            }
            if let Some(until) = state.backoff_until.filter(|u| now < *u) {
                let why = state.last_error.clone().unwrap_or_default();
                return Err(unavailable(&format!("{why} (next try in {:?})", until - now)));
            }
        }
        match self.fetch(None).await {
            Ok(token) => {
                let mut state = self.state();
                state.token = Some(token.clone());
                state.failures = 0;
                state.backoff_until = None;
                Ok(token)
            }
            Err((label, why)) => Err(self.failed(label, why)),
        }
    }

    /// A failed token request: counted, logged, and the backoff begun (or lengthened).
    fn failed(&self, label: &str, why: String) -> CallError {
        self.count(label);
        tracing::warn!(server = %self.server, error = %why, "no access token for the upstream");
        let mut state = self.state();
        let backoff = self.spec.backoff.0.saturating_mul(1 << state.failures.min(16)).min(self.spec.max_backoff.0);
        state.failures += 1;
        state.backoff_until = Some(self.clock.now() + backoff);
        let error = unavailable(&why);
        state.last_error = Some(why);
        error
    }

    /// A token of this server's for the agent whose token is `subject` (token exchange), kept per agent until it
    /// is due for renewal. One exchange at a time per agent; agents do not wait for each other.
    async fn delegated(&self, subject: &Secret) -> Result<Secret, CallError> {
        let key: [u8; 32] = Sha256::digest(subject.expose().as_bytes()).into();
        let slot = self.slot(key);
        let mut held = slot.lock().await;
        let now = self.clock.now();
        if let Some(token) = held.as_ref().filter(|t| now < t.refresh_at) {
            return Ok(bearer(&token.secret));
        }
        if let Some(until) = self.state().backoff_until.filter(|u| now < *u) {
            let why = self.state().last_error.clone().unwrap_or_default();
            return Err(unavailable(&format!("{why} (next try in {:?})", until - now)));
        }
        match self.fetch(Some(subject)).await {
            Ok(token) => {
                let value = bearer(&token.secret);
                *held = Some(token);
                self.state().failures = 0;
                Ok(value)
            }
            Err((label, why)) => Err(self.failed(label, why)),
        }
    }

    /// The agent's slot, made when new. At `max_delegated` agents, the slots of expired tokens go first, then
    /// any idle one.
    fn slot(&self, key: [u8; 32]) -> Slot {
        let mut slots = self.delegated.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(slot) = slots.get(&key) {
            return slot.clone();
        }
        if slots.len() >= self.spec.max_delegated {
            let now = self.clock.now();
            slots.retain(|_, s| s.try_lock().map_or(true, |t| t.as_ref().is_some_and(|t| now < t.expires)));
        }
        if slots.len() >= self.spec.max_delegated {
            let idle = slots.iter().find(|(_, s)| s.try_lock().is_ok()).map(|(k, _)| *k);
            if let Some(idle) = idle {
                slots.remove(&idle);
            }
        }
        slots.entry(key).or_default().clone()
    }

    fn count(&self, outcome: &str) {
        if let Some(hook) = &self.on_request {
            hook(outcome);
        }
    }

    /// One token request (after discovery, the first time): the gateway's own (client credentials), or, with a
    /// subject token, an exchange of it (RFC 8693). The error is a metrics label and a message.
    async fn fetch(&self, subject: Option<&Secret>) -> Result<Token, (&'static str, String)> {
        let endpoint = self.endpoint().await.map_err(|e| ("discovery", e))?;
        let fetcher = Fetcher::new(&endpoint.token_url, self.dialer.clone(), self.clock.clone(), self.spec.timeout.0)
            .map_err(|e| ("discovery", e.to_string()))?;
        let scope = self.spec.scopes.join(" ");
        let mut form = match subject {
            None => vec![("grant_type", "client_credentials")],
            Some(subject) => vec![
                ("grant_type", TOKEN_EXCHANGE),
                ("subject_token", subject.expose()),
                ("subject_token_type", ACCESS_TOKEN_TYPE),
            ],
        };
        form.push(("resource", endpoint.resource.as_str()));
        if !scope.is_empty() {
            form.push(("scope", scope.as_str()));
        }
        let proof =
            self.auth.form_fields(&endpoint.token_url, self.clock.wall_ms() / 1000).map_err(|e| ("assertion", e))?;
        form.extend(proof.iter().map(|(k, v)| (*k, v.as_str())));
        let started = self.clock.now();
        let fetched = fetcher.post_form(&form, self.auth.header()).await.map_err(|e| ("unreachable", e.to_string()))?;
        if fetched.status != 200 {
            let error = fetched.json().and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_owned));
            let why = format!("the token endpoint answered HTTP {} {}", fetched.status, error.unwrap_or_default());
            return Err((if fetched.status >= 500 { "http_5xx" } else { "http_4xx" }, why));
        }
        let answer: TokenAnswer = serde_json::from_slice(&fetched.body)
            .map_err(|_| ("http_2xx_unreadable", "not a token answer".to_owned()))?;
        if answer.token_type.as_deref().is_some_and(|t| !t.eq_ignore_ascii_case("bearer")) {
            return Err(("http_2xx_unreadable", "not a bearer token".to_owned()));
        }
        self.count("ok");
        let lifetime = answer.expires_in.filter(|s| *s > 0.0).map_or(DEFAULT_LIFETIME, Duration::from_secs_f64);
        // Counted from when the request left: the token's clock started no later.
        let expires = started + lifetime;
        let early = self.spec.refresh_before.0.min(lifetime / 2);
        Ok(Token { secret: Secret::new(answer.access_token), fetched: started, expires, refresh_at: expires - early })
    }

    /// The token endpoint and the resource, found once.
    async fn endpoint(&self) -> Result<Endpoint, String> {
        if let Some(found) = self.state().endpoint.clone() {
            return Ok(found);
        }
        let named = self.state().named_metadata.clone();
        let (issuer, resource) = match (&self.spec.issuer, named) {
            (Some(issuer), _) => (issuer.clone(), self.spec.resource.clone().unwrap_or_else(|| self.url.clone())),
            (None, named) => self.resource_metadata(named).await?,
        };
        let timeout = self.spec.timeout.0;
        let meta =
            discover(&issuer, self.dialer.clone(), self.clock.clone(), timeout).await.map_err(|e| e.to_string())?;
        let token_url = meta.token_endpoint.ok_or_else(|| format!("{issuer} publishes no token_endpoint"))?;
        let found = Endpoint { token_url, resource: self.spec.resource.clone().unwrap_or(resource) };
        self.state().endpoint = Some(found.clone());
        Ok(found)
    }

    /// The issuer and resource the server's protected resource metadata names.
    async fn resource_metadata(&self, named: Option<String>) -> Result<(String, String), String> {
        let urls = match named {
            Some(url) => vec![url],
            None => resource_metadata_urls(&self.url),
        };
        for url in &urls {
            let fetcher = Fetcher::new(url, self.dialer.clone(), self.clock.clone(), self.spec.timeout.0)
                .map_err(|e| format!("{url}: {e}"))?;
            let Ok(fetched) = fetcher.get_json().await else { continue };
            let Some(doc) = fetched.json().filter(|_| fetched.status == 200) else { continue };
            let resource = doc.get("resource").and_then(|r| r.as_str()).unwrap_or(&self.url).to_owned();
            if !resource_covers(&resource, &self.url) {
                return Err(format!("{url} names the resource {resource}, which is not {}", self.url));
            }
            let issuer = doc
                .get("authorization_servers")
                .and_then(|a| a.get(0))
                .and_then(|a| a.as_str())
                .ok_or_else(|| format!("{url} names no authorization server"))?;
            return Ok((issuer.to_owned(), resource));
        }
        Err(format!("no protected resource metadata at {}", urls.join(" or ")))
    }

    fn refused(&self, sent: Option<&Secret>, challenge: Option<&str>) {
        let mut state = self.state();
        if let Some(url) = challenge.and_then(|c| parameter(c, "resource_metadata"))
            && state.endpoint.is_none()
        {
            state.named_metadata = Some(url);
        }
        let now = self.clock.now();
        let refused_current =
            state.token.as_ref().is_some_and(|t| sent.is_some_and(|s| s.expose() == bearer(&t.secret).expose()));
        let trusted = |t: &Token| !self.naive && now.duration_since(t.fetched) < FRESH;
        if refused_current && state.token.as_ref().is_some_and(|t| !trusted(t)) {
            state.token = None;
        }
        drop(state);
        let Some(sent) = sent else { return };
        for slot in self.delegated.lock().unwrap_or_else(PoisonError::into_inner).values() {
            if let Ok(mut held) = slot.try_lock()
                && held.as_ref().is_some_and(|t| bearer(&t.secret) == *sent && now.duration_since(t.fetched) >= FRESH)
            {
                *held = None;
            }
        }
    }
}

impl Authorizer for UpstreamAuth {
    fn authorization<'a>(&'a self, on_behalf_of: Option<&'a Secret>) -> AuthorizationFuture<'a> {
        match (self.0.spec.grant, on_behalf_of) {
            (Grant::TokenExchange, Some(subject)) => Box::pin(async move { self.0.delegated(subject).await.map(Some) }),
            _ => Box::pin(self.0.authorization()),
        }
    }

    fn refused(&self, sent: Option<&Secret>, challenge: Option<&str>) -> bool {
        self.0.refused(sent, challenge);
        true
    }
}

fn unavailable(why: &str) -> CallError {
    AuthError::TokenUnavailable(why.to_owned()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_is_looked_for_with_the_path_then_at_the_root() {
        assert_eq!(
            resource_metadata_urls("http://127.0.0.1:9/mcp"),
            [
                "http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp",
                "http://127.0.0.1:9/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(crate::oauth::origin("https://a.example:8443/x/y"), "https://a.example:8443");
    }

    #[test]
    fn a_challenge_parameter_is_read_by_name() {
        let c =
            r#"Bearer error="invalid_token", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp""#;
        assert_eq!(
            parameter(c, "resource_metadata").as_deref(),
            Some("http://h/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(parameter(c, "scope"), None);
    }
}
