//! Where each server replica runs: its own turmoil host only when a fault needs one, else a host shared with the
//! other replicas of its server.
//!
//! turmoil's cost per tick grows steeply with the number of hosts (each tick visits every host's runtime and every
//! link), so a topology with a host per replica runs many times slower than one whose replicas share their server's host
//! (the host curve in docs/benchmarks.md). Replicas that share a fate can
//! share a host: a replica is a listener of its own (one port each) on its server's host, and only a replica that a
//! `crash` or `partition` fault names — the two faults that act on a host rather than on a server's behaviour —
//! gets a host of its own, named after the replica so the fault's events read the same either way. Every other
//! fault acts through the replica's own control and wall clock, which do not depend on where it runs.

use std::collections::BTreeMap;

use super::model::{HostsMode, Scenario};
use super::{FaultKind, resolve_target};

/// The name of replica `replica` of `server`: the router's endpoint, the key of its control and clock, and its
/// host's name when it has a host of its own.
pub fn server_host(server: &str, replica: usize) -> String {
    format!("{server}-{replica}")
}

/// The world's name of a replica a gateway node's federation names `server#i` (as `mcpstorm gateway` names its
/// replicas): [`server_host`]. Any other name is already the world's.
pub fn replica_host(endpoint: &str) -> std::borrow::Cow<'_, str> {
    match endpoint.rsplit_once('#') {
        Some((server, i)) if !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()) => {
            std::borrow::Cow::Owned(format!("{server}-{i}"))
        }
        _ => std::borrow::Cow::Borrowed(endpoint),
    }
}

pub fn load_host(index: usize) -> String {
    format!("load-{index}")
}

/// Gateway node `index`'s host (`[nodes] count`).
pub fn node_host(index: usize) -> String {
    format!("gateway-{index}")
}

/// The host the replicas of `server` share. Replica names end in a number and load hosts are `load-N`, so this
/// cannot name another host.
fn shared_host(server: &str) -> String {
    format!("{server}-replicas")
}

/// Where one replica listens: a host, and its slot on that host (the world turns slots into ports).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address {
    pub host: String,
    pub slot: u16,
}

/// One replica on its host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// The replica's name ([`server_host`]).
    pub name: String,
    pub server: usize,
    pub replica: usize,
}

/// Every replica's address, and the server hosts to start with the replicas each runs, in scenario order.
#[derive(Debug, Default)]
pub struct Placement {
    addresses: BTreeMap<String, Address>,
    hosts: Vec<(String, Vec<Placed>)>,
}

/// Whether a fault of this kind acts on a host (so its target needs one of its own).
fn acts_on_host(kind: FaultKind) -> bool {
    matches!(kind, FaultKind::Crash | FaultKind::Partition)
}

impl Placement {
    /// Places the scenario's replicas: on their own host those that a crash or partition names (or all of them, with
    /// `network.hosts = "per_replica"`), the rest shared.
    pub fn of(scenario: &Scenario) -> Placement {
        let mut own: Vec<Vec<usize>> = match scenario.network.hosts {
            HostsMode::Shared => vec![Vec::new(); scenario.servers.len()],
            HostsMode::PerReplica => scenario.servers.iter().map(|s| (0..s.replicas).collect()).collect(),
        };
        for fault in scenario.faults.iter().filter(|f| acts_on_host(f.kind)) {
            match resolve_target(&fault.target, &scenario.servers) {
                Ok((s, Some(r))) => own[s].push(r),
                Ok((s, None)) => own[s].extend(0..scenario.servers[s].replicas),
                Err(_) => {}
            }
        }
        let mut placement = Placement::default();
        for (s, spec) in scenario.servers.iter().enumerate() {
            let mut shared = Vec::new();
            for r in 0..spec.replicas {
                let placed = Placed { name: server_host(&spec.name, r), server: s, replica: r };
                if own[s].contains(&r) {
                    placement.addresses.insert(placed.name.clone(), Address { host: placed.name.clone(), slot: 0 });
                    placement.hosts.push((placed.name.clone(), vec![placed]));
                } else {
                    shared.push(placed);
                }
            }
            if shared.is_empty() {
                continue;
            }
            let host = shared_host(&spec.name);
            for (slot, placed) in shared.iter().enumerate() {
                // Validation bounds replicas at 1,000; saturate rather than wrap all the same.
                let slot = u16::try_from(slot).unwrap_or(u16::MAX);
                placement.addresses.insert(placed.name.clone(), Address { host: host.clone(), slot });
            }
            placement.hosts.push((host, shared));
        }
        placement
    }

