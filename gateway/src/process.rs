//! The process: the config made into a [`Federation`] (a core gateway and its servers), the front and the admin
//! listener started, and the signals handled.
//!
//! - **SIGTERM** (and Ctrl-C): the front answers new work 503 while calls in flight finish for up to
//!   `[listen] drain` (their sessions' streams and DELETEs still served), the upstream sessions close, exit 0.
//! - **SIGHUP**: the config file is read again. A bad file changes nothing (its problems are logged). A good one
//!   becomes a new federation (servers, `[gateway]` and `[client]`), swapped in for the calls that start from then
//!   on; agent sessions live in the front and their signed ids, so none is dropped. The old federation's calls in
//!   flight finish, then its upstream sessions close. Breaker and router state start afresh, as after a restart.
//!   `[listen]`, `[admin]` and `[auth]` need a restart.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, PoisonError, RwLock};

use mcpstorm_core::mcp::method;
use mcpstorm_core::resilience::InFlightLimit;
use mcpstorm_core::serve::{Front, FrontLimits};
use mcpstorm_core::session::GatewayProfile;
use mcpstorm_core::{CancelToken, Clock, Secret, TokioClock, TracingObserver};
use tokio::sync::mpsc;

use super::admin::Admin;
use super::federation::{Current, Federation, current};
use super::history::{self, HistoryFile};
use super::metrics::{Metrics, RefusedLabels, TokenLabels};
use super::node::{self, Node, Seams};
use super::oauth::{OnRefused, ResourceServer};
use super::observer::{GatewayObserver, ReplicaObserver};
use super::service::{GatewayService, tell_agents};
use super::sync;
use super::telemetry::Telemetry;
use super::upstreams::{LiveConnector, TokenHook, routes};
use crate::config::AuthSpec;
use crate::config::file::GatewayFile;
use crate::seed::Seed;
use mcpstorm_core::serve::auth::{AgentAuth, Denied};

/// One federation and what runs beside it until it is replaced or the process stops.
#[derive(Debug)]
struct Generation {
    federation: Arc<Federation>,
    stop: CancelToken,
    /// The history writer, which writes what is left once `stop` fires: awaited before the process exits.
    history: Option<tokio::task::JoinHandle<()>>,
}

/// A running gateway process.
#[derive(Debug)]
pub struct Gateway {
    path: PathBuf,
    file: GatewayFile,
    seed: Seed,
    metrics: Arc<Metrics>,
    clock: Arc<dyn Clock>,
    draining: Arc<AtomicBool>,
    current: Current,
    generation: Generation,
    /// Reloads so far: each generation's random streams are forked by its number.
    reloads: u64,
    front: Front,
    /// Fired when a stdio agent closes stdin.
    stdio_done: CancelToken,
    /// `[telemetry]`'s exporter, one for the process: every generation's calls are traced by it.
    telemetry: Option<Arc<Telemetry>>,
}

/// Where a started gateway listens.
#[derive(Debug, Clone, Copy)]
pub struct Bound {
    /// The MCP endpoint's address (`/mcp`); `None` when serving stdio.
    pub http: Option<std::net::SocketAddr>,
    /// The admin listener's; `None` without `[admin]`.
    pub admin: Option<std::net::SocketAddr>,
}

/// Why the process could not start: bad input (exit 2) or a failure to serve (exit 1).
#[derive(Debug)]
pub enum StartError {
    BadInput(String),
    Failed(String),
}

impl Gateway {
    /// Builds the gateway of `file` (read from `path`, read again on SIGHUP) and lists every server. Nothing is
    /// served yet.
    pub async fn start(path: PathBuf, file: GatewayFile, seed: Seed, clock: TokioClock) -> Result<Self, StartError> {
        let metrics = Arc::new(Metrics::default());
        let clock: Arc<dyn Clock> = Arc::new(clock);
        let telemetry = file.telemetry.as_ref().map(|spec| Telemetry::start(spec, &metrics, clock.clone()));
        let telemetry = telemetry.transpose().map_err(StartError::BadInput)?;
        let generation = build(&file, &metrics, &clock, seed.fork("generation-0"), telemetry.as_ref()).await?;
        let current: Current = Arc::new(RwLock::new(generation.federation.clone()));
        let draining = Arc::new(AtomicBool::new(false));
        let service = GatewayService { current: current.clone(), draining: draining.clone(), ready: file.listen.ready };
        let limits = front_limits(&file, &metrics, &clock)?;
        let front = Front::from_env(Arc::new(service), limits, clock.clone())
            .map_err(|e| StartError::BadInput(e.to_string()))?;
        Ok(Gateway {
            path,
            file,
            seed,
            metrics,
            clock,
            draining,
            current,
            generation,
            reloads: 0,
            front,
            stdio_done: CancelToken::new(),
            telemetry,
        })
    }

