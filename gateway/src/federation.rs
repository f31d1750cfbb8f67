//! Federation: the servers' tools as one list, and each agent's call sent down the protected path.
//!
//! - **Discovery.** Each server is listed from its first replica that answers. A listed server is declared to the
//!   router with its tools (a re-listing replaces the declaration); a server no replica of which answers is left
//!   out of the list, and tried again every [`RELIST_EVERY`] while it has no listing. One bad upstream never fails
//!   an agent's session: the others' tools are listed and served.
//! - **Changes.** An upstream's `notifications/tools/list_changed` (or a re-listing that differs) rebuilds the
//!   catalog; when the names agents see change, [`Federation::changes`] fires so the front tells every agent.
//! - **Calls.** `tools/call` resolves the agent's name to (server, upstream name) and calls
//!   [`Gateway::call`](mcpstorm_core::Gateway::call) with the server's `server:<name>` tag required: routing across
//!   the server's replicas, breakers, bulkheads, retries under the budget, degraded results. An upstream's JSON-RPC
//!   error is the agent's; a failure to reach the server is a tool result with `isError` that names its class.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};
use std::time::Duration;

use mcpstorm_core::conn::AskSink;
use mcpstorm_core::gateway::{ManualError, Operation};
use mcpstorm_core::jsonrpc::{ErrorCode, ErrorObject};
use mcpstorm_core::mcp::logging::{LogLevel, LogSink};
use mcpstorm_core::mcp::{CallToolResult, ProgressParams, Tool};
use mcpstorm_core::resilience::BreakerTransition;
use mcpstorm_core::resilience::degraded_result;
use mcpstorm_core::router::{RegistryEvent, Requirement, StaticRegistry};
use mcpstorm_core::sync::BreakerSync;
use mcpstorm_core::{CallError, CallOptions, CancelToken, Delivery, Gateway, Secret, ToolCall};
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::catalog::{Catalog, Origin};
use super::metrics::{AttemptLabels, Metrics, ToolLabels};
use super::proxied::{self, Kind, Proxied};
use super::readiness::{ReplicaStatus, Replicas};
use super::state::Protection;
use super::subscriptions::Subscriptions;
use super::tap::AttemptTap;
use super::telemetry::{CallTrace, Telemetry};
use crate::config::ReadyRule;
use crate::config::{PrefixMode, ReplicaAddr, UpstreamSpec, server_tag};

/// How often a server with no listing (down at start, or never answered) is tried again.
pub const RELIST_EVERY: Duration = Duration::from_secs(5);

/// The federation calls go to now; SIGHUP swaps it (see `process`).
pub type Current = Arc<RwLock<Arc<Federation>>>;

/// Reads the current federation.
pub fn current(current: &Current) -> Arc<Federation> {
    current.read().unwrap_or_else(PoisonError::into_inner).clone()
}

/// The listings and the names built from them.
#[derive(Debug, Default)]
struct Listings {
    tools: BTreeMap<String, Arc<Vec<Tool>>>,
    catalog: Catalog,
}

/// See the module documentation.
pub struct Federation {
    gateway: Arc<Gateway>,
    servers: Vec<UpstreamSpec>,
    mode: PrefixMode,
    listings: RwLock<Listings>,
    proxied: RwLock<Proxied>,
    /// Bumped when the names agents see change.
    changes: watch::Sender<u64>,
    metrics: Arc<Metrics>,
    /// Breaker sync with the other nodes (`[gateway.sync]`).
    sync: Option<Arc<BreakerSync>>,
    /// Sees every attempt (the simulator's recorder, on a simulated node).
    tap: Option<Arc<dyn AttemptTap>>,
    /// Configured servers out of rotation (see [`withdraw`](Self::withdraw)): not listed, not routed to.
    withheld: RwLock<BTreeSet<String>>,
    /// Every configured replica's state, as the listings found it (`/readyz`, the admin API).
    replicas: Replicas,
    /// Agents' resource subscriptions.
    subscriptions: Arc<Subscriptions>,
    /// Traces of every tool call (`[telemetry]`); unset: none are built.
    telemetry: OnceLock<Arc<Telemetry>>,
}

