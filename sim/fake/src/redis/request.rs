//! Reading requests: RESP2 multibulk frames (`*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`) and inline lines, cut from the bytes a
//! connection has buffered, with Redis 7.0's own rules (`networking.c`'s `processMultibulkBuffer` and
//! `processInlineBuffer`) for what is incomplete, what is a protocol error and which error text it gets.
//!
//! Bounded: an argument count or a bulk length over the double's limits is refused with the error Redis gives for
//! one over its own (larger) limits, before anything is allocated for it.

use super::inline::split_args;

/// Longest inline line, or multibulk header line, Redis waits for (`PROTO_INLINE_MAX_SIZE`).
const INLINE_MAX: usize = 64 * 1024;
/// Redis's limits for a client that has not authenticated yet (`processMultibulkBuffer`).
const UNAUTHENTICATED_MAX_ARGS: i64 = 10;
const UNAUTHENTICATED_MAX_BULK: i64 = 16 * 1024;

/// The double's bounds on one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestLimits {
    /// Most arguments in one command (Redis: 2^31 - 1). More: `Protocol error: invalid multibulk length`.
    pub max_args: usize,
    /// Longest argument in bytes (Redis: `proto-max-bulk-len`, 512 MiB). Longer: `Protocol error: invalid bulk length`.
    pub max_bulk: usize,
}

impl Default for RequestLimits {
    fn default() -> Self {
        RequestLimits { max_args: 64 * 1024, max_bulk: 1024 * 1024 }
    }
}

/// What the front of the buffer holds.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Request {
    /// Not a whole request yet: read more.
    Incomplete,
    /// A request of `consumed` bytes; `argv` is empty for one Redis skips (`*0`, `*-1`, a blank inline line).
    Command { argv: Vec<Vec<u8>>, consumed: usize },
    /// Redis answers `-ERR Protocol error: <this>` and closes the connection.
    ProtocolError(Vec<u8>),
}

/// Reads the request at the front of `buf`. `authenticated` is false while a password is required and not given.
pub(crate) fn parse(buf: &[u8], limits: &RequestLimits, authenticated: bool) -> Request {
    match buf.first() {
        None => Request::Incomplete,
        Some(b'*') => multibulk(buf, limits, authenticated),
        Some(_) => inline(buf),
    }
}

fn inline(buf: &[u8]) -> Request {
    let Some(newline) = c_find(buf, b'\n') else {
        return if buf.len() > INLINE_MAX {
            Request::ProtocolError("too big inline request".into())
        } else {
            Request::Incomplete
        };
    };
    let line_end = if newline > 0 && buf[newline - 1] == b'\r' { newline - 1 } else { newline };
    match split_args(&buf[..line_end]) {
        Some(argv) => Request::Command { argv, consumed: newline + 1 },
        None => Request::ProtocolError("unbalanced quotes in request".into()),
    }
}

fn multibulk(buf: &[u8], limits: &RequestLimits, authenticated: bool) -> Request {
    let (count, mut pos) = match header_line(buf, 0, "too big mbulk count string") {
        Header::Line(text, next) => (string2ll(&text[1..]), next),
        Header::Incomplete => return Request::Incomplete,
        Header::TooBig(e) => return Request::ProtocolError(e.into()),
    };
    let count = match count {
        Some(n) if n <= i64::from(i32::MAX) && n <= limits.max_args as i64 => n,
        _ => return Request::ProtocolError("invalid multibulk length".into()),
    };
    if count > UNAUTHENTICATED_MAX_ARGS && !authenticated {
        return Request::ProtocolError("unauthenticated multibulk length".into());
    }
    if count <= 0 {
        return Request::Command { argv: Vec::new(), consumed: pos };
    }
    let mut argv = Vec::new();
    for _ in 0..count {
        let (text, next) = match header_line(buf, pos, "too big bulk count string") {
            Header::Line(text, next) => (text, next),
            Header::Incomplete => return Request::Incomplete,
            Header::TooBig(e) => return Request::ProtocolError(e.into()),
        };
        if text.first() != Some(&b'$') {
            // An empty line shows its `\r`, which the error's sanitizing turns into a space, as in Redis.
            let got = text.first().copied().unwrap_or(b'\r');
            return Request::ProtocolError([&b"expected '$', got '"[..], &[got], b"'"].concat());
        }
        let len = match string2ll(&text[1..]) {
            Some(n) if n >= 0 && n <= limits.max_bulk as i64 => n,
            _ => return Request::ProtocolError("invalid bulk length".into()),
        };
        if len > UNAUTHENTICATED_MAX_BULK && !authenticated {
            return Request::ProtocolError("unauthenticated bulk length".into());
        }
        let len = len as usize;
        // Redis skips the two bytes after the data without looking at them; so does the double.
        if buf.len() < next + len + 2 {
            return Request::Incomplete;
        }
        argv.push(buf[next..next + len].to_vec());
        pos = next + len + 2;
    }
    Request::Command { argv, consumed: pos }
}

enum Header<'a> {
    /// The line from `start` up to its `\r`, and where the next begins (after `\r\n`).
    Line(&'a [u8], usize),
    Incomplete,
    TooBig(&'static str),
}

/// A header line as Redis finds it: `strchr` for `\r` (which a NUL byte stops), then one more byte for the `\n`.
fn header_line<'a>(buf: &'a [u8], start: usize, too_big: &'static str) -> Header<'a> {
    let rest = &buf[start..];
    match c_find(rest, b'\r') {
        None if rest.len() > INLINE_MAX => Header::TooBig(too_big),
        None => Header::Incomplete,
        Some(cr) if cr + 2 > rest.len() => Header::Incomplete,
        Some(cr) => Header::Line(&rest[..cr], start + cr + 2),
    }
}

/// C's `strchr`: the first `byte` before any NUL.
fn c_find(buf: &[u8], byte: u8) -> Option<usize> {
    buf.iter().position(|&b| b == byte || b == 0).filter(|&i| buf[i] == byte)
}

/// Redis's `string2ll`: an optional `-`, then digits without a leading zero (except `0` itself), no spaces, no `+`,
/// within `i64`.
pub(crate) fn string2ll(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (negative, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut value: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    if negative {
        // i64::MIN's magnitude is one more than i64::MAX.
        if value == 1u64 << 63 { Some(i64::MIN) } else { i64::try_from(value).ok().map(|v| -v) }
    } else {
        i64::try_from(value).ok()
    }
}
