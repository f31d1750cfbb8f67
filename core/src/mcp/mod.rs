//! MCP message types (protocol revision 2025-11-25) as serde structs.
//!
//! Every struct keeps unknown fields in `extra`, so a newer server's additions survive and nothing is silently lost.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::jsonrpc::{Payload, RequestId};
pub use content::Content;

pub(crate) mod call_frame;
mod call_result;
mod content;
pub mod logging;

/// The revision we ask for first.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";
/// Revisions we can speak, newest first. A server answering any of these is accepted.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];

/// Modern revisions we speak, newest first.
pub const MODERN_PROTOCOL_VERSIONS: &[&str] = &["2026-07-28"];

/// Request `_meta` key: the protocol version this request speaks. Required on every modern request.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// Whether `params` carries the modern envelope's protocol version (the key alone marks a modern request, as the
/// Python SDK decides: legacy requests never mint the reserved key).
pub fn envelope_version(params: Option<&Value>) -> Option<&Value> {
    params.and_then(|p| p.get("_meta")).and_then(|m| m.get(META_PROTOCOL_VERSION))
}

pub mod method {
    pub const INITIALIZE: &str = "initialize";
    pub const INITIALIZED: &str = "notifications/initialized";
    pub const PING: &str = "ping";
    /// The requests a server makes of its client during a call (2025-11-25), which a gateway relays to the agent.
    pub const ASKED_OF_CLIENTS: [&str; 3] = ["sampling/createMessage", "elicitation/create", "roots/list"];
    pub const TOOLS_LIST: &str = "tools/list";
    pub const TOOLS_CALL: &str = "tools/call";
    pub const CANCELLED: &str = "notifications/cancelled";
    pub const PROGRESS: &str = "notifications/progress";
    pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
    /// 2025-11-25 (2026-07-28 has `subscriptions/listen` instead): resource subscriptions and their updates.
    pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
    pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
    pub const RESOURCES_UPDATED: &str = "notifications/resources/updated";
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Implementation {
    pub name: String,
    pub version: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Implementation {
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation { name: name.into(), version: version.into(), extra: Map::new() }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    pub protocol_version: String,
    pub capabilities: Value,
    pub client_info: Implementation,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    pub protocol_version: String,
    #[serde(default)]
    pub capabilities: Value,
    pub server_info: Implementation,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl InitializeResult {
    /// Whether the server said it will send `notifications/tools/list_changed`.
    pub fn tools_list_changed(&self) -> bool {
        self.capabilities.pointer("/tools/listChanged").and_then(Value::as_bool).unwrap_or(false)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub input_schema: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Tool {
    /// A tool with a name and an input schema, and nothing else.
    pub fn new(name: impl Into<String>, input_schema: Value) -> Self {
        Tool {
            name: name.into(),
            title: None,
            description: None,
            input_schema,
            output_schema: None,
            annotations: None,
            extra: Map::new(),
        }
    }

    /// A boolean annotation hint such as `readOnlyHint` or `idempotentHint` (absent means false).
    pub fn hint(&self, name: &str) -> bool {
        self.annotations.as_ref().and_then(|a| a.get(name)).and_then(Value::as_bool).unwrap_or(false)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    pub tools: Vec<Tool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// (De)serialised by hand (`call_result.rs`): the derive's `flatten` buffered every member before reading any, and
/// `_meta` is kept as text.
#[derive(Debug, Clone, PartialEq)]
pub struct CallToolResult {
    /// The blocks, as the server wrote them when read from text (see [`Content`]).
    pub content: Content,
    pub structured_content: Option<Value>,
    pub is_error: bool,
    /// `_meta`, as the JSON text the server sent: nearly every modern result carries one, holding only the server's
    /// stamp that drift detection reads one string of, so it is parsed (with [`Payload::to_value`]) only when read.
    /// Serialised as its parsed value, so the result writes the same bytes as when it was a member of `extra`.
    pub meta: Option<Payload>,
    /// Every other member. A `_meta` here is written only when `meta` is `None`.
    pub extra: Map<String, Value>,
}

impl CallToolResult {
    /// A result carrying one text block.
    pub fn text(text: impl Into<String>, is_error: bool) -> Self {
        CallToolResult {
            content: vec![serde_json::json!({"type": "text", "text": text.into()})].into(),
            structured_content: None,
            is_error,
            meta: None,
            extra: Map::new(),
        }
    }

    /// The text blocks joined by newlines (non-text content is skipped).
    pub fn joined_text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter(|c| c.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|c| c.get("text").and_then(Value::as_str))
            .collect();
        texts.join("\n")
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressParams {
    pub progress_token: Value,
    pub progress: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledParams {
    pub request_id: RequestId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The behaviour hints of MCP's `ToolAnnotations`, as the server sent them (`None` when absent or not a boolean).
/// The accessors apply the spec's defaults. Hints are untrusted: they steer retries and routing, never security.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolAnnotations {
    pub title: Option<String>,
    pub read_only_hint: Option<bool>,
    pub destructive_hint: Option<bool>,
    pub idempotent_hint: Option<bool>,
    pub open_world_hint: Option<bool>,
}

impl ToolAnnotations {
    pub fn from_value(annotations: Option<&Value>) -> Self {
        let flag = |name: &str| annotations.and_then(|a| a.get(name)).and_then(Value::as_bool);
        ToolAnnotations {
            title: annotations.and_then(|a| a.get("title")).and_then(Value::as_str).map(str::to_owned),
            read_only_hint: flag("readOnlyHint"),
            destructive_hint: flag("destructiveHint"),
            idempotent_hint: flag("idempotentHint"),
            open_world_hint: flag("openWorldHint"),
        }
    }

    /// Does not modify its environment (default false).
    pub fn read_only(&self) -> bool {
        self.read_only_hint.unwrap_or(false)
    }

    /// May perform destructive updates (default true; meaningless, so false, for a read-only tool).
    pub fn destructive(&self) -> bool {
        !self.read_only() && self.destructive_hint.unwrap_or(true)
    }

    /// Repeating a call with the same arguments has no further effect (default false; true for a read-only tool).
    pub fn idempotent(&self) -> bool {
        self.read_only() || self.idempotent_hint.unwrap_or(false)
    }

    /// Interacts with an open world of external entities (default true).
    pub fn open_world(&self) -> bool {
        self.open_world_hint.unwrap_or(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_keeps_unknown_fields_and_reads_hints() {
        let raw = json!({"name": "t", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true},
                         "_meta": {"latency_p95_ms": 850}, "icons": []});
        let tool: Tool = serde_json::from_value(raw.clone()).unwrap();
        assert!(tool.hint("readOnlyHint") && !tool.hint("idempotentHint"));
        assert_eq!(serde_json::to_value(&tool).unwrap(), raw);
    }

    #[test]
    fn call_result_text_and_default_is_error() {
        let r: CallToolResult = serde_json::from_value(json!({"content": [{"type": "text", "text": "a"},
            {"type": "image", "data": "", "mimeType": "image/png"}, {"type": "text", "text": "b"}]}))
        .unwrap();
        assert!(!r.is_error);
        assert_eq!(r.joined_text(), "a\nb");
    }

    #[test]
    fn annotations_apply_the_spec_defaults() {
        let none = ToolAnnotations::from_value(None);
        assert!(!none.read_only() && none.destructive() && !none.idempotent() && none.open_world());
        let ro =
            ToolAnnotations::from_value(Some(&json!({"readOnlyHint": true, "destructiveHint": true, "title": "T"})));
        assert!(ro.read_only() && !ro.destructive() && ro.idempotent());
        assert_eq!(ro.title.as_deref(), Some("T"));
        let odd = ToolAnnotations::from_value(Some(&json!({"idempotentHint": "yes", "openWorldHint": false})));
        assert_eq!((odd.idempotent_hint, odd.open_world()), (None, false));
    }
}
