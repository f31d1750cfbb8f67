//! A bounded Server-Sent Events parser (the WHATWG "event stream interpretation"), fed the body's chunks as they
//! arrive.
//!
//! Hand-written: the SSE crates we looked at (eventsource-stream, sse-stream) buffer a line or an event without limit,
//! and the reconnecting clients read std time for `retry`. Here one line and one event's data are each bounded by
//! `max_event`, so a peer streaming an endless line or event costs at most that much memory before the stream is
//! refused.

use std::collections::VecDeque;
use std::time::Duration;

/// One dispatched event: its type (empty for the default `message`) and its data, newlines between `data:` lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    pub event: String,
    pub data: Vec<u8>,
}

/// The stream broke a bound; nothing more of it is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EventTooLarge {
    pub max: usize,
}

#[derive(Debug)]
pub(crate) struct SseParser {
    max_event: usize,
    line: Vec<u8>,
    /// The previous chunk ended with `\r`: a `\n` starting this one belongs to that line end.
    after_cr: bool,
    /// Still at the very start of the stream, where one UTF-8 BOM is skipped.
    at_start: bool,
    data: Vec<u8>,
    has_data: bool,
    event: String,
    last_id: Option<String>,
    retry: Option<Duration>,
    ready: VecDeque<SseEvent>,
}

impl SseParser {
    pub fn new(max_event: usize) -> Self {
        SseParser {
            max_event,
            line: Vec::new(),
            after_cr: false,
            at_start: true,
            data: Vec::new(),
            has_data: false,
            event: String::new(),
            last_id: None,
            retry: None,
            ready: VecDeque::new(),
        }
    }

    /// The last event id the stream set (the SSE "last event ID buffer"), for `Last-Event-ID` on resumption.
    pub fn last_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The reconnection time the stream asked for with `retry:`.
    pub fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// A new stream continues this one (resumption): a partial line or event of the cut one is dropped, the last
    /// event id and the retry time are kept.
    pub fn restart(&mut self) {
        self.line.clear();
        self.data.clear();
        self.has_data = false;
        self.event.clear();
        self.after_cr = false;
        self.at_start = true;
    }

    /// The next complete event, if any.
    pub fn next_event(&mut self) -> Option<SseEvent> {
        self.ready.pop_front()
    }

    /// Consumes one chunk of the body. Complete events become available through [`SseParser::next_event`].
    pub fn push(&mut self, mut chunk: &[u8]) -> Result<(), EventTooLarge> {
        if self.at_start && !chunk.is_empty() {
            // While at the start, `line` holds only the part of a BOM seen so far (a BOM split across chunks).
            let bom = &[0xEF, 0xBB, 0xBF][self.line.len()..];
            let n = bom.len().min(chunk.len());
            if chunk[..n] == bom[..n] {
                self.line.extend_from_slice(&chunk[..n]);
                chunk = &chunk[n..];
                if n < bom.len() {
                    return Ok(());
                }
                self.line.clear();
            }
            self.at_start = false;
        }
        if self.after_cr && chunk.first() == Some(&b'\n') {
            chunk = &chunk[1..];
        }
        self.after_cr = false;
        while let Some(end) = chunk.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.extend_line(&chunk[..end])?;
            let cr = chunk[end] == b'\r';
            chunk = &chunk[end + 1..];
            if cr {
                match chunk.first() {
                    Some(b'\n') => chunk = &chunk[1..],
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
            let line = std::mem::take(&mut self.line);
            self.on_line(&line)?;
            self.line = line;
            self.line.clear();
        }
        self.extend_line(chunk)
    }

    fn extend_line(&mut self, bytes: &[u8]) -> Result<(), EventTooLarge> {
        if self.line.len() + bytes.len() > self.max_event {
            return Err(EventTooLarge { max: self.max_event });
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn on_line(&mut self, line: &[u8]) -> Result<(), EventTooLarge> {
        if line.is_empty() {
            self.dispatch();
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                let extra = value.len() + usize::from(self.has_data);
                if self.data.len() + extra > self.max_event {
                    return Err(EventTooLarge { max: self.max_event });
                }
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => self.event = String::from_utf8_lossy(value).into_owned(),
            // An id with NUL is ignored (SSE); one that could not travel back as a header value is useless to us.
            b"id" if value.iter().all(|&b| (0x20..0x7f).contains(&b)) => {
                self.last_id = Some(String::from_utf8_lossy(value).into_owned());
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // Digits only, so the parse fails only on overflow: saturate.
                let ms = std::str::from_utf8(value).ok().and_then(|v| v.parse::<u64>().ok()).unwrap_or(u64::MAX);
                self.retry = Some(Duration::from_millis(ms));
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self) {
        let event = std::mem::take(&mut self.event);
        if !self.has_data {
            return;
        }
        self.has_data = false;
        let data = std::mem::take(&mut self.data);
        self.ready.push_back(SseEvent { event, data });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(chunks: &[&[u8]], max: usize) -> (Vec<SseEvent>, SseParser) {
        let mut p = SseParser::new(max);
        let mut out = Vec::new();
        for c in chunks {
            p.push(c).unwrap();
            while let Some(e) = p.next_event() {
                out.push(e);
            }
        }
        (out, p)
    }

    fn data(events: &[SseEvent]) -> Vec<String> {
        events.iter().map(|e| String::from_utf8(e.data.clone()).unwrap()).collect()
    }

    #[test]
    fn events_fields_and_comments() {
        let (ev, p) =
            parse(&[b": keep-alive\nid: 7\nretry: 250\nevent: message\ndata: {\"a\":1}\n\ndata:x\ndata: y\n\n"], 100);
        assert_eq!(data(&ev), vec!["{\"a\":1}", "x\ny"]);
        assert_eq!(ev[0].event, "message");
        assert_eq!(ev[1].event, "");
        assert_eq!(p.last_id(), Some("7"));
        assert_eq!(p.retry(), Some(Duration::from_millis(250)));
    }

    #[test]
    fn every_line_ending_and_split_chunks() {
        let (ev, _) = parse(&[b"\xEF\xBB", b"\xBFdata: a\r", b"\n\r", b"data: b\r\rdata", b": c\n", b"\n"], 100);
        assert_eq!(data(&ev), vec!["a", "b", "c"]);
    }

    #[test]
    fn priming_event_sets_the_id_without_dispatching() {
        let (ev, p) = parse(&[b"id: prime-1\ndata:\n\n"], 100);
        // `data:` with an empty value still makes a (empty) data buffer: dispatched, and empty.
        assert_eq!(data(&ev), vec![""]);
        assert_eq!(p.last_id(), Some("prime-1"));
        let (ev, p) = parse(&[b"id: only\n\n"], 100);
        assert!(ev.is_empty());
        assert_eq!(p.last_id(), Some("only"));
    }

    #[test]
    fn bad_retry_and_id_values_are_ignored() {
        let (_, p) = parse(&[b"retry: 1s\nid: a\0b\n\n"], 100);
        assert_eq!((p.retry(), p.last_id()), (None, None));
    }

    #[test]
    fn an_endless_line_or_event_is_refused_at_the_bound() {
        let mut p = SseParser::new(16);
        assert_eq!(p.push(&[b'x'; 17]), Err(EventTooLarge { max: 16 }));
        let mut p = SseParser::new(16);
        for _ in 0..3 {
            p.push(b"data: 1234\n").unwrap();
        }
        // 14 bytes of data so far; one more line would make 19.
        assert_eq!(p.push(b"data: 1234\n"), Err(EventTooLarge { max: 16 }));
        assert!(p.data.capacity() <= 64);
    }
}
