//! Discovery: where servers come from, and what each one declares.
//!
//! The router does not care whether servers were configured statically, read from a scenario file or announced
//! while running: a [`Registry`] hands it the initial set and then membership events, which the embedder drains
//! into [`Router::sync`](super::Router::sync) between decisions.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;

use crate::capabilities::{Capabilities, RouterHints};

/// One server: a name, the endpoints that serve it (replicas), tags, the tools it offers and its capability
/// metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerEntry {
    pub name: String,
    /// Endpoint ids, one per replica (host names in the simulator). Each is routed to and health-checked alone.
    pub replicas: Vec<String>,
    /// Free-form labels (`"gpu"`, `"eu"`): a request may require one, see [`Requirement::Tag`](super::Requirement).
    pub tags: BTreeSet<String>,
    /// The tools this server offers: a request for another tool never reaches it.
    pub tools: BTreeSet<String>,
    /// Declared capacity and latency, as the sessions code reads them from `_meta`.
    pub hints: RouterHints,
    /// The capability matrix row: attribute → supported values, e.g. `language_support → {python, rust}`.
    pub matrix: BTreeMap<String, BTreeSet<String>>,
    /// Active health checks. Empty: one `ping` for the whole server.
    pub checks: Vec<HealthCheck>,
}

impl ServerEntry {
    /// A server with no tags, hints, matrix or checks; fill the public fields for the rest.
    pub fn new(name: impl Into<String>, replicas: impl IntoIterator<Item = impl Into<String>>) -> Self {
        ServerEntry {
            name: name.into(),
            replicas: replicas.into_iter().map(Into::into).collect(),
            tags: BTreeSet::new(),
            tools: BTreeSet::new(),
            hints: RouterHints::default(),
            matrix: BTreeMap::new(),
            checks: Vec::new(),
        }
    }

    pub fn with_tools(mut self, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.tools.extend(tools.into_iter().map(Into::into));
        self
    }

    /// Adds values to one attribute of the capability matrix.
    pub fn with_support(mut self, attribute: &str, values: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.matrix.entry(attribute.to_owned()).or_default().extend(values.into_iter().map(Into::into));
        self
    }

    pub fn with_hints(mut self, hints: RouterHints) -> Self {
        self.hints = hints;
        self
    }

    /// Tools and server-level hints from a session's capability record; the matrix from the server's `_meta`
    /// (see [`matrix_from_meta`]).
    pub fn from_capabilities(
        name: impl Into<String>,
        replicas: impl IntoIterator<Item = impl Into<String>>,
        capabilities: &Capabilities,
        server_meta: Option<&Value>,
    ) -> Self {
        let mut spec = ServerEntry::new(name, replicas).with_tools(capabilities.entries().map(|t| t.name().to_owned()));
        spec.hints = capabilities.server_hints();
        spec.matrix = matrix_from_meta(server_meta);
        spec
    }

    /// The declared P95, or `fallback`.
    pub fn latency_p95(&self, fallback: Duration) -> Duration {
        self.hints.latency_p95.unwrap_or(fallback)
    }

    /// The declared concurrency limit, or `fallback`.
    pub fn max_concurrent(&self, fallback: u32) -> u32 {
        self.hints.max_concurrent_requests.unwrap_or(fallback).max(1)
    }
}

/// The capability matrix row in a `_meta` object: every key ending in `_support` (optionally under the
/// `io.mcpstorm/` prefix) whose value is an array of strings, e.g. `"language_support": ["python", "rust"]`.
/// Other keys and non-string entries are ignored, as the router hints are.
pub fn matrix_from_meta(meta: Option<&Value>) -> BTreeMap<String, BTreeSet<String>> {
    let Some(meta) = meta.and_then(Value::as_object) else {
        return BTreeMap::new();
    };
    meta.iter()
        .filter_map(|(key, value)| {
            let key = key.strip_prefix("io.mcpstorm/").unwrap_or(key);
            let values = value.as_array()?.iter().filter_map(Value::as_str).map(str::to_owned).collect();
            key.ends_with("_support").then(|| (key.to_owned(), values))
        })
        .collect()
}

/// An active health check: what to call, and which capability its failure takes away.
#[derive(Debug, Clone, PartialEq)]
pub struct HealthCheck {
    /// The tool whose routes this check guards; `None`: the whole server.
    pub capability: Option<String>,
    /// The tool to call; `None`: MCP `ping`.
    pub tool: Option<String>,
    /// Minimal arguments for `tool`.
    pub arguments: Value,
}

