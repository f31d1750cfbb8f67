//! Era detection for one new connection: the cached era if there is one, else a `server/discover` probe with a
//! fallback to the legacy `initialize` handshake. The wire facts are in docs/sessions.md.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::era_cache::{CachedEra, EraCache};
use super::ext::META_SESSION;
use super::wire::{DISCOVER, DiscoverResult, UnsupportedVersion, envelope};
use super::{Era, EraMode, LifecycleConfig, handshake};
use crate::conn::Connection;
use crate::error::{CallError, LifecycleError, LocalError};
use crate::jsonrpc::ErrorCode;
use crate::mcp::{Implementation, InitializeResult};

/// How the era of a connection was settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detection {
    /// `EraMode::Legacy`: no probe.
    Forced,
    /// From the era cache: no probe.
    Cached,
    /// A `server/discover` probe (and perhaps the fallback handshake) decided it.
    Probed,
    /// The cached era was refused by the server, so it was detected again.
    Redetected,
}

/// A connection's settled lifecycle.
#[derive(Debug, Clone)]
pub struct Established {
    pub era: Era,
    /// The legacy `initialize` result, or for the modern era the same facts taken from `server/discover`: the
    /// chosen version, the capabilities, `serverInfo` from the result's `_meta` (empty when the server sent none),
    /// the instructions; `supportedVersions`, `ttlMs` and `cacheScope` are kept in `extra`.
    pub init: InitializeResult,
    pub detection: Detection,
}

/// Settles the era of the freshly opened `conn` to `server` and performs its lifecycle: for the modern era, set the
/// per-request envelope on `conn`; for the legacy era, the `initialize` handshake.
pub async fn establish(
    conn: &Connection,
    config: &LifecycleConfig,
    cache: &EraCache,
    server: &str,
) -> Result<Established, CallError> {
    if config.era_mode == EraMode::Legacy {
        let init = handshake::initialize(conn, config).await?;
        return Ok(Established { era: Era::Legacy, init, detection: Detection::Forced });
    }
    let cached = cache.get(server);
    if config.era_mode == EraMode::HandshakeFirst && !matches!(cached, Some(CachedEra::Modern { .. })) {
        let detection = if cached.is_some() { Detection::Cached } else { Detection::Probed };
        return handshake_first(conn, config, cache, server, detection).await;
    }
    match cached {
        // A server that grants sessions (the mcpstorm extension) grants them in the `server/discover` result: the
        // cached one holds a stale grant, so a new connection asks again.
        Some(CachedEra::Modern { discover, .. }) if grants_sessions(&discover) => {
            detect(conn, config, cache, server, Detection::Probed).await
        }
        Some(CachedEra::Modern { version, discover }) => {
            conn.set_request_meta(Some(envelope(&version, &config.client_capabilities, &config.client_info)));
            Ok(Established {
                era: Era::Modern,
                init: init_from_discover(&version, &discover),
                detection: Detection::Cached,
            })
        }
        Some(CachedEra::Legacy) => match handshake::initialize(conn, config).await {
            Ok(init) => Ok(Established { era: Era::Legacy, init, detection: Detection::Cached }),
            // The server now refuses the handshake as a modern server does: forget the era and detect again.
            Err(e) if modern_refusal(&e).is_some() => {
                tracing::info!(server, error = %e, "cached legacy era refused; detecting again");
                cache.invalidate(server);
                detect(conn, config, cache, server, Detection::Redetected).await
            }
            Err(e) => Err(e),
        },
        None => detect(conn, config, cache, server, Detection::Probed).await,
    }
}

/// `EraMode::HandshakeFirst` for a server not known to be modern: the handshake, and detection as `Auto` detects
/// when the server refuses it as a modern-only server does.
async fn handshake_first(
    conn: &Connection,
    config: &LifecycleConfig,
    cache: &EraCache,
    server: &str,
    detection: Detection,
) -> Result<Established, CallError> {
    match handshake::initialize(conn, config).await {
        Ok(init) => {
            cache.put(server, CachedEra::Legacy);
            Ok(Established { era: Era::Legacy, init, detection })
        }
        // A modern-only server refuses the handshake (-32022, or as a method it does not know): detect.
        Err(e @ CallError::Lifecycle(LifecycleError::InitializeRefused(_))) => {
            tracing::info!(server, error = %e, "the handshake was refused; detecting the era");
            cache.invalidate(server);
            detect(conn, config, cache, server, Detection::Redetected).await
        }
        Err(e) => Err(e),
    }
}

