//! How a simulated gateway (a load host's in-process one, or a gateway node) reaches each replica: its client
//! over turmoil TCP, with the scenario's client settings.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};

use mcpstorm_core::resilience::InFlightLimit;
use mcpstorm_core::session::GatewayProfile;
use mcpstorm_core::transport::{Authorizer, PoolConfig};
use mcpstorm_core::{ClientConfig, Connector, HttpEndpoint, McpClient};
use mcpstorm_fake::Transport;
use tokio::sync::mpsc;

use super::clock::SimClock;
use super::idp;
use super::net::{Links, port};
use super::recorder::{Recorder, SimObserver};
use crate::gateway::node::list_changed_hook;
use crate::scenario::{IDP_HOST, IDP_PORT, Placement, Scenario, replica_host};
use crate::seed::Seed;

/// Makes a load host's gateway's client of one replica, as one gateway process would: the world's dialer, the
/// scenario's client settings, profile and credentials, the host's `SimClock`, an RNG forked per replica (by its host
/// name, so not by the order of first use), the host's shared global in-flight limit, and the observer that puts
/// connection events on the timeline.
#[derive(Debug)]
pub(super) struct SimConnector {
    config: ClientConfig,
    /// Each server's reconnects within one call (`ClientSpec::lifecycle_retries`), by server name.
    lifecycle_retries: BTreeMap<String, u32>,
    limit: InFlightLimit,
    clock: SimClock,
    /// The clients' seed: each replica's client forks it by the replica's host name.
    seed: Seed,
    recorder: Recorder,
    host: String,
    placement: Arc<Placement>,
    /// Where this host's connections go (turmoil's network, or a live run's relays).
    links: Arc<dyn Links>,
    /// The servers that speak Streamable HTTP, and the keep-alive pool each replica's client keeps.
    http: BTreeSet<String>,
    pool: PoolConfig,
    /// Told a server's name when one of its replicas says its tool list changed: a gateway node re-lists it, as the
    /// process does (a load host's in-process gateway needs no re-listing: its agents read the core's own).
    list_changed: Option<mpsc::UnboundedSender<String>>,
    /// The servers that require tokens from the identity provider, and whether this gateway's OAuth client is the
    /// naive one.
    tokens: BTreeSet<String>,
    naive: bool,
    /// Each such server's OAuth client, made at its first replica's connect: one per server, shared by its replicas.
    authorizers: Mutex<BTreeMap<String, Arc<dyn Authorizer>>>,
}

impl SimConnector {
    /// The connector of host `host` (a load host, or a gateway node), with its wall clock and its clients' seed.
    pub(super) fn new(
        scenario: &Scenario,
        recorder: &Recorder,
        placement: &Arc<Placement>,
        host: &str,
        clock: &SimClock,
        seed: Seed,
        links: Arc<dyn Links>,
    ) -> SimConnector {
        let spec = &scenario.client;
        SimConnector {
            config: spec.to_core(&scenario.gateway),
            lifecycle_retries: scenario
                .servers
                .iter()
                .map(|s| (s.name.clone(), spec.lifecycle_retries(s.replicas)))
                .collect(),
            limit: InFlightLimit::new(spec.max_in_flight),
            clock: clock.clone(),
            seed,
            recorder: recorder.clone(),
            host: host.to_owned(),
            placement: placement.clone(),
            links,
            http: scenario.servers.iter().filter(|s| s.transport == Transport::Http).map(|s| s.name.clone()).collect(),
            pool: spec.pool(),
            list_changed: None,
            tokens: scenario.servers.iter().filter(|s| s.require_token).map(|s| s.name.clone()).collect(),
            naive: scenario.gateway.profile == GatewayProfile::Naive,
            authorizers: Mutex::default(),
        }
    }

    /// Sends the server's name to `changed` whenever a replica's server says its tool list changed.
    pub(super) fn on_list_changed(mut self, changed: mpsc::UnboundedSender<String>) -> SimConnector {
        self.list_changed = Some(changed);
        self
    }
}

impl SimConnector {
    /// The OAuth client of `server` on this gateway, made at the first connect to one of its replicas (at
    /// `host:port`, whose URL names the resource).
    fn authorizer(&self, server: &str, host: &str, port: u16) -> Arc<dyn Authorizer> {
        let mut made = self.authorizers.lock().unwrap_or_else(PoisonError::into_inner);
        made.entry(server.to_owned())
            .or_insert_with(|| {
                let dialer = self.links.dialer(&self.host, IDP_HOST, IDP_PORT);
                let url = format!("http://{host}:{port}/mcp");
                idp::authorizer(self.naive, server, &url, dialer, &self.clock)
            })
            .clone()
    }
}

impl Connector for SimConnector {
    fn connect(&self, server: &str, endpoint: &str) -> Arc<McpClient> {
        // A node's federation names replicas `server#i`; the world names them by their hosts (`server-i`).
        let endpoint = &*replica_host(endpoint);
        let address = self.placement.address(endpoint);
        let port = port(address.slot);
        // Over HTTP the URL gives the Host header and path; the dialer decides where connections go.
        let http =
            self.http.contains(server).then(|| HttpEndpoint::new(&format!("http://{}:{port}/mcp", address.host)));
        let dialer = self.links.dialer(&self.host, &address.host, port);
        let observer = Arc::new(SimObserver {
            recorder: self.recorder.clone(),
            time: self.clock.time(),
            host: self.host.clone(),
            replica: endpoint.to_owned(),
        });
        let mut config = self.config.clone();
        if let Some(retries) = self.lifecycle_retries.get(server) {
            config.lifecycle_retries = *retries;
        }
        let client = McpClient::new(endpoint, dialer, config, self.seed.fork(endpoint).seeded_rng())
            .with_observer(observer)
            .with_clock(Arc::new(self.clock.clone()))
            .with_global_limit(self.limit.clone());
        let client = match &self.list_changed {
            Some(changed) => client.on_list_changed(list_changed_hook(changed, server)),
            None => client,
        };
        Arc::new(match http {
            Some(Ok(mut http)) => {
                http.pool = self.pool.clone();
                if self.tokens.contains(server) {
                    http = http.with_authorizer(self.authorizer(server, &address.host, port));
                }
                client.with_http(http)
            }
            // Host names are the scenario's server names, which validation keeps to URL-safe text; a name that
            // still makes no URL leaves the client on NDJSON, and the HTTP server answers its frames with errors.
            Some(Err(e)) => {
                tracing::warn!(server, error = %e, "no HTTP URL for this replica");
                client
            }
            None => client,
        })
    }
}
