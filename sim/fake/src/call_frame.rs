//! The quick read of the frame a fake server gets most: a plain `tools/call` request.
//!
//! The general decoder builds the whole `params` tree, and a 2026-07-28 request carries its whole envelope there
//! (`clientInfo` and all) on every call, though the server reads five of its keys. This reader takes a frame whose
//! shape it fully knows (exactly `jsonrpc`, `id`, `method`, `params`, with `params` holding only `name`, `arguments`
//! and `_meta`) and gives its id and params typed, with `_meta` cut down to the keys the server reads: the server
//! reads them through [`Params`](crate::params::Params) as it reads the general decoder's tree, and never builds the
//! tree. Anything else it does not recognise (another method, an extra or repeated member, an escaped method name, a
//! bad id, bytes that are not UTF-8) returns `None`, and the frame goes to
//! [`Message::decode`](mcpstorm_core::jsonrpc::Message::decode), so every decision, refusal and error text stays the
//! general path's.

use mcpstorm_core::jsonrpc::RequestId;
use mcpstorm_core::mcp::{META_PROTOCOL_VERSION, method};
use mcpstorm_core::session::{META_AUTHORIZATION, META_CLIENT_CAPABILITIES, META_SESSION};
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// The `_meta` keys the server reads from a `tools/call` (the routing, the envelope check, the gate, the progress
/// token). Every other key of `_meta` is skipped unread. A member that is there is `Some`, `null` included.
#[derive(Debug, Deserialize)]
pub(crate) struct CallMeta {
    #[serde(default, rename = "progressToken", deserialize_with = "present")]
    pub progress_token: Option<Value>,
    #[serde(default, rename = "io.modelcontextprotocol/protocolVersion", deserialize_with = "present")]
    pub protocol_version: Option<Value>,
    #[serde(default, rename = "io.modelcontextprotocol/clientCapabilities", deserialize_with = "present")]
    pub client_capabilities: Option<Value>,
    #[serde(default, rename = "io.mcpstorm/session", deserialize_with = "present")]
    pub session: Option<Value>,
    #[serde(default, rename = "io.mcpstorm/authorization", deserialize_with = "present")]
    pub authorization: Option<Value>,
}

impl CallMeta {
    /// `_meta[key]`, as a lookup in the whole `_meta` object would find it (every key not kept is one the server
    /// never asks for).
    pub fn get(&self, key: &str) -> Option<&Value> {
        match key {
            PROGRESS_TOKEN => self.progress_token.as_ref(),
            META_PROTOCOL_VERSION => self.protocol_version.as_ref(),
            META_CLIENT_CAPABILITIES => self.client_capabilities.as_ref(),
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
pub(crate) struct CallParams {
    #[serde(default, deserialize_with = "present")]
    pub name: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    pub arguments: Option<Value>,
    /// An object, or the frame is not one this reader takes (`null` and other values go the general way).
    #[serde(default, rename = "_meta", deserialize_with = "object")]
    pub meta: Option<CallMeta>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Frame<'a> {
    jsonrpc: &'a str,
    id: Value,
    method: &'a str,
    #[serde(deserialize_with = "map_only")]
    params: CallParams,
}

/// A member that is there, `null` included (serde's `Option` reads `null` as absent, and the server tells them apart).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

fn object<'de, D: Deserializer<'de>>(d: D) -> Result<Option<CallMeta>, D::Error> {
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
/// reads), if it is a plain `tools/call`; `None` otherwise.
pub fn read(frame: &[u8]) -> Option<(RequestId, CallParams)> {
    // Checked whole first, as the general path does: serde_json does not check the UTF-8 of the values it skips.
    // Once checked, strings are read without checking each again.
    let text = std::str::from_utf8(frame).ok()?;
    let mut de = serde_json::Deserializer::from_str(text);
    let frame = Frame::deserialize(&mut de).ok()?;
    de.end().ok()?;
    if frame.jsonrpc != "2.0" || frame.method != method::TOOLS_CALL {
        return None;
    }
    let id = RequestId::deserialize(&frame.id).ok()?;
    Some((id, frame.params))
}

#[cfg(test)]
mod tests {
    use mcpstorm_core::jsonrpc::{Message, Request};
    use serde_json::{Map, json};

    use super::*;

    /// What the general decoder reads, with `_meta` cut to the keys the server reads.
    fn general(frame: &str) -> Option<Request> {
        let Ok(Message::Request(mut r)) = Message::decode(frame.as_bytes()) else { return None };
        if let Some(meta) = r.params.as_mut().and_then(|p| p.get_mut("_meta")).and_then(Value::as_object_mut) {
            let read =
                [PROGRESS_TOKEN, META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES, META_SESSION, META_AUTHORIZATION];
            meta.retain(|k, _| read.contains(&k.as_str()));
        }
        Some(r)
    }

    /// The quick read as the request the general decoder gives.
    fn as_request((id, params): (RequestId, CallParams)) -> Request {
        let mut map = Map::new();
        let put = |map: &mut Map<String, Value>, key: &str, value: Option<Value>| {
            if let Some(value) = value {
                map.insert(key.to_owned(), value);
            }
        };
        put(&mut map, "name", params.name);
        put(&mut map, "arguments", params.arguments);
        if let Some(m) = params.meta {
            let mut kept = Map::new();
            put(&mut kept, PROGRESS_TOKEN, m.progress_token);
            put(&mut kept, META_PROTOCOL_VERSION, m.protocol_version);
            put(&mut kept, META_CLIENT_CAPABILITIES, m.client_capabilities);
            put(&mut kept, META_SESSION, m.session);
            put(&mut kept, META_AUTHORIZATION, m.authorization);
            map.insert("_meta".to_owned(), Value::Object(kept));
        }
        Request { id, method: method::TOOLS_CALL.to_owned(), params: Some(Value::Object(map)) }
    }

    #[test]
    fn the_keys_it_keeps_are_the_ones_the_server_reads() {
        // serde's renames are literals: they must spell the constants the rest of the server uses.
        let keys = [META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES, META_SESSION, META_AUTHORIZATION, PROGRESS_TOKEN];
        let meta: Map<String, Value> = keys.iter().zip(1..).map(|(k, n)| ((*k).to_owned(), json!(n))).collect();
        let m: CallMeta = serde_json::from_value(Value::Object(meta.clone())).unwrap();
        let got = [&m.protocol_version, &m.client_capabilities, &m.session, &m.authorization, &m.progress_token];
        assert_eq!(got.map(Clone::clone), [1, 2, 3, 4, 5].map(|n| Some(json!(n))));
        for key in keys.into_iter().chain(["io.modelcontextprotocol/clientInfo", "other"]) {
            assert_eq!(m.get(key), meta.get(key), "{key}");
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
            let quick = read(frame.as_bytes()).unwrap_or_else(|| panic!("not read: {frame}"));
            assert_eq!(Some(as_request(quick)), general(frame), "{frame}");
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
