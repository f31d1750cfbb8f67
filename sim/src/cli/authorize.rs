//! `tools --http` and `call --http` as a person's OAuth client (the MCP authorization spec, client side): the
//! transport's [`Authorizer`] that, once the server answers 401, finds where to authorize and gets a token with the
//! authorization code flow and PKCE S256.
//!
//! - **Discovery.** The protected resource metadata the 401 names (`resource_metadata`), else its well-known URLs
//!   (path-suffixed, then root); then the authorization server's metadata (`gateway::oauth::discovery`: RFC 8414,
//!   then OpenID, exact issuer match). A server with neither (the 2025-03-26 revision) has its authorization server
//!   at its own origin, or, with no metadata at all, the default endpoints `/authorize`, `/token`, `/register`.
//! - **Scopes.** The challenge's `scope`, else the resource's `scopes_supported`, else none; `offline_access` is
//!   added when the authorization server offers it and refresh tokens. A 403 `insufficient_scope` asks again with
//!   the scopes it names, at most `MAX_AUTHORIZATIONS` times in all.
//! - **The client.** `--oauth-client-id` (pre-registered, with `--oauth-client-secret-env` for a confidential one);
//!   else `--oauth-client-metadata-url` when the server supports client ID metadata documents; else dynamic client
//!   registration. The token endpoint's authentication is what registration said, else what the server supports
//!   (`client_secret_basic`, `client_secret_post`, or none for a public client).
//! - **The code.** The authorization URL is fetched: a server that approves at once redirects to our loopback
//!   `redirect_uri` with the code. Otherwise the URL is printed for the person to open, and the redirect is awaited
//!   on that loopback port.
//! - **Tokens** carry `resource` (RFC 8707) in every request; a refresh token is used before a new authorization.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcpstorm_core::error::AuthError;
use mcpstorm_core::transport::{AuthorizationFuture, Authorizer, Fetcher};
use mcpstorm_core::{CallError, Clock, Secret};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::gateway::oauth::discovery::{self, ServerMetadata};
use crate::gateway::oauth::{
    bearer, challenge_parameter as parameter, origin, resource_covers, resource_metadata_urls,
};

/// Authorizations one command may make (the first, and step-ups): a server that keeps asking for more gets no more.
const MAX_AUTHORIZATIONS: u32 = 3;
/// How long a person has to approve in their browser.
const APPROVAL_WAIT: Duration = Duration::from_secs(300);
const TIMEOUT: Duration = Duration::from_secs(30);

/// Who the client is, from the command line.
#[derive(Debug, Clone, Default)]
pub struct ClientIdentity {
    pub client_id: Option<String>,
    pub client_secret: Option<Secret>,
    pub metadata_url: Option<String>,
}

#[derive(Debug, Default)]
struct State {
    token: Option<Secret>,
    refresh: Option<Secret>,
    /// The latest challenge's `resource_metadata` and `scope`.
    metadata_url: Option<String>,
    scope: Option<String>,
    authorizations: u32,
    /// Set by a refusal: the next request needs a (new) token.
    wanted: bool,
}

/// The OAuth client of one `--http` server.
pub struct UserAuth(Arc<Inner>);

struct Inner {
    url: String,
    identity: ClientIdentity,
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
    flow: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for UserAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserAuth").field("url", &self.0.url).finish_non_exhaustive()
    }
}

impl UserAuth {
    pub fn new(url: &str, identity: ClientIdentity, clock: Arc<dyn Clock>) -> UserAuth {
        UserAuth(Arc::new(Inner {
            url: url.to_owned(),
            identity,
            clock,
            state: Mutex::default(),
            flow: tokio::sync::Mutex::new(()),
        }))
    }
}

impl Authorizer for UserAuth {
    fn authorization<'a>(&'a self, _on_behalf_of: Option<&'a Secret>) -> AuthorizationFuture<'a> {
        Box::pin(self.0.authorization())
    }

    /// Only a `Bearer` challenge starts an authorization: a server that asks for something else (Basic, or nothing)
    /// gets its 401 reported as it is.
    fn refused(&self, sent: Option<&Secret>, challenge: Option<&str>) -> bool {
        if !challenge.is_some_and(|c| c.trim_start().get(..6).is_some_and(|s| s.eq_ignore_ascii_case("bearer"))) {
            return false;
        }
        let mut state = self.0.state();
        if let Some(c) = challenge {
            if let Some(url) = parameter(c, "resource_metadata") {
                state.metadata_url = Some(url);
            }
            if let Some(scope) = parameter(c, "scope") {
                state.scope = Some(scope);
            }
        }
        let current = state.token.as_ref().map(bearer);
        if sent.is_none() || current.as_ref() == sent {
            state.token = None;
            state.wanted = true;
        }
        true
    }
}

