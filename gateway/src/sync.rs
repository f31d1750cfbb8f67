//! `[gateway.sync]` made live: the core's breaker sync, its password from the environment, its node named after
//! this host and process unless the file names it, dialing Redis over tokio TCP.

use std::sync::Arc;

use mcpstorm_core::sync::{BreakerSync, SyncConfig};
use mcpstorm_core::{Clock, TcpDialer};

use crate::config::SyncSpec;
use crate::seed::Seed;

/// The sync `spec` asks for, and the dialer of its Redis server.
pub fn breaker_sync(spec: &SyncSpec, clock: Arc<dyn Clock>, seed: Seed) -> Result<(BreakerSync, TcpDialer), String> {
    let password = match &spec.password_env {
        Some(var) => Some(
            std::env::var(var)
                .map_err(|_| format!("gateway.sync.password_env: the environment variable {var} is not set"))?,
        ),
        None => None,
    };
    let node = spec.node.clone().unwrap_or_else(|| {
        let host = std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()).unwrap_or_else(|| "gateway".to_owned());
        format!("{host}-{}", std::process::id())
    });
    let config = SyncConfig {
        url: spec.redis.clone(),
        password,
        node,
        key: spec.key.clone(),
        incarnation: seed.seeded_rng().next_u64(),
    };
    let sync = BreakerSync::new(config, clock).map_err(|e| format!("gateway.sync.redis: {e}"))?;
    let dialer = TcpDialer { addr: sync.address().to_owned() };
    Ok((sync, dialer))
}
