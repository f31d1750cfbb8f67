//! OAuth 2.1 as the MCP authorization spec asks of a gateway. Agents → gateway: the gateway is a resource server
//! (`resource`: metadata, challenges, token checks). Gateway → upstreams: the gateway is an OAuth client of each
//! protected server (`client`), with tokens of its own. The pieces any OAuth party here needs: an authorization
//! server's metadata (`discovery`), its signing keys (`keys`), a JWT access token's checks (`jwt`), and opaque
//! tokens' introspection (`introspect`).

pub mod assertion;
pub mod client;
pub mod discovery;
pub mod introspect;
pub mod jwt;
pub mod keys;
pub mod resource;

pub use resource::{OnRefused, ResourceServer};

use base64::Engine;
use mcpstorm_core::Secret;

/// HTTP Basic client authentication at an authorization server (RFC 6749 §2.3.1: the id and the secret each
/// form-encoded, then the pair base64-encoded): the `Authorization` value.
pub fn basic_credentials(client_id: &str, secret: &Secret) -> Secret {
    let enc = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let pair = format!("{}:{}", enc(client_id), enc(secret.expose()));
    Secret::new(format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair)))
}

/// A `WWW-Authenticate` challenge's `name="value"` parameter.
pub fn challenge_parameter(challenge: &str, name: &str) -> Option<String> {
    let at = challenge.find(&format!("{name}=\""))? + name.len() + 2;
    let rest = &challenge[at..];
    Some(rest[..rest.find('"')?].to_owned())
}

/// An access token as an `Authorization` value.
pub fn bearer(token: &Secret) -> Secret {
    Secret::new(format!("Bearer {}", token.expose()))
}

/// Where a protected resource at `url` publishes its metadata (RFC 9728 §3.1): the path-suffixed well-known URL
/// first, then the root one.
pub fn resource_metadata_urls(url: &str) -> Vec<String> {
    let base = origin(url);
    let path = url[base.len()..].split(['?', '#']).next().unwrap_or("").trim_end_matches('/');
    let root = format!("{base}/.well-known/oauth-protected-resource");
    if path.is_empty() { vec![root] } else { vec![format!("{root}{path}"), root] }
}

/// `scheme://host[:port]` of a URL.
pub fn origin(url: &str) -> &str {
    let after = url.find("://").map_or(0, |i| i + 3);
    url[after..].find('/').map_or(url, |i| &url[..after + i])
}

/// Whether a protected resource's metadata may speak for `url`: its `resource` is on the same origin and a path
/// prefix of `url` (RFC 9728 §3.3: metadata naming another resource is not to be used, or a server could send our
/// tokens' audience, and so the tokens, elsewhere).
pub fn resource_covers(resource: &str, url: &str) -> bool {
    let resource = resource.trim_end_matches('/');
    origin(resource) == origin(url) && url.starts_with(resource)
}
