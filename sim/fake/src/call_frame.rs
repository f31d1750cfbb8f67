//! The quick read of the frame a fake server gets most: a plain `tools/call` request.
//!
//! The general decoder builds the whole `params` tree, and a 2026-07-28 request carries its whole envelope there
//! (`clientInfo` and all) on every call, though the server reads five of its keys. This reader takes a frame whose
//! shape it fully knows (exactly `jsonrpc`, `id`, `method`, `params`, with `params` holding only `name`, `arguments`
//! and `_meta`) and gives its id and params typed, with `_meta` cut down to the keys the server reads, and each read
//! no further than the server looks: `name` and the protocol version as text borrowed from the frame, the client
//! capabilities by presence only (skipped unbuilt, as `clientInfo` is). The server reads them through
//! [`Params`](crate::params::Params) as it reads the general decoder's tree, and never builds the tree. Anything else it does not recognise (another method, an extra or repeated member, an escaped method name, a
//! bad id, bytes that are not UTF-8) returns `None`, and the frame goes to
//! [`Message::decode`](mcpstorm_core::jsonrpc::Message::decode), so every decision, refusal and error text stays the
//! general path's.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use mcpstorm_core::jsonrpc::RequestId;
use mcpstorm_core::mcp::{META_PROTOCOL_VERSION, method};
use mcpstorm_core::session::{META_AUTHORIZATION, META_CLIENT_CAPABILITIES, META_SESSION};
use serde::de::value::MapAccessDeserializer;
use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// The `_meta` keys the server reads from a `tools/call` (the routing, the envelope check, the gate, the progress
/// token). Every other key of `_meta` is skipped unread. A member that is there is `Some`, `null` included. The
/// envelope keys every modern call carries are read only as far as the server looks at them: the capabilities not at
/// all, the protocol version as text, both borrowed from the frame where they can be.
#[derive(Debug, Deserialize)]
pub(crate) struct CallMeta<'a> {
    #[serde(default, rename = "progressToken", deserialize_with = "present")]
    pub progress_token: Option<Value>,
    #[serde(default, borrow, rename = "io.modelcontextprotocol/protocolVersion", deserialize_with = "present")]
    pub protocol_version: Option<Text<'a>>,
    #[serde(default, rename = "io.modelcontextprotocol/clientCapabilities", deserialize_with = "present")]
    pub client_capabilities: Option<Skipped>,
    #[serde(default, rename = "io.mcpstorm/session", deserialize_with = "present")]
    pub session: Option<Value>,
    #[serde(default, rename = "io.mcpstorm/authorization", deserialize_with = "present")]
    pub authorization: Option<Value>,
}

impl CallMeta<'_> {
    /// Whether `_meta[key]` is there (`null` included), as in the whole `_meta` object (every key not kept is one the
    /// server never asks for).
    pub fn has(&self, key: &str) -> bool {
        match key {
            META_PROTOCOL_VERSION => self.protocol_version.is_some(),
            META_CLIENT_CAPABILITIES => self.client_capabilities.is_some(),
            _ => self.get(key).is_some(),
        }
    }

    /// `_meta[key]` if it is a string.
    pub fn str(&self, key: &str) -> Option<&str> {
        match key {
            META_PROTOCOL_VERSION => self.protocol_version.as_ref()?.as_str(),
            _ => self.get(key)?.as_str(),
        }
    }

    /// `_meta[key]` for the keys kept as values (the progress token, the session, the authorization); `None` for
    /// every other, including the envelope keys, which [`has`](Self::has) and [`str`](Self::str) read.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match key {
            PROGRESS_TOKEN => self.progress_token.as_ref(),
            META_SESSION => self.session.as_ref(),
            META_AUTHORIZATION => self.authorization.as_ref(),
            _ => None,
        }
    }
}

/// The `_meta` key of a request's progress token.
pub(crate) const PROGRESS_TOKEN: &str = "progressToken";

/// A plain `tools/call`'s params: each member `Some` when there (`null` included).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CallParams<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    pub name: Option<Text<'a>>,
    #[serde(default, deserialize_with = "present")]
    pub arguments: Option<Value>,
    /// An object, or the frame is not one this reader takes (`null` and other values go the general way).
    #[serde(default, borrow, rename = "_meta", deserialize_with = "object")]
    pub meta: Option<CallMeta<'a>>,
}

