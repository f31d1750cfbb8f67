//! The scenario's servers as the gateways' router sees them, and the independent judge of where calls may go.
//!
//! [`registry`] turns `[[servers]]` into the core's [`ServerEntry`]s — replicas are the server's hosts, tools its
//! tools, the capability matrix, tags (plus the automatic `server:<name>`), declared hints and health check — and
//! schedules `join_at` / `leave_at` as membership events of a [`ScheduledRegistry`].
//!
//! [`Needs`] decides, from the same server tables but without the router or the gateway's requirement rules, which
//! servers may serve each `[[load.mix]]` entry. An attempt served elsewhere is a *misroute*: so a scenario whose
//! gateway lacks a requirement rule shows misroutes instead of passing silently.

use std::collections::{BTreeMap, BTreeSet};

use mcpstorm_core::router::{RegistryEvent, Requirement, ScheduledRegistry, ServerEntry};

use crate::scenario::server_host;
use crate::scenario::{self, MixEntry, Scenario};

/// The capability attribute an argument is judged against: `language` → `language_support`.
fn attribute_of(argument: &str) -> String {
    format!("{argument}_support")
}

/// One scenario server as the router's declaration: its replicas are its hosts.
fn server_spec(server: &scenario::ServerSpec) -> ServerEntry {
    let replicas = (0..server.replicas).map(|r| server_host(&server.name, r));
    server.declared().entry(&server.name, replicas, server.tools.iter().map(|t| t.name.clone()))
}

/// Every server, registered at `join_at` (the start when absent) and deregistered at `leave_at`.
pub fn registry(scenario: &Scenario) -> ScheduledRegistry {
    let mut initial = Vec::new();
    let mut timeline = Vec::new();
    for server in &scenario.servers {
        let spec = server_spec(server);
        match server.join_at {
            Some(at) if !at.0.is_zero() => timeline.push((at.0, RegistryEvent::Join(spec))),
            _ => initial.push(spec),
        }
        if let Some(at) = server.leave_at {
            timeline.push((at.0, RegistryEvent::Leave(server.name.clone())));
        }
    }
    ScheduledRegistry::new(initial, timeline)
}

/// The requirement a mix entry naming a server adds to its calls.
pub fn pin(entry: &MixEntry) -> Vec<Requirement> {
    entry.server.iter().map(|name| Requirement::Tag(scenario::server_tag(name))).collect()
}

/// Which servers may serve which mix entry, from the scenario's tables alone.
#[derive(Debug, Clone)]
pub struct Needs {
    /// Replica host → server index.
    hosts: BTreeMap<String, usize>,
    /// Server names by index.
    names: Vec<String>,
    /// `allowed[mix entry]`: the indices of the servers that may serve it.
    allowed: Vec<BTreeSet<usize>>,
}