impl std::fmt::Debug for Federation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Federation").field("servers", &self.servers.len()).finish_non_exhaustive()
    }
}

impl Federation {
    pub fn new(gateway: Arc<Gateway>, servers: Vec<UpstreamSpec>, mode: PrefixMode, metrics: Arc<Metrics>) -> Self {
        Federation {
            gateway,
            mode,
            listings: RwLock::default(),
            proxied: RwLock::default(),
            changes: watch::channel(0).0,
            metrics,
            sync: None,
            tap: None,
            withheld: RwLock::default(),
            replicas: Replicas::of(&servers),
            servers,
            subscriptions: Arc::default(),
            telemetry: OnceLock::new(),
        }
    }

    /// With a watcher of every attempt (see [`AttemptTap`]).
    pub fn with_tap(mut self, tap: Arc<dyn AttemptTap>) -> Self {
        self.tap = Some(tap);
        self
    }

    /// Traces every tool call from now on (the process's `[telemetry]`; set once, before the front serves).
    pub fn trace_with(&self, telemetry: Arc<Telemetry>) {
        let _ = self.telemetry.set(telemetry);
    }

    /// With breaker sync: the admin API's switches are shared with the other nodes.
    pub fn with_sync(mut self, sync: Arc<BreakerSync>) -> Self {
        self.sync = Some(sync);
        self
    }

    pub fn sync(&self) -> Option<&Arc<BreakerSync>> {
        self.sync.as_ref()
    }

    /// An operator's switch on one breaker: applied here, and on every node when breaker sync is on.
    pub fn operate(
        &self,
        endpoint: &str,
        tool: &str,
        op: &Operation,
    ) -> Result<Option<BreakerTransition>, ManualError> {
        match &self.sync {
            Some(sync) => sync.operate(&self.gateway, endpoint, tool, op),
            None => self.gateway.operate(endpoint, tool, op),
        }
    }

    pub fn gateway(&self) -> &Arc<Gateway> {
        &self.gateway
    }

    /// Agents' resource subscriptions (see `subscribe`).
    pub fn subscriptions(&self) -> &Arc<Subscriptions> {
        &self.subscriptions
    }

    pub fn servers(&self) -> &[UpstreamSpec] {
        &self.servers
    }

    /// Fires each time the names agents see change.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Whether every server in rotation has a listing (the process's readiness).
    pub fn all_listed(&self) -> bool {
        let withheld = self.withheld.read().unwrap_or_else(PoisonError::into_inner);
        let listings = self.listings.read().unwrap_or_else(PoisonError::into_inner);
        self.servers.iter().all(|s| withheld.contains(&s.name) || listings.tools.contains_key(&s.name))
    }

    /// Whether `rule` holds (`all`: every server in rotation listed; `any`: one is), and the servers with their
    /// listings' sizes and every replica's state, for `/readyz`.
    pub fn readiness(&self, rule: ReadyRule) -> (bool, Value) {
        let withheld = self.withheld.read().unwrap_or_else(PoisonError::into_inner);
        let listings = self.listings.read().unwrap_or_else(PoisonError::into_inner);
        let in_rotation: Vec<&UpstreamSpec> = self.servers.iter().filter(|s| !withheld.contains(&s.name)).collect();
        let listed = |s: &&UpstreamSpec| listings.tools.contains_key(&s.name);
        let ready = match rule {
            ReadyRule::All => in_rotation.iter().all(listed),
            ReadyRule::Any => in_rotation.iter().any(listed) || in_rotation.is_empty(),
        };
        let servers: Vec<Value> = self
            .servers
            .iter()
            .map(|s| {
                json!({
                    "name": s.name,
                    "listed": listings.tools.contains_key(&s.name),
                    "tools": listings.tools.get(&s.name).map_or(0, |t| t.len()),
                    "replicas": self.replicas.of_server(&s.name),
                })
            })
            .collect();
        (ready, json!({ "ready": ready, "rule": rule, "servers": servers }))
    }