/// For a 2025-11-25 session over Streamable HTTP: whether its server speaks 2026-07-28 too, and if so the envelope
/// (`_meta`) that sends a request in that era on the session's connection, outside the session. `None` for a server
/// that does not (or a probe that failed: the session is not affected). The envelope declares the client's
/// capabilities, as a 2026-07-28 connection's would: a server that wants to ask answers input-required, and the
/// caller's relay refuses it for an agent that cannot be asked, as it would on such a connection.
///
/// Why such calls leave the session: a dual-era server (the Python SDK's) answers a 2025-11-25 call on an SSE stream
/// tied to the session, and a 2026-07-28 one as plain JSON, which costs it less under a burst; a plain proxy passing
/// a 2026-07-28 agent through gets the latter.
pub async fn stateless_envelope(conn: &Connection, config: &LifecycleConfig) -> Option<Map<String, Value>> {
    let ours = &config.modern_protocol_versions;
    let version = match probe(conn, config, ours.first()?).await {
        Ok(Probe::Modern(found)) => found.pick_version(ours).cloned(),
        Ok(Probe::Unsupported(Some(refused))) => mutual(ours, &refused.supported).cloned(),
        Ok(Probe::Unsupported(None) | Probe::NotModern(_)) => None,
        Err(e) => {
            tracing::debug!(error = %e, "server/discover after the handshake failed; every call stays on the session");
            None
        }
    }?;
    Some(envelope(&version, &config.client_capabilities, &config.client_info))
}

/// What one `server/discover` probe told us.
enum Probe {
    Modern(DiscoverResult),
    /// -32022: the server is modern but not at the version we asked for.
    Unsupported(Option<UnsupportedVersion>),
    /// Anything else that is an answer (or silence): not evidence of a modern server.
    NotModern(String),
}

/// The probe, then the fallback. At most two probes and one handshake: a second probe happens only when the server
/// named a modern version we share (a -32022 to the probe, or to the handshake after a probe that timed out here
/// but reached the server, which then serves the connection in the modern era). Every path ends in one of: the
/// modern era adopted, the legacy handshake done, or an error.
async fn detect(
    conn: &Connection,
    config: &LifecycleConfig,
    cache: &EraCache,
    server: &str,
    detection: Detection,
) -> Result<Established, CallError> {
    let ours = &config.modern_protocol_versions;
    let mut version = ours.first().cloned();
    let mut reprobed = false;
    // The handshake's -32022, kept in case the second probe does not settle it either.
    let mut refused: Option<CallError> = None;
    loop {
        let reason = match version.take() {
            None => "no modern protocol version configured".to_owned(),
            Some(v) => match probe(conn, config, &v).await? {
                Probe::Modern(found) => match found.pick_version(ours) {
                    Some(chosen) => return Ok(adopt_modern(conn, config, cache, server, chosen, found, detection)),
                    // A discover-answering server that lists no modern version we speak: a legacy advertisement.
                    None => format!("server/discover lists no modern version we speak: {:?}", found.supported_versions),
                },
                Probe::Unsupported(data) => {
                    let supported = data.map(|d| d.supported).unwrap_or_default();
                    if let Some(mutual) = mutual(ours, &supported).filter(|m| !reprobed && **m != v) {
                        version = Some(mutual.clone());
                        reprobed = true;
                        continue;
                    }
                    if !supported.is_empty() && !supported.iter().any(|s| config.protocol_versions.contains(s)) {
                        // Modern-only, and no version in common: a real incompatibility, not a legacy server.
                        let theirs = supported.join(", ");
                        return Err(LifecycleError::VersionMismatch { ours: all_versions(config), theirs }.into());
                    }
                    format!("server/discover refused version {v} (-32022), server lists {supported:?}")
                }
                Probe::NotModern(reason) => reason,
            },
        };
        if let Some(e) = refused {
            return Err(e);
        }
        tracing::debug!(server, %reason, "no modern era; falling back to the initialize handshake");
        match handshake::initialize(conn, config).await {
            Ok(init) => {
                cache.put(server, CachedEra::Legacy);
                return Ok(Established { era: Era::Legacy, init, detection });
            }
            Err(e) => match modern_refusal(&e).and_then(|supported| mutual(ours, &supported).cloned()) {
                Some(mutual) if !reprobed => {
                    tracing::debug!(server, %mutual, "initialize refused with -32022; probing again");
                    version = Some(mutual);
                    reprobed = true;
                    refused = Some(e);
                }
                _ => return Err(e),
            },
        }
    }
}

