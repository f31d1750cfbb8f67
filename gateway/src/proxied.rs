//! Prompts and resources, federated like tools: every server's prompts (by name) and resources and resource
//! templates (by URI) listed under one list with the catalog's naming rule, and each `prompts/get` or
//! `resources/read` sent to the first of its server's replicas that answers. They bypass the tool-call protection
//! (breakers count tool calls); a replica that fails is passed over for the next.
//!
//! A prefixed resource URI is `server__` followed by the upstream's URI: an opaque name that only this gateway
//! resolves, as a prefixed tool name is.

use std::collections::BTreeMap;

use mcpstorm_core::jsonrpc::{ErrorCode, ErrorObject};
use mcpstorm_core::mcp::logging::{self, LogLevel};
use mcpstorm_core::session::Era;
use mcpstorm_core::{CallError, CallOptions, Gateway};
use serde_json::{Value, json};

use super::catalog::{Catalog, Origin};
use crate::config::{PrefixMode, UpstreamSpec};

/// The kinds of lists proxied here: the list method, the list's key in its result, the member key that names an
/// entry, and the server capability that offers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Prompts,
    Resources,
    Templates,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Prompts, Kind::Resources, Kind::Templates];

    pub fn list_method(self) -> &'static str {
        match self {
            Kind::Prompts => "prompts/list",
            Kind::Resources => "resources/list",
            Kind::Templates => "resources/templates/list",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Kind::Prompts => "prompts",
            Kind::Resources => "resources",
            Kind::Templates => "resourceTemplates",
        }
    }

    fn name_member(self) -> &'static str {
        match self {
            Kind::Prompts => "name",
            Kind::Resources => "uri",
            Kind::Templates => "uriTemplate",
        }
    }

    fn capability(self) -> &'static str {
        match self {
            Kind::Prompts => "prompts",
            Kind::Resources | Kind::Templates => "resources",
        }
    }
}

/// The most pages one listing may take, against a server whose cursor never ends.
const MAX_PAGES: usize = 100;

/// Every server's entries of each kind, and the names built from them.
#[derive(Debug, Default)]
pub struct Proxied {
    entries: BTreeMap<(Kind, String), Vec<Value>>,
    catalogs: BTreeMap<Kind, Catalog>,
    /// The most verbose log level any agent has set (`logging/setLevel`): what 2025-11-25 upstream sessions are
    /// asked for (see [`set_log_level`]).
    log_floor: Option<LogLevel>,
}

impl Proxied {
    /// Replaces `server`'s entries (`None`: the server does not offer the kind) and rebuilds the names.
    pub fn set(
        &mut self,
        servers: &[UpstreamSpec],
        server: &str,
        listed: BTreeMap<Kind, Vec<Value>>,
        mode: PrefixMode,
    ) {
        for kind in Kind::ALL {
            self.entries.remove(&(kind, server.to_owned()));
        }
        for (kind, entries) in listed {
            self.entries.insert((kind, server.to_owned()), entries);
        }
        for kind in Kind::ALL {
            let names = servers.iter().filter_map(|s| {
                let entries = self.entries.get(&(kind, s.name.clone()))?;
                let names = entries.iter().filter_map(|e| e.get(kind.name_member())?.as_str().map(str::to_owned));
                Some((s.name.as_str(), names.collect()))
            });
            self.catalogs.insert(kind, Catalog::build(names, mode));
        }
    }

    /// The list result of `kind` under agent-facing names.
    pub fn list(&self, kind: Kind) -> Value {
        let Some(catalog) = self.catalogs.get(&kind) else { return json!({ kind.key(): [] }) };
        let entries: Vec<Value> = catalog
            .entries()
            .filter_map(|(shown, origin)| {
                let entries = self.entries.get(&(kind, origin.server.clone()))?;
                let entry =
                    entries.iter().find(|e| e.get(kind.name_member()).and_then(Value::as_str) == Some(&origin.name))?;
                let mut entry = entry.clone();
                entry[kind.name_member()] = Value::from(shown);
                Some(entry)
            })
            .collect();
        json!({ kind.key(): entries })
    }

    /// Lowers the level asked of upstream sessions to `level` if it is more verbose than any before; the new level,
    /// or `None` when it already covered `level`. It never rises again: an agent that set `debug` may still be
    /// listening, and an upstream session's level is one for every agent whose calls share it.
    pub fn lower_log_floor(&mut self, level: LogLevel) -> Option<LogLevel> {
        if self.log_floor.is_some_and(|floor| floor <= level) {
            return None;
        }
        self.log_floor = Some(level);
        self.log_floor
    }

    /// Where an agent-facing prompt name or resource URI leads. A URI no listing holds but a template might match
    /// is looked up by its `server__` prefix, or else sent to the one server that offers templates.
    pub fn resolve(&self, kind: Kind, shown: &str) -> Option<Origin> {
        if let Some(origin) = self.catalogs.get(&kind).and_then(|c| c.resolve(shown)) {
            return Some(origin.clone());
        }
        if kind != Kind::Resources {
            return None;
        }
        let templates = self.catalogs.get(&Kind::Templates)?;
        let servers: std::collections::BTreeSet<&str> = templates.entries().map(|(_, o)| o.server.as_str()).collect();
        for server in &servers {
            if let Some(rest) = shown.strip_prefix(&format!("{server}{}", super::catalog::SEPARATOR)) {
                return Some(Origin { server: (*server).to_owned(), name: rest.to_owned() });
            }
        }
        let only = (servers.len() == 1).then(|| servers.first().copied()).flatten()?;
        Some(Origin { server: only.to_owned(), name: shown.to_owned() })
    }
}