    /// Every configured replica's state (the admin API).
    pub fn replica_states(&self) -> Vec<ReplicaStatus> {
        self.replicas.all()
    }

    /// Takes `server` out of rotation: the router forgets it (its replicas stop being candidates at once), its tools
    /// leave the names agents see, and nothing lists it until [`admit`](Self::admit). How a simulated gateway follows
    /// a scenario's membership (`join_at`, `leave_at`); unknown names are ignored.
    pub fn withdraw(&self, server: &str) {
        if !self.servers.iter().any(|s| s.name == server) {
            return;
        }
        self.withheld.write().unwrap_or_else(PoisonError::into_inner).insert(server.to_owned());
        self.gateway.with_router(|router| router.apply(RegistryEvent::Leave(server.to_owned()), Instant::now()));
        let changed = {
            let mut listings = self.listings.write().unwrap_or_else(PoisonError::into_inner);
            listings.tools.remove(server).is_some() && self.rebuild_catalog(&mut listings)
        };
        if changed {
            self.changes.send_modify(|n| *n += 1);
        }
    }

    fn is_withheld(&self, server: &str) -> bool {
        self.withheld.read().unwrap_or_else(PoisonError::into_inner).contains(server)
    }

    /// Puts a withdrawn `server` back in rotation: it is listed and declared to the router again.
    pub async fn admit(&self, server: &str) {
        let was = self.withheld.write().unwrap_or_else(PoisonError::into_inner).remove(server);
        if was {
            self.relist(server).await;
        }
    }

    /// Lists every server (concurrently); see [`relist`](Self::relist).
    pub async fn discover(&self) {
        let all = self.servers.iter().map(|s| self.relist(&s.name));
        futures_join_all(all).await;
    }

    /// Lists `server` from its first replica that answers and, when that changed anything, declares it to the
    /// router and rebuilds the catalog. A server no replica of which answers keeps its last listing (its calls then
    /// meet the breakers), or stays unlisted.
    pub async fn relist(&self, server: &str) {
        let Some(spec) = self.servers.iter().find(|s| s.name == server) else { return };
        if self.is_withheld(server) {
            return;
        }
        let mut listed = None;
        for i in 0..spec.replicas.len() {
            let (_, client) = self.gateway.client(server, &spec.replica_id(i));
            match client.list_tools().await {
                Ok(tools) => {
                    self.replicas.ready(&spec.replica_id(i));
                    listed = Some(tools);
                    break;
                }
                Err(e) => {
                    tracing::warn!(server, replica = %spec.replica_id(i), error = %e, "cannot list tools");
                    self.replicas.failed(&spec.replica_id(i), e.to_string());
                }
            }
        }
        // Withdrawn while its listing was on the way: it stays out.
        let Some(tools) = listed.filter(|_| !self.is_withheld(server)) else { return };
        let tools = admitted_tools(spec, tools);
        if let Some(extras) = proxied::list(&self.gateway, spec).await.map(|e| admitted_entries(spec, e)) {
            let mut proxied = self.proxied.write().unwrap_or_else(PoisonError::into_inner);
            proxied.set(&self.servers, server, extras, self.mode);
        }
        let replicas = (0..spec.replicas.len()).map(|i| spec.replica_id(i));
        let entry = spec.declared().entry(server, replicas, tools.iter().map(|t| t.name.clone()));
        self.gateway.with_router(|router| {
            router.sync(&mut StaticRegistry::new(vec![entry]), tokio::time::Instant::now());
        });
        let changed = {
            let mut listings = self.listings.write().unwrap_or_else(PoisonError::into_inner);
            listings.tools.insert(server.to_owned(), tools);
            self.rebuild_catalog(&mut listings)
        };
        if changed {
            self.changes.send_modify(|n| *n += 1);
        }
    }