async fn probe(conn: &Connection, config: &LifecycleConfig, version: &str) -> Result<Probe, CallError> {
    let limit = config.discover_timeout;
    let opts = handshake::lifecycle_call(limit);
    let params = json!({"_meta": envelope(version, &json!({}), &config.client_info)});
    match conn.request(DISCOVER, Some(params), opts).await {
        Ok(raw) => Ok(match serde_json::from_value::<DiscoverResult>(raw) {
            Ok(found) => Probe::Modern(found),
            Err(e) => Probe::NotModern(format!("malformed server/discover result: {e}")),
        }),
        Err(CallError::Protocol(e)) if e.code() == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION => {
            Ok(Probe::Unsupported(UnsupportedVersion::from_error(&e)))
        }
        Err(CallError::Protocol(e)) => {
            Ok(Probe::NotModern(format!("server/discover answered {} ({}): {}", e.code, e.code().name(), e.message)))
        }
        Err(CallError::MalformedResponse(m)) => Ok(Probe::NotModern(m)),
        Err(CallError::Local(LocalError::DeadlineExceeded | LocalError::FirstResponseTimeout(_))) => {
            Ok(Probe::NotModern(format!("server/discover unanswered after {limit:?}")))
        }
        // The connection failed, or we were told to stop: an outage is never an era verdict.
        Err(e) => Err(e),
    }
}

fn adopt_modern(
    conn: &Connection,
    config: &LifecycleConfig,
    cache: &EraCache,
    server: &str,
    version: &str,
    found: DiscoverResult,
    detection: Detection,
) -> Established {
    // Every request declares what the client answers: a 2026-07-28 server asks (input-required) only a client that
    // declared it.
    conn.set_request_meta(Some(envelope(version, &config.client_capabilities, &config.client_info)));
    let init = init_from_discover(version, &found);
    cache.put(server, CachedEra::Modern { version: version.to_owned(), discover: Arc::new(found) });
    Established { era: Era::Modern, init, detection }
}

fn init_from_discover(version: &str, found: &DiscoverResult) -> InitializeResult {
    let mut extra = Map::new();
    extra.insert("supportedVersions".into(), json!(found.supported_versions));
    extra.insert("ttlMs".into(), json!(found.ttl_ms));
    if let Some(scope) = &found.cache_scope {
        extra.insert("cacheScope".into(), Value::String(scope.clone()));
    }
    // Where the legacy result keeps it too, so both eras' server-level `_meta` (router hints, the session
    // extension's grant and auth schemes) is read from one place.
    if let Some(meta) = &found.meta {
        extra.insert("_meta".into(), Value::Object(meta.clone()));
    }
    InitializeResult {
        protocol_version: version.to_owned(),
        capabilities: found.capabilities.clone(),
        server_info: found.server_info().unwrap_or_else(|| Implementation::new("", "")),
        instructions: found.instructions.clone(),
        extra,
    }
}

fn grants_sessions(discover: &DiscoverResult) -> bool {
    discover.meta.as_ref().is_some_and(|m| m.contains_key(META_SESSION))
}

/// The `supported` list of a -32022 refusal of `initialize` (a modern server's answer to the handshake).
fn modern_refusal(e: &CallError) -> Option<Vec<String>> {
    match e {
        CallError::Lifecycle(LifecycleError::InitializeRefused(obj)) => {
            UnsupportedVersion::from_error(obj).map(|d| d.supported)
        }
        _ => None,
    }
}

/// The newest of `ours` (newest first) in `theirs`.
fn mutual<'a>(ours: &'a [String], theirs: &[String]) -> Option<&'a String> {
    ours.iter().find(|v| theirs.contains(v))
}

fn all_versions(config: &LifecycleConfig) -> Vec<String> {
    config.modern_protocol_versions.iter().chain(&config.protocol_versions).cloned().collect()
}
