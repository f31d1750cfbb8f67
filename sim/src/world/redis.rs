//! The Redis host of `[gateway.sync]`: the Redis double, unchanged, served over turmoil TCP on the host and port the
//! URL names; each load host's gateway is a sync node of it (see `traffic`). Its faults: a crash drops the host (its
//! connections with it) and the restart serves the same double again, data kept, as a Redis with persistence; a
//! partition is turmoil's; a latency spike and a hang go through the double's [`RedisControl`].

use std::sync::Arc;

use mcpstorm_fake::{RedisConfig, RedisControl, RedisDouble};

use super::clock::SimClock;
use super::net::TurmoilListener;
use crate::scenario::RedisHost;

/// Places the Redis host in `sim`; returns its name and the double's control, for the fault timeline.
pub fn place(sim: &mut turmoil::Sim<'_>, host: &RedisHost) -> (String, RedisControl) {
    // Keys expire on the host's clock (the simulated one; no fault skews it).
    let double = RedisDouble::with_clock(RedisConfig::default(), Arc::new(SimClock::default()));
    let control = double.control();
    let port = host.port;
    sim.host(host.name.as_str(), move || {
        let double = double.clone();
        async move {
            let listener = turmoil::net::TcpListener::bind(("0.0.0.0", port)).await?;
            double.serve(TurmoilListener(listener)).await;
            Ok(())
        }
    });
    (host.name.clone(), control)
}