    /// The names agents see, rebuilt from `listings`; whether they changed.
    fn rebuild_catalog(&self, listings: &mut Listings) -> bool {
        let catalog = Catalog::build(
            self.servers.iter().filter_map(|s| {
                listings.tools.get(&s.name).map(|t| (s.name.as_str(), t.iter().map(|t| t.name.clone()).collect()))
            }),
            self.mode,
        );
        let changed = catalog != listings.catalog;
        listings.catalog = catalog;
        changed
    }

    /// Re-lists every server without a listing, every [`RELIST_EVERY`], until `stop`.
    pub async fn relist_missing(&self, stop: CancelToken) {
        loop {
            tokio::select! {
                biased;
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(RELIST_EVERY) => {}
            }
            let missing: Vec<String> = {
                let listings = self.listings.read().unwrap_or_else(PoisonError::into_inner);
                self.servers.iter().filter(|s| !listings.tools.contains_key(&s.name)).map(|s| s.name.clone()).collect()
            };
            for server in missing {
                self.relist(&server).await;
            }
        }
    }

    /// The `tools/list` result: every listed tool under its agent-facing name, as its server described it.
    pub fn list_tools(&self) -> Value {
        let listings = self.listings.read().unwrap_or_else(PoisonError::into_inner);
        let tools: Vec<Value> = listings
            .catalog
            .entries()
            .filter_map(|(name, origin)| {
                let tool = listings.tools.get(&origin.server)?.iter().find(|t| t.name == origin.name)?;
                let mut tool = serde_json::to_value(tool).ok()?;
                tool["name"] = Value::from(name);
                Some(tool)
            })
            .collect();
        json!({ "tools": tools })
    }

    /// The `prompts/list`, `resources/list` or `resources/templates/list` result.
    pub fn list(&self, kind: Kind) -> Value {
        self.proxied.read().unwrap_or_else(PoisonError::into_inner).list(kind)
    }

    /// `prompts/get` (`kind` prompts, member `name`) or `resources/read` (resources, member `uri`), sent to the
    /// server the agent-facing name leads to.
    pub async fn forward(
        &self,
        method: &str,
        kind: Kind,
        member: &str,
        params: Option<Value>,
    ) -> Result<Value, ErrorObject> {
        let params = params.unwrap_or_else(|| json!({}));
        let (spec, origin) = self.origin(method, kind, member, &params)?;
        proxied::forward(&self.gateway, spec, method, params, member, &origin).await
    }

