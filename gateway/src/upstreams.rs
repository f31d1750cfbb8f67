//! The real servers behind the gateway: how each replica is dialed (`http`, `stdio`, `tcp`, with headers from the
//! environment), and the core's [`Connector`] that makes each replica's client with the `[client]` table's
//! settings, the process-wide in-flight limit and the shared HTTP pool settings.

use std::collections::BTreeMap;
use std::sync::Arc;

use mcpstorm_core::resilience::InFlightLimit;
use mcpstorm_core::session::EraMode;
use mcpstorm_core::transport::PoolConfig;
use mcpstorm_core::{
    ClientConfig, Clock, Connector, Dialer, HttpEndpoint, McpClient, Observer, Secret, StdioDialer, TcpDialer,
};

use tokio::sync::mpsc;

use super::node::list_changed_hook;
use super::oauth::assertion::ClientAuth;
use super::oauth::basic_credentials;
use super::oauth::client::{OnTokenRequest, UpstreamAuth};
use crate::config::{ENV_PREFIX, ReplicaAddr, UpstreamSpec};
use crate::seed::Seed;
use mcpstorm_core::transport::Authorizer;

/// How one replica is reached.
#[derive(Debug, Clone)]
pub struct Route {
    pub dialer: Arc<dyn Dialer>,
    pub http: Option<HttpEndpoint>,
}

/// Every replica's route by endpoint id (`server#i`). Headers are read from the environment here, once: a
/// variable that is not set is an error naming the variable and the key, never a value.
/// A server with `[servers.oauth]` gets one OAuth client (`oauth::client`), shared by its replicas: one token per
/// server, renewed once for all of them (with `naive`, the naive profile's client: a token per call). `on_token` is
/// told each token request's server and outcome.
pub fn routes(
    servers: &[UpstreamSpec],
    pool: &PoolConfig,
    clock: &Arc<dyn Clock>,
    (on_token, naive): (Option<TokenHook>, bool),
) -> Result<BTreeMap<String, Route>, String> {
    let mut routes = BTreeMap::new();
    for server in servers {
        let authorizer = authorizer(server, clock, on_token.clone(), naive)?;
        for (i, replica) in server.replicas.iter().enumerate() {
            let at = format!("servers[{}] {:?} replicas[{i}]", server.name, server.name);
            let route = match replica.addr() {
                Some(ReplicaAddr::Http(url)) => {
                    let mut endpoint = HttpEndpoint::new(url).map_err(|e| format!("{at}.http: {e}"))?;
                    for (name, value) in &replica.headers {
                        let value = resolve(value).map_err(|var| not_set(&at, "headers", name, var))?;
                        endpoint = endpoint
                            .with_header(name, Secret::new(value))
                            .map_err(|e| format!("{at}.headers.{name}: {e}"))?;
                    }
                    endpoint.pool = pool.clone();
                    if let Some(authorizer) = &authorizer {
                        endpoint = endpoint.with_authorizer(authorizer.clone());
                    }
                    Route { dialer: Arc::new(endpoint.tcp_dialer()), http: Some(endpoint) }
                }
                Some(ReplicaAddr::Stdio(cmd)) => {
                    let mut words = shlex::split(cmd)
                        .filter(|w| !w.is_empty())
                        .ok_or_else(|| format!("{at}.stdio: cannot split {cmd:?} into words"))?;
                    let program = words.remove(0);
                    let mut dialer = StdioDialer::new(program, words);
                    for (name, value) in &replica.env {
                        let value = resolve(value).map_err(|var| not_set(&at, "env", name, var))?;
                        dialer.env.push((name.clone(), value));
                    }
                    dialer.cwd = replica.cwd.as_ref().map(std::path::PathBuf::from);
                    Route { dialer: Arc::new(dialer), http: None }
                }
                Some(ReplicaAddr::Tcp(addr)) => {
                    Route { dialer: Arc::new(TcpDialer { addr: addr.to_owned() }), http: None }
                }
                None => return Err(format!("{at}: give exactly one of `http`, `stdio`, `tcp`")),
            };
            routes.insert(server.replica_id(i), route);
        }
    }
    Ok(routes)
}

/// Told of each upstream token request: the server's name and the outcome (`ok`, `http_5xx`, ...).
pub type TokenHook = Arc<dyn Fn(&str, &str) + Send + Sync>;

