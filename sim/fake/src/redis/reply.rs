//! RESP2 replies as the double writes them, and the error texts copied from Redis 7.0 (`server.c`, `networking.c`,
//! `t_string.c`): the differential test compares them byte for byte with a real `redis-server`.

/// One reply on its way to the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    /// `+OK`, `+PONG`.
    Status(&'static str),
    /// `-ERR ...`, `-WRONGTYPE ...`: the whole line after the `-`, already sanitized.
    Error(Vec<u8>),
    Integer(i64),
    Bulk(Vec<u8>),
    /// `$-1`.
    Nil,
    Array(Vec<Reply>),
}

impl Reply {
    pub(crate) fn ok() -> Reply {
        Reply::Status("OK")
    }

    /// An error from a text with no `-` and no CRLF: `err("ERR syntax error")`.
    pub(crate) fn err(text: impl Into<Vec<u8>>) -> Reply {
        let mut text = text.into();
        // Redis's addReplyErrorLength does the same: a CR or LF inside an error would break the framing.
        for byte in &mut text {
            if *byte == b'\r' || *byte == b'\n' {
                *byte = b' ';
            }
        }
        Reply::Error(text)
    }

    pub(crate) fn bulk(bytes: &[u8]) -> Reply {
        Reply::Bulk(bytes.to_vec())
    }

    pub(crate) fn syntax() -> Reply {
        Reply::err("ERR syntax error")
    }

    pub(crate) fn not_integer() -> Reply {
        Reply::err("ERR value is not an integer or out of range")
    }

    pub(crate) fn wrong_type() -> Reply {
        Reply::err("WRONGTYPE Operation against a key holding the wrong kind of value")
    }

    /// `name` is the command's lowercase name, as Redis's `cmd->fullname`.
    pub(crate) fn arity(name: &str) -> Reply {
        Reply::err(format!("ERR wrong number of arguments for '{name}' command"))
    }

    pub(crate) fn invalid_expire(name: &str) -> Reply {
        Reply::err(format!("ERR invalid expire time in '{name}' command"))
    }

    /// Appends the RESP2 encoding.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Reply::Status(s) => {
                out.push(b'+');
                out.extend_from_slice(s.as_bytes());
            }
            Reply::Error(e) => {
                out.push(b'-');
                out.extend_from_slice(e);
            }
            Reply::Integer(n) => out.extend_from_slice(format!(":{n}").as_bytes()),
            Reply::Bulk(b) => {
                out.extend_from_slice(format!("${}\r\n", b.len()).as_bytes());
                out.extend_from_slice(b);
            }
            Reply::Nil => out.extend_from_slice(b"$-1"),
            Reply::Array(items) => {
                out.extend_from_slice(format!("*{}\r\n", items.len()).as_bytes());
                for item in items {
                    item.encode(out);
                }
                // Each item ended its own line.
                return;
            }
        }
        out.extend_from_slice(b"\r\n");
    }

    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out);
        out
    }
}

/// A C string as Redis's `%s` prints it: up to the first NUL byte, at most `max` bytes.
pub(crate) fn c_str(bytes: &[u8], max: usize) -> &[u8] {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len()).min(max);
    &bytes[..end]
}

/// `ERR unknown command 'x', with args beginning with: 'a' 'b' ` (Redis 7.0's `processCommand`): the name cut at 128
/// bytes, then the arguments while the list is shorter than 128 bytes, each cut to what is left of those 128.
pub(crate) fn unknown_command(name: &[u8], rest: &[Vec<u8>]) -> Reply {
    let mut text = b"ERR unknown command '".to_vec();
    text.extend_from_slice(c_str(name, 128));
    text.extend_from_slice(b"', with args beginning with: ");
    let mut args: Vec<u8> = Vec::new();
    for arg in rest {
        if args.len() >= 128 {
            break;
        }
        let room = 128 - args.len();
        args.push(b'\'');
        args.extend_from_slice(c_str(arg, room));
        args.extend_from_slice(b"' ");
    }
    text.extend_from_slice(&args);
    Reply::err(text)
}
