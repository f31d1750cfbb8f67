//! Channels and their subscribers. Redis keeps each channel's subscribers in a list in the order they subscribed
//! and delivers a message to them in that order; so does the double (a `Vec`, keyed by client id).

use std::collections::BTreeMap;

use tokio::time::Instant;

use super::outbox::Outbox;
use super::reply::Reply;

#[derive(Debug, Default)]
pub(crate) struct PubSub {
    channels: BTreeMap<Vec<u8>, Vec<(u64, Outbox)>>,
}

impl PubSub {
    /// False when `client` was already subscribed.
    pub(crate) fn subscribe(&mut self, channel: &[u8], client: u64, outbox: &Outbox) -> bool {
        let subscribers = self.channels.entry(channel.to_vec()).or_default();
        if subscribers.iter().any(|(id, _)| *id == client) {
            return false;
        }
        subscribers.push((client, outbox.clone()));
        true
    }

    pub(crate) fn unsubscribe(&mut self, channel: &[u8], client: u64) {
        if let Some(subscribers) = self.channels.get_mut(channel) {
            subscribers.retain(|(id, _)| *id != client);
            if subscribers.is_empty() {
                self.channels.remove(channel);
            }
        }
    }

    /// Queues `["message", channel, message]` to every subscriber; returns how many received it.
    pub(crate) fn publish(&self, channel: &[u8], message: &[u8], due: Instant) -> usize {
        let Some(subscribers) = self.channels.get(channel) else { return 0 };
        let frame = Reply::Array(vec![Reply::bulk(b"message"), Reply::bulk(channel), Reply::bulk(message)]).to_bytes();
        for (_, outbox) in subscribers {
            outbox.push(frame.clone(), due);
        }
        subscribers.len()
    }
}
