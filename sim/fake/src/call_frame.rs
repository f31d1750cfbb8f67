//! The quick read of the frame a fake server gets most: a plain `tools/call` request.
//!
//! The general decoder builds the whole `params` tree, and a 2026-07-28 request carries its whole envelope there
//! (`clientInfo` and all) on every call, though the server reads five of its keys. This reader takes a frame whose
//! shape it fully knows (exactly `jsonrpc`, `id`, `method`, `params`, with `params` holding only `name`, `arguments`
//! and `_meta`) and gives the same [`Request`], with `_meta` cut down to the keys the server reads. Anything else it
//! does not recognise (another method, an extra or repeated member, an escaped method name, a bad id) returns `None`,
//! and the frame goes to [`Message::decode`](mcpstorm_core::jsonrpc::Message::decode), so every decision, refusal
//! and error text stays the general path's.

use mcpstorm_core::jsonrpc::{Request, RequestId};
use mcpstorm_core::mcp::{META_PROTOCOL_VERSION, method};
use mcpstorm_core::session::{META_AUTHORIZATION, META_CLIENT_CAPABILITIES, META_SESSION};
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// The `_meta` keys the server reads from a `tools/call` (the routing, the envelope check, the gate, the progress
/// token). Every other key of `_meta` is skipped unread.
#[derive(Deserialize)]
struct Meta {
    #[serde(default, rename = "progressToken", deserialize_with = "present")]
    progress_token: Option<Value>,
    #[serde(default, rename = "io.modelcontextprotocol/protocolVersion", deserialize_with = "present")]
    protocol_version: Option<Value>,
    #[serde(default, rename = "io.modelcontextprotocol/clientCapabilities", deserialize_with = "present")]
    client_capabilities: Option<Value>,
    #[serde(default, rename = "io.mcpstorm/session", deserialize_with = "present")]
    session: Option<Value>,
    #[serde(default, rename = "io.mcpstorm/authorization", deserialize_with = "present")]
    authorization: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    #[serde(default, deserialize_with = "present")]
    name: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    arguments: Option<Value>,
    /// An object, or the frame is not one this reader takes (`null` and other values go the general way).
    #[serde(default, rename = "_meta", deserialize_with = "object")]
    meta: Option<Meta>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Frame<'a> {
    jsonrpc: &'a str,
    id: Value,
    method: &'a str,
    #[serde(deserialize_with = "map_only")]
    params: Params,
}

/// A member that is there, `null` included (serde's `Option` reads `null` as absent, and the server tells them apart).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

fn object<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Meta>, D::Error> {
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

/// `frame` as the general decoder would read it, if it is a plain `tools/call`; `None` otherwise.
pub fn read(frame: &[u8]) -> Option<Request> {
    let mut de = serde_json::Deserializer::from_slice(frame);
    let frame = Frame::deserialize(&mut de).ok()?;
    de.end().ok()?;
    if frame.jsonrpc != "2.0" || frame.method != method::TOOLS_CALL {
        return None;
    }
    let id = RequestId::deserialize(&frame.id).ok()?;
    let Params { name, arguments, meta } = frame.params;
    let mut params = Map::new();
    let put = |map: &mut Map<String, Value>, key: &str, value: Option<Value>| {
        if let Some(value) = value {
            map.insert(key.to_owned(), value);
        }
    };
    put(&mut params, "name", name);
    put(&mut params, "arguments", arguments);
    if let Some(m) = meta {
        let mut kept = Map::new();
        put(&mut kept, "progressToken", m.progress_token);
        put(&mut kept, META_PROTOCOL_VERSION, m.protocol_version);
        put(&mut kept, META_CLIENT_CAPABILITIES, m.client_capabilities);
        put(&mut kept, META_SESSION, m.session);
        put(&mut kept, META_AUTHORIZATION, m.authorization);
        params.insert("_meta".to_owned(), Value::Object(kept));
    }
    Some(Request { id, method: method::TOOLS_CALL.to_owned(), params: Some(Value::Object(params)) })
}

#[cfg(test)]
mod tests {
    use mcpstorm_core::jsonrpc::Message;
    use serde_json::json;

    use super::*;

    /// What the general decoder reads, with `_meta` cut to the keys the server reads.
    fn general(frame: &str) -> Option<Request> {
        let Ok(Message::Request(mut r)) = Message::decode(frame.as_bytes()) else { return None };
        if let Some(meta) = r.params.as_mut().and_then(|p| p.get_mut("_meta")).and_then(Value::as_object_mut) {
            let read =
                ["progressToken", META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES, META_SESSION, META_AUTHORIZATION];
            meta.retain(|k, _| read.contains(&k.as_str()));
        }
        Some(r)
    }

    #[test]
    fn the_keys_it_keeps_are_the_ones_the_server_reads() {
        // serde's renames are literals: they must spell the constants the rest of the server uses.
        let m: Meta = serde_json::from_value(json!({
            META_PROTOCOL_VERSION: 1, META_CLIENT_CAPABILITIES: 2, META_SESSION: 3, META_AUTHORIZATION: 4,
            "progressToken": 5
        }))
        .unwrap();
        let got = [m.protocol_version, m.client_capabilities, m.session, m.authorization, m.progress_token];
        assert_eq!(got, [1, 2, 3, 4, 5].map(|n| Some(json!(n))));
    }

    #[test]
    fn plain_calls_read_as_the_general_decoder_reads_them() {
        let envelope = r#""io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28""#;
        let frames = [
            format!(r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"_meta":{{{envelope},"progressToken":3}},"arguments":{{"q":"a\"b"}},"name":"query"}}}}"#),
            r#"{"jsonrpc":"2.0","id":"s-1","method":"tools/call","params":{"name":"echo"}}"#.to_owned(),
            r#"{"id":4,"method":"tools/call","jsonrpc":"2.0","params":{"name":7,"arguments":null,"_meta":{"progressToken":null,"io.mcpstorm/session":"abc","io.mcpstorm/authorization":{"scheme":"bearer"}}}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{}}"#.to_owned(),
        ];
        for frame in &frames {
            let quick = read(frame.as_bytes()).unwrap_or_else(|| panic!("not read: {frame}"));
            assert_eq!(Some(quick), general(frame), "{frame}");
        }
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
