//! Newline-delimited JSON-RPC: MCP's stdio framing, which we also use over TCP.
//!
//! Hand-written rather than `tokio_util::codec::LinesCodec`: that codec ends the whole stream after one non-UTF-8 or
//! oversize line, while we must reject one bad frame and keep reading the next.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};

use super::{FrameError, Incoming, MessageSink, MessageSource, QuickRead};
use crate::error::TransportError;
use crate::jsonrpc::{Message, MetaRequest};

/// Default maximum frame: 16 MiB, room for large tool results (images, files) without unbounded buffering.
pub const DEFAULT_MAX_FRAME: usize = 16 * 1024 * 1024;

/// Wraps a byte stream's halves as a message transport.
pub fn line_transport<R, W>(reader: R, writer: W, max_frame: usize) -> (LineSink<W>, LineSource<R>)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    (LineSink::new(writer), LineSource::new(reader, max_frame))
}

#[derive(Debug)]
pub struct LineSink<W> {
    writer: BufWriter<W>,
    /// The frame being written, kept between frames so encoding one allocates nothing once it has grown.
    frame: Vec<u8>,
}

/// A frame buffer grown past this is let go after its frame: one huge message must not pin its size for the
/// connection's life.
const KEEP_FRAME: usize = 64 * 1024;

impl<W: AsyncWrite + Unpin> LineSink<W> {
    pub fn new(writer: W) -> Self {
        LineSink { writer: BufWriter::with_capacity(64 * 1024, writer), frame: Vec::new() }
    }

    /// The underlying writer, for tests that need to write raw (e.g. malformed) bytes. Flush first.
    pub fn get_mut(&mut self) -> &mut W {
        self.writer.get_mut()
    }
}

impl<W: AsyncWrite + Unpin + Send + 'static> MessageSink for LineSink<W> {
    async fn feed(&mut self, msg: &Message) -> Result<(), TransportError> {
        self.write_frame(|frame| msg.encode_into(frame)).await
    }

    async fn feed_request(&mut self, req: MetaRequest) -> Result<(), TransportError> {
        self.write_frame(|frame| req.encode_into(frame)).await
    }

    async fn flush(&mut self) -> Result<(), TransportError> {
        self.writer.flush().await.map_err(|e| TransportError::io("flush", &e))
    }

    async fn close(&mut self) {
        let _ = self.writer.shutdown().await;
    }
}

impl<W: AsyncWrite + Unpin> LineSink<W> {
    /// Writes the frame `encode` appends to the reused buffer, and its newline.
    async fn write_frame(&mut self, encode: impl FnOnce(&mut Vec<u8>)) -> Result<(), TransportError> {
        self.frame.clear();
        encode(&mut self.frame);
        self.frame.push(b'\n');
        let written = self.writer.write_all(&self.frame).await.map_err(|e| TransportError::io("write", &e));
        if self.frame.capacity() > KEEP_FRAME {
            self.frame = Vec::new();
        }
        written
    }
}

/// Reads frames up to `max_frame` bytes. An oversize frame is reported as soon as it crosses the limit and its
/// remainder is discarded up to the next newline, so memory stays bounded whatever the peer sends.
#[derive(Debug)]
pub struct LineSource<R> {
    reader: BufReader<R>,
    line: Vec<u8>,
    max_frame: usize,
    /// Inside an oversize frame: drop bytes until the next newline.
    discarding: bool,
}

impl<R: AsyncRead + Unpin> LineSource<R> {
    pub fn new(reader: R, max_frame: usize) -> Self {
        LineSource {
            reader: BufReader::with_capacity(64 * 1024, reader),
            line: Vec::new(),
            max_frame,
            discarding: false,
        }
    }

    /// The next raw frame (without its newline or a trailing `\r`). Cancel-safe: all progress lives in `self`.
    pub async fn next_frame(&mut self) -> Option<Result<Vec<u8>, FrameError>> {
        let mut frame = Vec::new();
        let read = self.next_frame_into(&mut frame).await?;
        Some(read.map(|()| frame))
    }

