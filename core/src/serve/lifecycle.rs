//! The lifecycle requests the front answers itself, in both eras: `initialize` (2025-11-25, version negotiation),
//! `ping`, `server/discover` and the per-request `_meta` envelope (2026-07-28), and the stamps every modern result
//! carries. Answers follow the Python SDK 2.3.0 server's, as the fake servers' do.

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::service::ServerDescription;
use crate::jsonrpc::{ErrorCode, ErrorObject, Payload};
use crate::mcp::{
    CallToolResult, Implementation, InitializeResult, LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS,
};
use crate::session::{DISCOVER, META_PROTOCOL_VERSION, envelope_version};
use crate::session::{META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_SERVER_INFO, MODERN_PROTOCOL_VERSIONS};

/// What `initialize` settled: the result to send and what the session id will carry.
#[derive(Debug)]
pub(crate) struct Initialized {
    pub result: Value,
    pub version: String,
    pub client_info: Option<Implementation>,
    pub client_capabilities: Value,
}

/// Version negotiation as the spec has it: echo the client's version if we speak it, else offer our latest and let
/// the client decide whether to disconnect.
pub(crate) fn initialize(desc: &ServerDescription, params: Option<&Value>) -> Result<Initialized, ErrorObject> {
    let Some(requested) = params.and_then(|p| p.get("protocolVersion")).and_then(Value::as_str) else {
        return Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, "initialize needs a string \"protocolVersion\""));
    };
    let version = SUPPORTED_PROTOCOL_VERSIONS.iter().find(|v| **v == requested).copied();
    let version = version.unwrap_or(LATEST_PROTOCOL_VERSION).to_owned();
    let result = InitializeResult {
        protocol_version: version.clone(),
        capabilities: desc.capabilities.clone(),
        server_info: desc.server_info.clone(),
        instructions: desc.instructions.clone(),
        extra: Map::new(),
    };
    let result =
        serde_json::to_value(&result).map_err(|e| ErrorObject::new(ErrorCode::INTERNAL_ERROR, e.to_string()))?;
    let client_info = params.and_then(|p| p.get("clientInfo")).and_then(|v| serde_json::from_value(v.clone()).ok());
    let client_capabilities = params.and_then(|p| p.get("capabilities")).cloned().unwrap_or_else(|| json!({}));
    Ok(Initialized { result, version, client_info, client_capabilities })
}

/// `server/discover`: the versions we serve and the service's description.
pub(crate) fn discover(desc: &ServerDescription) -> Value {
    let mut result = json!({
        "supportedVersions": MODERN_PROTOCOL_VERSIONS,
        "capabilities": desc.capabilities,
        "ttlMs": 0,
        "cacheScope": "private",
    });
    if let Some(instructions) = &desc.instructions {
        result["instructions"] = json!(instructions);
    }
    stamp_modern(&mut result, DISCOVER, &serde_json::to_value(&desc.server_info).unwrap_or_default());
    result
}

/// The 2026-07-28 results a client may cache, which must say for how long (`ttlMs`) and for whom (`cacheScope`):
/// the Python SDK's client refuses a listing without them.
const CACHEABLE: &[&str] = &["tools/list", "prompts/list", "resources/list", "resources/templates/list"];

/// What every modern result carries: `resultType` and the `serverInfo` stamp in `_meta`; a cacheable one (see
/// [`CACHEABLE`]) also `ttlMs` (0: immediately stale) and `cacheScope` (`private`). Keys already present are kept
/// (a service may set its own; a result relayed from upstream keeps its own).
pub(crate) fn stamp_modern(result: &mut Value, method: &str, info: &Value) {
    let Some(obj) = result.as_object_mut() else {
        return;
    };
    // `contains_key` before each insert: `Map::entry` would make its key's `String` even when the member is there,
    // as a relayed 2026-07-28 result's members are.
    let mut absent = |key: &str, value: fn() -> Value| {
        if !obj.contains_key(key) {
            obj.insert(key.to_owned(), value());
        }
    };
    if CACHEABLE.contains(&method) {
        absent("ttlMs", || json!(0));
        absent("cacheScope", || json!("private"));
    }
    absent("resultType", || json!("complete"));
    absent("_meta", || json!({}));
    if let Some(meta) = obj.get_mut("_meta").and_then(Value::as_object_mut)
        && !meta.contains_key(META_SERVER_INFO)
    {
        meta.insert(META_SERVER_INFO.to_owned(), info.clone());
    }
}

