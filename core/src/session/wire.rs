//! The 2026-07-28 lifecycle on the wire: `server/discover`, the per-request `_meta` envelope, and the data of the
//! era errors. Field names and shapes follow the Python SDK 2.3.0 (`mcp_types._v2026_07_28`) and the spec.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::jsonrpc::ErrorObject;
use crate::mcp::Implementation;
pub use crate::mcp::{META_PROTOCOL_VERSION, envelope_version};

/// The modern discovery request. Servers of the 2026-07-28 era MUST implement it.
pub const DISCOVER: &str = "server/discover";
pub use crate::mcp::MODERN_PROTOCOL_VERSIONS;

/// Request `_meta` key: the client's capabilities for this request. Required (`{}` declares none).
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// Request `_meta` key: the client's name and version. Optional (SHOULD).
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// Request `_meta` key: the log level the client wants for this request (absent: no log notifications).
pub const META_LOG_LEVEL: &str = crate::mcp::logging::META_LOG_LEVEL;
/// Result `_meta` key: the server's name and version, stamped on every modern result (SHOULD).
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// The per-request envelope of a modern request at `version`.
pub fn envelope(version: &str, capabilities: &Value, client_info: &Implementation) -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert(META_PROTOCOL_VERSION.to_owned(), json!(version));
    meta.insert(META_CLIENT_CAPABILITIES.to_owned(), capabilities.clone());
    if let Ok(info) = serde_json::to_value(client_info) {
        meta.insert(META_CLIENT_INFO.to_owned(), info);
    }
    meta
}

/// The result of `server/discover`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    pub supported_versions: Vec<String>,
    #[serde(default)]
    pub capabilities: Value,
    /// How long (ms) the result may be considered fresh; 0 = immediately stale. Required by the spec, tolerated
    /// when absent (0).
    #[serde(default)]
    pub ttl_ms: u64,
    /// `"private"` or `"public"` (absent: treat as `"private"`, the stricter reading).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<String>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl DiscoverResult {
    /// The server's self-description from `_meta`, if it gave a well-formed one (display only, per the spec).
    pub fn server_info(&self) -> Option<Implementation> {
        let raw = self.meta.as_ref()?.get(META_SERVER_INFO)?;
        serde_json::from_value(raw.clone()).ok()
    }

    /// The newest of `ours` (newest first) that the server supports.
    pub fn pick_version<'a>(&self, ours: &'a [String]) -> Option<&'a String> {
        ours.iter().find(|v| self.supported_versions.contains(v))
    }
}

/// The `data` of a -32022 unsupported-protocol-version error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnsupportedVersion {
    pub supported: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested: Option<String>,
}

impl UnsupportedVersion {
    /// The typed data of `error`, if it is a -32022 with a readable `supported` list.
    pub fn from_error(error: &ErrorObject) -> Option<Self> {
        if error.code() != crate::jsonrpc::ErrorCode::UNSUPPORTED_PROTOCOL_VERSION {
            return None;
        }
        serde_json::from_value(error.data.clone()?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::ErrorCode;

    /// Verbatim from the Python SDK 2.3.0 server (tests/peers/py_server.py) over stdio.
    const PY_DISCOVER: &str = r#"{"cacheScope":"private","capabilities":{"prompts":{"listChanged":true},
        "resources":{"listChanged":true,"subscribe":true},"tools":{"listChanged":true}},"resultType":"complete",
        "supportedVersions":["2026-07-28"],"ttlMs":0,
        "_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcpstorm-py-peer","version":""}}}"#;

    #[test]
    fn python_sdk_discover_result_parses_and_round_trips() {
        let raw: Value = serde_json::from_str(PY_DISCOVER).unwrap();
        let d: DiscoverResult = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(d.supported_versions, ["2026-07-28"]);
        assert_eq!(
            (d.ttl_ms, d.cache_scope.as_deref(), d.result_type.as_deref()),
            (0, Some("private"), Some("complete"))
        );
        assert_eq!(d.server_info(), Some(Implementation::new("mcpstorm-py-peer", "")));
        assert!(d.capabilities.pointer("/tools/listChanged").is_some());
        assert_eq!(serde_json::to_value(&d).unwrap(), raw, "nothing lost");
        let ours: Vec<String> = vec!["2027-01-01".into(), "2026-07-28".into()];
        assert_eq!(d.pick_version(&ours).map(String::as_str), Some("2026-07-28"));
        assert_eq!(d.pick_version(&ours[..1]), None);
    }

    #[test]
    fn unsupported_version_data_is_read_only_from_minus_32022() {
        let mut e = ErrorObject::new(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version");
        e.data = Some(json!({"supported": ["2026-07-28"], "requested": "2099-01-01"}));
        let data = UnsupportedVersion::from_error(&e).unwrap();
        assert_eq!((data.supported, data.requested.as_deref()), (vec!["2026-07-28".to_owned()], Some("2099-01-01")));
        e.code = ErrorCode::INVALID_PARAMS.0;
        assert_eq!(UnsupportedVersion::from_error(&e), None);
        let bare = ErrorObject::new(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, "no data");
        assert_eq!(UnsupportedVersion::from_error(&bare), None);
    }

    #[test]
    fn envelope_has_the_required_pair_and_client_info() {
        let meta = envelope("2026-07-28", &json!({}), &Implementation::new("c", "1"));
        assert_eq!(
            Value::Object(meta.clone()),
            json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                   "io.modelcontextprotocol/clientCapabilities": {},
                   "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"}})
        );
        let params = json!({"_meta": meta});
        assert_eq!(envelope_version(Some(&params)), Some(&json!("2026-07-28")));
        assert_eq!(envelope_version(Some(&json!({"_meta": {"progressToken": 1}}))), None);
        assert_eq!(envelope_version(None), None);
    }
}
