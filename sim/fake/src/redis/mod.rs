//! A Redis double: the RESP2 subset the breaker sync of issue 27 uses, for the simulated world where Redis is a host
//! like the others. A differential test (`tests/tests/interop/redis.rs`) runs the same scripts against it and a real
//! `redis-server` 7.0 and compares the reply bytes, so that it cannot drift from Redis.
//!
//! Served: PING, ECHO, AUTH (`requirepass` for the default user), SELECT, QUIT, CLIENT (every subcommand answered as
//! unknown, as 7.0 answers redis-rs's `CLIENT SETINFO`); GET, SET (EX, PX, NX, XX), DEL, EXISTS, INCR, PEXPIRE,
//! PTTL; HSET, HGET, HGETALL, HDEL, HLEN; PUBLISH, SUBSCRIBE, UNSUBSCRIBE. Anything else is an unknown command.
//! RESP2 only (no HELLO: redis-rs does not send it unless asked for RESP3).
//!
//! redis-rs 1.2 (RESP2) pipelines on connect `AUTH [user] password` (with a password in the URL), `SELECT db` (when
//! not 0), `CLIENT SETINFO LIB-NAME redis-rs` and `CLIENT SETINFO LIB-VER 1.2.2`, and ignores the last two's errors.
//! Some of its typed helpers send commands the double does not serve (`incr` sends INCRBY, `set_ex` SETEX, `set_nx`
//! SETNX, `hset_multiple` HMSET): a client of the double uses `redis::cmd` or `set_options` for those.
//!
//! Map: `request` (cutting requests from the byte stream; `inline` splits a hand-typed line) · `reply` (encoding,
//! Redis's error texts) · `keyspace` (databases, values, expiry on the double's clock) · `pubsub` (channels and their
//! subscribers) · `outbox` (a connection's ordered, bounded output) · `client` (one client's state; the context a
//! command runs in) · `commands` (the table, the checks before a command, the commands by family) · `shared` (what
//! the connections share) · `conn` (the reader and writer of one connection) · `control` (faults).

mod client;
mod commands;
mod conn;
mod control;
mod inline;
mod keyspace;
mod outbox;
mod pubsub;
mod reply;
mod request;
mod shared;

#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use mcpstorm_core::{Clock, TokioClock};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinSet;

use crate::listener::Listener;

pub use control::RedisControl;
pub use request::RequestLimits;

/// After a failed accept, wait this long before the next (as the fake server).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// How the double is set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisConfig {
    /// `requirepass`: commands other than AUTH and QUIT are refused with `NOAUTH` until the client authenticates.
    pub password: Option<String>,
    pub limits: RequestLimits,
    /// Most bytes queued for a client that does not read; past it the client is disconnected (default 32 MiB, Redis's
    /// hard limit for pub/sub clients).
    pub max_output: usize,
}

impl Default for RedisConfig {
    fn default() -> Self {
        RedisConfig { password: None, limits: RequestLimits::default(), max_output: outbox::DEFAULT_OUTPUT_LIMIT }
    }
}

/// A Redis double. Cheap to clone: clones are the same server (same data, same faults).
#[derive(Debug, Clone)]
pub struct RedisDouble {
    shared: Arc<shared::Shared>,
}

impl RedisDouble {
    /// A double whose keys expire by `clock` (tokio's time; turmoil's in the simulator).
    pub fn with_clock(config: RedisConfig, clock: Arc<dyn Clock>) -> Self {
        RedisDouble { shared: Arc::new(shared::Shared::new(config, clock)) }
    }

    pub fn control(&self) -> RedisControl {
        RedisControl::new(self.shared.clone())
    }

    /// Serves one connection until the client leaves, sends QUIT or garbage, or stops reading.
    pub async fn serve_connection<R, W>(&self, reader: R, writer: W)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        conn::serve(self.shared.clone(), reader, writer).await;
    }

    /// Accepts connections forever, each on its own task. Dropping this future closes every connection; the data
    /// stays (a restarted Redis without persistence would have lost it: build a new double for that).
    pub async fn serve<L: Listener>(&self, mut listener: L) {
        let mut conns = JoinSet::new();
        loop {
            while conns.try_join_next().is_some() {}
            match listener.accept().await {
                Ok((reader, writer, peer)) => {
                    tracing::debug!(%peer, "redis double accepted a connection");
                    let double = self.clone();
                    conns.spawn(async move { double.serve_connection(reader, writer).await });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "redis double: accept failed; retrying");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            }
        }
    }
}

/// A double for live use (tests on loopback): tokio's clock, with wall time read once from the system, as
/// [`crate::live_server`]. Bind a `tokio::net::TcpListener` and pass it to [`RedisDouble::serve`].
pub fn live_redis(config: RedisConfig) -> RedisDouble {
    // The one reading of the system clock: Redis checks expire times for overflow against its wall clock.
    #[allow(clippy::disallowed_methods)]
    let wall = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    RedisDouble::with_clock(config, Arc::new(TokioClock::new(wall.as_millis() as u64)))
}
