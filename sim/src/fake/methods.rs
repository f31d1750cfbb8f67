//! The requests answered without work: `initialize` and `tools/list` (`ping` is a one-liner in `conn`).

use mcpstorm_core::jsonrpc::{ErrorCode, ErrorObject};
use mcpstorm_core::mcp::{
    Implementation, InitializeResult, LATEST_PROTOCOL_VERSION, ListToolsResult, SUPPORTED_PROTOCOL_VERSIONS,
};
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::server::Shared;

/// Version negotiation as the spec has it: echo the client's version if we speak it, else offer our latest and let
/// the client decide whether to disconnect.
pub fn initialize(shared: &Shared, params: Option<&Value>) -> Result<Value, ErrorObject> {
    let Some(requested) = params.and_then(|p| p.get("protocolVersion")).and_then(Value::as_str) else {
        return Err(invalid_params("initialize needs a string \"protocolVersion\""));
    };
    let version = SUPPORTED_PROTOCOL_VERSIONS.iter().find(|v| **v == requested).copied();
    let result = InitializeResult {
        protocol_version: version.unwrap_or(LATEST_PROTOCOL_VERSION).to_owned(),
        capabilities: json!({"tools": {"listChanged": true}}),
        server_info: Implementation::new(&shared.config.name, &shared.config.version),
        instructions: None,
        extra: Map::new(),
    };
    to_value(&result)
}

/// One page of tools. The cursor is the decimal index of the page's first tool: opaque to clients, trivially
/// checkable here.
pub fn list_tools(shared: &Shared, params: Option<&Value>) -> Result<Value, ErrorObject> {
    let len = shared.listing.len();
    let start = match params.and_then(|p| p.get("cursor")) {
        None | Some(Value::Null) => 0,
        Some(Value::String(s)) => match s.parse::<usize>() {
            Ok(i) if i < len => i,
            _ => return Err(invalid_params(format!("invalid cursor {s:?}"))),
        },
        Some(other) => return Err(invalid_params(format!("cursor must be a string, got {other}"))),
    };
    let end = start.saturating_add(shared.config.page_size.unwrap_or(usize::MAX)).min(len);
    let result = ListToolsResult {
        tools: shared.listing.get(start..end).unwrap_or_default().to_vec(),
        next_cursor: (end < len).then(|| end.to_string()),
        extra: Map::new(),
    };
    to_value(&result)
}

pub fn invalid_params(message: impl Into<String>) -> ErrorObject {
    ErrorObject::new(ErrorCode::INVALID_PARAMS, message)
}

/// Serialising our own result types cannot fail (string keys only); should it, the client gets an internal error
/// rather than a dropped request.
pub fn to_value<T: Serialize>(value: &T) -> Result<Value, ErrorObject> {
    serde_json::to_value(value).map_err(|e| ErrorObject::new(ErrorCode::INTERNAL_ERROR, e.to_string()))
}
