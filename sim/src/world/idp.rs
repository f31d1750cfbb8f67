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
    let (idp, handle) = identity_provider(spec, seed, SimClock::default());
    sim.host(IDP_HOST, move || {
        let idp = idp.clone();
        async move {
            let listener = turmoil::net::TcpListener::bind(("0.0.0.0", IDP_PORT)).await?;
            idp.serve(TurmoilListener(listener)).await;
            Ok(())
        }
    });
    handle
}

/// The identity provider of `spec`, issuing and checking tokens by `clock`, and its handle.
pub fn identity_provider(spec: &IdentityProviderSpec, seed: u64, clock: SimClock) -> (IdentityProvider, IdpHandle) {
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
    (idp, IdpHandle { control, authority, clock })
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

#[cfg(test)]
mod tests {
    //! The gateway's real OAuth client, the identity provider double and a fake server that requires its tokens, on
    //! loopback TCP: what the simulator composes, checked outside turmoil.

    use super::*;
    use mcpstorm_core::{CallOptions, ClientConfig, HttpEndpoint, McpClient, TcpDialer, TokioClock};
    use mcpstorm_fake::idp::IdpControl;
    use mcpstorm_fake::{FakeServer, FakeServerConfig, Transport};
    use serde_json::json;

    /// A provider (100 ms per token request, so concurrent callers overlap) and a server requiring its tokens,
    /// listening on loopback; the client of `calls` concurrent calls per round, naive or not.
    async fn world(naive: bool) -> (IdpControl, Arc<TokenAuthority>, Arc<McpClient>) {
        let authority = TokenAuthority::new(Duration::from_secs(3600), Arc::new(TokioClock::new(1_000)));
        let config = IdpConfig {
            issuer: IdentityProviderSpec::issuer(),
            latency: Duration::from_millis(100),
            workers: 64,
            max_queue: 64,
            seed: 1,
        };
        let idp = IdentityProvider::new(config, authority.clone());
        let control = idp.control();
        let idp_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let idp_addr = idp_listener.local_addr().expect("addr").to_string();
        tokio::spawn(async move { idp.serve(idp_listener).await });

        let config = FakeServerConfig { transport: Transport::Http, ..FakeServerConfig::builtin() };
        let server = FakeServer::new(config).expect("valid").with_tokens(authority.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
        tokio::spawn(async move { server.serve(listener).await });

        // The URL names the issuer `http://idp:9400`; the dialer takes the connections to the loopback port.
        let dialer: Arc<dyn Dialer> = Arc::new(TcpDialer { addr: idp_addr });
        let auth = authorizer(
            naive,
            "fake",
            &url,
            dialer,
            &SimClock::on(crate::world::RunTime::Live { start: tokio::time::Instant::now(), lead: Duration::ZERO }),
        );
        let endpoint = HttpEndpoint::new(&url).expect("url").with_authorizer(auth);
        let tcp = Arc::new(endpoint.tcp_dialer());
        let client =
            McpClient::new("fake", tcp, ClientConfig::default(), Seed::new(1).seeded_rng()).with_http(endpoint);
        (control, authority, Arc::new(client))
    }

    /// `calls` concurrent calls; how many succeeded.
    async fn round(client: &Arc<McpClient>, calls: usize) -> usize {
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..calls {
            let client = client.clone();
            set.spawn(async move { client.call_tool("echo", json!({"message": "hi"}), CallOptions::default()).await });
        }
        set.join_all().await.iter().filter(|r| r.is_ok()).count()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_token_request_per_event_by_default_and_one_per_call_when_naive() {
        let (idp, authority, client) = world(false).await;
        let (naive_idp, naive_authority, naive_client) = world(true).await;
        assert_eq!(round(&client, 20).await, 20, "every call gets through on the first token");
        assert_eq!(idp.stats().requests, 1, "single flight: one token request for twenty calls");
        assert_eq!(round(&naive_client, 20).await, 20);
        let first = naive_idp.stats().requests;
        // The client trusts a token younger than `oauth::client`'s FRESH (5 s) over a refusal: a mass expiry that
        // comes sooner fails the calls instead of renewing. The simulator's come long after the first token.
        tokio::time::sleep(Duration::from_millis(5_200)).await;
        authority.expire_issued(authority.wall_ms());
        naive_authority.expire_issued(naive_authority.wall_ms());
        assert_eq!(round(&client, 20).await, 20, "refused once, each call is sent again with the new token");
        assert_eq!(idp.stats().requests, 2, "one renewal after the mass expiry");
        assert_eq!(round(&naive_client, 20).await, 20);
        let after = naive_idp.stats().requests - first;
        // Every call refused at once asks for itself (the handshake before the first round asked alone).
        assert!(after >= 10, "naive: a token request per refused call, got {after} for 20 calls");
    }
}