    /// Where the agent-facing name in `params[member]` leads, when its server's filter admits it.
    pub(crate) fn origin(
        &self,
        method: &str,
        kind: Kind,
        member: &str,
        params: &Value,
    ) -> Result<(&UpstreamSpec, Origin), ErrorObject> {
        let Some(shown) = params.get(member).and_then(Value::as_str) else {
            return Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("{method} needs a string `{member}`")));
        };
        let origin = self.proxied.read().unwrap_or_else(PoisonError::into_inner).resolve(kind, shown);
        let spec = origin.as_ref().and_then(|o| self.servers.iter().find(|s| s.name == o.server));
        // A URI no listing holds reaches a server through its templates: its server's filter still decides.
        let origin = origin.filter(|o| spec.is_none_or(|spec| admits(spec, kind, &o.name)));
        let origin = origin.ok_or_else(|| {
            let code = if kind == Kind::Prompts { ErrorCode::INVALID_PARAMS } else { ErrorCode::RESOURCE_NOT_FOUND };
            ErrorObject::new(code, format!("unknown {member}: {shown}"))
        })?;
        let Some(spec) = spec else {
            return Err(ErrorObject::new(ErrorCode::INTERNAL_ERROR, "the server left the configuration"));
        };
        Ok((spec, origin))
    }

    /// The server of the tool agents know as `tool` (whose name its log messages carry).
    pub fn tool_server(&self, tool: &str) -> Option<String> {
        let listings = self.listings.read().unwrap_or_else(PoisonError::into_inner);
        listings.catalog.resolve(tool).map(|origin| origin.server.clone())
    }

    /// An agent's `logging/setLevel`: 2025-11-25 upstream sessions are asked for the most verbose level any agent
    /// has set (each agent then gets only what its own level admits; see `proxied::set_log_level`).
    pub async fn set_log_level(&self, level: LogLevel) {
        let lowered = self.proxied.write().unwrap_or_else(PoisonError::into_inner).lower_log_floor(level);
        if let Some(level) = lowered {
            proxied::set_log_level(&self.gateway, &self.servers, level).await;
        }
    }

    /// `completion/complete`, sent to the server of the prompt or resource template its `ref` names (by the name
    /// agents see).
    pub async fn complete(&self, params: Option<Value>) -> Result<Value, ErrorObject> {
        let params = params.unwrap_or_else(|| json!({}));
        let (kind, member, shown) = proxied::completion_ref(&params)?;
        let origin = self.proxied.read().unwrap_or_else(PoisonError::into_inner).resolve(kind, shown);
        let origin = origin.ok_or_else(|| {
            let what = if kind == Kind::Prompts { "prompt" } else { "resource template" };
            ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("unknown {what}: {shown}"))
        })?;
        let Some(spec) = self.servers.iter().find(|s| s.name == origin.server) else {
            return Err(ErrorObject::new(ErrorCode::INTERNAL_ERROR, "the server left the configuration"));
        };
        proxied::complete(&self.gateway, spec, params, member, &origin).await
    }

    /// `tools/call` with `params` (`name`, `arguments`), under the protected path. `on_behalf_of` is the agent's
    /// access token, which a server's `[servers.oauth]` with `grant = "token_exchange"` exchanges for its own.
    pub async fn call_tool(
        &self,
        params: Option<Value>,
        progress: Option<mpsc::Sender<ProgressParams>>,
        cancel: CancelToken,
        on_behalf_of: Option<Secret>,
        logs: Option<LogSink>,
        asks: AskSink,
    ) -> Result<CallToolResult, ErrorObject> {
        let mut params = params.unwrap_or(Value::Null);
        // Taken, not copied: the call owns its arguments from here on.
        let arguments = match params.get_mut("arguments").map(Value::take) {
            None | Some(Value::Null) => json!({}),
            Some(a @ Value::Object(_)) => a,
            Some(_) => return Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, "`arguments` must be an object")),
        };
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, "tools/call needs a string `name`"));
        };
        let origin = {
            let listings = self.listings.read().unwrap_or_else(PoisonError::into_inner);
            listings.catalog.resolve(name).cloned()
        };
        let Some(origin) = origin else {
            return Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("Unknown tool: {name}")));
        };
        let requires = [Requirement::Tag(server_tag(&origin.server))];
        let telemetry = self.telemetry.get();
        let trace = telemetry.map(|t| CallTrace::begin(t, params.get("_meta"), name));
        let mut call = ToolCall::borrowing(&origin.name, &arguments);
        call.requires = &requires;
        call.opts = CallOptions {
            cancel: Some(cancel),
            progress,
            on_behalf_of,
            logs,
            asks: Some(asks),
            meta: trace.as_ref().map(CallTrace::attempt_meta),
            params: resumed(&params),
            ..CallOptions::default()
        };
        let started = Instant::now();
        let routed = match (&self.tap, telemetry.zip(trace.as_ref())) {
            (None, None) => self.gateway.call(call).await,
            (None, Some((telemetry, trace))) => {
                // Each attempt's span begins as it is sent, and its request carries the attempt's traceparent.
                let prepared = self.gateway.call_prepared(call, |_, arguments| {
                    trace.sending(telemetry);
                    std::future::ready(arguments)
                });
                prepared.await
            }
            (Some(tap), _) => {
                let sent = Mutex::new(Vec::new());
                let routed = self
                    .gateway
                    .call_prepared(call, |_, arguments| {
                        let mut sent = sent.lock().unwrap_or_else(PoisonError::into_inner);
                        let at = tap.sending(!sent.is_empty());
                        sent.push(at);
                        std::future::ready(arguments)
                    })
                    .await;
                let sent = sent.into_inner().unwrap_or_else(PoisonError::into_inner);
                tap.ended(&origin.name, &arguments, &routed, &sent);
                routed
            }
        };
        let labels = ToolLabels { server: origin.server.clone(), tool: origin.name.clone() };
        self.metrics.call_seconds.get_or_create(&labels).observe(started.elapsed().as_secs_f64());
        for attempt in routed.attempts() {
            let outcome: &'static str = match &attempt.outcome {
                Ok(r) if r.is_error => "tool_error",
                Ok(_) => "ok",
                Err(e) => e.class().into(),
            };
            self.count(&origin.server, &attempt.endpoint, &origin.name, outcome);
        }
        // What the gateway says in the attempt's place; `None` when the agent gets the attempt's own result, taken
        // from `routed` once the spans have read it.
        let instead = match (routed.degraded(), routed.outcome()) {
            (Some(declined), _) => {
                self.count(&origin.server, "", &origin.name, "degraded");
                // The core names the tool as its server does; the agent knows it by the name it called.
                let said = declined.result.structured_content.as_ref();
                let retry_after = said.and_then(|s| s["retryAfterMs"].as_u64()).map(Duration::from_millis);
                let fallback = said.and_then(|s| s["fallbackTool"].as_str());
                Some(Ok(degraded_result(name, declined.reason, retry_after, fallback)))
            }
            (None, Ok(_)) => None,
            (None, Err(CallError::Protocol(error))) => Some(Err(error.clone())),
            (None, Err(e)) => {
                let tries = routed.attempts().count();
                let last = routed.attempts().last().map(|a| &*a.endpoint);
                Some(Ok(unreachable(&origin.server, name, e, last, tries)))
            }
        };
        if let Some((telemetry, trace)) = telemetry.zip(trace) {
            let said = match &instead {
                Some(instead) => instead.as_ref().map_err(|e| e.code),
                None => routed.outcome().map_err(|_| ErrorCode::INTERNAL_ERROR.0),
            };
            // A replica's endpoint is `server#i`; its span names the address the config gives it.
            let address = |endpoint: &str| {
                let (server, i) = endpoint.rsplit_once('#')?;
                let spec = self.servers.iter().find(|s| s.name == server)?;
                match spec.replicas.get(i.parse::<usize>().ok()?)?.addr()? {
                    ReplicaAddr::Http(url) => Some(url.to_owned()),
                    ReplicaAddr::Tcp(addr) => Some(format!("tcp://{addr}")),
                    ReplicaAddr::Stdio(_) => None,
                }
            };
            trace.end(telemetry, &routed, &arguments, said, address);
        }
        match (instead, routed.into_outcome()) {
            (Some(instead), _) => instead,
            (None, Ok(result)) => Ok(result),
            // `instead` is `None` only for a result.
            (None, Err(e)) => Err(ErrorObject::new(ErrorCode::INTERNAL_ERROR, e.to_string())),
        }
    }
}

