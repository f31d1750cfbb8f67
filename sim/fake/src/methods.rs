//! The requests answered without work, and the two eras' lifecycles: the connection's era ([`route`]),
//! `initialize` (legacy), `server/discover` and the per-request `_meta` envelope (modern, 2026-07-28), and
//! `tools/list` (`ping` is a one-liner in `conn`). Answers mirror the Python SDK 2.3.0 server's, verbatim where it
//! matters (see `mcpstorm_core::session`).

use mcpstorm_core::jsonrpc::{ErrorCode, ErrorObject};
use mcpstorm_core::mcp::{
    Implementation, InitializeResult, LATEST_PROTOCOL_VERSION, ListToolsResult, SUPPORTED_PROTOCOL_VERSIONS, method,
};
use mcpstorm_core::session::{
    DISCOVER, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, META_SERVER_INFO, MODERN_PROTOCOL_VERSIONS,
};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::config::{LegacyDiscover, ProtocolEra};
use crate::gate;
use crate::params::Params;
use crate::shared::Shared;

/// Version negotiation as the spec has it: echo the client's version if we speak it, else offer our latest and let
/// the client decide whether to disconnect.
pub fn initialize(shared: &Shared, params: Option<&Value>) -> Result<Value, ErrorObject> {
    let Some(requested) = params.and_then(|p| p.get("protocolVersion")).and_then(Value::as_str) else {
        return Err(invalid_params("initialize needs a string \"protocolVersion\""));
    };
    let version = SUPPORTED_PROTOCOL_VERSIONS.iter().find(|v| **v == requested).copied();
    let result = InitializeResult {
        protocol_version: version.unwrap_or(LATEST_PROTOCOL_VERSION).to_owned(),
        capabilities: capabilities(),
        server_info: Implementation::new(&shared.config.name, &shared.catalog().version),
        instructions: None,
        extra: Map::new(),
    };
    let mut value = to_value(&result)?;
    gate::stamp_grant(shared, &mut value);
    Ok(value)
}

/// One page of tools. The cursor is the decimal index of the page's first tool: opaque to clients, trivially
/// checkable here.
pub fn list_tools(shared: &Shared, params: Option<&Value>) -> Result<Value, ErrorObject> {
    let catalog = shared.catalog();
    let len = catalog.listing.len();
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
        tools: catalog.listing.get(start..end).unwrap_or_default().to_vec(),
        next_cursor: (end < len).then(|| end.to_string()),
        extra: Map::new(),
    };
    to_value(&result)
}

/// The era a connection serves, settled by its first request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnEra {
    Undecided,
    Legacy,
    Modern,
}

/// What to do with one request, given the connection's era.
#[derive(Debug)]
pub enum Route {
    /// Handle it; a modern request's result gets the modern stamps ([`stamp_modern`]).
    Serve { modern: bool },
    /// Refuse it with this error at once.
    Refuse(ErrorObject),
    /// Never answer (a legacy server that ignores `server/discover`).
    Ignore,
}

/// Decides the connection's era on its first request (the Python SDK's rule: a request carrying the modern
/// envelope's protocol version, other than `initialize`, opens a modern connection; anything else a legacy one; a
/// server serving one era only has no choice), then routes each request by it.
pub fn route(shared: &Shared, era: &mut ConnEra, method: &str, params: &Params) -> Route {
    let config = &shared.config;
    let (legacy, modern) = (config.serves(ProtocolEra::Legacy), config.serves(ProtocolEra::Modern));
    // What `envelope_version` reads.
    let enveloped = params.has_meta(META_PROTOCOL_VERSION);
    if *era == ConnEra::Undecided {
        *era = if modern && (!legacy || (enveloped && method != method::INITIALIZE)) {
            ConnEra::Modern
        } else {
            ConnEra::Legacy
        };
    }
    match *era {
        ConnEra::Modern => route_modern(method, params),
        // A legacy-only server knows nothing of the envelope and ignores it, as real ones do; a both-era server
        // refuses it on a legacy connection, as the Python SDK does.
        ConnEra::Legacy | ConnEra::Undecided if enveloped && modern && method != method::INITIALIZE => {
            Route::Refuse(ErrorObject::new(
                ErrorCode::INVALID_REQUEST,
                format!(
                    "this connection serves the handshake protocol era; requests carrying the {} envelope are not \
                     accepted on it",
                    MODERN_PROTOCOL_VERSIONS[0]
                ),
            ))
        }
        ConnEra::Legacy | ConnEra::Undecided if method == DISCOVER => {
            if modern {
                // A both-era server whose connection opened legacy: no such method here.
                return Route::Refuse(method_not_found(method));
            }
            match config.legacy_discover {
                LegacyDiscover::MethodNotFound => Route::Refuse(method_not_found(method)),
                LegacyDiscover::InvalidParams => Route::Refuse(invalid_params("Invalid request parameters")),
                LegacyDiscover::Silent => Route::Ignore,
            }
        }
        ConnEra::Legacy | ConnEra::Undecided => Route::Serve { modern: false },
    }
}

