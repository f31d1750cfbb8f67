//! The link to Redis: one multiplexed connection for commands (HSET into the hash, PUBLISH on the channel) and one
//! subscription, both dialed through the embedder's [`Dialer`] (tokio TCP live, the simulated network in a
//! simulation). On connect it subscribes first, then reads the hash, so that nothing published in between is
//! lost and a node that starts late learns the states in force.
//!
//! Nothing here is on the call path. Redis down, slow (every command is bounded by the connection's response
//! timeout) or cut off means this node decides alone: one log line when the link goes down, one when it is back,
//! a counter of outages, and reconnection with exponential backoff.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures_util::StreamExt;
use redis::aio::{MultiplexedConnection, PubSub, PubSubStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::Node;
use super::report::{Report, Shared};
use super::rule::{self, Action, Local};
use crate::cancel::CancelToken;
use crate::gateway::{Gateway, Operation};
use crate::resilience::breaker::BreakerState;
use crate::rt::Dialer;

/// The first wait before dialing again, and the longest.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// The longest a dial and the handshake may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// One node's last report about one breaker, as this node has applied it.
#[derive(Debug, Clone, Copy)]
struct Seen {
    incarnation: u64,
    seq: u64,
    /// While its open lasts.
    open_until: Option<Instant>,
}

/// What this node knows of the others.
#[derive(Debug, Default)]
struct Remote {
    /// Every other node's last own open or close, per breaker (replica, tool) and node.
    states: BTreeMap<(String, String), BTreeMap<String, Seen>>,
    /// The last operator switch applied per breaker: (node, incarnation, seq).
    switches: BTreeMap<(String, String), (String, u64, u64)>,
    /// Reports about replicas this node does not route to yet (a server not listed yet): tried again every
    /// [`RETRY_UNPLACED`], so a node that starts while a server is down still learns the states in force.
    unplaced: Vec<String>,
}

/// How often reports about replicas not routed to yet are tried again, and how many are kept.
const RETRY_UNPLACED: Duration = Duration::from_secs(1);
const MAX_UNPLACED: usize = 1024;

struct Link {
    commands: MultiplexedConnection,
    messages: PubSubStream,
    /// Whatever keeps the two streams alive (a child process, say).
    _guards: Vec<Box<dyn Send + Sync>>,
}

pub(super) async fn run(
    node: Arc<Node>,
    mut outbox: mpsc::Receiver<Report>,
    gateway: Arc<Gateway>,
    dialer: Arc<dyn Dialer>,
    cancel: CancelToken,
) {
    let mut remote = Remote::default();
    let mut backoff = BACKOFF_MIN;
    let mut logged_down = false;
    loop {
        let connected = tokio::select! {
            biased;
            () = cancel.cancelled() => return,
            c = tokio::time::timeout(CONNECT_TIMEOUT, connect(&node, dialer.as_ref())) => {
                c.unwrap_or_else(|_| Err(format!("no answer within {CONNECT_TIMEOUT:?}")))
            }
        };
        let error = match connected {
            Ok(mut link) => {
                node.status.connected.store(true, Ordering::Relaxed);
                if logged_down {
                    tracing::info!(redis = %node.address, "breaker sync: connected to Redis again");
                    logged_down = false;
                }
                backoff = BACKOFF_MIN;
                let error = serve(&node, &mut link, &mut outbox, &gateway, &mut remote, &cancel).await;
                node.status.connected.store(false, Ordering::Relaxed);
                match error {
                    Some(e) => e,
                    None => return,
                }
            }
            Err(e) => e,
        };
        if !logged_down {
            node.status.outages.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(redis = %node.address, error = %error,
                "breaker sync: Redis unreachable; this node decides alone until it is back");
            logged_down = true;
        }
        tokio::select! {
            biased;
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

async fn connect(node: &Node, dialer: &dyn Dialer) -> Result<Link, String> {
    let commands = dialer.dial().await.map_err(|e| e.to_string())?;
    let subscription = dialer.dial().await.map_err(|e| e.to_string())?;
    let mut guards = Vec::new();
    guards.extend(commands.guard);
    guards.extend(subscription.guard);
    let stream = tokio::io::join(commands.reader, commands.writer);
    let (commands, driver) =
        MultiplexedConnection::new_with_config(&node.info, stream, redis::AsyncConnectionConfig::default())
            .await
            .map_err(|e| e.to_string())?;
    tokio::spawn(driver);
    let mut pubsub = PubSub::new(&node.info, tokio::io::join(subscription.reader, subscription.writer))
        .await
        .map_err(|e| e.to_string())?;
    pubsub.subscribe(node.channel.as_str()).await.map_err(|e| e.to_string())?;
    Ok(Link { commands, messages: pubsub.into_on_message(), _guards: guards })
}

/// Serves one connected link until it fails (`Some(why)`) or the sync is cancelled (`None`).
async fn serve(
    node: &Node,
    link: &mut Link,
    outbox: &mut mpsc::Receiver<Report>,
    gateway: &Gateway,
    remote: &mut Remote,
    cancel: &CancelToken,
) -> Option<String> {
    // Subscribed already: whatever is published from here on arrives, so the snapshot misses nothing.
    let snapshot: Vec<(String, String)> =
        match redis::cmd("HGETALL").arg(node.key.as_str()).query_async(&mut link.commands).await {
            Ok(pairs) => pairs,
            Err(e) => return Some(e.to_string()),
        };
    let mut switched = BTreeSet::new();
    for (field, text) in snapshot {
        // A switch's field is its breaker's: `replica␟tool`.
        if let Some((replica, tool)) = field.split_once('\u{1f}').filter(|(_, tool)| !tool.contains('\u{1f}')) {
            switched.insert((replica.to_owned(), tool.to_owned()));
        }
        receive(node, gateway, remote, &text, Source::Snapshot);
    }
    // What was queued while the link was down: the latest report of each breaker.
    let mut queued = BTreeMap::new();
    while let Ok(report) = outbox.try_recv() {
        queued.insert(report.field(), report);
    }
    // A Redis that restarted empty has lost the operators' switches: a forced state this node holds and the hash
    // does not know is published again, so that a node starting later still sees it. (Only switches: an open this
    // node merely followed must not come back as a second node's corroboration.)
    for ((replica, tool), gate) in gateway.breakers() {
        if gate.state() == BreakerState::ForcedOpen && !switched.contains(&(replica.clone(), tool.clone())) {
            let report = node.report(&replica, &tool, Shared::ForcedOpen, None, None);
            queued.entry(report.field()).or_insert(report);
        }
    }
    for report in queued.into_values() {
        if let Err(e) = publish(node, &mut link.commands, &report).await {
            return Some(e);
        }
    }
    let mut retry = tokio::time::interval(RETRY_UNPLACED);
    retry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            biased;
            () = cancel.cancelled() => return None,
            _ = retry.tick(), if !remote.unplaced.is_empty() => {
                for text in std::mem::take(&mut remote.unplaced) {
                    receive(node, gateway, remote, &text, Source::Snapshot);
                }
            }
            Some(report) = outbox.recv() => {
                if let Err(e) = publish(node, &mut link.commands, &report).await {
                    return Some(e);
                }
            }
            message = link.messages.next() => match message {
                Some(message) => match message.get_payload::<String>() {
                    Ok(text) => receive(node, gateway, remote, &text, Source::Live),
                    Err(e) => tracing::debug!(error = %e, "breaker sync: a message that is not text"),
                },
                None => return Some("the subscription ended".to_owned()),
            },
        }
    }
}

async fn publish(node: &Node, commands: &mut MultiplexedConnection, report: &Report) -> Result<(), String> {
    let text = serde_json::to_string(report).map_err(|e| e.to_string())?;
    redis::pipe()
        .cmd("HSET")
        .arg(node.key.as_str())
        .arg(report.field())
        .arg(&text)
        .ignore()
        .cmd("PUBLISH")
        .arg(node.channel.as_str())
        .arg(&text)
        .ignore()
        .query_async::<()>(commands)
        .await
        .map_err(|e| e.to_string())?;
    node.status.published.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// Where a report came from: the channel as it happened, or the hash on (re)connecting, which holds history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Live,
    Snapshot,
}

/// Applies one report from the channel or the hash.
fn receive(node: &Node, gateway: &Gateway, remote: &mut Remote, text: &str, source: Source) {
    let report = match serde_json::from_str::<Report>(text) {
        Ok(r) => r,
        Err(e) => {
            // Another version, or a stranger writing to our key: logged, never applied.
            tracing::debug!(error = %e, "breaker sync: a report that does not parse");
            return;
        }
    };
    if report.node == node.name {
        return;
    }
    if gateway.local_view(&report.replica, &report.tool).is_none() {
        if remote.unplaced.len() < MAX_UNPLACED {
            remote.unplaced.push(text.to_owned());
        }
        return;
    }
    let key = (report.replica.clone(), report.tool.clone());
    let stamp = (report.node.clone(), report.incarnation, report.seq);
    match report.state {
        Shared::Open | Shared::Closed => {
            let nodes = remote.states.entry(key).or_default();
            if let Some(seen) = nodes.get(&report.node)
                && seen.incarnation == report.incarnation
                && seen.seq >= report.seq
            {
                return;
            }
            node.status.received.fetch_add(1, Ordering::Relaxed);
            on_state(node, gateway, nodes, &report);
        }
        Shared::ForcedOpen | Shared::Reset => {
            // The same switch read twice (published while the hash was read on connect) is applied once.
            if remote.switches.get(&key) == Some(&stamp) {
                return;
            }
            remote.switches.insert(key, stamp);
            node.status.received.fetch_add(1, Ordering::Relaxed);
            on_switch(gateway, &report, source);
        }
    }
}

/// Another node's own open or close: recorded for the quorum, and an open judged by the rule against poisoning.
fn on_state(node: &Node, gateway: &Gateway, nodes: &mut BTreeMap<String, Seen>, report: &Report) {
    let now = node.clock.now();
    // What is left of the open by the sender's clock (a report read late from the hash may have ended).
    let open_for = report
        .open_ms
        .map(Duration::from_millis)
        .map(|d| match report.until_ms {
            Some(until) => d.min(Duration::from_millis(until.saturating_sub(node.clock.wall_ms()))),
            None => d,
        })
        .filter(|d| report.state == Shared::Open && !d.is_zero());
    let seen = Seen { incarnation: report.incarnation, seq: report.seq, open_until: open_for.map(|d| now + d) };
    nodes.insert(report.node.clone(), seen);
    let Some(open_for) = open_for else { return };
    let others_open =
        nodes.iter().filter(|(name, seen)| **name != report.node && seen.open_until.is_some_and(|u| u > now)).count();
    let local = gateway.local_view(&report.replica, &report.tool).map(|(state, counts, trip_rate)| Local {
        state,
        counts,
        trip_rate,
    });
    match rule::on_remote_open(local, others_open, open_for) {
        Action::Follow(d) => {
            if gateway.follow_remote_open(&report.replica, &report.tool, d, report.slow).is_some() {
                node.status.followed.fetch_add(1, Ordering::Relaxed);
            }
        }
        Action::Suspect => {
            if gateway.suspect_remote(&report.replica, &report.tool).is_some() {
                node.status.suspected.fetch_add(1, Ordering::Relaxed);
            }
        }
        Action::Nothing => {}
    }
}

/// An operator's switch, applied as it is. From the hash, a reset only lifts a forced state this node still holds
/// (one it missed the reset of while the link was down); it never wipes the window of a breaker that is working.
fn on_switch(gateway: &Gateway, report: &Report, source: Source) {
    let op = match (report.state, &report.fallback) {
        (Shared::Reset, _) => Operation::Reset,
        (_, Some(f)) => Operation::ForceDegrade { fallback: Some(f.clone()) },
        (_, None) => Operation::ForceOpen,
    };
    if op == Operation::Reset && source == Source::Snapshot {
        let forced =
            gateway.local_view(&report.replica, &report.tool).is_some_and(|(s, ..)| s == BreakerState::ForcedOpen);
        if !forced {
            return;
        }
    }
    if let Err(e) = gateway.operate(&report.replica, &report.tool, &op) {
        tracing::debug!(error = %e, replica = %report.replica, "breaker sync: a switch not applied here");
    }
}