impl Federation {
    /// The protection of this federation's gateway now, with health for every replica of its servers (what the admin
    /// API and the metrics read).
    pub fn protection(&self) -> Protection {
        let replicas: Vec<String> =
            self.servers().iter().flat_map(|s| (0..s.replicas.len()).map(|i| s.replica_id(i))).collect();
        Protection::read(self.gateway(), replicas.iter().map(String::as_str))
    }

    fn count(&self, server: &str, replica: &str, tool: &str, outcome: &'static str) {
        let labels =
            AttemptLabels { server: server.to_owned(), replica: replica.to_owned(), tool: tool.to_owned(), outcome };
        self.metrics.attempts.get_or_create(&labels).inc();
    }
}

/// A call the gateway could not complete at its server: an error result the agent can read, naming the class and
/// whether the server may have run the tool (so the agent knows whether sending it again could run it twice).
fn unreachable(server: &str, tool: &str, e: &CallError, replica: Option<&str>, tries: usize) -> CallToolResult {
    let class: &str = e.class().into();
    let delivery = e.delivery();
    let mut text = format!("The gateway could not complete `{tool}` at server `{server}` ({class} error): {e}");
    if let (Delivery::MaybeDelivered, Some(replica)) = (delivery, replica) {
        let retried = if tries > 1 { format!("after {tries} attempts") } else { "not retried".to_owned() };
        text.push_str(&format!(
            ". The request may have reached {replica}; {retried}: the gateway sends a request that may have been \
             delivered again only for a tool annotated read-only or idempotent"
        ));
    }
    let mut result = CallToolResult::text(text, true);
    let delivery: &str = delivery.into();
    result.structured_content =
        Some(json!({ "upstreamError": class, "server": server, "tool": tool, "delivery": delivery }));
    result
}

