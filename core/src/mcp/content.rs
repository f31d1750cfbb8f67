//! A tool result's `content` blocks, kept as the JSON text the server wrote until something reads them.
//!
//! A gateway relays nearly every result without reading its blocks: it needs `isError`, `structuredContent` and
//! `_meta`, not the text of a tool's answer. Parsed into values, every block cost a map, its member names and its
//! strings, only to be written out again as the same text. So a result read from text keeps its blocks as text, and
//! writes them out as they came; the values are parsed on first read (a drift check reading an error's text, a
//! degraded result quoting it, a test), once.

use std::fmt;
use std::ops::Deref;
use std::sync::OnceLock;

use serde::de::{self, Deserialize, Deserializer, Unexpected};
use serde::ser::{Serialize, Serializer};
use serde_json::Value;

use crate::jsonrpc::Payload;

/// See the module documentation. Reads as a slice of blocks (`content[0]["text"]`, `content.iter()`).
#[derive(Clone, Default)]
pub struct Content {
    /// The blocks as the server wrote them: `Some` for a result read from text.
    text: Option<Payload>,
    /// The blocks as values: given, or parsed from `text` on first read.
    blocks: OnceLock<Vec<Value>>,
}

impl Content {
    /// The blocks as values. Text that a full parse refuses (the frame decoder checked it is well-formed JSON; a
    /// number out of `f64` range is what is left) reads as no blocks, and is still written out as it came.
    pub fn blocks(&self) -> &[Value] {
        self.blocks.get_or_init(|| self.text.as_ref().and_then(|text| text.parse().ok()).unwrap_or_default())
    }
}

impl From<Vec<Value>> for Content {
    fn from(blocks: Vec<Value>) -> Self {
        Content { text: None, blocks: OnceLock::from(blocks) }
    }
}

impl Deref for Content {
    type Target = [Value];

    fn deref(&self) -> &[Value] {
        self.blocks()
    }
}

/// Block by block as JSON, whichever form either side is in.
impl PartialEq for Content {
    fn eq(&self, other: &Self) -> bool {
        self.blocks() == other.blocks()
    }
}

impl fmt::Debug for Content {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.blocks(), f)
    }
}

/// The server's text when there is one, so a relayed result's blocks go out byte for byte as they came.
impl Serialize for Content {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.text {
            Some(text) => text.serialize(serializer),
            None => self.blocks().serialize(serializer),
        }
    }
}

/// An array, kept as its text; anything else is refused, as a `Vec` refused it.
impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = Payload::deserialize(deserializer)?;
        match text.get().as_bytes().first() {
            Some(b'[') => Ok(Content { text: Some(text), blocks: OnceLock::new() }),
            first => Err(de::Error::invalid_type(kind(first.copied()), &"a sequence")),
        }
    }
}

/// What a value that is not an array is, by its first byte: its text is the server's, and may be long.
fn kind(first: Option<u8>) -> Unexpected<'static> {
    match first {
        Some(b'{') => Unexpected::Map,
        Some(b'n') => Unexpected::Unit,
        Some(b'"') => Unexpected::Other("string"),
        Some(b't' | b'f') => Unexpected::Other("boolean"),
        _ => Unexpected::Other("number"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_goes_out_as_it_came_and_reads_as_values() {
        let text = r#"[{"text":"a b","type":"text"}, {"type":"image","data":"AA=="}]"#;
        let content: Content = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&content).unwrap(), text, "not parsed and written again");
        assert_eq!(content[0]["text"], "a b");
        assert_eq!(content.len(), 2);
        assert_eq!(
            content,
            Content::from(vec![json!({"type": "text", "text": "a b"}), json!({"type": "image", "data": "AA=="})])
        );
        assert_eq!(serde_json::to_value(&content).unwrap()[1]["type"], "image", "into a tree, its parsed value");
        let given = Content::from(vec![json!({"type": "text", "text": "x"})]);
        assert_eq!(serde_json::to_string(&given).unwrap(), r#"[{"text":"x","type":"text"}]"#);
    }

    #[test]
    fn only_an_array_is_taken() {
        for (bad, kind) in [
            ("null", "null"),
            (r#"{"k": "secret"}"#, "map"),
            (r#""secret""#, "string"),
            ("12345", "number"),
            ("true", "boolean"),
        ] {
            let refused = serde_json::from_str::<Content>(bad).unwrap_err().to_string();
            assert!(refused.starts_with(&format!("invalid type: {kind}, expected a sequence")), "{bad}: {refused}");
            assert!(!refused.contains("secret") && !refused.contains("12345"), "the kind, not the text: {refused}");
        }
        assert!(serde_json::from_str::<Content>(" [ ] ").unwrap().is_empty());
        assert!(serde_json::from_value::<Content>(json!([{"type": "text", "text": "v"}])).unwrap()[0]["text"] == "v");
    }

    #[test]
    fn what_only_a_full_parse_refuses_reads_as_no_blocks_and_is_relayed_whole() {
        let content: Content = serde_json::from_str("[1e400]").unwrap();
        assert!(content.is_empty());
        assert_eq!(serde_json::to_string(&content).unwrap(), "[1e400]");
    }
}
