//! Breaker sync between gateway nodes, through Redis: when one node's breaker opens, the others hear of it within
//! a round trip, and an operator's forced state on one node holds on all of them.
//!
//! - **What is shared** ([`report`]): each breaker transition this node's own calls cause (open, closed again),
//!   per (replica, tool), tagged with the node, its incarnation and a sequence number; and the admin API's forced
//!   states ([`BreakerSync::operate`]), with their fallback. Each report is published on a channel and kept in a
//!   hash (a node's own state: one field per replica, tool and node; a switch: one per replica and tool, the latest
//!   wins), from which a node that starts late, or comes back after an outage, reads the states in force.
//! - **Never on the call path** ([`tap`], [`link`]): a call only queues a report (never waiting; a full queue
//!   drops it); the link publishes and applies on a task of its own. Redis down, slow or cut off means each node
//!   decides alone: one log line, a counter, reconnection with backoff. No call fails because of Redis.
//! - **No poisoning** ([`rule`]): a remote open is followed only when this node's own window corroborates it or a
//!   second node reports the same; otherwise the breaker becomes suspect (half-open probes decide), so that a node
//!   that alone lost its link to a replica cannot eject that replica from the nodes that still reach it.
//! - **Forced states** are an operator's intent and are applied everywhere as they are, and reset everywhere.
//!
//! Replicas are named by their endpoint, so the nodes must share their `[[servers]]` configuration.

mod link;
mod report;
mod rule;
mod tap;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use redis::{ConnectionAddr, IntoConnectionInfo, RedisConnectionInfo};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

pub use report::{Report, Shared};
pub use rule::{Action, Local, on_remote_open};

use crate::cancel::CancelToken;
use crate::gateway::{Gateway, ManualError, Operation};
use crate::observe::Observer;
use crate::resilience::breaker::BreakerTransition;
use crate::rt::{Clock, Dialer};

/// Reports waiting for the link: beyond this, a report is dropped (and counted) rather than make a call wait.
const OUTBOX: usize = 1024;

/// Where and who: the parts of `[gateway.sync]` the core needs.
#[derive(Debug, Clone)]
pub struct SyncConfig {
    /// `redis://[user[:password]@]host:port[/db]`.
    pub url: String,
    /// The password, overriding the URL's (from an environment variable: never written in a file).
    pub password: Option<String>,
    /// This node's name in its reports; unique per node.
    pub node: String,
    /// The hash and the channel (one name for both: they are different Redis types).
    pub key: String,
    /// Drawn when the node starts, so that a restarted node's reports are told from its earlier ones.
    pub incarnation: u64,
}

/// A `[gateway.sync]` setting the core cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SyncConfigError {
    #[error("{url:?} is not a Redis URL: {reason}")]
    Url { url: String, reason: String },
    #[error("{0:?}: only plain TCP (redis://) is supported")]
    NotTcp(String),
}

/// How the sync is doing, for metrics.
#[derive(Debug, Default)]
pub struct SyncStatus {
    pub connected: AtomicBool,
    /// Times the link went down (or could not be made at start).
    pub outages: AtomicU64,
    pub published: AtomicU64,
    pub received: AtomicU64,
    /// Remote opens followed (corroborated) and made suspect (not corroborated).
    pub followed: AtomicU64,
    pub suspected: AtomicU64,
    /// Reports dropped because the queue was full.
    pub dropped: AtomicU64,
}

/// This node, as the tap and the link share it.
#[derive(Debug)]
struct Node {
    name: String,
    incarnation: u64,
    seq: AtomicU64,
    info: RedisConnectionInfo,
    address: String,
    key: String,
    channel: String,
    clock: Arc<dyn Clock>,
    outbox: mpsc::Sender<Report>,
    status: SyncStatus,
}