/// A member the server reads only as a string: its text (borrowed from the frame unless it has escapes), or
/// `Other` for any other JSON value, which is skipped unbuilt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Text<'a> {
    Str(Cow<'a, str>),
    Other,
}

impl<'a> Text<'a> {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Text::Str(s) => Some(s),
            Text::Other => None,
        }
    }
}

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }

            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Text::Str(Cow::Borrowed(s)))
            }

            fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Text::Str(Cow::Owned(s.to_owned())))
            }

            fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
                Ok(Text::Str(Cow::Owned(s)))
            }

            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Text::Other)
            }

            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Text::Other)
            }

            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Text::Other)
            }

            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Text::Other)
            }

            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Text::Other)
            }

            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                IgnoredAny.visit_seq(seq).map(|_| Text::Other)
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                IgnoredAny.visit_map(map).map(|_| Text::Other)
            }
        }
        d.deserialize_any(V)
    }
}

/// A member whose presence is all the server reads (`null` included); its value is checked as JSON and skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Skipped;

impl<'de> Deserialize<'de> for Skipped {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(d).map(|_| Skipped)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Frame<'a> {
    jsonrpc: &'a str,
    id: RequestId,
    method: &'a str,
    #[serde(borrow, deserialize_with = "map_only")]
    params: CallParams<'a>,
}

/// A member that is there, `null` included (serde's `Option` reads `null` as absent, and the server tells them apart).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

fn object<'de, D: Deserializer<'de>>(d: D) -> Result<Option<CallMeta<'de>>, D::Error> {
    map_only(d).map(Some)
}

/// `T` from a JSON object only: serde reads a struct from an array too, which the general path refuses.
fn map_only<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<T, D::Error> {
    struct Only<T>(PhantomData<T>);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for Only<T> {
        type Value = T;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object")
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            T::deserialize(MapAccessDeserializer::new(map))
        }
    }
    d.deserialize_map(Only(PhantomData))
}

/// The id and params of `frame` as the general decoder would read them (bar the `_meta` keys the server never
/// reads, and the values it reads only as text or by presence), if it is a plain `tools/call`; `None` otherwise.
pub fn read(frame: &[u8]) -> Option<(RequestId, CallParams<'_>)> {
    // Checked whole first, as the general path does: serde_json does not check the UTF-8 of the values it skips.
    // Once checked, strings are read without checking each again.
    let text = std::str::from_utf8(frame).ok()?;
    let mut de = serde_json::Deserializer::from_str(text);
    let frame = Frame::deserialize(&mut de).ok()?;
    de.end().ok()?;
    if frame.jsonrpc != "2.0" || frame.method != method::TOOLS_CALL {
        return None;
    }
    Some((frame.id, frame.params))
}

#[cfg(test)]
mod tests {
    use mcpstorm_core::jsonrpc::Message;
    use serde_json::{Map, json};

    use super::*;

    /// What the server reads of a `tools/call`: the id, `name` (present, and its text if a string), `arguments`, and
    /// the kept `_meta` keys: the protocol version as `name` is, the capabilities by presence, the rest as values.
    type View = (RequestId, Option<Option<String>>, Option<Value>, Option<Vec<(&'static str, Option<Value>)>>);

    const KEPT: [&str; 5] =
        [PROGRESS_TOKEN, META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES, META_SESSION, META_AUTHORIZATION];

    /// A member read as text: its string, or `false` for any other value.
    fn as_text(text: Option<&str>) -> Value {
        text.map_or(json!(false), Value::from)
    }

    /// The view of what the general decoder reads.
    fn general(frame: &str) -> Option<View> {
        let Ok(Message::Request(r)) = Message::decode(frame.as_bytes()) else { return None };
        let params = r.params.as_ref()?;
        let meta = params.get("_meta").and_then(Value::as_object).map(|meta| {
            let view = |k: &'static str| {
                let v = meta.get(k);
                let v = match k {
                    META_PROTOCOL_VERSION => v.map(|v| as_text(v.as_str())),
                    META_CLIENT_CAPABILITIES => v.map(|_| json!(true)),
                    _ => v.cloned(),
                };
                (k, v)
            };
            KEPT.map(view).to_vec()
        });
        let name = params.get("name").map(|n| n.as_str().map(str::to_owned));
        Some((r.id, name, params.get("arguments").cloned(), meta))
    }

    /// The same view of the quick read.
    fn quick(id: RequestId, params: CallParams<'_>) -> View {
        let meta = params.meta.map(|m| {
            let view = |k: &'static str| {
                let v = match k {
                    META_PROTOCOL_VERSION => m.protocol_version.as_ref().map(|v| as_text(v.as_str())),
                    META_CLIENT_CAPABILITIES => m.has(k).then_some(json!(true)),
                    _ => m.get(k).cloned(),
                };
                (k, v)
            };
            KEPT.map(view).to_vec()
        });
        (id, params.name.map(|n| n.as_str().map(str::to_owned)), params.arguments, meta)
    }

