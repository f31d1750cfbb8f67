//! [`CallToolResult`]'s `Deserialize`, by hand: it is parsed once per call, and the derive's `#[serde(flatten)]`
//! (for `extra`) made serde buffer the whole object into its private content tree before reading a single field.
//! This reads each member once, straight into its field. It accepts exactly what the derive accepted: an object
//! only, `content` and `isError` absent or of their types, `structuredContent` anything (`null` is `None`), a known
//! member at most once, every other member into `extra` (the last of a repeated one wins).

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::CallToolResult;
use crate::jsonrpc::member::{Member, MemberName};

impl<'de> Deserialize<'de> for CallToolResult {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ResultVisitor)
    }
}

enum Field {
    Content,
    StructuredContent,
    IsError,
    Other(String),
}

impl MemberName for Field {
    fn classify(name: &str) -> Field {
        match name {
            "content" => Field::Content,
            "structuredContent" => Field::StructuredContent,
            "isError" => Field::IsError,
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
        let mut content: Option<Vec<Value>> = None;
        let mut structured_content: Option<Option<Value>> = None;
        let mut is_error: Option<bool> = None;
        let mut extra = Map::new();
        while let Some(Member(field)) = map.next_key::<Member<Field>>()? {
            match field {
                Field::Content => once(&mut map, &mut content, "content")?,
                Field::StructuredContent => once(&mut map, &mut structured_content, "structuredContent")?,
                Field::IsError => once(&mut map, &mut is_error, "isError")?,
                Field::Other(name) => {
                    extra.insert(name, map.next_value()?);
                }
            }
        }
        Ok(CallToolResult {
            content: content.unwrap_or_default(),
            structured_content: structured_content.flatten(),
            is_error: is_error.unwrap_or_default(),
            extra,
        })
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
        assert_eq!(r.content, vec![json!({"type": "text", "text": "a"})]);
        assert_eq!((r.is_error, r.structured_content), (true, Some(json!({"n": 1}))));
        assert_eq!(Value::Object(r.extra), json!({"_meta": {"k": "v"}, "resultType": "last"}));
        let empty: CallToolResult = serde_json::from_str(r#"{"structuredContent":null}"#).unwrap();
        assert_eq!(
            empty,
            CallToolResult { content: vec![], structured_content: None, is_error: false, extra: Map::new() }
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
