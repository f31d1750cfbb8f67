//! The scenario's servers as the gateways' router sees them, and the independent judge of where calls may go.
//!
//! [`membership`] schedules `join_at` / `leave_at` as the node's [`Change`]s: a server with a later `join_at` starts out
//! of rotation and is admitted then, and one with `leave_at` is withdrawn then. (Each gateway declares its servers to
//! its router as it lists them, with what `[[servers]]` declares: see the gateway crate's federation.)
//!
//! [`Needs`] decides, from the same server tables but without the router or the gateway's requirement rules, which
//! servers may serve each `[[load.mix]]` entry. An attempt served elsewhere is a *misroute*: so a scenario whose
//! gateway lacks a requirement rule shows misroutes instead of passing silently.

use std::collections::{BTreeMap, BTreeSet};

use std::time::Duration;

use mcpstorm_core::router::{Requirement, ServerEntry};
use mcpstorm_gateway::config::upstream::UpstreamEra;

use crate::scenario::server_host;
use crate::scenario::{self, MixEntry, Placement, ReplicaSpec, Scenario, UpstreamSpec};

/// The capability attribute an argument is judged against: `language` → `language_support`.
fn attribute_of(argument: &str) -> String {
    format!("{argument}_support")
}

/// A scheduled change of a gateway's servers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The server joins: it is listed and routed to from now on.
    Admit(String),
    /// The server leaves: its replicas stop being candidates at once.
    Withdraw(String),
}

/// The servers out of rotation when a gateway starts (a `join_at` after the start), and every later change in time
/// order (a join before a leave at the same instant).
pub fn membership(scenario: &Scenario) -> (Vec<String>, Vec<(Duration, Change)>) {
    let mut withheld = Vec::new();
    let mut timeline = Vec::new();
    for server in &scenario.servers {
        if let Some(at) = server.join_at.filter(|at| !at.0.is_zero()) {
            withheld.push(server.name.clone());
            timeline.push((at.0, Change::Admit(server.name.clone())));
        }
        if let Some(at) = server.leave_at {
            timeline.push((at.0, Change::Withdraw(server.name.clone())));
        }
    }
    timeline.sort_by_key(|(at, change)| (*at, matches!(change, Change::Withdraw(_))));
    (withheld, timeline)
}

/// The scenario's servers as a gateway file's `[[servers]]`: each replica's address is where the world placed it
/// (the connector dials by the replica's name, so the address is only what an operator would have written).
pub fn upstreams(scenario: &Scenario, placement: &Placement) -> Vec<UpstreamSpec> {
    scenario
        .servers
        .iter()
        .map(|s| UpstreamSpec {
            name: s.name.clone(),
            replicas: (0..s.replicas)
                .map(|r| {
                    let at = placement.address(&server_host(&s.name, r));
                    let tcp = format!("{}:{}", at.host, super::net::port(at.slot));
                    ReplicaSpec { tcp: Some(tcp), ..ReplicaSpec::default() }
                })
                .collect(),
            tags: s.tags.clone(),
            capabilities: s.capabilities.clone(),
            latency_p95_ms: s.latency_p95_ms,
            max_concurrent_requests: s.max_concurrent_requests,
            oauth: None,
            health_check: s.health_check.clone(),
            tools: None,
            prompts: None,
            resources: None,
            // As the simulated gateway's client speaks (`EraMode::Auto`), so the live twin's nodes match it.
            era: Some(UpstreamEra::DiscoverFirst),
        })
        .collect()
}

/// What a load host's node declares to its router before it lists anything: each server in rotation at the start,
/// as its `[[servers]]` table says (the replicas as the node names them, `server#i`; the tools the fake offers).
pub fn declarations(scenario: &Scenario, upstreams: &[UpstreamSpec], withheld: &[String]) -> Vec<ServerEntry> {
    scenario
        .servers
        .iter()
        .zip(upstreams)
        .filter(|(server, _)| !withheld.contains(&server.name))
        .map(|(server, upstream)| {
            let replicas = (0..upstream.replicas.len()).map(|i| upstream.replica_id(i));
            upstream.declared().entry(&server.name, replicas, server.tools.iter().map(|t| t.name.clone()))
        })
        .collect()
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
    fn membership_withholds_late_joiners_and_schedules_joins_and_leaves() {
        let scenario = scenario();
        let (withheld, timeline) = membership(&scenario);
        assert_eq!(withheld, ["poly"], "only poly joins after the start");
        assert_eq!(
            timeline,
            [
                (Duration::from_secs(10), Change::Admit("poly".into())),
                (Duration::from_secs(20), Change::Withdraw("poly".into()))
            ]
        );
        assert_eq!(pin(&scenario.load.mix[1]), [Requirement::Tag("server:py".into())]);
        assert!(pin(&scenario.load.mix[0]).is_empty());
    }
}