/// Where tokens come from, for one authorization.
struct Endpoints {
    authorization: String,
    token: String,
    registration: Option<String>,
    meta: Value,
    resource: String,
    scope: Option<String>,
}

impl Inner {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn authorization(&self) -> Result<Option<Secret>, CallError> {
        if let Some(token) = self.state().token.clone() {
            return Ok(Some(bearer(&token)));
        }
        // Nothing asked for yet: the request goes without a token, and a 401 says where to get one.
        if !self.state().wanted {
            return Ok(None);
        }
        let _flow = self.flow.lock().await;
        if let Some(token) = self.state().token.clone() {
            return Ok(Some(bearer(&token)));
        }
        let token = self.authorize().await.map_err(|why| {
            CallError::from(AuthError::TokenUnavailable(format!(
                "the server asks for authorization (HTTP 401) and OAuth could not give it: {why}"
            )))
        })?;
        let mut state = self.state();
        state.token = Some(token.clone());
        state.wanted = false;
        Ok(Some(bearer(&token)))
    }

    fn fetcher(&self, url: &str) -> Result<Fetcher, String> {
        Fetcher::new(url, None, self.clock.clone(), TIMEOUT).map_err(|e| format!("{url}: {e}"))
    }

    async fn authorize(&self) -> Result<Secret, String> {
        {
            let mut state = self.state();
            if state.authorizations >= MAX_AUTHORIZATIONS {
                return Err(format!("the server still refuses after {MAX_AUTHORIZATIONS} authorizations"));
            }
            state.authorizations += 1;
        }
        let endpoints = self.endpoints().await?;
        let refresh = self.state().refresh.take();
        if let Some(refresh) = refresh
            && let Ok(token) = self.refresh(&endpoints, &refresh).await
        {
            return Ok(token);
        }
        let client = self.client(&endpoints).await?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(|e| format!("loopback: {e}"))?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        let redirect = format!("http://127.0.0.1:{port}/callback");
        let verifier = URL_SAFE_NO_PAD.encode(random_bytes::<32>()?);
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        let state_value = URL_SAFE_NO_PAD.encode(random_bytes::<16>()?);
        let mut query = vec![
            ("response_type", "code"),
            ("client_id", client.id.as_str()),
            ("redirect_uri", redirect.as_str()),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("state", state_value.as_str()),
            ("resource", endpoints.resource.as_str()),
        ];
        if let Some(scope) = &endpoints.scope {
            query.push(("scope", scope.as_str()));
        }
        let query = form_urlencoded::Serializer::new(String::new()).extend_pairs(&query).finish();
        let separator = if endpoints.authorization.contains('?') { '&' } else { '?' };
        let url = format!("{}{separator}{query}", endpoints.authorization);
        let code = self.code(&url, &redirect, &state_value, listener).await?;
        let form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code),
            ("redirect_uri", redirect),
            ("code_verifier", verifier),
            ("resource", endpoints.resource.clone()),
        ];
        self.token_request(&endpoints, &client, form).await
    }

    /// The code: from the redirect of an authorization server that approves at once, else from the person's
    /// browser, redirected to our loopback listener.
    async fn code(
        &self,
        url: &str,
        redirect: &str,
        state: &str,
        listener: tokio::net::TcpListener,
    ) -> Result<String, String> {
        let fetched = self.fetcher(url)?.get_json().await.map_err(|e| format!("{url}: {e}"))?;
        let location =
            fetched.headers.get("location").and_then(|l| l.to_str().ok()).filter(|l| l.starts_with(redirect));
        if let Some(location) = location {
            return code_of(location, state);
        }
        eprintln!("Open this URL to authorize mcpstorm:\n{url}");
        let wait = async {
            let (mut socket, _) = listener.accept().await.map_err(|e| e.to_string())?;
            // One request head is all a redirect brings: read it, answer, close.
            let mut head = vec![0; 8192];
            let n = socket.read(&mut head).await.map_err(|e| e.to_string())?;
            let line = String::from_utf8_lossy(&head[..n]).lines().next().unwrap_or_default().to_owned();
            let target = line.split(' ').nth(1).unwrap_or_default().to_owned();
            let body = "mcpstorm is authorized; you can close this page.";
            let answer =
                format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len());
            let _ = socket.write_all(answer.as_bytes()).await;
            code_of(&format!("http://127.0.0.1{target}"), state)
        };
        tokio::time::timeout(APPROVAL_WAIT, wait).await.map_err(|_| "no authorization within 5 minutes".to_owned())?
    }

    /// The endpoints and the resource and scopes to ask for.
    async fn endpoints(&self) -> Result<Endpoints, String> {
        let (named, challenge_scope) = {
            let state = self.state();
            (state.metadata_url.clone(), state.scope.clone())
        };
        let origin = origin(&self.url).to_owned();
        let resource_doc = self.resource_metadata(named).await;
        let (issuer, resource, supported) = match &resource_doc {
            Some(doc) => {
                let resource = doc.get("resource").and_then(Value::as_str).unwrap_or(&self.url).to_owned();
                if !resource_covers(&resource, &self.url) {
                    return Err(format!(
                        "the server's metadata names the resource {resource}, which is not {}",
                        self.url
                    ));
                }
                let issuer = doc.pointer("/authorization_servers/0").and_then(Value::as_str).unwrap_or(&origin);
                let supported = doc.get("scopes_supported").and_then(Value::as_array).map(|s| words(s));
                (issuer.to_owned(), resource, supported)
            }
            None => (origin.clone(), self.url.clone(), None),
        };
        let meta = if resource_doc.is_some() {
            discovery::discover(&issuer, None, self.clock.clone(), TIMEOUT).await.map_err(|e| e.to_string())?
        } else {
            self.march_metadata(&origin).await
        };
        let raw = &meta.rest;
        let authorization = raw
            .get("authorization_endpoint")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{issuer} publishes no authorization_endpoint"))?
            .to_owned();
        let token = meta.token_endpoint.clone().ok_or_else(|| format!("{issuer} publishes no token_endpoint"))?;
        let registration = raw.get("registration_endpoint").and_then(Value::as_str).map(str::to_owned);
        let mut scope = challenge_scope.or(supported);
        let offers = |key: &str, value: &str| {
            raw.get(key).and_then(Value::as_array).is_some_and(|a| a.iter().any(|v| v.as_str() == Some(value)))
        };
        if let Some(s) = scope.as_mut()
            && offers("scopes_supported", "offline_access")
            && offers("grant_types_supported", "refresh_token")
            && !s.split(' ').any(|w| w == "offline_access")
        {
            s.push_str(" offline_access");
        }
        Ok(Endpoints { authorization, token, registration, meta: Value::Object(meta.rest), resource, scope })
    }

    /// A server of the 2025-03-26 revision (no resource metadata): its authorization server's metadata at its own
    /// origin, taken as it is (that revision had no issuer to match), else the default endpoints there.
    async fn march_metadata(&self, origin: &str) -> ServerMetadata {
        let url = format!("{origin}/.well-known/oauth-authorization-server");
        let found = match self.fetcher(&url) {
            Ok(fetcher) => fetcher.get_json().await.ok().filter(|f| f.status == 200).and_then(|f| f.json()),
            Err(_) => None,
        };
        let mut doc = found.filter(Value::is_object).unwrap_or_else(|| {
            json!({"authorization_endpoint": format!("{origin}/authorize"), "token_endpoint": format!("{origin}/token"),
                   "registration_endpoint": format!("{origin}/register")})
        });
        if doc.get("issuer").and_then(Value::as_str).is_none() {
            doc["issuer"] = Value::from(origin);
        }
        serde_json::from_value(doc).unwrap_or_else(|_| ServerMetadata {
            issuer: origin.to_owned(),
            jwks_uri: None,
            token_endpoint: Some(format!("{origin}/token")),
            introspection_endpoint: None,
            rest: serde_json::Map::new(),
        })
    }

    /// The protected resource metadata: the challenge's URL, else the well-known ones.
    async fn resource_metadata(&self, named: Option<String>) -> Option<Value> {
        let urls = match named {
            Some(url) => vec![url],
            None => resource_metadata_urls(&self.url),
        };
        for url in urls {
            let Ok(fetcher) = self.fetcher(&url) else { continue };
            if let Ok(fetched) = fetcher.get_json().await
                && fetched.status == 200
                && let Some(doc) = fetched.json()
            {
                return Some(doc);
            }
        }
        None
    }

    /// Who we are at the authorization server: pre-registered, a client ID metadata document, or registered now.
    async fn client(&self, endpoints: &Endpoints) -> Result<Client, String> {
        let methods = endpoints.meta.get("token_endpoint_auth_methods_supported").and_then(Value::as_array);
        let supports = |m: &str| methods.is_some_and(|a| a.iter().any(|v| v.as_str() == Some(m)));
        let default_method = || {
            let method = if supports("client_secret_basic") || methods.is_none() {
                "client_secret_basic"
            } else {
                "client_secret_post"
            };
            method.to_owned()
        };
        if let Some(id) = &self.identity.client_id {
            let method = if self.identity.client_secret.is_some() { default_method() } else { "none".to_owned() };
            return Ok(Client { id: id.clone(), secret: self.identity.client_secret.clone(), method });
        }
        let cimd = endpoints.meta.get("client_id_metadata_document_supported").and_then(Value::as_bool) == Some(true);
        if let (true, Some(url)) = (cimd, &self.identity.metadata_url) {
            return Ok(Client { id: url.clone(), secret: None, method: "none".to_owned() });
        }
        let Some(registration) = &endpoints.registration else {
            return Err("the authorization server offers no registration: give --oauth-client-id".to_owned());
        };
        let method = if supports("none") || methods.is_none() { "none".to_owned() } else { default_method() };
        let request = json!({
            "client_name": "mcpstorm",
            "redirect_uris": ["http://127.0.0.1/callback"],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
            "application_type": "native",
        });
        let fetched =
            self.fetcher(registration)?.post_json(&request).await.map_err(|e| format!("{registration}: {e}"))?;
        let doc = fetched.json().filter(|_| matches!(fetched.status, 200 | 201));
        let doc = doc.ok_or_else(|| format!("registration at {registration} answered HTTP {}", fetched.status))?;
        let id = doc.get("client_id").and_then(Value::as_str).ok_or("registration gave no client_id")?.to_owned();
        let secret = doc.get("client_secret").and_then(Value::as_str).map(Secret::new);
        let method = doc
            .get("token_endpoint_auth_method")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| if secret.is_some() { default_method() } else { "none".to_owned() });
        Ok(Client { id, secret, method })
    }

    async fn refresh(&self, endpoints: &Endpoints, refresh: &Secret) -> Result<Secret, String> {
        let client = self.client(endpoints).await?;
        let form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh.expose().to_owned()),
            ("resource", endpoints.resource.clone()),
        ];
        self.token_request(endpoints, &client, form).await
    }

    async fn token_request(
        &self,
        endpoints: &Endpoints,
        client: &Client,
        mut form: Vec<(&'static str, String)>,
    ) -> Result<Secret, String> {
        let basic = match (client.method.as_str(), &client.secret) {
            ("client_secret_basic", Some(secret)) => Some(crate::gateway::oauth::basic_credentials(&client.id, secret)),
            ("client_secret_post", Some(secret)) => {
                form.push(("client_id", client.id.clone()));
                form.push(("client_secret", secret.expose().to_owned()));
                None
            }
            _ => {
                form.push(("client_id", client.id.clone()));
                None
            }
        };
        let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let url = &endpoints.token;
        let fetched = self.fetcher(url)?.post_form(&pairs, basic.as_ref()).await.map_err(|e| format!("{url}: {e}"))?;
        let doc = fetched.json().unwrap_or(Value::Null);
        if fetched.status != 200 {
            let error = doc.get("error").and_then(Value::as_str).unwrap_or_default();
            return Err(format!("the token endpoint answered HTTP {} {error}", fetched.status));
        }
        let token = doc.get("access_token").and_then(Value::as_str).ok_or("no access_token in the answer")?;
        self.state().refresh = doc.get("refresh_token").and_then(Value::as_str).map(Secret::new);
        Ok(Secret::new(token))
    }
}

