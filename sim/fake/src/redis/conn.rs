//! One connection: a reader that cuts requests from the byte stream and runs them, and a writer that sends the
//! replies and pub/sub messages queued in the connection's outbox, each no earlier than its due time.
//!
//! Like Redis, a protocol error or QUIT closes the connection after the replies before it are written; so does the
//! client's end of the stream. A hostile client cannot panic the double: every request is parsed by bounds-checked
//! code and answered with Redis's error.

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::client::{Client, Ctx};
use super::commands;
use super::outbox::{Frame, Inbox, outbox};
use super::reply::Reply;
use super::request::{Request, parse};
use super::shared::Shared;

/// Most bytes buffered for one unfinished request. Past it the connection is closed without a reply, as Redis does
/// past `client-query-buffer-limit` (1 GiB there).
const MAX_QUERY: usize = 16 * 1024 * 1024;
const READ_CHUNK: usize = 16 * 1024;

#[derive(Debug, PartialEq, Eq)]
enum End {
    /// Write what is queued, then close.
    Drain,
    /// Close at once.
    Abort,
}

pub(crate) async fn serve<R, W>(shared: Arc<Shared>, reader: R, writer: W)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (outbox, inbox) = outbox(shared.config.max_output);
    let limit = outbox.clone();
    let mut client = Client {
        id: shared.next_client_id(),
        db: 0,
        authenticated: shared.config.password.is_none(),
        channels: Vec::new(),
        outbox,
        closing: false,
    };
    let write = write_loop(shared.clone(), inbox, writer);
    tokio::pin!(write);
    let end = tokio::select! {
        biased;
        // Replies or messages piled up past the limit while the peer does not read: close at once.
        _ = limit.overflowed() => End::Abort,
        // The writer ends first only when the peer's side failed.
        _ = &mut write => End::Abort,
        end = read_loop(&shared, &mut client, reader) => end,
    };
    drop(limit);
    // The channels' copies of the outbox go with the subscriptions; the client's own with it: the writer then ends
    // once the queue is empty.
    {
        let mut state = shared.state();
        for channel in &client.channels {
            state.pubsub.unsubscribe(channel, client.id);
        }
    }
    drop(client);
    if end == End::Drain {
        write.await;
    }
}

async fn read_loop<R: AsyncRead + Unpin>(shared: &Shared, client: &mut Client, mut reader: R) -> End {
    let limits = shared.config.limits;
    let mut buf: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    loop {
        let mut pos = 0;
        loop {
            match parse(&buf[pos..], &limits, client.authenticated) {
                Request::Incomplete => break,
                Request::Command { argv, consumed } => {
                    pos += consumed;
                    if !argv.is_empty() {
                        shared.running().await;
                        execute(shared, client, &argv);
                    }
                    if client.closing {
                        return End::Drain;
                    }
                }
                Request::ProtocolError(text) => {
                    let mut line = b"ERR Protocol error: ".to_vec();
                    line.extend_from_slice(&text);
                    let due = shared.clock.now() + shared.latency();
                    client.outbox.push(Reply::err(line).to_bytes(), due);
                    return End::Drain;
                }
            }
        }
        buf.drain(..pos);
        if buf.len() > MAX_QUERY {
            return End::Abort;
        }
        buf.reserve(READ_CHUNK);
        match reader.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return End::Drain,
            Ok(_) => {}
        }
    }
}

/// Runs one command under the data lock and queues its replies before letting go of it, so that a message another
/// client publishes next is queued after them, as Redis would write it.
fn execute(shared: &Shared, client: &mut Client, argv: &[Vec<u8>]) {
    let now = shared.clock.now();
    let due = now + shared.latency();
    let mut state = shared.state();
    state.sweep_if_due(now);
    let state = &mut *state;
    let mut ctx = Ctx {
        keyspace: &mut state.keyspace,
        pubsub: &mut state.pubsub,
        client,
        now,
        wall_ms: shared.clock.wall_ms(),
        due,
        password: shared.config.password.as_deref().map(str::as_bytes),
        replies: Vec::new(),
    };
    commands::execute(&mut ctx, argv);
    let mut bytes = Vec::new();
    for reply in &ctx.replies {
        reply.encode(&mut bytes);
    }
    ctx.client.outbox.push(bytes, due);
}

async fn write_loop<W: AsyncWrite + Unpin>(shared: Arc<Shared>, mut inbox: Inbox, mut writer: W) {
    let mut carried: Option<Frame> = None;
    loop {
        let frame = match carried.take() {
            Some(frame) => frame,
            None => match inbox.next().await {
                Some(frame) => frame,
                None => break,
            },
        };
        shared.running().await;
        if frame.due > shared.clock.now() {
            tokio::time::sleep_until(frame.due).await;
        }
        // Everything else already due goes out in the same write.
        let mut bytes = frame.bytes;
        while let Some(next) = inbox.try_next() {
            if next.due > shared.clock.now() {
                carried = Some(next);
                break;
            }
            bytes.extend_from_slice(&next.bytes);
        }
        if writer.write_all(&bytes).await.is_err() {
            return;
        }
    }
    let _ = writer.shutdown().await;
}