    #[test]
    fn the_keys_it_keeps_are_the_ones_the_server_reads() {
        // serde's renames are literals: they must spell the constants the rest of the server uses.
        let meta: Map<String, Value> = KEPT.iter().map(|k| ((*k).to_owned(), json!(*k))).collect();
        let text = serde_json::to_string(&meta).unwrap();
        let m: CallMeta<'_> = serde_json::from_str(&text).unwrap();
        for key in KEPT.into_iter().chain(["io.modelcontextprotocol/clientInfo", "other"]) {
            assert_eq!(m.has(key), meta.contains_key(key), "{key}");
            // The capabilities are only ever looked for, never read.
            let text = (KEPT.contains(&key) && key != META_CLIENT_CAPABILITIES).then_some(key);
            assert_eq!(m.str(key), text, "{key}");
        }
        assert_eq!(m.get(PROGRESS_TOKEN), Some(&json!(PROGRESS_TOKEN)));
        assert_eq!(m.get(META_AUTHORIZATION), Some(&json!(META_AUTHORIZATION)));
    }

    #[test]
    fn members_read_as_text_are_present_whatever_their_value() {
        let meta =
            r#"{"io.modelcontextprotocol/protocolVersion":null,"io.modelcontextprotocol/clientCapabilities":null}"#;
        let m: CallMeta<'_> = serde_json::from_str(meta).unwrap();
        assert_eq!((m.has(META_PROTOCOL_VERSION), m.str(META_PROTOCOL_VERSION)), (true, None));
        assert!(m.has(META_CLIENT_CAPABILITIES));
        for other in ["1", "true", "[1,{}]", r#"{"a":[]}"#, r#""v\"1""#] {
            let meta = format!(r#"{{"io.modelcontextprotocol/protocolVersion":{other}}}"#);
            let m: CallMeta<'_> = serde_json::from_str(&meta).unwrap();
            let text = serde_json::from_str::<Value>(other).unwrap();
            assert_eq!(m.str(META_PROTOCOL_VERSION), text.as_str(), "{other}");
        }
    }

    #[test]
    fn plain_calls_read_as_the_general_decoder_reads_them() {
        let envelope = r#""io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28""#;
        let frames = [
            format!(r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"_meta":{{{envelope},"progressToken":3}},"arguments":{{"q":"a\"b"}},"name":"query"}}}}"#),
            r#"{"jsonrpc":"2.0","id":"s-1","method":"tools/call","params":{"name":"echo"}}"#.to_owned(),
            r#"{"id":4,"method":"tools/call","jsonrpc":"2.0","params":{"name":7,"arguments":null,"_meta":{"progressToken":null,"io.mcpstorm/session":"abc","io.mcpstorm/authorization":{"scheme":"bearer"}}}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"ü","arguments":{"k":"\u00fc"}}}"#.to_owned(),
        ];
        for frame in &frames {
            let (id, params) = read(frame.as_bytes()).unwrap_or_else(|| panic!("not read: {frame}"));
            assert_eq!(Some(quick(id, params)), general(frame), "{frame}");
        }
    }

    #[test]
    fn frames_that_are_not_utf8_go_the_general_way_even_in_skipped_values() {
        let frame = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\",\"_meta\":{\"io.modelcontextprotocol/clientInfo\":{\"name\":\"\xff\"}}}}";
        assert!(read(frame).is_none());
        assert!(read(&frame.map(|b| if b == 0xff { b'x' } else { b })).is_some(), "the same frame in UTF-8 is read");
    }

    #[test]
    fn anything_else_goes_the_general_way() {
        let others = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"a"}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"a"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"a"}}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"a"}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"a"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","extra":1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":null}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"progressToken":1,"progressToken":2}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"},"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}} x"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"n":1e400}}}"#,
        ];
        for frame in others {
            assert!(read(frame.as_bytes()).is_none(), "{frame}");
        }
    }
}