/// Lists every kind `server`'s first answering replica offers (by its capabilities), following cursors.
pub async fn list(gateway: &Gateway, spec: &UpstreamSpec) -> Option<BTreeMap<Kind, Vec<Value>>> {
    for i in 0..spec.replicas.len() {
        let (_, client) = gateway.client(&spec.name, &spec.replica_id(i));
        let Ok(session) = client.session().await else { continue };
        let mut listed = BTreeMap::new();
        let mut failed = false;
        for kind in Kind::ALL {
            if session.init.capabilities.get(kind.capability()).is_none() {
                continue;
            }
            let mut entries = Vec::new();
            let mut cursor: Option<String> = None;
            for _ in 0..MAX_PAGES {
                let params = cursor.as_ref().map(|c| json!({ "cursor": c }));
                match session.conn.request(kind.list_method(), params, CallOptions::default()).await {
                    Ok(page) => {
                        entries.extend(page.get(kind.key()).and_then(Value::as_array).cloned().unwrap_or_default());
                        cursor = page.get("nextCursor").and_then(Value::as_str).map(str::to_owned);
                        if cursor.is_none() {
                            break;
                        }
                    }
                    // A server that declares the capability but not this method (templates): nothing of the kind.
                    Err(CallError::Protocol(e)) if e.code() == ErrorCode::METHOD_NOT_FOUND => break,
                    Err(e) => {
                        tracing::warn!(server = %spec.name, method = kind.list_method(), error = %e, "cannot list");
                        failed = true;
                        break;
                    }
                }
            }
            listed.insert(kind, entries);
        }
        if !failed {
            return Some(listed);
        }
    }
    None
}

/// Sends `method` with `params` (its naming member replaced by the upstream's name) to the first replica of
/// `origin.server` that answers.
pub async fn forward(
    gateway: &Gateway,
    spec: &UpstreamSpec,
    method: &str,
    mut params: Value,
    member: &str,
    origin: &Origin,
) -> Result<Value, ErrorObject> {
    params[member] = Value::from(origin.name.clone());
    send(gateway, spec, method, params).await
}

/// What a `completion/complete` asks about: its `ref` names a prompt (`ref/prompt`, by `name`) or a resource
/// template (`ref/resource`, by `uri`, which holds the template as listed); the kind and member to resolve.
pub fn completion_ref(params: &Value) -> Result<(Kind, &'static str, &str), ErrorObject> {
    let invalid = |why: &str| ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("completion/complete: {why}"));
    let reference = params.get("ref").ok_or_else(|| invalid("needs a `ref`"))?;
    let (kind, member) = match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => (Kind::Prompts, "name"),
        Some("ref/resource") => (Kind::Templates, "uri"),
        _ => return Err(invalid("`ref.type` must be \"ref/prompt\" or \"ref/resource\"")),
    };
    let shown = reference.get(member).and_then(Value::as_str);
    let shown = shown.ok_or_else(|| invalid(&format!("`ref` needs a string `{member}`")))?;
    Ok((kind, member, shown))
}

/// Sends a `completion/complete` to the server of the prompt or resource template its `ref` names, under the
/// upstream's own name (`origin.name`).
pub async fn complete(
    gateway: &Gateway,
    spec: &UpstreamSpec,
    mut params: Value,
    member: &str,
    origin: &Origin,
) -> Result<Value, ErrorObject> {
    params["ref"][member] = Value::from(origin.name.clone());
    send(gateway, spec, "completion/complete", params).await
}

/// Sends `logging/setLevel` with `level` to every replica session of `servers` that speaks 2025-11-25 and offers
/// logging (a 2026-07-28 session takes each call's level from its `_meta`). Best effort: a replica that fails is
/// logged and passed over; one that connects later starts at its server's own default.
pub async fn set_log_level(gateway: &Gateway, servers: &[UpstreamSpec], level: LogLevel) {
    for spec in servers {
        for i in 0..spec.replicas.len() {
            let (_, client) = gateway.client(&spec.name, &spec.replica_id(i));
            let Ok(session) = client.session().await else { continue };
            if session.era != Era::Legacy || session.init.capabilities.get("logging").is_none() {
                continue;
            }
            let params = json!({ "level": level.as_str() });
            if let Err(e) = session.conn.request(logging::SET_LEVEL, Some(params), CallOptions::default()).await {
                tracing::warn!(server = %spec.name, replica = %spec.replica_id(i), error = %e, "cannot set its log level");
            }
        }
    }
}

