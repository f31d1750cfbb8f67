//! `[identity_provider]`: an OAuth authorization server on a host of its own (`idp`), whose tokens the servers with
//! `require_token` demand. Each gateway reaches it with its real OAuth client (`[servers.oauth]`'s
//! `client_credentials`), so a scenario can show what a mass token expiry, a key rotation or a slow identity
//! provider does to the calls.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ranges::{Ranges, Upper};
use super::rules::Rules;
use super::servers::ServerSpec;
use super::units::Dur;
use mcpstorm_fake::Transport;

/// The identity provider's host name, and the fault target that names it.
pub const IDP_HOST: &str = "idp";
/// The port it serves on.
pub const IDP_PORT: u16 = 9400;
/// Most token requests served at once, or waiting.
const MAX_WORKERS: usize = 1024;
const MAX_QUEUE: usize = 100_000;

/// The identity provider: how long its tokens last and how fast it issues them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IdentityProviderSpec {
    /// Each access token's lifetime (its `expires_in`); the gateway renews ahead of it (`refresh_before`).
    #[serde(default = "default_ttl")]
    pub token_ttl: Dur,
    /// Each token request's service time (an `idp_outage`'s `extra` adds to it).
    #[serde(default = "default_latency")]
    pub latency: Dur,
    /// Token requests served at once.
    #[serde(default = "default_workers")]
    #[schemars(range(min = 1, max = MAX_WORKERS))]
    pub workers: usize,
    /// Token requests that may wait for a worker; more are shed with 503 `temporarily_unavailable`.
    #[serde(default = "default_max_queue")]
    #[schemars(range(max = MAX_QUEUE))]
    pub max_queue: usize,
}

fn default_ttl() -> Dur {
    Dur(Duration::from_secs(3600))
}

fn default_latency() -> Dur {
    Dur(Duration::from_millis(20))
}

fn default_workers() -> usize {
    4
}

fn default_max_queue() -> usize {
    256
}

impl IdentityProviderSpec {
    /// Its issuer identifier: the URL the gateways discover its metadata from.
    pub fn issuer() -> String {
        format!("http://{IDP_HOST}:{IDP_PORT}")
    }

    fn problems(&self, c: &mut Rules) {
        c.positive("identity_provider.token_ttl", self.token_ttl.0);
        c.at_least_one("identity_provider.workers", self.workers);
    }

    pub(super) fn ranges(&self, out: &mut Ranges) {
        out.duration("identity_provider.token_ttl", self.token_ttl.0, Upper::Week);
        out.duration("identity_provider.latency", self.latency.0, Upper::Run);
        out.count("identity_provider.workers", self.workers as f64, MAX_WORKERS as f64);
        out.count("identity_provider.max_queue", self.max_queue as f64, MAX_QUEUE as f64);
    }
}

/// The provider's own rules; `require_token` needs a provider to issue the tokens and Streamable HTTP to carry
/// them; the provider's host name is its own; a token check needs a provider to count at.
/// (`counted`: `checks.token_requests` is set).
pub(super) fn problems(idp: Option<&IdentityProviderSpec>, servers: &[ServerSpec], counted: bool, c: &mut Rules) {
    if let Some(idp) = idp {
        idp.problems(c);
    } else if counted {
        c.fail("checks.token_requests", "needs an `[identity_provider]`: its token requests are what it counts");
    }
    for (i, server) in servers.iter().enumerate() {
        if idp.is_some() && server.name == IDP_HOST {
            c.fail(
                format!("servers[{i}].name"),
                format!("{IDP_HOST:?} is the identity provider's host: rename the server"),
            );
        }
        if !server.require_token {
            continue;
        }
        let at = format!("servers[{i}].require_token");
        if idp.is_none() {
            c.fail(&at, "needs an `[identity_provider]` to issue the tokens");
        }
        if server.transport != Transport::Http {
            c.fail(&at, format!("bearer tokens travel over HTTP: give {:?} transport = \"http\"", server.name));
        }
    }
}