    /// Starts serving: the front on `[listen] http` (or, with `stdio`, on the process's stdin and stdout), the
    /// admin listener, and the relay of tool-list changes to agents. Returns where each listens.
    pub async fn open(&mut self, stdio: bool) -> Result<Bound, StartError> {
        let admin = self.start_admin().await?;
        tokio::spawn(tell_agents(self.current.clone(), self.front.clone(), self.generation.stop.clone()));
        let http = if stdio {
            let (front, done) = (self.front.clone(), self.stdio_done.clone());
            tokio::spawn(async move {
                front.serve_stdio(tokio::io::stdin(), tokio::io::stdout()).await;
                done.cancel("the agent closed stdin");
            });
            None
        } else {
            let addr = &self.file.listen.http;
            let bound =
                self.front.bind(addr).await.map_err(|e| StartError::Failed(format!("listen.http {addr}: {e}")))?;
            Some(bound)
        };
        Ok(Bound { http, admin })
    }

    /// Runs until SIGTERM or Ctrl-C (with `stdio`, until the agent closes stdin, too), reloading on SIGHUP, then
    /// drains and stops.
    pub async fn run(mut self) -> Result<(), StartError> {
        let mut signals = Signals::new()?;
        loop {
            tokio::select! {
                biased;
                () = self.stdio_done.cancelled() => break,
                signal = signals.next() => match signal {
                    Signal::Stop => break,
                    Signal::Reload => self.reload().await,
                },
            }
        }
        self.stop().await;
        Ok(())
    }

    /// The front stops accepting, calls in flight finish for up to `[listen] drain`, the upstream sessions close.
    pub async fn stop(&mut self) {
        tracing::info!(drain = ?self.file.listen.drain.0, in_flight = self.front.in_flight(), "stopping");
        self.front.shutdown(self.file.listen.drain.0).await;
        self.generation.stop.cancel("the gateway stopped");
        if let Some(history) = self.generation.history.take() {
            let _ = history.await;
        }
        self.generation.federation.gateway().close().await;
        // The last calls' spans, for as long as one export may take.
        if let (Some(telemetry), Some(spec)) = (&self.telemetry, &self.file.telemetry) {
            telemetry.flush(spec.timeout.0).await;
        }
    }

    /// What `GET /metrics` answers now (it needs no `[admin]` table).
    pub fn metrics_text(&self) -> String {
        let federation = current(&self.current);
        self.metrics.scrape(&federation.protection(), federation.sync().map(|s| s.status()))
    }

    /// The federation calls go to now.
    pub fn federation(&self) -> Arc<Federation> {
        current(&self.current)
    }

    /// Binds `[admin] listen` (or, without `[admin]`, nothing: the metrics need a listener of their own).
    async fn start_admin(&self) -> Result<Option<std::net::SocketAddr>, StartError> {
        let Some(spec) = &self.file.admin else { return Ok(None) };
        let token = std::env::var(&spec.token_env).map_err(|_| {
            StartError::BadInput(format!("admin.token_env: environment variable {} is not set", spec.token_env))
        })?;
        if token.trim().is_empty() {
            return Err(StartError::BadInput(format!("admin.token_env: {} is empty", spec.token_env)));
        }
        let listener = mcpstorm_core::serve::bind_listener(&spec.listen)
            .await
            .map_err(|e| StartError::Failed(format!("admin.listen {}: {e}", spec.listen)))?;
        let bound = listener.local_addr().map_err(|e| StartError::Failed(e.to_string()))?;
        let admin = Arc::new(Admin {
            current: self.current.clone(),
            metrics: self.metrics.clone(),
            token: Some(Secret::new(token)),
            draining: self.draining.clone(),
        });
        tokio::spawn(admin.serve(listener));
        Ok(Some(bound))
    }