impl Needs {
    pub fn new(scenario: &Scenario) -> Needs {
        let servers = &scenario.servers;
        let hosts = servers
            .iter()
            .enumerate()
            .flat_map(|(i, s)| (0..s.replicas).map(move |r| (server_host(&s.name, r), i)))
            .collect();
        // Attributes some server declares: only those make an argument a requirement.
        let declared: BTreeSet<&str> = servers.iter().flat_map(|s| s.capabilities.keys()).map(String::as_str).collect();
        let allowed = scenario
            .load
            .mix
            .iter()
            .map(|entry| {
                let needs: Vec<(String, &str)> = entry
                    .args
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter_map(|(argument, value)| Some((attribute_of(argument), value.as_str()?)))
                    .filter(|(attribute, _)| declared.contains(attribute.as_str()))
                    .collect();
                servers
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| entry.server.as_ref().is_none_or(|name| name == &s.name))
                    .filter(|(_, s)| s.tools.iter().any(|t| t.name == entry.tool))
                    .filter(|(_, s)| {
                        needs.iter().all(|(attribute, value)| {
                            s.capabilities.get(attribute).is_some_and(|vs| vs.iter().any(|v| v == value))
                        })
                    })
                    .map(|(i, _)| i)
                    .collect()
            })
            .collect();
        Needs { hosts, allowed, names: servers.iter().map(|s| s.name.clone()).collect() }
    }

    /// The server replica host `replica` belongs to.
    pub fn server_of(&self, replica: &str) -> Option<&str> {
        self.hosts.get(replica).and_then(|i| self.names.get(*i)).map(String::as_str)
    }

    /// Whether replica host `replica` serving mix entry `entry` is a misroute.
    pub fn misroute(&self, entry: usize, replica: &str) -> bool {
        match (self.hosts.get(replica), self.allowed.get(entry)) {
            (Some(server), Some(allowed)) => !allowed.contains(server),
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use mcpstorm_core::router::Registry;

    use std::time::Duration;

    use super::*;
    use crate::scenario::load_str;

    const SCENARIO: &str = r#"
name = "t"
duration = "30s"

[[servers]]
name = "py"
replicas = 2
capabilities = { language_support = ["python"] }
latency_p95_ms = 250
tags = ["eu"]
[[servers.tools]]
name = "review"
[[servers.tools]]
name = "health"

[[servers]]
name = "poly"
capabilities = { language_support = ["python", "rust"] }
health_check = { tool = "review", arguments = { language = "python" } }
join_at = "10s"
leave_at = "20s"
[[servers.tools]]
name = "review"

[load]
mode = "closed"
sessions = 1

[[load.mix]]
tool = "review"
args = { language = "rust", style = "terse" }

[[load.mix]]
server = "py"
tool = "review"
args = { language = "python" }

[[load.mix]]
tool = "health"
"#;

    fn scenario() -> Scenario {
        load_str(SCENARIO, "t.toml", &[]).expect("valid scenario")
    }

    #[test]
    fn needs_come_from_the_server_tables_not_the_gateway() {
        let needs = Needs::new(&scenario());
        // rust: only poly supports it; `style` is no requirement (no server declares style_support).
        assert!(needs.misroute(0, "py-0") && needs.misroute(0, "py-1"));
        assert!(!needs.misroute(0, "poly-0"));
        // Pinned to py: poly (which supports python too) is a misroute.
        assert!(!needs.misroute(1, "py-1"));
        assert!(needs.misroute(1, "poly-0"));
        // A tool only py offers.
        assert!(!needs.misroute(2, "py-0") && needs.misroute(2, "poly-0"));
        // Unknown hosts and entries are never a correct route.
        assert!(needs.misroute(0, "nope-0") && needs.misroute(9, "poly-0"));
        assert_eq!(needs.server_of("py-1"), Some("py"));
        assert_eq!(needs.server_of("nope"), None);
    }

    #[test]
    fn the_registry_declares_each_server_and_schedules_joins_and_leaves() {
        let scenario = scenario();
        let mut registry = registry(&scenario);
        let mut events = Vec::new();
        registry.poll(Duration::ZERO, &mut events);
        let [RegistryEvent::Join(py)] = events.as_slice() else { panic!("only py at the start: {events:?}") };
        assert_eq!(py.replicas, ["py-0", "py-1"]);
        assert!(py.tags.contains("eu") && py.tags.contains("server:py"));
        assert!(py.tools.contains("review") && py.tools.contains("health"));
        assert_eq!(py.hints.latency_p95, Some(Duration::from_millis(250)));
        assert!(py.matrix["language_support"].contains("python"));
        assert!(py.checks.is_empty(), "no declared health tool: the router pings");
        events.clear();
        registry.poll(Duration::from_secs(15), &mut events);
        let [RegistryEvent::Join(poly)] = events.as_slice() else { panic!("poly joins at 10 s: {events:?}") };
        assert_eq!(poly.checks.len(), 1);
        assert_eq!(poly.checks[0].tool.as_deref(), Some("review"));
        assert_eq!(poly.checks[0].capability, None, "the declared check guards the whole server");
        events.clear();
        registry.poll(Duration::from_secs(25), &mut events);
        assert_eq!(events, [RegistryEvent::Leave("poly".into())]);
        assert_eq!(pin(&scenario.load.mix[1]), [Requirement::Tag("server:py".into())]);
        assert!(pin(&scenario.load.mix[0]).is_empty());
    }
}
