//! Pub/sub: PUBLISH, SUBSCRIBE, UNSUBSCRIBE (RESP2: the replies are `[kind, channel, count]` arrays).

use crate::redis::client::Ctx;
use crate::redis::reply::Reply;

fn confirmation(kind: &'static [u8], channel: Option<&[u8]>, count: usize) -> Reply {
    Reply::Array(vec![Reply::bulk(kind), channel.map_or(Reply::Nil, Reply::bulk), Reply::Integer(count as i64)])
}

/// Subscribers receive the message before the publisher its count; they are served in the order they subscribed.
pub(super) fn publish(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) {
    let receivers = ctx.pubsub.publish(&argv[1], &argv[2], ctx.due);
    ctx.reply(Reply::Integer(receivers as i64));
}

pub(super) fn subscribe(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) {
    for channel in &argv[1..] {
        if ctx.pubsub.subscribe(channel, ctx.client.id, &ctx.client.outbox) {
            ctx.client.channels.push(channel.clone());
        }
        let count = ctx.client.channels.len();
        ctx.reply(confirmation(b"subscribe", Some(channel), count));
    }
}

/// Without arguments: every channel, in the order subscribed (Redis walks a hash table of them, so for more than
/// one channel its order is its own), or one `[unsubscribe, nil, 0]` when there are none.
pub(super) fn unsubscribe(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) {
    let channels = if argv.len() > 1 { argv[1..].to_vec() } else { ctx.client.channels.clone() };
    if channels.is_empty() {
        return ctx.reply(confirmation(b"unsubscribe", None, 0));
    }
    for channel in channels {
        unsubscribe_one(ctx, &channel);
    }
}

fn unsubscribe_one(ctx: &mut Ctx<'_>, channel: &[u8]) {
    ctx.pubsub.unsubscribe(channel, ctx.client.id);
    ctx.client.channels.retain(|c| c != channel);
    let count = ctx.client.channels.len();
    ctx.reply(confirmation(b"unsubscribe", Some(channel), count));
}