/// [`stamp_modern`] for a result the service wrote as text: the text itself when it already has every stamp (a
/// result relayed from a 2026-07-28 server does), else parsed, stamped and written again.
pub(crate) fn stamp_modern_text(result: Payload, method: &str, info: &Value) -> Payload {
    if stamped(result.get(), method) {
        return result;
    }
    let Ok(mut value) = result.to_value() else { return result };
    stamp_modern(&mut value, method, info);
    Payload::from_value(&value)
}

/// Whether a `tools/call` result, as its typed form holds it, has every stamp [`stamp_modern`] would add: a
/// `resultType` and a `_meta` holding the server's stamp (a call is not cacheable). A service that knows so answers
/// with [`ServiceAnswer::Stamped`](super::ServiceAnswer::Stamped), whose text the front then writes unread.
pub fn call_result_stamped(result: &CallToolResult) -> bool {
    let typed = result.extra.get("resultType").is_some_and(|t| !t.is_null());
    let meta = result.meta.as_ref().and_then(|m| serde_json::from_str::<ServerInfoStamp>(m.get()).ok());
    typed && meta.is_some_and(|m| m.server_info.is_some())
}

/// The members [`stamp_modern`] adds, as a result's text has them: only looked at, nothing copied.
#[derive(Deserialize)]
struct Stamps<'a> {
    #[serde(rename = "resultType")]
    result_type: Option<IgnoredAny>,
    #[serde(rename = "ttlMs")]
    ttl: Option<IgnoredAny>,
    #[serde(rename = "cacheScope")]
    cache_scope: Option<IgnoredAny>,
    #[serde(rename = "_meta", borrow)]
    meta: Option<&'a RawValue>,
}

/// `_meta`'s stamp. The name is [`META_SERVER_INFO`]'s (a test holds them equal).
#[derive(Deserialize)]
struct ServerInfoStamp {
    #[serde(rename = "io.modelcontextprotocol/serverInfo")]
    server_info: Option<IgnoredAny>,
}

/// Whether `text` has every member [`stamp_modern`] would add for `method`. Text it cannot read so (not an object,
/// a repeated member) is not: the full parse decides.
fn stamped(text: &str, method: &str) -> bool {
    let Ok(stamps) = serde_json::from_str::<Stamps>(text) else { return false };
    let cached = !CACHEABLE.contains(&method) || (stamps.ttl.is_some() && stamps.cache_scope.is_some());
    let meta = stamps.meta.and_then(|m| serde_json::from_str::<ServerInfoStamp>(m.get()).ok());
    stamps.result_type.is_some() && cached && meta.is_some_and(|m| m.server_info.is_some())
}

/// A modern request's envelope, checked.
#[derive(Debug)]
pub(crate) struct Envelope {
    pub version: String,
    pub client_info: Option<Implementation>,
    pub client_capabilities: Value,
}

/// The envelope every modern request must carry: -32602 naming what is missing, -32022 for a version we do not
/// serve (with the list we do).
pub(crate) fn envelope(params: Option<&Value>) -> Result<Envelope, ErrorObject> {
    let Some(meta) = params.and_then(|p| p.get("_meta")).and_then(Value::as_object) else {
        return Err(ErrorObject::new(
            ErrorCode::INVALID_PARAMS,
            format!(
                "params._meta must be an object carrying the required {META_PROTOCOL_VERSION:?} and \
                 {META_CLIENT_CAPABILITIES:?} envelope keys"
            ),
        ));
    };
    let Some(capabilities) = meta.get(META_CLIENT_CAPABILITIES) else {
        let message = format!("params._meta is missing the required envelope key {META_CLIENT_CAPABILITIES}");
        return Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, message));
    };
    let Some(version) = envelope_version(params).and_then(Value::as_str) else {
        let message = format!("params._meta needs a string {META_PROTOCOL_VERSION}");
        return Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, message));
    };
    if !MODERN_PROTOCOL_VERSIONS.contains(&version) {
        return Err(unsupported(json!(version)));
    }
    Ok(Envelope {
        version: version.to_owned(),
        // Read from the borrowed tree: no copy of it is made.
        client_info: meta.get(META_CLIENT_INFO).and_then(|v| Implementation::deserialize(v).ok()),
        client_capabilities: capabilities.clone(),
    })
}