/// `tools` less those `spec`'s `tools` filter hides (the same list when it hides none).
fn admitted_tools(spec: &UpstreamSpec, tools: Arc<Vec<Tool>>) -> Arc<Vec<Tool>> {
    if tools.iter().all(|t| spec.admits_tool(&t.name)) {
        return tools;
    }
    Arc::new(tools.iter().filter(|t| spec.admits_tool(&t.name)).cloned().collect())
}

/// A server's prompts, resources and templates less those its `prompts` and `resources` filters hide; an entry
/// without a name or URI is left to the catalog (which lists only named entries).
fn admitted_entries(spec: &UpstreamSpec, mut listed: BTreeMap<Kind, Vec<Value>>) -> BTreeMap<Kind, Vec<Value>> {
    for (kind, entries) in &mut listed {
        let member = match kind {
            Kind::Prompts => "name",
            Kind::Resources => "uri",
            Kind::Templates => "uriTemplate",
        };
        entries.retain(|e| e.get(member).and_then(Value::as_str).is_none_or(|name| admits(spec, *kind, name)));
    }
    listed
}

/// Whether `spec`'s filter of `kind` lets agents see and use its entry `name` (a prompt's name, a resource's URI or
/// a template's `uriTemplate`).
fn admits(spec: &UpstreamSpec, kind: Kind, name: &str) -> bool {
    match kind {
        Kind::Prompts => spec.admits_prompt(name),
        Kind::Resources | Kind::Templates => spec.admits_resource(name),
    }
}

/// Runs every future to completion, concurrently, on this task.
async fn futures_join_all<F: std::future::Future<Output = ()>>(futures: impl IntoIterator<Item = F>) {
    let mut set: Vec<std::pin::Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    std::future::poll_fn(|cx| {
        set.retain_mut(|f| f.as_mut().poll(cx).is_pending());
        if set.is_empty() { std::task::Poll::Ready(()) } else { std::task::Poll::Pending }
    })
    .await;
}

/// The servers' filters applied to listings, before the names are built (`admitted_tools`, `admitted_entries`).
/// What a 2026-07-28 agent's retry of an input-required call carries for its server (`inputResponses`,
/// `requestState`): passed on as they came, since they are the server's own.
fn resumed(params: &Value) -> Option<std::sync::Arc<serde_json::Map<String, Value>>> {
    let keep: serde_json::Map<String, Value> = ["inputResponses", "requestState"]
        .into_iter()
        .filter_map(|k| params.get(k).map(|v| (k.to_owned(), v.clone())))
        .collect();
    (!keep.is_empty()).then(|| std::sync::Arc::new(keep))
}

