//! The single writer of a connection. Priority lane first (`biased;`), so a ping or a cancellation never waits
//! behind a burst of tool calls; then it drains whatever else is already queued and flushes once per burst.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::stats::Counters;
use super::{Outbound, Outgoing, Shared};
use crate::transport::{Burst, MessageSink};

pub(crate) async fn run<S: MessageSink>(
    shared: Arc<Shared>,
    mut sink: S,
    mut priority: mpsc::Receiver<Outgoing>,
    mut normal: mpsc::Receiver<Outgoing>,
) {
    // Every await below also watches `shutdown`: a peer that neither reads nor closes must not keep this task, the
    // stream and the connection's guard (a child process) alive after the connection is gone.
    let shutdown = shared.shutdown.clone();
    let result = tokio::select! {
        biased;
        _ = shutdown.watch() => Ok(()),
        r = drain(&shared, &mut sink, &mut priority, &mut normal) => r,
    };
    match result {
        // Local shutdown: drop the sink without a graceful close, which could block on the same stalled peer.
        Ok(()) => {}
        Err(e) => shared.fail(e),
    }
}

/// Writes until the lanes close or a write fails.
async fn drain<S: MessageSink>(
    shared: &Shared,
    sink: &mut S,
    priority: &mut mpsc::Receiver<Outgoing>,
    normal: &mut mpsc::Receiver<Outgoing>,
) -> Result<(), crate::error::TransportError> {
    loop {
        let first = tokio::select! {
            biased;
            Some(out) = priority.recv() => out,
            Some(out) = normal.recv() => out,
            else => return Ok(()),
        };
        let (mut next, mut burst) = (Some(first), Burst::default());
        while let Some(out) = next.take() {
            write_one(shared, sink, out).await?;
            next = burst.after_write(|| priority.try_recv().or_else(|_| normal.try_recv()).ok());
        }
        sink.flush().await?;
    }
}

async fn write_one<S: MessageSink>(
    shared: &Shared,
    sink: &mut S,
    out: Outgoing,
) -> Result<(), crate::error::TransportError> {
    if let Some(id) = out.call
        && !shared.pending.mark_written(id)
    {
        // The caller timed out or was cancelled while queued: the server never needs to see it.
        Counters::bump(&shared.counters.skipped);
        return Ok(());
    }
    match out.msg {
        Outbound::Message(msg) => sink.feed(&msg).await?,
        Outbound::Request(req) => sink.feed_request(req).await?,
    }
    Counters::bump(&shared.counters.sent);
    Ok(())
}