/// -32022 with the versions we serve.
pub(crate) fn unsupported(requested: Value) -> ErrorObject {
    let mut e = ErrorObject::new(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version");
    e.data = Some(json!({"supported": MODERN_PROTOCOL_VERSIONS, "requested": requested}));
    e
}

pub(crate) fn method_not_found(method: &str) -> ErrorObject {
    ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, format!("Method not found: {method}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc() -> ServerDescription {
        ServerDescription {
            capabilities: json!({"tools": {"listChanged": true}}),
            server_info: Implementation::new("front", "1"),
            instructions: None,
        }
    }

    #[test]
    fn initialize_echoes_a_known_version_and_offers_the_latest_otherwise() {
        let params = json!({"protocolVersion": "2025-06-18", "capabilities": {"x": 1}, "clientInfo": {"name": "a", "version": "2"}});
        let init = initialize(&desc(), Some(&params)).unwrap();
        assert_eq!((init.version.as_str(), init.result["serverInfo"]["name"].as_str()), ("2025-06-18", Some("front")));
        assert_eq!(init.client_info, Some(Implementation::new("a", "2")));
        let other = initialize(&desc(), Some(&json!({"protocolVersion": "1999-01-01"}))).unwrap();
        assert_eq!(other.version, LATEST_PROTOCOL_VERSION);
        assert_eq!(initialize(&desc(), None).unwrap_err().code(), ErrorCode::INVALID_PARAMS);
    }

    #[test]
    fn the_envelope_is_required_and_its_version_checked() {
        let ok = json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}}});
        assert_eq!(envelope(Some(&ok)).unwrap().version, "2026-07-28");
        let old = json!({"_meta": {META_PROTOCOL_VERSION: "2099-01-01", META_CLIENT_CAPABILITIES: {}}});
        assert_eq!(envelope(Some(&old)).unwrap_err().code(), ErrorCode::UNSUPPORTED_PROTOCOL_VERSION);
        for bad in [json!({}), json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}})] {
            assert_eq!(envelope(Some(&bad)).unwrap_err().code(), ErrorCode::INVALID_PARAMS);
        }
        let d = discover(&desc());
        assert_eq!(d["resultType"], "complete");
        assert_eq!(d["_meta"][META_SERVER_INFO]["name"], "front");
    }

    #[test]
    fn a_stamped_text_is_kept_as_it_came_and_any_other_stamped_as_a_tree_would_be() {
        let info = json!({"name": "front", "version": "1"});
        let text = |v: Value| Payload::from_value(&v);
        // A result relayed from a 2026-07-28 server: its own stamp, kept byte for byte (member order included).
        let relayed =
            r#"{"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"}},"resultType":"complete"}"#;
        let relayed = Payload::serialize(&serde_json::from_str::<&RawValue>(relayed).unwrap()).unwrap();
        assert_eq!(stamp_modern_text(relayed.clone(), "tools/call", &info).get(), relayed.get());
        // Anything short of every stamp comes out as `stamp_modern` makes it.
        for (method, result) in [
            ("tools/call", json!({"content": []})),
            ("tools/call", json!({"content": [], "resultType": "complete", "_meta": {"other": 1}})),
            ("tools/call", json!({"content": [], "resultType": "complete", "_meta": null})),
            ("tools/list", json!({"tools": [], "resultType": "complete", "_meta": {META_SERVER_INFO: {}}})),
            ("tools/call", json!([1, 2])),
        ] {
            let mut tree = result.clone();
            stamp_modern(&mut tree, method, &info);
            assert_eq!(stamp_modern_text(text(result), method, &info).to_value().unwrap(), tree, "{method}");
        }
        // The typed check agrees with the text's for every call result above, and for the relayed one.
        for result in [
            json!({"content": []}),
            json!({"content": [], "resultType": "complete", "_meta": {"other": 1}}),
            json!({"content": [], "resultType": "complete", "_meta": null}),
            json!({"content": [], "resultType": null, "_meta": {META_SERVER_INFO: {}}}),
            json!({"content": [], "_meta": {META_SERVER_INFO: {"name": "up"}}, "resultType": "complete"}),
        ] {
            let typed: CallToolResult = serde_json::from_value(result.clone()).unwrap();
            assert_eq!(call_result_stamped(&typed), stamped(text(result.clone()).get(), "tools/call"), "{result}");
        }
        // What `stamp_modern` wrote is recognised as stamped: the two names of the server's stamp agree.
        let mut tree = json!({"tools": []});
        stamp_modern(&mut tree, "tools/list", &info);
        assert!(stamped(text(tree).get(), "tools/list"));
    }
}