/// A client identity at the token endpoint.
struct Client {
    id: String,
    secret: Option<Secret>,
    /// `client_secret_basic`, `client_secret_post` or `none`.
    method: String,
}

fn random_bytes<const N: usize>() -> Result<[u8; N], String> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(|e| format!("no randomness: {e}"))?;
    Ok(bytes)
}

/// The code of a redirect to us, whose `state` must be ours.
fn code_of(location: &str, state: &str) -> Result<String, String> {
    let query = location.split_once('?').map_or("", |(_, q)| q);
    let pairs: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes()).into_owned().collect();
    let get = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    if let Some(error) = get("error") {
        return Err(format!("the authorization server refused: {error}"));
    }
    if get("state").is_some_and(|s| s != state) {
        return Err("the redirect's state is not ours".to_owned());
    }
    get("code").ok_or_else(|| "the redirect carries no code".to_owned())
}

fn words(list: &[Value]) -> String {
    list.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redirect_gives_its_code_only_with_our_state() {
        assert_eq!(code_of("http://127.0.0.1:9/callback?code=abc&state=s1", "s1"), Ok("abc".to_owned()));
        assert!(code_of("http://127.0.0.1:9/callback?code=abc&state=other", "s1").is_err());
        assert!(code_of("http://127.0.0.1:9/callback?error=access_denied", "s1").is_err());
    }
}
