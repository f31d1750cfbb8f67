//! An authorization server's metadata, found from its issuer identifier as the MCP authorization spec orders it:
//! RFC 8414 (`/.well-known/oauth-authorization-server`, inserted before the issuer's path), then OpenID Connect
//! discovery (inserted, then appended). The document must name exactly the issuer it was fetched for (RFC 8414
//! §3.3): a mix-up between two providers is refused here, not discovered later.

use std::sync::Arc;
use std::time::Duration;

use mcpstorm_core::transport::Fetcher;
use mcpstorm_core::{Clock, Dialer};
use serde::Deserialize;

/// What the gateway uses of an authorization server's metadata.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ServerMetadata {
    pub issuer: String,
    #[serde(default)]
    pub jwks_uri: Option<String>,
    #[serde(default)]
    pub token_endpoint: Option<String>,
    #[serde(default)]
    pub introspection_endpoint: Option<String>,
    /// The rest of the document (a person's client reads its authorization and registration endpoints, scopes,
    /// grants and client authentication methods).
    #[serde(flatten)]
    pub rest: serde_json::Map<String, serde_json::Value>,
}

/// The metadata URLs to try for `issuer`, in order.
pub fn metadata_urls(issuer: &str) -> Vec<String> {
    let issuer = issuer.trim_end_matches('/');
    let (scheme, rest) = issuer.split_once("://").unwrap_or(("https", issuer));
    let (host, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let well_known = |name: &str| format!("{scheme}://{host}/.well-known/{name}{path}");
    let mut urls = vec![well_known("oauth-authorization-server"), well_known("openid-configuration")];
    if !path.is_empty() {
        urls.push(format!("{issuer}/.well-known/openid-configuration"));
    }
    urls
}

/// Why the metadata could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiscoveryError {
    #[error("no metadata for {issuer} at {tried}")]
    NotFound { issuer: String, tried: String },
    #[error("{url} names the issuer {found:?}, not {issuer:?}")]
    IssuerMismatch { url: String, issuer: String, found: String },
    #[error("{0}")]
    Unreachable(String),
}

/// Fetches and checks `issuer`'s metadata: the first URL that answers 200 with a JSON document decides (a document
/// naming another issuer is an error, not a reason to try the next URL).
pub async fn discover(
    issuer: &str,
    dialer: Option<Arc<dyn Dialer>>,
    clock: Arc<dyn Clock>,
    timeout: Duration,
) -> Result<ServerMetadata, DiscoveryError> {
    let urls = metadata_urls(issuer);
    let mut unreachable = None;
    for url in &urls {
        let fetcher = Fetcher::new(url, dialer.clone(), clock.clone(), timeout)
            .map_err(|e| DiscoveryError::Unreachable(format!("{url}: {e}")))?;
        let fetched = match fetcher.get_json().await {
            Ok(f) => f,
            Err(e) => {
                unreachable = Some(format!("{url}: {e}"));
                continue;
            }
        };
        if fetched.status != 200 {
            continue;
        }
        let Ok(meta) = serde_json::from_slice::<ServerMetadata>(&fetched.body) else { continue };
        if meta.issuer != issuer {
            return Err(DiscoveryError::IssuerMismatch {
                url: url.clone(),
                issuer: issuer.to_owned(),
                found: meta.issuer,
            });
        }
        return Ok(meta);
    }
    Err(match unreachable {
        Some(why) => DiscoveryError::Unreachable(why),
        None => DiscoveryError::NotFound { issuer: issuer.to_owned(), tried: urls.join(", ") },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_issuer_without_a_path_tries_rfc_8414_then_openid() {
        assert_eq!(
            metadata_urls("https://idp.example"),
            [
                "https://idp.example/.well-known/oauth-authorization-server",
                "https://idp.example/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn an_issuer_with_a_path_has_the_well_known_part_inserted_then_appended() {
        assert_eq!(
            metadata_urls("https://idp.example/realms/a"),
            [
                "https://idp.example/.well-known/oauth-authorization-server/realms/a",
                "https://idp.example/.well-known/openid-configuration/realms/a",
                "https://idp.example/realms/a/.well-known/openid-configuration",
            ]
        );
    }
}
