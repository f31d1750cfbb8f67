//! [`CallToolResult`]'s `Deserialize` and `Serialize`, by hand: it is parsed once per call, and the derive's
//! `#[serde(flatten)]` (for `extra`) made serde buffer the whole object into its private content tree before reading
//! a single field. This reads each member once, straight into its field, and `content` and `_meta` only as far as
//! checking their text (into [`Content`] and [`CallToolResult::meta`]). It accepts exactly what the derive accepted:
//! an object only, `content` and `isError` absent or of their types, `structuredContent` anything (`null` is `None`),
//! a known member at most once, every other member into `extra` or `meta` (the last of a repeated one wins). It writes
//! `extra`'s members in their (sorted) order with `_meta` in its place, as the derive did when `_meta` was a member of
//! `extra`; `content` and `_meta` as the server wrote them into text (a proxy relays them untouched), and as their
//! parsed values into a `Value`.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use super::{CallToolResult, Content};
use crate::jsonrpc::Payload;
use crate::jsonrpc::member::{Member, MemberName};

const META: &str = "_meta";

impl<'de> Deserialize<'de> for CallToolResult {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ResultVisitor)
    }
}

enum Field {
    Content,
    StructuredContent,
    IsError,
    Meta,
    Other(String),
}

impl MemberName for Field {
    fn classify(name: &str) -> Field {
        match name {
            "content" => Field::Content,
            "structuredContent" => Field::StructuredContent,
            "isError" => Field::IsError,
            META => Field::Meta,
            other => Field::Other(other.to_owned()),
        }
    }
}

struct ResultVisitor;

/// Fills `slot` from the next value, refusing a second occurrence as the derive did.
fn once<'de, A: MapAccess<'de>, T: Deserialize<'de>>(
    map: &mut A,
    slot: &mut Option<T>,
    name: &'static str,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(de::Error::duplicate_field(name));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

impl<'de> Visitor<'de> for ResultVisitor {
    type Value = CallToolResult;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("struct CallToolResult")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CallToolResult, A::Error> {
        let mut content: Option<Content> = None;
        let mut structured_content: Option<Option<Value>> = None;
        let mut is_error: Option<bool> = None;
        let mut meta: Option<Payload> = None;
        let mut extra = Map::new();
        while let Some(Member(field)) = map.next_key::<Member<Field>>()? {
            match field {
                Field::Content => once(&mut map, &mut content, "content")?,
                Field::StructuredContent => once(&mut map, &mut structured_content, "structuredContent")?,
                Field::IsError => once(&mut map, &mut is_error, "isError")?,
                Field::Meta => meta = Some(map.next_value()?),
                Field::Other(name) => {
                    extra.insert(name, map.next_value()?);
                }
            }
        }
        Ok(CallToolResult {
            content: content.unwrap_or_default(),
            structured_content: structured_content.flatten(),
            is_error: is_error.unwrap_or_default(),
            meta,
            extra,
        })
    }
}

impl Serialize for CallToolResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("content", &self.content)?;
        if let Some(structured) = &self.structured_content {
            map.serialize_entry("structuredContent", structured)?;
        }
        if self.is_error {
            map.serialize_entry("isError", &true)?;
        }
        let Some(meta) = &self.meta else {
            for (name, value) in &self.extra {
                map.serialize_entry(name, value)?;
            }
            return map.end();
        };
        let mut meta = Some(meta);
        for (name, value) in &self.extra {
            if name.as_str() >= META
                && let Some(meta) = meta.take()
            {
                map.serialize_entry(META, &meta)?;
            }
            if name != META {
                map.serialize_entry(name, value)?;
            }
        }
        if let Some(meta) = meta {
            map.serialize_entry(META, &meta)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_the_fields_and_keeps_the_rest() {
        let text = r#"{"content":[{"type":"text","text":"a"}],"isError":true,"structuredContent":{"n":1},
            "_meta":{"k":"v"},"resultType":"complete","resultType":"last"}"#;
        let r: CallToolResult = serde_json::from_str(text).unwrap();
        assert_eq!(*r.content, [json!({"type": "text", "text": "a"})]);
        assert_eq!((r.is_error, &r.structured_content), (true, &Some(json!({"n": 1}))));
        assert_eq!(r.meta.as_ref().map(Payload::get), Some(r#"{"k":"v"}"#));
        assert_eq!(Value::Object(r.extra), json!({"resultType": "last"}));
        let empty: CallToolResult = serde_json::from_str(r#"{"structuredContent":null}"#).unwrap();
        assert_eq!(
            empty,
            CallToolResult {
                content: Content::default(),
                structured_content: None,
                is_error: false,
                meta: None,
                extra: Map::new()
            }
        );
        let twice: CallToolResult = serde_json::from_str(r#"{"_meta":1,"_meta":{"b":2}}"#).unwrap();
        assert_eq!(twice.meta.unwrap().to_value().unwrap(), json!({"b": 2}));
    }

    #[test]
    fn writes_meta_in_its_sorted_place_as_the_server_wrote_it() {
        // `Z` and `$` sort before `_meta`, lowercase after; `_meta`'s text is written as it came.
        let text = r#"{"isError":true,"zeta":1,"Zeta":2,"$x":3,"_meta":{ "b": 1, "a": [1.0] },"content":[]}"#;
        let r: CallToolResult = serde_json::from_str(text).unwrap();
        let expected = r#"{"content":[],"isError":true,"$x":3,"Zeta":2,"_meta":{ "b": 1, "a": [1.0] },"zeta":1}"#;
        assert_eq!(serde_json::to_string(&r).unwrap(), expected);
        let as_member = CallToolResult { meta: None, ..r.clone() };
        let mut as_member = as_member;
        as_member.extra.insert(META.into(), json!({"a": [1.0], "b": 1}));
        let compact = r#"{"content":[],"isError":true,"$x":3,"Zeta":2,"_meta":{"a":[1.0],"b":1},"zeta":1}"#;
        assert_eq!(serde_json::to_string(&as_member).unwrap(), compact, "as the derive wrote a member of extra");
        // Into a tree, `_meta` is its parsed value.
        assert_eq!(serde_json::to_value(&r).unwrap(), serde_json::from_str::<Value>(compact).unwrap());
        let last = CallToolResult { extra: Map::new(), ..r };
        assert_eq!(
            serde_json::to_string(&last).unwrap(),
            r#"{"content":[],"isError":true,"_meta":{ "b": 1, "a": [1.0] }}"#
        );
    }

    #[test]
    fn refuses_what_the_derive_refused() {
        for bad in [
            r#"[]"#,
            r#"{"content":null}"#,
            r#"{"content":{}}"#,
            r#"{"isError":"yes"}"#,
            r#"{"content":[],"content":[]}"#,
            r#"{"isError":false,"isError":false}"#,
        ] {
            assert!(serde_json::from_str::<CallToolResult>(bad).is_err(), "{bad}");
        }
        let dup = serde_json::from_str::<CallToolResult>(r#"{"content":[],"content":[]}"#).unwrap_err();
        assert!(dup.to_string().starts_with("duplicate field `content`"), "{dup}");
    }
}
