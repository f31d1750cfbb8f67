//! The quick read of the frame a client gets most: the response to one of its `tools/call` requests.
//!
//! The general decoder ([`Message::decode`](crate::jsonrpc::Message::decode)) cannot know what a response's `result`
//! is, so it scans the result to find where it ends and keeps its text, and the caller then parses that text into a
//! [`CallToolResult`]: every tool result was read twice. This reader takes only a frame whose shape it fully knows:
//! exactly `jsonrpc` (`"2.0"`), an integer `id`, then `result`, each once, and nothing else. When it reaches `result`,
//! it asks `wanted` whether that id is a `tools/call` its connection is waiting for, and only then reads the result,
//! straight into a `CallToolResult` with the very visitor the caller's parse uses. Anything else (another shape or
//! order, an id it is not waiting for, a result that is not a valid `CallToolResult`, text after the object) returns
//! `None`, and the frame goes to the general decoder, so every error and decision stays the general path's. What it
//! returns is what the general path and the caller's parse would have made of the frame.

use std::fmt;

use serde::Deserializer;
use serde::de::{self, MapAccess, Visitor};

use super::CallToolResult;
use crate::jsonrpc::member::Member;
use crate::jsonrpc::{Key, Version};

/// Reads `frame` as the response to a `tools/call` that `wanted` says is waiting: its id and its result, or `None`.
pub(crate) fn read(frame: &[u8], wanted: impl Fn(i64) -> bool) -> Option<(i64, CallToolResult)> {
    let mut de = serde_json::Deserializer::from_slice(frame);
    let read = de.deserialize_map(ResponseVisitor { wanted }).ok()?;
    de.end().ok()?;
    Some(read)
}

struct ResponseVisitor<F> {
    wanted: F,
}

/// The reader's way out: the frame is left to the general decoder, which never sees this error.
fn not_quick<E: de::Error>() -> E {
    E::custom("not a tools/call response this reader takes")
}

impl<'de, F: Fn(i64) -> bool> Visitor<'de> for ResponseVisitor<F> {
    type Value = (i64, CallToolResult);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tools/call response")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut version, mut id, mut result) = (false, None, None);
        while let Some(Member(key)) = map.next_key::<Member<Key>>()? {
            match key {
                Key::Jsonrpc if !version => version = map.next_value::<Version>()?.0,
                Key::Id if id.is_none() => id = Some(map.next_value::<i64>()?),
                Key::Result if result.is_none() => match id {
                    Some(id) if (self.wanted)(id) => result = Some(map.next_value::<CallToolResult>()?),
                    _ => return Err(not_quick()),
                },
                _ => return Err(not_quick()),
            }
        }
        match (version, id, result) {
            (true, Some(id), Some(result)) => Ok((id, result)),
            _ => Err(not_quick()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::{Message, ResponseBody};

    /// What the general path makes of `frame`: a response with an integer id and a result that parses as a
    /// `CallToolResult`.
    fn general(frame: &str) -> Option<(i64, CallToolResult)> {
        let Ok(Message::Response(r)) = Message::decode(frame.as_bytes()) else { return None };
        let id = r.id?.as_number()?;
        let ResponseBody::Result(payload) = r.body else { return None };
        Some((id, payload.parse().ok()?))
    }

    #[test]
    fn takes_a_plain_response_as_the_general_path_reads_it() {
        let frames = [
            r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"ok"}],"isError":false}}"#,
            r#"{"id":3,"jsonrpc":"2.0","result":{"_meta":{"a":1},"content":[],"resultType":"complete","x":[1.5]}}"#,
            " {\"jsonrpc\" : \"2.0\", \"id\" : 3 , \"result\" : {\"structuredContent\":null}} \t",
            // An escaped member name is the name, as in the general path.
            r#"{"jsonrpc":"2.0","\u0069d":3,"result":{"content":[],"content2":{"isError":1}}}"#,
        ];
        for frame in frames {
            let quick = read(frame.as_bytes(), |id| id == 3);
            assert!(quick.is_some(), "{frame}");
            assert_eq!(quick, general(frame), "{frame}");
        }
    }

    #[test]
    fn leaves_every_other_frame_to_the_general_path() {
        let wanted = |id| id == 3;
        for frame in [
            // Not waited for as a tools/call, or not a response at all.
            r#"{"jsonrpc":"2.0","id":4,"result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad"}}"#,
            // The id after the result, a repeated member, a member it does not know, a missing or wrong version.
            r#"{"jsonrpc":"2.0","result":{"content":[]},"id":3}"#,
            r#"{"jsonrpc":"2.0","id":3,"id":3,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{},"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{},"extra":1}"#,
            r#"{"\u006aSONrpc":"2.0","jsonrpc":"2.0","id":3,"result":{}}"#,
            r#"{"id":3,"result":{}}"#,
            r#"{"jsonrpc":"1.0","id":3,"result":{}}"#,
            // An id that is not an integer, a result that is not a CallToolResult, text after the object.
            r#"{"jsonrpc":"2.0","id":"3","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":3.0,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{"content":null}}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{"isError":false,"isError":true}}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":[]}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{"x":1e400}}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{}} {}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{}"#,
            "[]",
            "",
        ] {
            assert_eq!(read(frame.as_bytes(), wanted), None, "{frame}");
        }
    }
}