impl HealthCheck {
    /// `ping`, guarding the whole server.
    pub fn ping() -> Self {
        HealthCheck { capability: None, tool: None, arguments: Value::Null }
    }

    /// A call of a declared health tool guarding one capability (check the capability, not the process).
    pub fn tool(capability: impl Into<String>, tool: impl Into<String>, arguments: Value) -> Self {
        HealthCheck { capability: Some(capability.into()), tool: Some(tool.into()), arguments }
    }
}

/// A membership change.
#[derive(Debug, Clone, PartialEq)]
pub enum RegistryEvent {
    /// A server (re)registers: added, or replaced whole if the name is known. Replicas it keeps keep their
    /// statistics.
    Join(ServerEntry),
    /// A server deregisters by name; its replicas stop being candidates at once.
    Leave(String),
}

/// Where servers come from.
pub trait Registry: std::fmt::Debug + Send {
    /// Membership changes due by `now` (time since the run's start), in order, appended to `out`. The first call
    /// returns the initial servers as joins.
    fn poll(&mut self, now: Duration, out: &mut Vec<RegistryEvent>);
}

/// A fixed list of servers: static configuration.
#[derive(Debug, Clone)]
pub struct StaticRegistry {
    servers: Option<Vec<ServerEntry>>,
}

impl StaticRegistry {
    pub fn new(servers: Vec<ServerEntry>) -> Self {
        StaticRegistry { servers: Some(servers) }
    }
}

impl Registry for StaticRegistry {
    fn poll(&mut self, _now: Duration, out: &mut Vec<RegistryEvent>) {
        out.extend(self.servers.take().into_iter().flatten().map(RegistryEvent::Join));
    }
}

/// Servers from a scenario file: an initial set plus joins and leaves at given times during the run.
#[derive(Debug, Clone)]
pub struct ScheduledRegistry {
    /// Sorted by time (stable: events at the same time keep their order).
    timeline: Vec<(Duration, RegistryEvent)>,
    next: usize,
}

impl ScheduledRegistry {
    /// `initial` joins at time zero; `timeline` may be in any order.
    pub fn new(initial: Vec<ServerEntry>, timeline: Vec<(Duration, RegistryEvent)>) -> Self {
        let mut all: Vec<_> = initial.into_iter().map(|s| (Duration::ZERO, RegistryEvent::Join(s))).collect();
        let mut later = timeline;
        later.sort_by_key(|(at, _)| *at);
        all.extend(later);
        ScheduledRegistry { timeline: all, next: 0 }
    }
}

impl Registry for ScheduledRegistry {
    fn poll(&mut self, now: Duration, out: &mut Vec<RegistryEvent>) {
        while let Some((at, event)) = self.timeline.get(self.next) {
            if *at > now {
                break;
            }
            out.push(event.clone());
            self.next += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_matrix_comes_from_support_keys_only() {
        let meta = json!({
            "language_support": ["python", "rust", 3],
            "io.mcpstorm/depth_support": ["deep"],
            "latency_p95_ms": 850,
            "region_support": "eu"
        });
        let m = matrix_from_meta(Some(&meta));
        assert_eq!(m.len(), 2, "{m:?}");
        assert_eq!(m["language_support"], BTreeSet::from(["python".to_owned(), "rust".to_owned()]));
        assert!(m["depth_support"].contains("deep"));
        assert!(matrix_from_meta(None).is_empty());
    }

    #[test]
    fn scheduled_events_come_out_in_time_order_once() {
        let s = |n: &str| ServerEntry::new(n, [n]);
        let mut r = ScheduledRegistry::new(
            vec![s("a")],
            vec![
                (Duration::from_secs(20), RegistryEvent::Leave("a".into())),
                (Duration::from_secs(10), RegistryEvent::Join(s("b"))),
            ],
        );
        let mut out = Vec::new();
        r.poll(Duration::from_secs(5), &mut out);
        assert_eq!(out, vec![RegistryEvent::Join(s("a"))]);
        out.clear();
        r.poll(Duration::from_secs(30), &mut out);
        assert_eq!(out, vec![RegistryEvent::Join(s("b")), RegistryEvent::Leave("a".into())]);
        out.clear();
        r.poll(Duration::from_secs(40), &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn a_static_registry_yields_its_servers_once() {
        let mut r = StaticRegistry::new(vec![ServerEntry::new("a", ["a-1"])]);
        let mut out = Vec::new();
        r.poll(Duration::ZERO, &mut out);
        r.poll(Duration::from_secs(1), &mut out);
        assert_eq!(out.len(), 1);
    }
}