/// An upstream's log message as an agent sees it: `logger` names the server (`server`, or `server/logger` when
/// the upstream named its own logger), so that an agent behind the gateway can tell whose message it is.
pub fn name_logger(params: &mut Value, server: &str) {
    let Some(params) = params.as_object_mut() else { return };
    let logger = match params.get("logger").and_then(Value::as_str) {
        Some(own) if !own.is_empty() => format!("{server}/{own}"),
        _ => server.to_owned(),
    };
    params.insert("logger".to_owned(), Value::from(logger));
}

/// Sends `method` with `params` to the first replica of `spec` that answers.
async fn send(gateway: &Gateway, spec: &UpstreamSpec, method: &str, params: Value) -> Result<Value, ErrorObject> {
    let mut last = None;
    for i in 0..spec.replicas.len() {
        let (_, client) = gateway.client(&spec.name, &spec.replica_id(i));
        let session = match client.session().await {
            Ok(s) => s,
            Err(e) => {
                last = Some(e);
                continue;
            }
        };
        match session.conn.request(method, Some(params.clone()), CallOptions::default()).await {
            Ok(result) => return Ok(result),
            Err(CallError::Protocol(e)) => return Err(e),
            Err(e) => last = Some(e),
        }
    }
    let why = last.map_or_else(|| "it has no replica".to_owned(), |e| e.to_string());
    Err(ErrorObject::new(ErrorCode::INTERNAL_ERROR, format!("server `{}` could not be reached: {why}", spec.name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(server: &str, kind: Kind, member: &str, names: &[&str]) -> (String, BTreeMap<Kind, Vec<Value>>) {
        let entries = names.iter().map(|n| json!({ member: n })).collect();
        (server.to_owned(), BTreeMap::from([(kind, entries)]))
    }

    fn spec(name: &str) -> UpstreamSpec {
        toml::from_str(&format!("name = \"{name}\"\n[[replicas]]\nstdio = \"true\"\n")).expect("a server")
    }

    #[test]
    fn a_log_message_names_its_server_in_logger() {
        let mut named = json!({ "level": "info", "logger": "db", "data": "x" });
        name_logger(&mut named, "fixture");
        assert_eq!(named, json!({ "level": "info", "logger": "fixture/db", "data": "x" }));
        for mut anonymous in
            [json!({ "level": "info", "data": "x" }), json!({ "level": "info", "logger": "", "data": 1 })]
        {
            name_logger(&mut anonymous, "fixture");
            assert_eq!(anonymous["logger"], "fixture");
        }
    }

    #[test]
    fn upstreams_are_asked_for_the_most_verbose_level_any_agent_set() {
        let mut proxied = Proxied::default();
        assert_eq!(proxied.lower_log_floor(LogLevel::Warning), Some(LogLevel::Warning));
        assert_eq!(proxied.lower_log_floor(LogLevel::Error), None, "warning already covers error");
        assert_eq!(proxied.lower_log_floor(LogLevel::Debug), Some(LogLevel::Debug));
        assert_eq!(proxied.lower_log_floor(LogLevel::Info), None, "never less verbose again");
    }

    #[test]
    fn a_completion_ref_names_a_prompt_or_a_resource_template() {
        let prompt =
            json!({ "ref": { "type": "ref/prompt", "name": "greet" }, "argument": { "name": "a", "value": "" } });
        assert_eq!(completion_ref(&prompt).unwrap(), (Kind::Prompts, "name", "greet"));
        let template = json!({ "ref": { "type": "ref/resource", "uri": "a__file:///{path}" } });
        assert_eq!(completion_ref(&template).unwrap(), (Kind::Templates, "uri", "a__file:///{path}"));
        for bad in [
            json!({}),
            json!({ "ref": { "type": "ref/tool", "name": "x" } }),
            json!({ "ref": { "type": "ref/prompt" } }),
        ] {
            assert_eq!(completion_ref(&bad).unwrap_err().code(), ErrorCode::INVALID_PARAMS, "{bad}");
        }
    }

    #[test]
    fn a_completion_routes_by_the_prefixed_name_to_its_server() {
        let servers = [spec("a"), spec("b")];
        let mut proxied = Proxied::default();
        for (server, listed) in
            [names("a", Kind::Prompts, "name", &["greet", "only_a"]), names("b", Kind::Prompts, "name", &["greet"])]
        {
            proxied.set(&servers, &server, listed, PrefixMode::Conditional);
        }
        let mut listed = names("b", Kind::Prompts, "name", &["greet"]).1;
        listed.extend(names("b", Kind::Templates, "uriTemplate", &["file:///{path}"]).1);
        proxied.set(&servers, "b", listed, PrefixMode::Conditional);
        let origin = |server: &str, name: &str| Some(Origin { server: server.to_owned(), name: name.to_owned() });
        assert_eq!(proxied.resolve(Kind::Prompts, "b__greet"), origin("b", "greet"));
        assert_eq!(proxied.resolve(Kind::Prompts, "only_a"), origin("a", "only_a"));
        assert_eq!(proxied.resolve(Kind::Prompts, "greet"), None, "a colliding name is only known prefixed");
        assert_eq!(proxied.resolve(Kind::Templates, "file:///{path}"), origin("b", "file:///{path}"));
    }
}