    /// [`LineSource::next_frame`] into the caller's buffer, which it replaces (its old contents are dropped): a reader
    /// that keeps one buffer across frames allocates nothing per frame once the buffers have grown. `frame` is only
    /// touched when a frame is handed over, so this stays cancel-safe.
    pub async fn next_frame_into(&mut self, frame: &mut Vec<u8>) -> Option<Result<(), FrameError>> {
        loop {
            let available = match self.reader.fill_buf().await {
                Ok(buf) => buf,
                Err(e) => return Some(Err(FrameError::Io(TransportError::io("read", &e)))),
            };
            if available.is_empty() {
                // End of stream: a final unterminated line is still a frame.
                if self.discarding || self.line.is_empty() {
                    return None;
                }
                self.hand_over(frame);
                return Some(Ok(()));
            }
            // A byte-at-a-time search cost as much as the rest of the framing; memchr reads a word or a vector at
            // a time.
            let newline = memchr::memchr(b'\n', available);
            let take = newline.unwrap_or(available.len());
            let seen = self.line.len() + take;
            if self.discarding {
                self.discarding = newline.is_none();
            } else if seen > self.max_frame {
                self.line.clear();
                self.line.shrink_to(64 * 1024);
                self.discarding = newline.is_none();
                self.reader.consume(take + usize::from(newline.is_some()));
                return Some(Err(FrameError::TooLarge { len: seen, max: self.max_frame }));
            } else {
                self.line.extend_from_slice(&available[..take]);
            }
            self.reader.consume(take + usize::from(newline.is_some()));
            if newline.is_some() && !self.discarding {
                if self.line.last() == Some(&b'\r') {
                    self.line.pop();
                }
                if self.line.iter().all(u8::is_ascii_whitespace) {
                    self.line.clear();
                    continue;
                }
                self.hand_over(frame);
                return Some(Ok(()));
            }
        }
    }

    /// Gives the frame read to `frame` and keeps the caller's old buffer (emptied) for the next one: the two are
    /// swapped, never copied. A buffer grown past [`KEEP_FRAME`] is let go rather than kept.
    fn hand_over(&mut self, frame: &mut Vec<u8>) {
        frame.clear();
        if frame.capacity() > KEEP_FRAME {
            *frame = Vec::new();
        }
        std::mem::swap(&mut self.line, frame);
    }
}

/// A frame read by `quick` when it takes it, else by [`decode_frame`]: what [`MessageSource::recv_quick`] does with
/// each frame, shared with readers that take frames themselves (the fake server's), so the two fast paths cannot
/// drift apart.
pub fn decode_frame_with<'f, T>(
    frame: &'f [u8],
    quick: impl FnOnce(&'f [u8]) -> Option<T>,
) -> Result<Incoming<T>, FrameError> {
    // Only a frame the general path would read at all (UTF-8) is offered to the quick reader.
    if std::str::from_utf8(frame).is_ok()
        && let Some(read) = quick(frame)
    {
        return Ok(Incoming::Quick(read));
    }
    decode_frame(frame).map(Incoming::Message)
}

/// A frame as a message: it must be UTF-8, then a JSON-RPC message. What [`MessageSource::recv`] does with each
/// frame, for a reader that takes frames itself ([`LineSource::next_frame_into`]) and decodes the ones its own quick
/// reader does not take.
pub fn decode_frame(frame: &[u8]) -> Result<Message, FrameError> {
    if std::str::from_utf8(frame).is_err() {
        return Err(FrameError::NotUtf8);
    }
    Message::decode(frame).map_err(FrameError::from)
}