    /// Where the replica named `replica` listens (a host of its own name, slot 0, if it is unknown).
    pub fn address(&self, replica: &str) -> Address {
        self.addresses.get(replica).cloned().unwrap_or_else(|| Address { host: replica.to_owned(), slot: 0 })
    }

    /// The server hosts to create, each with the replicas it runs.
    pub fn hosts(&self) -> &[(String, Vec<Placed>)] {
        &self.hosts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load_str;

    fn scenario(faults: &str, sets: &[&str]) -> Scenario {
        let text = format!(
            r#"name = "p"
duration = "10s"
[[servers]]
name = "a"
replicas = 3
[[servers.tools]]
name = "t"
[[servers]]
name = "b"
replicas = 2
[[servers.tools]]
name = "u"
[load]
mode = "closed"
sessions = 1
[[load.mix]]
tool = "t"
{faults}"#
        );
        let sets: Vec<String> = sets.iter().map(|s| (*s).to_owned()).collect();
        load_str(&text, "p.toml", &sets).unwrap_or_else(|e| panic!("{e}"))
    }

    fn layout(p: &Placement) -> Vec<(String, Vec<String>)> {
        p.hosts().iter().map(|(h, r)| (h.clone(), r.iter().map(|p| p.name.clone()).collect())).collect()
    }

    #[test]
    fn replicas_share_their_servers_host_unless_a_host_fault_names_them() {
        let p = Placement::of(&scenario("", &[]));
        assert_eq!(
            layout(&p),
            [
                ("a-replicas".into(), vec!["a-0".into(), "a-1".into(), "a-2".into()]),
                ("b-replicas".into(), vec!["b-0".into(), "b-1".into()])
            ]
        );
        assert_eq!(p.address("a-2"), Address { host: "a-replicas".into(), slot: 2 });

        // A crash of a#1 and a partition of all of b: those replicas get hosts named after them; behaviour faults
        // (a latency spike on a#0) change nothing.
        let faults = r#"[[faults]]
kind = "crash"
target = "a#1"
start = "1s"
duration = "1s"
[[faults]]
kind = "partition"
target = "b"
start = "1s"
duration = "1s"
[[faults]]
kind = "latency_spike"
target = "a#0"
start = "1s"
duration = "1s"
extra = "1s"
"#;
        let p = Placement::of(&scenario(faults, &[]));
        assert_eq!(
            layout(&p),
            [
                ("a-1".into(), vec!["a-1".into()]),
                ("a-replicas".into(), vec!["a-0".into(), "a-2".into()]),
                ("b-0".into(), vec!["b-0".into()]),
                ("b-1".into(), vec!["b-1".into()]),
            ]
        );
        assert_eq!(p.address("a-1"), Address { host: "a-1".into(), slot: 0 });
        assert_eq!(p.address("a-2"), Address { host: "a-replicas".into(), slot: 1 });
    }

    #[test]
    fn per_replica_gives_every_replica_a_host() {
        let p = Placement::of(&scenario("", &["network.hosts=per_replica"]));
        let hosts: Vec<String> = p.hosts().iter().map(|(h, _)| h.clone()).collect();
        assert_eq!(hosts, ["a-0", "a-1", "a-2", "b-0", "b-1"]);
    }
}