fn route_modern(method: &str, params: &Params) -> Route {
    if method == method::INITIALIZE {
        let requested = params.value().and_then(|p| p.get("protocolVersion")).cloned().unwrap_or(Value::Null);
        let mut e = ErrorObject::new(
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
            format!(
                "connection is serving the {} protocol; the initialize handshake is not accepted",
                MODERN_PROTOCOL_VERSIONS[0]
            ),
        );
        e.data = Some(json!({"supported": MODERN_PROTOCOL_VERSIONS, "requested": requested}));
        return Route::Refuse(e);
    }
    if let Err(e) = check_envelope(params) {
        return Route::Refuse(e);
    }
    if method == method::PING {
        // 2026-07-28 removed ping.
        return Route::Refuse(method_not_found(method));
    }
    Route::Serve { modern: true }
}

/// The envelope every modern request must carry: -32602 naming what is missing, -32022 for a version we do not
/// serve (with the list we do).
fn check_envelope(params: &Params) -> Result<(), ErrorObject> {
    if !params.meta_is_object() {
        return Err(invalid_params(format!(
            "params._meta must be an object carrying the required {META_PROTOCOL_VERSION:?} and \
             {META_CLIENT_CAPABILITIES:?} envelope keys"
        )));
    }
    let missing: Vec<&str> =
        [META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES].into_iter().filter(|k| !params.has_meta(k)).collect();
    if !missing.is_empty() {
        return Err(invalid_params(format!(
            "params._meta is missing the required envelope key(s): {}",
            missing.join(", ")
        )));
    }
    let Some(version) = params.meta_str(META_PROTOCOL_VERSION) else {
        return Err(invalid_params("the protocol-version envelope value must be a string"));
    };
    if !MODERN_PROTOCOL_VERSIONS.contains(&version) {
        let mut e = ErrorObject::new(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version");
        e.data = Some(json!({"supported": MODERN_PROTOCOL_VERSIONS, "requested": version}));
        return Err(e);
    }
    Ok(())
}

/// `server/discover`: the versions we serve, the capabilities `initialize` would declare, the configured `ttlMs`.
pub fn discover(shared: &Shared) -> Result<Value, ErrorObject> {
    let mut result = json!({
        "supportedVersions": MODERN_PROTOCOL_VERSIONS,
        "capabilities": capabilities(),
    });
    gate::stamp_grant(shared, &mut result);
    stamp_modern(shared, &mut result, true);
    Ok(result)
}

/// What every modern result carries: `resultType`, the `serverInfo` stamp in `_meta`, and for the cacheable
/// methods `ttlMs` and `cacheScope`. Keys already present are kept.
pub fn stamp_modern(shared: &Shared, result: &mut Value, cacheable: bool) {
    let Some(obj) = result.as_object_mut() else {
        return;
    };
    if cacheable {
        obj.entry("ttlMs").or_insert(json!(shared.config.cache_ttl_ms));
        obj.entry("cacheScope").or_insert(json!("private"));
    }
    obj.entry("resultType").or_insert(json!("complete"));
    let info = json!({"name": shared.config.name, "version": shared.catalog().version});
    if let Some(meta) = obj.entry("_meta").or_insert_with(|| json!({})).as_object_mut() {
        meta.entry(META_SERVER_INFO).or_insert(info);
    }
}

fn capabilities() -> Value {
    json!({"tools": {"listChanged": true}})
}

fn method_not_found(method: &str) -> ErrorObject {
    ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, format!("method not found: {method}"))
}

pub fn invalid_params(message: impl Into<String>) -> ErrorObject {
    ErrorObject::new(ErrorCode::INVALID_PARAMS, message)
}

/// Serialising our own result types cannot fail (string keys only); should it, the client gets an internal error
/// rather than a dropped request.
pub fn to_value<T: Serialize>(value: &T) -> Result<Value, ErrorObject> {
    serde_json::to_value(value).map_err(|e| ErrorObject::new(ErrorCode::INTERNAL_ERROR, e.to_string()))
}