/// The OAuth client of `server`, if it has `[servers.oauth]`; its secret is read from the environment now.
fn authorizer(
    server: &UpstreamSpec,
    clock: &Arc<dyn Clock>,
    on_token: Option<TokenHook>,
    naive: bool,
) -> Result<Option<Arc<dyn Authorizer>>, String> {
    let Some(spec) = &server.oauth else { return Ok(None) };
    let at = format!("servers {:?} oauth", server.name);
    let auth = match &spec.private_key_file {
        Some(path) => {
            let pem = std::fs::read(path).map_err(|e| format!("{at}.private_key_file {path}: {e}"))?;
            let alg = spec.private_key_alg.as_deref().unwrap_or_default();
            ClientAuth::private_key(&spec.client_id, &pem, alg, spec.private_key_id.clone())
                .map_err(|e| format!("{at}.private_key_file {path}: {e}"))?
        }
        None => {
            let var = &spec.client_secret_env;
            let secret = std::env::var(var)
                .map_err(|_| format!("{at}.client_secret_env: environment variable {var} is not set"))?;
            ClientAuth::Basic(basic_credentials(&spec.client_id, &Secret::new(secret)))
        }
    };
    let url = server.replicas.iter().find_map(|r| r.http.clone()).unwrap_or_default();
    let name = server.name.clone();
    let on_request: Option<OnTokenRequest> =
        on_token.map(|hook| -> OnTokenRequest { Arc::new(move |outcome: &str| hook(&name, outcome)) });
    let client = UpstreamAuth::new(&server.name, spec, auth, &url, clock.clone(), on_request);
    Ok(Some(Arc::new(if naive { client.naive() } else { client })))
}

/// A literal value, or the `env:NAME` variable's from this process's environment (`Err(NAME)` when it is unset).
fn resolve(value: &str) -> Result<String, &str> {
    match value.strip_prefix(ENV_PREFIX) {
        Some(var) => std::env::var(var).map_err(|_| var),
        None => Ok(value.to_owned()),
    }
}

fn not_set(at: &str, table: &str, name: &str, var: &str) -> String {
    format!("{at}.{table}.{name}: environment variable {var} is not set")
}

/// What the gateway declares to its servers that it answers, by relaying to the agent whose call asked.
pub fn relayed_capabilities() -> serde_json::Value {
    serde_json::json!({ "sampling": {}, "elicitation": { "form": {}, "url": {} }, "roots": {} })
}

/// Makes the observer of a replica's client, given its endpoint id.
pub type ObserverOf = Arc<dyn Fn(&str) -> Arc<dyn Observer> + Send + Sync>;

/// Makes each replica's client on first use.
pub struct LiveConnector {
    pub routes: BTreeMap<String, Route>,
    pub config: ClientConfig,
    /// Each server's reconnects within one call (`ClientSpec::lifecycle_retries`), by server name.
    pub lifecycle_retries: BTreeMap<String, u32>,
    /// Each server's era (`[[servers]] era`), by server name.
    pub eras: BTreeMap<String, EraMode>,
    pub limit: InFlightLimit,
    pub clock: Arc<dyn Clock>,
    /// Each replica's observer, by its endpoint id.
    pub observer: ObserverOf,
    /// Each replica's client draws its reconnect jitter from its own stream forked from this one.
    pub seed: Seed,
    /// Each client's call-history ring (see `history`), when the history is kept.
    pub history: Option<usize>,
    /// Told the server's name when a replica's server says its tool list changed (see `node::list_changed_hook`).
    pub list_changed: mpsc::UnboundedSender<String>,
}

impl std::fmt::Debug for LiveConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveConnector").field("routes", &self.routes.keys().collect::<Vec<_>>()).finish_non_exhaustive()
    }
}

impl Connector for LiveConnector {
    fn connect(&self, server: &str, endpoint: &str) -> Arc<McpClient> {
        // The router only names endpoints the registry declared, and every declared one has a route; an unknown one
        // gets a dialer that fails every dial, so its calls fail as unreachable rather than the process stopping.
        let route = self.routes.get(endpoint).cloned().unwrap_or_else(|| Route {
            dialer: Arc::new(TcpDialer { addr: format!("unknown replica {endpoint}:0") }),
            http: None,
        });
        let hook = list_changed_hook(&self.list_changed, server);
        let mut config = self.config.clone();
        if let Some(retries) = self.lifecycle_retries.get(server) {
            config.lifecycle_retries = *retries;
        }
        if let Some(era) = self.eras.get(server) {
            config.era_mode = *era;
        }
        // A server may ask mid-call what the gateway relays to the call's agent (who may refuse: see `asks`).
        config.client_capabilities = relayed_capabilities();
        let client = McpClient::new(endpoint, route.dialer, config, self.seed.fork(endpoint).seeded_rng())
            .with_clock(self.clock.clone())
            .with_observer((self.observer)(endpoint))
            .with_global_limit(self.limit.clone())
            .on_list_changed(hook);
        let client = match self.history {
            Some(ring) => client.with_history(ring),
            None => client,
        };
        Arc::new(match route.http {
            Some(http) => client.with_http(http),
            None => client,
        })
    }
}
