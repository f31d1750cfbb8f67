//! The Redis host of a scenario's `[gateway.sync]`: the simulated world places a host running the Redis double,
//! named by the URL's host (`redis = "redis://redis:6379"` places host `redis`, listening on 6379), and every load
//! host's gateway (every gateway node's, with `[nodes] count`) is a sync node of it. Faults name that host as their `target` (`crash`, `partition`,
//! `latency_spike`, `hang`).
//!
//! A scenario is self-contained: it reads no environment (so no `password_env`), and each node is named by its host
//! (so no `node`).

use super::gateway::GatewaySpec;
use super::rules::Rules;
use super::servers::ServerSpec;
use super::shared::GATEWAY;
use super::sync::SyncSpec;

/// Where the simulated Redis runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisHost {
    pub name: String,
    pub port: u16,
}

impl RedisHost {
    /// The Redis host of a gateway table with `[gateway.sync]`, when its URL names one (validation says why not).
    pub fn of(gateway: &GatewaySpec) -> Option<RedisHost> {
        let sync = gateway.sync.as_ref()?;
        let address = mcpstorm_core::sync::check_url(&sync.redis).ok()?;
        let (name, port) = address.rsplit_once(':')?;
        Some(RedisHost { name: name.to_owned(), port: port.parse().ok()? })
    }
}

/// Whether `name` is one a load host or a gateway node takes (`load-N`, `gateway-N`).
fn is_load_host(name: &str) -> bool {
    ["load-", "gateway-"]
        .iter()
        .any(|prefix| name.strip_prefix(prefix).is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())))
}

/// Whether `name` is one the replicas of `server` take (`server-N`, `server-replicas`).
fn is_server_host(name: &str, server: &str) -> bool {
    name.strip_prefix(server)
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|rest| rest == "replicas" || (!rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit())))
}

/// The rules `[gateway.sync]` has in a scenario, on top of its own: a URL naming a host of its own, and nothing read
/// from outside the file.
pub(super) fn problems(sync: &SyncSpec, gateway: &GatewaySpec, servers: &[ServerSpec], rules: &mut Rules) {
    if sync.password_env.is_some() {
        rules.fail(
            "gateway.sync.password_env",
            "a scenario reads no environment, and the simulated Redis takes no password: remove `password_env`",
        );
    }
    if sync.node.is_some() {
        rules.fail(
            "gateway.sync.node",
            "the simulator names each node by its host (load-0, ..., or gateway-0, ... with `[nodes] count`): remove `node`",
        );
    }
    if sync.redis.contains('@') {
        rules.fail("gateway.sync.redis", "the simulated Redis takes no password: give `redis://HOST:PORT`");
    }
    // A URL the core refuses is reported by the table's own rules.
    let Some(host) = RedisHost::of(gateway) else { return };
    let name = host.name.as_str();
    let valid = name.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    let clash = if !valid {
        Some(format!(
            "{name:?} must name the simulated host that runs Redis: lowercase letters, digits, `-` and `_`, starting \
             with a letter (`redis://redis:6379`)"
        ))
    } else if name == GATEWAY || is_load_host(name) {
        Some(format!(
            "{name:?} is the name of load hosts or gateway nodes (`gateway`, `load-N`, `gateway-N`): name Redis's \
             host `redis`"
        ))
    } else if let Some(s) = servers.iter().find(|s| s.name == name || is_server_host(name, &s.name)) {
        Some(format!("{name:?} clashes with server {:?} (its name or its hosts'): name Redis's host `redis`", s.name))
    } else if host.port == 0 {
        Some("port 0 is no port to listen on: give Redis's port (6379)".to_owned())
    } else {
        None
    };
    if let Some(message) = clash {
        rules.fail("gateway.sync.redis", message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_and_server_host_names_are_recognised() {
        assert!(is_load_host("load-0") && is_load_host("load-12"));
        assert!(!is_load_host("load-") && !is_load_host("load-x") && !is_load_host("loader"));
        assert!(is_server_host("api-0", "api") && is_server_host("api-replicas", "api"));
        assert!(!is_server_host("api", "api") && !is_server_host("api-x", "api") && !is_server_host("apis-0", "api"));
    }
}
