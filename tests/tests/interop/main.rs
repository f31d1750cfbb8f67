//! The core against what nobody here wrote: real MCP servers over stdio (the Python `mcp` SDK 2.x and 1.x,
//! `@modelcontextprotocol/server-everything`; see `mcpstorm_tests::real_servers`) and over Streamable HTTP (`http`),
//! and turmoil's simulated network with the simulator's own dialer and listener; the Redis double against a real
//! `redis-server` (`redis`). A missing peer skips loudly, or fails under `MCPSTORM_REQUIRE_PEERS=1`
//! (as in CI).

/// The dialer of a real peer, or return from the test (a missing peer was already reported, or panicked on).
macro_rules! peer_or_skip {
    ($peer:expr) => {
        match $peer {
            Some(d) => d,
            None => return,
        }
    };
}

mod eras;
mod filter;
mod front;
mod gateway;
mod http;
mod http_fake;
mod in_turmoil;
mod logging;
mod oauth;
mod otlp_sink;
mod redis;
mod redis_in_turmoil;
mod redis_wire;
mod schemas;
mod servers;
mod subscriptions;
mod traces;
