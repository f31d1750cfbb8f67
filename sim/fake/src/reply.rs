//! A request's successful result on its way to the wire.
//!
//! Nearly every answer is a `tools/call` result holding one text block, so that one is kept as its text and written
//! straight into JSON text, modern stamps included: building it as a `Value` tree, stamping the tree and serialising
//! it cost more than the rest of the answer. Every other result is a `Value`, stamped by [`methods::stamp_modern`].
//! Both paths write the same bytes (keys in `Value`'s sorted order), which the tests below hold them to.

use mcpstorm_core::jsonrpc::Payload;
use mcpstorm_core::mcp::CallToolResult;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::methods;
use crate::shared::Shared;

/// A result to send.
#[derive(Debug)]
pub enum Reply {
    /// Any result, as a JSON value.
    Value(Value),
    /// A `tools/call` result of one text block (FastMCP's `{"result": text}` as its structured content too, when
    /// `structured`).
    Text { text: String, is_error: bool, structured: bool },
}

impl Reply {
    /// The plain text result of a call (`isError` when it failed as a tool error).
    pub fn text(text: String, is_error: bool) -> Reply {
        Reply::Text { text, is_error, structured: false }
    }

    /// The result's JSON text. `modern` is `Some(cacheable)` for a modern-era request: the result then carries
    /// `resultType` and the `serverInfo` stamp (see [`methods::stamp_modern`]).
    pub fn into_payload(self, shared: &Shared, modern: Option<bool>) -> Payload {
        match self {
            // A call's result is never cacheable; should one be, the general path knows the cache stamps.
            Reply::Text { text, is_error, structured } if modern != Some(true) => {
                let catalog = modern.is_some().then(|| shared.catalog());
                let wire = TextWire {
                    meta: catalog.as_deref().map(|c| &*c.stamp),
                    content: [TextBlockWire { text: &text, kind: "text" }],
                    is_error,
                    result_type: modern.map(|_| "complete"),
                    structured_content: structured.then_some(StructuredWire { result: &text }),
                };
                // Plain strings and booleans: serialising cannot fail; should it, the general path still answers.
                Payload::serialize(&wire)
                    .unwrap_or_else(|_| Reply::general(to_value(text, is_error, structured), shared, modern))
            }
            Reply::Text { text, is_error, structured } => {
                Reply::general(to_value(text, is_error, structured), shared, modern)
            }
            Reply::Value(value) => Reply::general(value, shared, modern),
        }
    }

    fn general(mut value: Value, shared: &Shared, modern: Option<bool>) -> Payload {
        if let Some(cacheable) = modern {
            methods::stamp_modern(shared, &mut value, cacheable);
        }
        Payload::from(value)
    }
}

/// The text result as the general path builds it.
fn to_value(text: String, is_error: bool, structured: bool) -> Value {
    let structured_content = structured.then(|| json!({"result": text}));
    let result = CallToolResult { structured_content, ..CallToolResult::text(text, is_error) };
    methods::to_value(&result).unwrap_or(Value::Null)
}

/// A text result's wire form. Fields in the order a `Value` map (sorted keys) writes them, so both paths agree byte
/// for byte.
#[derive(Serialize)]
struct TextWire<'a> {
    /// The catalog's stamp, written as it is.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<&'a RawValue>,
    content: [TextBlockWire<'a>; 1],
    #[serde(rename = "isError", skip_serializing_if = "std::ops::Not::not")]
    is_error: bool,
    #[serde(rename = "resultType", skip_serializing_if = "Option::is_none")]
    result_type: Option<&'static str>,
    #[serde(rename = "structuredContent", skip_serializing_if = "Option::is_none")]
    structured_content: Option<StructuredWire<'a>>,
}

#[derive(Serialize)]
struct TextBlockWire<'a> {
    text: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Serialize)]
struct StructuredWire<'a> {
    result: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use mcpstorm_core::TokioClock;

    use crate::config::FakeServerConfig;

    #[test]
    fn text_results_are_written_as_the_general_path_writes_them() {
        let mut config = FakeServerConfig::named("srv \"q\"");
        config.version = "2.0-β".into();
        let shared = Shared::new(config, Arc::new(TokioClock::new(0)));
        for text in ["ok", "", "quote \" backslash \\ newline \n tab \t ü \u{1}"] {
            for (is_error, structured) in [(false, false), (true, false), (false, true), (true, true)] {
                for modern in [None, Some(false), Some(true)] {
                    let reply = Reply::Text { text: text.to_owned(), is_error, structured };
                    let general = Reply::general(to_value(text.to_owned(), is_error, structured), &shared, modern);
                    let fast = reply.into_payload(&shared, modern);
                    assert_eq!(fast.get(), general.get(), "{text:?} {is_error} {structured} {modern:?}");
                }
            }
        }
    }

    #[test]
    fn stamps_go_on_modern_results_only() {
        let shared = Shared::new(FakeServerConfig::named("s"), Arc::new(TokioClock::new(0)));
        let legacy = Reply::text("hi".into(), false).into_payload(&shared, None);
        assert_eq!(legacy.get(), r#"{"content":[{"text":"hi","type":"text"}]}"#);
        let modern = Reply::text("hi".into(), true).into_payload(&shared, Some(false));
        let expected = r#"{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"0.0.0"}},"content":[{"text":"hi","type":"text"}],"isError":true,"resultType":"complete"}"#;
        assert_eq!(modern.get(), expected);
        let cached = Reply::Value(json!({"ttlMs": 5})).into_payload(&shared, Some(true)).to_value().unwrap();
        assert_eq!(cached["ttlMs"], 5);
        assert_eq!(cached["cacheScope"], "private");
    }
}
