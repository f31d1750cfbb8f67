//! Breaker state across gateway nodes: with `[gateway] gossip = true`, every load host's gateway
//! publishes the breakers it opens by itself to a small pub/sub host (`gossip`) over turmoil TCP, and the hub relays
//! each message to every other load host, whose gateway then follows ([`Gateway::follow_remote_open`]).
//!
//! Only local openings are published (a followed opening has reason `remote` and is not echoed back, so a message
//! never loops). The wire is one JSON object per line: `{"replica":"db-0","tool":"get","open_ms":5000}`.
//!
//! A partition between the hub and the load hosts (`[[faults]] kind = "partition", target = "gossip"`) cuts the
//! sharing, never the protection: each gateway still opens its own breakers from its own calls. A node whose
//! connection to the hub breaks dials again every [`REDIAL`]; messages published meanwhile are dropped, as a real
//! best-effort pub/sub would (a breaker state is only worth sharing while it is fresh).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcpstorm_core::{CancelToken, Gateway};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use turmoil::net::{TcpListener, TcpStream};

/// The pub/sub host's name and port.
pub const GOSSIP_HOST: &str = "gossip";
pub const GOSSIP_PORT: u16 = 7400;
/// How often a node without a hub connection dials again.
pub const REDIAL: Duration = Duration::from_millis(200);

/// One breaker opening, as published: breakers are per (replica endpoint, tool).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Opened {
    pub replica: String,
    pub tool: String,
    pub open_ms: u64,
}

/// The hub's open connections, in connection order: (id, the line queue of its writer).
type Subscribers = Vec<(u64, mpsc::UnboundedSender<String>)>;

/// The hub: relays every line a subscriber sends to every other subscriber, in connection order.
pub async fn hub() -> turmoil::Result {
    let listener = TcpListener::bind(("0.0.0.0", GOSSIP_PORT)).await?;
    let subscribers: Arc<Mutex<Subscribers>> = Arc::default();
    let mut next_id = 0u64;
    loop {
        let (stream, _) = listener.accept().await?;
        let id = next_id;
        next_id += 1;
        let (read, mut write) = stream.into_split();
        let (tx, mut rx) = mpsc::unbounded_channel::<String>();
        subscribers.lock().unwrap_or_else(PoisonError::into_inner).push((id, tx));
        tokio::spawn(async move {
            while let Some(line) = rx.recv().await {
                if write.write_all(line.as_bytes()).await.is_err() {
                    return;
                }
            }
        });
        let subscribers = subscribers.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let subs = subscribers.lock().unwrap_or_else(PoisonError::into_inner);
                for (_, tx) in subs.iter().filter(|(other, _)| *other != id) {
                    let _ = tx.send(format!("{line}\n"));
                }
            }
            subscribers.lock().unwrap_or_else(PoisonError::into_inner).retain(|(other, _)| *other != id);
        });
    }
}

/// A load host's side: publishes what `outbox` receives and follows what the hub relays, until `cancel`.
pub async fn node(gateway: Arc<Gateway>, mut outbox: mpsc::UnboundedReceiver<Opened>, cancel: CancelToken) {
    loop {
        let stream = tokio::select! {
            biased;
            _ = cancel.cancelled() => return,
            s = TcpStream::connect((GOSSIP_HOST, GOSSIP_PORT)) => s,
        };
        let Ok(stream) = stream else {
            // Unreachable (partitioned): drop what was published meanwhile, dial again later.
            while outbox.try_recv().is_ok() {}
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(REDIAL) => continue,
            }
        };
        let (read, mut write) = stream.into_split();
        let mut lines = BufReader::new(read).lines();
        loop {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return,
                published = outbox.recv() => {
                    let Some(opened) = published else { return };
                    let Ok(mut line) = serde_json::to_string(&opened) else { continue };
                    line.push('\n');
                    if write.write_all(line.as_bytes()).await.is_err() {
                        break;
                    }
                }
                relayed = lines.next_line() => match relayed {
                    Ok(Some(line)) => {
                        if let Ok(o) = serde_json::from_str::<Opened>(&line) {
                            gateway.follow_remote_open(&o.replica, &o.tool, Duration::from_millis(o.open_ms));
                        }
                    }
                    _ => break,
                },
            }
        }
        tokio::select! {
            biased;
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(REDIAL) => {}
        }
    }
}
