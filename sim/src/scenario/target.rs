//! Fault targets: a server (`name`), one replica (`name#i`), or the names that are not servers ([`GATEWAY`], and the
//! Redis host of `[gateway.sync]`, see [`RedisHost`](super::redis::RedisHost)). Validation and the simulator both
//! resolve targets here, so they can never disagree on what one names.

use super::servers::ServerSpec;

// The name that is not a server lives with the defaults every table shares: the servers table reserves it.
pub use super::shared::GATEWAY;

/// A fault target: `(server index, Some(replica))` for `name#i`, `(server index, None)` for every replica.
pub fn resolve_target(target: &str, servers: &[ServerSpec]) -> Result<(usize, Option<usize>), String> {
    let (name, replica) = match target.split_once('#') {
        None => (target, None),
        Some((name, i)) => match i.parse::<usize>() {
            Ok(i) => (name, Some(i)),
            Err(_) => return Err(format!("{target:?}: after `#` comes a replica index (0, 1, ...), got {i:?}")),
        },
    };
    let Some(index) = servers.iter().position(|s| s.name == name) else {
        return Err(format!("no server is named {name:?}{}", names(servers)));
    };
    if let Some(i) = replica {
        let replicas = servers[index].replicas;
        if i >= replicas {
            return Err(format!(
                "server {name:?} has {replicas} replica{} ({}), so there is no replica {i}",
                if replicas == 1 { "" } else { "s" },
                match replicas {
                    0 => "none".to_owned(),
                    1 => format!("{name}#0"),
                    n => format!("{name}#0 to {name}#{}", n - 1),
                }
            ));
        }
    }
    Ok((index, replica))
}

/// The servers' names for an error message (` (servers: "a", "b")`), or nothing when there are none.
pub(super) fn names(servers: &[ServerSpec]) -> String {
    if servers.is_empty() {
        return String::new();
    }
    let names: Vec<String> = servers.iter().map(|s| format!("{:?}", s.name)).collect();
    format!(" (servers: {})", names.join(", "))
}