#[cfg(test)]
mod filter_tests {
    use super::*;

    fn server(name: &str, filters: Value) -> UpstreamSpec {
        let mut spec = json!({ "name": name, "replicas": [{ "tcp": "127.0.0.1:9001" }] });
        spec.as_object_mut().expect("an object").extend(filters.as_object().cloned().unwrap_or_default());
        serde_json::from_value(spec).unwrap_or_else(|e| panic!("{e}"))
    }

    fn tools(names: &[&str]) -> Arc<Vec<Tool>> {
        let tool = |n: &&str| serde_json::from_value(json!({ "name": n, "inputSchema": { "type": "object" } }));
        Arc::new(names.iter().map(|n| tool(n).expect("a tool")).collect())
    }

    fn names(catalog: &Catalog) -> Vec<(&str, &str)> {
        catalog.entries().map(|(n, o)| (n, o.server.as_str())).collect()
    }

    #[test]
    fn a_hidden_tool_leaves_the_names_and_its_collision_no_longer_prefixes() {
        let ledger = server("ledger", json!({}));
        let docs = server("docs", json!({ "tools": { "deny": ["search", "drop_*"] } }));
        let listings = [
            ("ledger", admitted_tools(&ledger, tools(&["balance", "search"]))),
            ("docs", admitted_tools(&docs, tools(&["search", "read", "drop_index"]))),
        ];
        let build =
            |mode| Catalog::build(listings.iter().map(|(s, t)| (*s, t.iter().map(|t| t.name.clone()).collect())), mode);
        let catalog = build(PrefixMode::Conditional);
        assert_eq!(names(&catalog), [("balance", "ledger"), ("search", "ledger"), ("read", "docs")]);
        for hidden in ["docs__search", "ledger__search", "drop_index", "docs__drop_index"] {
            assert_eq!(catalog.resolve(hidden), None, "{hidden}: refused as an unknown tool");
        }
        let always = build(PrefixMode::Always);
        assert_eq!(always.resolve("docs__search"), None, "hidden under `always` too");
        // Nothing hidden: the very same listing, not a copy.
        let all = tools(&["a", "b"]);
        assert!(Arc::ptr_eq(&all, &admitted_tools(&ledger, all.clone())));
    }

    #[test]
    fn hidden_prompts_resources_and_templates_leave_their_lists() {
        let everything = server(
            "everything",
            json!({
                "prompts": { "allow": ["simple-*", "args-*"], "deny": ["args-*"] },
                "resources": { "deny": ["demo://secret/*"] },
            }),
        );
        let listed = BTreeMap::from([
            (Kind::Prompts, vec![json!({ "name": "simple-prompt" }), json!({ "name": "args-prompt" }), json!({})]),
            (Kind::Resources, vec![json!({ "uri": "demo://docs/a" }), json!({ "uri": "demo://secret/key" })]),
            (
                Kind::Templates,
                vec![json!({ "uriTemplate": "demo://docs/{id}" }), json!({ "uriTemplate": "demo://secret/{id}" })],
            ),
        ]);
        let kept = admitted_entries(&everything, listed);
        assert_eq!(kept[&Kind::Prompts], [json!({ "name": "simple-prompt" }), json!({})], "deny wins; unnamed kept");
        assert_eq!(kept[&Kind::Resources], [json!({ "uri": "demo://docs/a" })]);
        assert_eq!(kept[&Kind::Templates], [json!({ "uriTemplate": "demo://docs/{id}" })]);
        // What the read path checks for a URI that reaches the server through a template.
        assert!(admits(&everything, Kind::Resources, "demo://docs/b"));
        assert!(!admits(&everything, Kind::Resources, "demo://secret/other"));
        assert!(!admits(&everything, Kind::Prompts, "args-prompt"));
    }
}