    /// SIGHUP: the file read again and, when it is valid, a new federation swapped in.
    async fn reload(&mut self) {
        let file = match GatewayFile::load(&self.path) {
            Ok(file) => file,
            Err(e) => {
                tracing::error!("reload refused, the running configuration stays:\n{e}");
                return;
            }
        };
        if file.listen != self.file.listen
            || file.admin != self.file.admin
            || file.auth != self.file.auth
            || file.telemetry != self.file.telemetry
        {
            tracing::warn!("[listen], [admin], [auth] and [telemetry] changes take effect at the next start");
        }
        self.reloads += 1;
        let seed = self.seed.fork(&format!("generation-{}", self.reloads));
        let generation = match build(&file, &self.metrics, &self.clock, seed, self.telemetry.as_ref()).await {
            Ok(g) => g,
            Err(StartError::BadInput(e) | StartError::Failed(e)) => {
                tracing::error!("reload refused, the running configuration stays: {e}");
                return;
            }
        };
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = generation.federation.clone();
        let old = std::mem::replace(&mut self.generation, generation);
        tokio::spawn(tell_agents(self.current.clone(), self.front.clone(), self.generation.stop.clone()));
        self.front.notify_all(method::TOOLS_LIST_CHANGED, None);
        self.file.servers = file.servers;
        self.file.gateway = file.gateway;
        self.file.client = file.client;
        tracing::info!(servers = self.file.servers.len(), "configuration reloaded");
        // The old federation's calls in flight hold their own references; its sessions close after the drain time.
        let drain = self.file.listen.drain.0;
        tokio::spawn(async move {
            old.stop.cancel("replaced by a reload");
            tokio::time::sleep(drain).await;
            old.federation.gateway().close().await;
        });
    }
}

/// The front's bounds from `[listen]`, and who agents are: agent tokens read from their environment variables now,
/// and `[auth]`'s resource server, whose issuer is looked up at once (a warm-up, so the first agent does not wait).
fn front_limits(file: &GatewayFile, metrics: &Arc<Metrics>, clock: &Arc<dyn Clock>) -> Result<FrontLimits, StartError> {
    let listen = &file.listen;
    let mut agent_tokens = Vec::new();
    for var in &listen.agent_tokens_env {
        let token = std::env::var(var).map_err(|_| {
            StartError::BadInput(format!("listen.agent_tokens_env: environment variable {var} is not set"))
        })?;
        agent_tokens.push(Secret::new(token));
    }
    Ok(FrontLimits {
        max_body: listen.max_body_bytes,
        max_sessions: listen.max_sessions,
        max_calls_in_flight: listen.max_calls_in_flight,
        max_queued_calls: listen.max_queued_calls,
        // A call admitted after its deadline could not finish in time.
        queue_wait: file.client.deadline.0,
        allowed_origins: listen.allowed_origins.clone(),
        agent_tokens,
        auth: file.auth.as_ref().map(|spec| resource_server(spec, metrics, clock)).transpose()?,
        ..FrontLimits::default()
    })
}

fn resource_server(
    spec: &AuthSpec,
    metrics: &Arc<Metrics>,
    clock: &Arc<dyn Clock>,
) -> Result<Arc<dyn AgentAuth>, StartError> {
    let secret = match &spec.introspection {
        Some(intro) => Some(Secret::new(std::env::var(&intro.client_secret_env).map_err(|_| {
            StartError::BadInput(format!(
                "auth.introspection.client_secret_env: environment variable {} is not set",
                intro.client_secret_env
            ))
        })?)),
        None => None,
    };
    let counted = metrics.clone();
    let on_refused: OnRefused = Arc::new(move |denied: &Denied| {
        counted.agents_refused.get_or_create(&RefusedLabels { reason: denied.reason.into() }).inc();
    });
    let server = Arc::new(ResourceServer::new(spec, secret, clock.clone(), None, Some(on_refused)));
    let warming = server.clone();
    tokio::spawn(async move { warming.warm().await });
    Ok(server)
}

