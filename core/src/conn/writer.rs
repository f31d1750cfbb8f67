//! The single writer of a connection. Priority lane first (`biased;`), so a ping or a cancellation never waits
//! behind a burst of tool calls; then it drains whatever else is already queued and flushes once per burst.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::stats::Counters;
use super::{Outgoing, Shared};
use crate::transport::MessageSink;

/// Most messages written between two flushes: bounds how long the first of a burst waits for its flush.
const MAX_BATCH: usize = 128;

pub(crate) async fn run<S: MessageSink>(
    shared: Arc<Shared>,
    mut sink: S,
    mut priority: mpsc::Receiver<Outgoing>,
    mut normal: mpsc::Receiver<Outgoing>,
) {
    loop {
        let first = tokio::select! {
            biased;
            _ = shared.shutdown.cancelled() => break,
            Some(out) = priority.recv() => out,
            Some(out) = normal.recv() => out,
            else => break,
        };
        let mut next = Some(first);
        let mut written = 0;
        while let Some(out) = next.take() {
            if let Err(e) = write_one(&shared, &mut sink, out).await {
                shared.fail(e);
                sink.close().await;
                return;
            }
            written += 1;
            if written < MAX_BATCH {
                next = priority.try_recv().or_else(|_| normal.try_recv()).ok();
            }
        }
        if let Err(e) = sink.flush().await {
            shared.fail(e);
            break;
        }
    }
    sink.close().await;
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
    sink.feed(&out.msg).await?;
    Counters::bump(&shared.counters.sent);
    Ok(())
}