impl<R: AsyncRead + Unpin + Send + 'static> MessageSource for LineSource<R> {
    async fn recv(&mut self) -> Option<Result<Message, FrameError>> {
        Some(self.next_frame().await?.and_then(|frame| decode_frame(&frame)))
    }

    async fn recv_quick<Q: QuickRead>(&mut self, quick: &Q) -> Option<Result<Incoming<Q::Read>, FrameError>> {
        let frame = match self.next_frame().await? {
            Ok(frame) => frame,
            Err(e) => return Some(Err(e)),
        };
        Some(decode_frame_with(&frame, |f| quick.read(f)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8], max: usize) -> Vec<Result<Vec<u8>, FrameError>> {
        let mut src = LineSource::new(input, max);
        let mut out = Vec::new();
        while let Some(f) = src.next_frame().await {
            out.push(f);
        }
        out
    }

    #[tokio::test]
    async fn splits_lines_and_skips_blank_ones() {
        let got = frames(b"a\r\n\n  \nbc\nlast", 100).await;
        let got: Vec<_> = got.into_iter().map(Result::unwrap).collect();
        assert_eq!(got, vec![b"a".to_vec(), b"bc".to_vec(), b"last".to_vec()]);
    }

    #[tokio::test]
    async fn oversize_frame_is_rejected_and_the_next_survives() {
        let mut input = vec![b'x'; 50];
        input.extend_from_slice(b"\nok\n");
        let got = frames(&input, 10).await;
        assert!(matches!(got[0], Err(FrameError::TooLarge { max: 10, .. })));
        assert_eq!(got[1].as_ref().unwrap(), b"ok");
        assert_eq!(got.len(), 2);
    }

    #[tokio::test]
    async fn oversize_frame_across_many_reads_is_discarded_in_bounded_memory() {
        // A reader that yields 7 bytes at a time forces the discard path to span reads.
        let (mut client, server) = tokio::io::duplex(7);
        let writer = tokio::spawn(async move {
            let mut big = vec![b'y'; 10_000];
            big.extend_from_slice(b"\n{\"jsonrpc\":\"2.0\",\"method\":\"m\"}\n");
            client.write_all(&big).await.unwrap();
        });
        let mut src = LineSource::new(server, 100);
        assert!(matches!(src.recv().await, Some(Err(FrameError::TooLarge { .. }))));
        assert!(matches!(src.recv().await, Some(Ok(Message::Notification(_)))));
        assert!(src.line.capacity() <= 64 * 1024);
        writer.await.unwrap();
        assert!(src.recv().await.is_none());
    }

    #[tokio::test]
    async fn a_reused_buffer_gets_each_frame_and_the_old_one_is_kept() {
        let mut src = LineSource::new(&b"first frame\nsecond\n\nthird, the longest\nlast"[..], 100);
        let mut frame = b"stale".to_vec();
        let mut got = Vec::new();
        while let Some(read) = src.next_frame_into(&mut frame).await {
            read.unwrap();
            got.push(String::from_utf8(frame.clone()).unwrap());
        }
        assert_eq!(got, ["first frame", "second", "third, the longest", "last"]);
        assert_eq!(frame, b"last", "the end of the stream leaves the last frame alone");
        // The caller's old buffer is kept for the next frame, unless it grew too big to keep.
        let mut src = LineSource::new(&b"a\nb\n"[..], 100);
        let mut frame = Vec::with_capacity(32);
        src.next_frame_into(&mut frame).await.unwrap().unwrap();
        assert_eq!(src.line.capacity(), 32);
        let mut big = Vec::with_capacity(KEEP_FRAME + 1);
        src.next_frame_into(&mut big).await.unwrap().unwrap();
        assert_eq!((big.as_slice(), src.line.capacity()), (&b"b"[..], 0));
    }

    #[tokio::test]
    async fn frame_exactly_at_the_limit_is_accepted() {
        let got = frames(b"0123456789\n", 10).await;
        assert_eq!(got[0].as_ref().unwrap(), b"0123456789");
    }

    #[tokio::test]
    async fn non_utf8_is_one_bad_frame() {
        let mut src = LineSource::new(&b"\xff\xfe\n{\"jsonrpc\":\"2.0\",\"method\":\"m\"}\n"[..], 100);
        assert_eq!(src.recv().await, Some(Err(FrameError::NotUtf8)));
        assert!(matches!(src.recv().await, Some(Ok(Message::Notification(_)))));
    }
}