impl Node {
    fn report(
        &self,
        replica: &str,
        tool: &str,
        state: Shared,
        open_for: Option<std::time::Duration>,
        fallback: Option<String>,
    ) -> Report {
        let open_ms = open_for.filter(|_| state == Shared::Open).map(|d| d.as_millis() as u64);
        Report {
            node: self.name.clone(),
            incarnation: self.incarnation,
            seq: self.seq.fetch_add(1, Ordering::Relaxed) + 1,
            replica: replica.to_owned(),
            tool: tool.to_owned(),
            state,
            open_ms,
            until_ms: open_ms.map(|ms| self.clock.wall_ms().saturating_add(ms)),
            fallback,
            slow: false,
        }
    }

    fn queue(&self, report: Report) {
        if self.outbox.try_send(report).is_err() {
            self.status.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// One node's breaker sync. Make it first, build the gateway with [`BreakerSync::observer`], then
/// [`BreakerSync::spawn`] the link with that gateway.
#[derive(Debug)]
pub struct BreakerSync {
    node: Arc<Node>,
    outbox: Mutex<Option<mpsc::Receiver<Report>>>,
}

/// The `host:port` a Redis URL names, or why it is not one this sync can use.
pub fn check_url(url: &str) -> Result<String, SyncConfigError> {
    parse_url(url).map(|(address, _)| address)
}

fn parse_url(url: &str) -> Result<(String, redis::ConnectionInfo), SyncConfigError> {
    let parsed =
        url.into_connection_info().map_err(|e| SyncConfigError::Url { url: url.to_owned(), reason: e.to_string() })?;
    match parsed.addr() {
        ConnectionAddr::Tcp(host, port) => Ok((format!("{host}:{port}"), parsed)),
        _ => Err(SyncConfigError::NotTcp(url.to_owned())),
    }
}

impl BreakerSync {
    pub fn new(config: SyncConfig, clock: Arc<dyn Clock>) -> Result<BreakerSync, SyncConfigError> {
        let (address, parsed) = parse_url(&config.url)?;
        // The handshake sends no client name: nothing a peer needs, and one round trip less per connect.
        let mut info = parsed.redis_settings().clone().set_skip_set_lib_name();
        if let Some(password) = &config.password {
            info = info.set_password(password);
        }
        let (outbox, queued) = mpsc::channel(OUTBOX);
        let node = Node {
            name: config.node,
            incarnation: config.incarnation,
            seq: AtomicU64::new(0),
            info,
            address,
            channel: config.key.clone(),
            key: config.key,
            clock,
            outbox,
            status: SyncStatus::default(),
        };
        Ok(BreakerSync { node: Arc::new(node), outbox: Mutex::new(Some(queued)) })
    }

    /// `host:port` of the Redis server, for the embedder's dialer.
    pub fn address(&self) -> &str {
        &self.node.address
    }

    /// The observer to build the gateway with: passes everything to `inner`, and queues this node's transitions.
    pub fn observer(&self, inner: Arc<dyn Observer>) -> Arc<dyn Observer> {
        Arc::new(tap::Tap { inner, node: self.node.clone() })
    }

    /// Starts the link (once; `None` when it was started already). It ends when `cancel` fires.
    pub fn spawn(&self, gateway: Arc<Gateway>, dialer: Arc<dyn Dialer>, cancel: CancelToken) -> Option<JoinHandle<()>> {
        let outbox = self.outbox.lock().unwrap_or_else(PoisonError::into_inner).take()?;
        Some(tokio::spawn(link::run(self.node.clone(), outbox, gateway, dialer, cancel)))
    }

    /// An operator's switch ([`Gateway::operate`]), applied here and shared with every node.
    pub fn operate(
        &self,
        gateway: &Gateway,
        endpoint: &str,
        tool: &str,
        op: &Operation,
    ) -> Result<Option<BreakerTransition>, ManualError> {
        let transition = gateway.operate(endpoint, tool, op)?;
        let (state, fallback) = match op {
            Operation::ForceOpen => (Shared::ForcedOpen, None),
            Operation::ForceDegrade { fallback } => (Shared::ForcedOpen, fallback.clone()),
            Operation::Reset => (Shared::Reset, None),
        };
        self.node.queue(self.node.report(endpoint, tool, state, None, fallback));
        Ok(transition)
    }

    pub fn status(&self) -> &SyncStatus {
        &self.node.status
    }

    pub fn node(&self) -> &str {
        &self.node.name
    }
}
