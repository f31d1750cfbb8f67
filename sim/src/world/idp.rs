//! The identity provider host of `[identity_provider]`: the double, served over turmoil TCP on `idp`, and the OAuth
//! client each gateway reaches it with: the gateway crate's own (`oauth::client`), unchanged, dialing through the
//! world's network. Each gateway (a load host's, or a node) has one client per server that requires tokens, as the
//! process has one per `[servers.oauth]`.

use std::sync::Arc;
use std::time::Duration;

use mcpstorm_core::transport::Authorizer;
use mcpstorm_core::{Clock, Dialer, Secret};
use mcpstorm_fake::idp::{IdentityProvider, IdpConfig, TokenAuthority};
use mcpstorm_gateway::config::UpstreamAuthSpec;
use mcpstorm_gateway::oauth::assertion::ClientAuth;
use mcpstorm_gateway::oauth::basic_credentials;
use mcpstorm_gateway::oauth::client::UpstreamAuth;

use super::clock::SimClock;
use super::faults::IdpHandle;
use super::net::TurmoilListener;
use crate::scenario::{IDP_HOST, IDP_PORT, IdentityProviderSpec};
use crate::seed::Seed;

/// The client every gateway registers as; the double checks only that one is presented.
const CLIENT_ID: &str = "mcpstorm-sim";

/// Places the identity provider in `sim`; its handle steers its faults and reads its counters.
pub fn place(sim: &mut turmoil::Sim<'_>, spec: &IdentityProviderSpec, seed: u64) -> IdpHandle {
    // Tokens are issued and checked by the provider's wall clock (the simulated one; no fault skews it).
    let clock = SimClock::default();
    let authority = TokenAuthority::new(spec.token_ttl.0, Arc::new(clock.clone()));
    let config = IdpConfig {
        issuer: IdentityProviderSpec::issuer(),
        latency: spec.latency.0,
        workers: spec.workers,
        max_queue: spec.max_queue,
        seed: Seed::new(seed).fork(IDP_HOST).value(),
    };
    let idp = IdentityProvider::new(config, authority.clone());
    let control = idp.control();
    sim.host(IDP_HOST, move || {
        let idp = idp.clone();
        async move {
            let listener = turmoil::net::TcpListener::bind(("0.0.0.0", IDP_PORT)).await?;
            idp.serve(TurmoilListener(listener)).await;
            Ok(())
        }
    });
    IdpHandle { control, authority, clock }
}

/// The OAuth client of server `server` (whose first replica is at `url`) for the gateway on host `host`: client
/// credentials against the scenario's identity provider, its issuer configured (as an operator may) so discovery
/// goes straight to it. The naive profile's client asks per call (see `oauth::client`).
pub fn authorizer(
    naive: bool,
    server: &str,
    url: &str,
    dialer: Arc<dyn Dialer>,
    clock: &SimClock,
) -> Arc<dyn Authorizer> {
    let spec = UpstreamAuthSpec {
        client_id: CLIENT_ID.to_owned(),
        issuer: Some(IdentityProviderSpec::issuer()),
        resource: Some(url.to_owned()),
        // Long enough for a token request queued behind a slow provider, as an operator would set it.
        timeout: mcpstorm_gateway::config::Dur(Duration::from_secs(30)),
        ..UpstreamAuthSpec::default()
    };
    let secret = basic_credentials(CLIENT_ID, &Secret::new("sim-secret".to_owned()));
    let clock: Arc<dyn Clock> = Arc::new(clock.clone());
    let client = UpstreamAuth::new(server, &spec, ClientAuth::Basic(secret), url, clock, None).with_dialer(dialer);
    Arc::new(if naive { client.naive() } else { client })
}
