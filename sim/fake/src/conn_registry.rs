//! The outboxes of a server's open connections, so that a schema drift can notify every client.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use mcpstorm_core::jsonrpc::Message;
use tokio::sync::mpsc;

/// The outboxes of a server's open connections, so a drift can notify every client.
#[derive(Debug, Default)]
pub(crate) struct ConnRegistry {
    inner: Mutex<(u64, BTreeMap<u64, mpsc::Sender<Message>>)>,
}

impl ConnRegistry {
    fn lock(&self) -> MutexGuard<'_, (u64, BTreeMap<u64, mpsc::Sender<Message>>)> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn register(&self, out: mpsc::Sender<Message>) -> u64 {
        let mut inner = self.lock();
        inner.0 += 1;
        let id = inner.0;
        inner.1.insert(id, out);
        id
    }

    pub fn remove(&self, id: u64) {
        self.lock().1.remove(&id);
    }

    /// Queues `msg` on every open connection, in the order they opened. Returns how many took it: a connection whose
    /// outbox is full misses it (the control runs outside the server's runtime and cannot wait), as a real server
    /// that drops notifications under pressure would.
    pub fn broadcast(&self, msg: &Message) -> usize {
        self.lock().1.values().filter(|out| out.try_send(msg.clone()).is_ok()).count()
    }
}
