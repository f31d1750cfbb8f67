//! One client's state as the commands see it (its database, whether it has authenticated, its subscriptions, where
//! its replies go), and the context a command runs in.

use tokio::time::Instant;

use super::keyspace::Keyspace;
use super::outbox::Outbox;
use super::pubsub::PubSub;
use super::reply::Reply;

#[derive(Debug)]
pub(crate) struct Client {
    pub id: u64,
    pub db: usize,
    pub authenticated: bool,
    /// Subscribed channels in the order subscribed (UNSUBSCRIBE without arguments leaves them in this order).
    pub channels: Vec<Vec<u8>>,
    pub outbox: Outbox,
    /// QUIT: close once the replies so far are written.
    pub closing: bool,
}

impl Client {
    /// RESP2's subscribe mode: only (UN)SUBSCRIBE, PING and QUIT are served.
    pub(crate) fn subscribed(&self) -> bool {
        !self.channels.is_empty()
    }
}

/// What a command may touch, and where its replies collect.
#[derive(Debug)]
pub(crate) struct Ctx<'a> {
    pub keyspace: &'a mut Keyspace,
    pub pubsub: &'a mut PubSub,
    pub client: &'a mut Client,
    /// The double's clock when the command runs.
    pub now: Instant,
    /// The same clock in wall milliseconds (Redis checks expire times for overflow against its `mstime()`).
    pub wall_ms: u64,
    /// When replies may be written: `now` plus the latency a fault adds.
    pub due: Instant,
    /// `requirepass`, if any.
    pub password: Option<&'a [u8]>,
    pub replies: Vec<Reply>,
}

impl Ctx<'_> {
    pub(crate) fn reply(&mut self, reply: Reply) {
        self.replies.push(reply);
    }
}