/// A core gateway over `file`'s servers, its background work started and every server listed: the node of
/// [`node::start`] with the process's seams (tokio TCP, stdio, the real clock, metrics and logs), the call
/// history's writer, and its calls traced by `telemetry`.
async fn build(
    file: &GatewayFile,
    metrics: &Arc<Metrics>,
    clock: &Arc<dyn Clock>,
    seed: Seed,
    telemetry: Option<&Arc<Telemetry>>,
) -> Result<Generation, StartError> {
    let pool = file.client.pool();
    let counted = metrics.clone();
    let on_token: TokenHook = Arc::new(move |server: &str, outcome: &str| {
        let labels = TokenLabels { server: server.to_owned(), outcome: outcome.to_owned() };
        counted.upstream_token_requests.get_or_create(&labels).inc();
    });
    let naive = file.gateway.profile == GatewayProfile::Naive;
    let routes = routes(&file.servers, &pool, clock, (Some(on_token), naive)).map_err(StartError::BadInput)?;
    let (changed_tx, changed_rx) = mpsc::unbounded_channel::<String>();
    let tracing = Arc::new(TracingObserver::default());
    let connector = LiveConnector {
        routes,
        config: file.client.to_core(&file.gateway),
        lifecycle_retries: file
            .servers
            .iter()
            .map(|s| (s.name.clone(), file.client.lifecycle_retries(s.replicas.len())))
            .collect(),
        eras: file.servers.iter().map(|s| (s.name.clone(), s.era().mode())).collect(),
        limit: InFlightLimit::new(file.client.max_in_flight),
        clock: clock.clone(),
        observer: {
            let (metrics, tracing) = (metrics.clone(), tracing.clone());
            Arc::new(move |replica: &str| {
                Arc::new(ReplicaObserver {
                    metrics: metrics.clone(),
                    replica: replica.to_owned(),
                    tracing: tracing.clone(),
                }) as Arc<dyn mcpstorm_core::Observer>
            })
        },
        seed: seed.fork("clients"),
        history: file.history.as_ref().map(|_| history::RING),
        list_changed: changed_tx,
    };
    let sync = match &file.gateway.sync {
        Some(spec) => {
            let (sync, dialer) =
                sync::breaker_sync(spec, clock.clone(), seed.fork("sync")).map_err(StartError::BadInput)?;
            Some((sync, Arc::new(dialer) as Arc<dyn mcpstorm_core::Dialer>))
        }
        None => None,
    };
    let seams = Seams {
        connector: Arc::new(connector),
        clock: clock.clone(),
        observer: Arc::new(GatewayObserver { metrics: metrics.clone(), tracing: TracingObserver::default() }),
        sync,
        list_changed: Some(changed_rx),
        tap: None,
        metrics: metrics.clone(),
        withheld: Vec::new(),
        adjust: None,
        declared: Vec::new(),
        startup_listing: node::STARTUP_LISTING,
    };
    let Node { federation, stop } = node::start(file.servers.clone(), &file.gateway, &file.client, seams, &seed)
        .await
        .map_err(StartError::BadInput)?;
    if let Some(telemetry) = telemetry {
        federation.trace_with(telemetry.clone());
    }
    let history = file
        .history
        .as_ref()
        .map(|spec| tokio::spawn(history::run(federation.clone(), HistoryFile::new(spec), stop.clone())));
    Ok(Generation { federation, stop, history })
}

enum Signal {
    Stop,
    Reload,
}

/// SIGTERM, SIGINT and SIGHUP.
struct Signals {
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> Result<Self, StartError> {
        use tokio::signal::unix::{SignalKind, signal};
        let listen = |kind| signal(kind).map_err(|e| StartError::Failed(format!("cannot listen for signals: {e}")));
        Ok(Signals { term: listen(SignalKind::terminate())?, hup: listen(SignalKind::hangup())? })
    }

    async fn next(&mut self) -> Signal {
        tokio::select! {
            biased;
            _ = self.term.recv() => Signal::Stop,
            _ = tokio::signal::ctrl_c() => Signal::Stop,
            _ = self.hup.recv() => Signal::Reload,
        }
    }
}
