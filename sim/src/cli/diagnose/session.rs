//! Layers 1 to 3, which one `session()` performs together: connect, handshake, version; and the hints for their
//! failures.

use std::time::Duration;

use mcpstorm_core::Dialer;
use mcpstorm_core::session::Era;
use mcpstorm_core::{CallError, TransportError, error::LifecycleError};
use mcpstorm_core::{ClientConfig, Session};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::Diagnosis;
use super::report::Check;
use crate::cli::peer::ServerArgs;

impl Diagnosis<'_> {
    /// Layers 1 to 3, which one `session()` performs together; `None` when any failed (the rest depend on them).
    pub(super) async fn connect_and_handshake(&self, checks: &mut Vec<Check>) -> Option<Session> {
        let target = self.probe.dialer.describe();
        let started = Instant::now();
        let result = self.client.session().await;
        let total = started.elapsed();
        let dial = self.probe.dialer.take_last();
        let error = match result {
            Ok(session) => {
                let dial = dial.unwrap_or_default();
                checks.push(Check::pass("connect", Some(dial), target));
                checks.push(handshake_pass(&session, total.saturating_sub(dial)));
                checks.push(self.version(Some(&session), &session.init.protocol_version));
                return Some(session);
            }
            Err(e) => e,
        };
        if let Some(hint) = connect_hint(&self.args.server, &error) {
            checks.push(Check::fail("connect", Some(total), error.to_string(), hint));
            return None;
        }
        let dial = dial.unwrap_or_default();
        checks.push(Check::pass("connect", Some(dial), target));
        let handshake = total.saturating_sub(dial);
        match &error {
            CallError::Lifecycle(LifecycleError::VersionMismatch { theirs, .. }) => {
                // The server did answer: the handshake worked, the version is what failed.
                checks.push(Check::pass("handshake", Some(handshake), format!("server answered, offering {theirs}")));
                checks.push(self.version(None, theirs));
            }
            e => checks.push(Check::fail("handshake", Some(handshake), e.to_string(), handshake_hint(self.config, e))),
        }
        None
    }

    /// Layer 3. `session` is `None` when the client refused the server's answer (then `theirs` is what it offered).
    fn version(&self, session: Option<&Session>, theirs: &str) -> Check {
        let (modern, legacy) = (&self.config.modern_protocol_versions, &self.config.protocol_versions);
        let we_speak = format!("we speak {} (modern), {} (legacy)", modern.join(", "), legacy.join(", "));
        let mut data = json!({
            "server": theirs,
            "supported": {"modern": modern, "legacy": legacy},
        });
        let Some(session) = session else {
            return Check::fail(
                "version",
                None,
                format!("no common protocol version: server offers {theirs}; {we_speak}"),
                "upgrade the server's MCP SDK (or mcpstorm) so that both speak one version",
            )
            .data(data);
        };
        // The version asked for first in the era that was settled: the discover probe's, or initialize's.
        let ours = if session.era == Era::Modern { modern } else { legacy };
        let asked = ours.first().map_or("", String::as_str);
        data["era"] = json!(session.era);
        data["asked"] = json!(asked);
        let how = if theirs == asked { "the version we asked for".to_owned() } else { format!("we asked for {asked}") };
        let mut summary = format!("{theirs}, {how}; {we_speak}");
        if let Some(listed) = session.init.extra.get("supportedVersions").and_then(Value::as_array) {
            let listed: Vec<&str> = listed.iter().filter_map(Value::as_str).collect();
            summary.push_str(&format!("; server lists {}", listed.join(", ")));
            data["server_lists"] = json!(listed);
        }
        // The client only settles a session on a version it speaks; anything else is a client bug worth showing.
        if ours.iter().any(|v| v == theirs) {
            Check::pass("version", None, summary).data(data)
        } else {
            Check::fail("version", None, summary, "mcpstorm accepted a version it does not speak: please report it")
                .data(data)
        }
    }
}

fn handshake_pass(session: &Session, took: Duration) -> Check {
    let init = &session.init;
    let info = &init.server_info;
    let name = match (info.name.as_str(), info.version.as_str()) {
        ("", _) => "(no serverInfo)".to_owned(),
        (name, "") => name.to_owned(),
        (name, version) => format!("{name} {version}"),
    };
    let how = match session.era {
        Era::Legacy => "initialize",
        Era::Modern => "server/discover, no handshake",
    };
    Check::pass(
        "handshake",
        Some(took),
        format!("{name}, protocol {}, era {} ({how})", init.protocol_version, session.era),
    )
    .data(json!({
        "server": info,
        "protocol_version": init.protocol_version,
        "era": session.era,
        "capabilities": init.capabilities,
    }))
}

/// A hint when `error` means the connect layer failed (the server could not be started or reached), else `None`.
fn connect_hint(server: &ServerArgs, error: &CallError) -> Option<String> {
    let CallError::Transport(e) = error else {
        return None;
    };
    let network = server.target.tcp.as_deref().or(server.target.http.as_deref());
    let addr = network.unwrap_or("the address");
    match e {
        TransportError::SpawnFailed(_) => {
            let program = server.target.stdio.as_deref().and_then(shlex::split).and_then(|w| w.into_iter().next());
            Some(spawn_hint(&program.unwrap_or_default()))
        }
        TransportError::ConnectFailed(_) if network.is_some() => {
            Some(format!("is the server listening on {addr}? (\"connection refused\" means nothing is)"))
        }
        TransportError::ConnectFailed(_) => {
            Some("the program started, but its stdin/stdout could not be attached".into())
        }
        TransportError::ConnectTimeout(_) => {
            Some(format!("is {addr} reachable? A wrong address or a firewall makes connects hang"))
        }
        TransportError::Config(_) => Some("the URL cannot be used as it is: see the error".into()),
        _ => None,
    }
}

/// Why `program` could not be started, as far as the file system tells.
fn spawn_hint(program: &str) -> String {
    if on_path(program) {
        format!("{program:?} was found but could not be started: is it executable?")
    } else if is_path(program) {
        // A path is run as written, never looked up on PATH: asking about PATH would send the user the wrong way.
        format!("{program:?} does not exist (or is not a file): check the path")
    } else {
        format!("is {program:?} on PATH? It was not found; give its full path or check the spelling")
    }
}

fn handshake_hint(config: &ClientConfig, error: &CallError) -> String {
    match error {
        CallError::Transport(TransportError::Closed) => "the server closed the connection before answering \
            initialize: it may have crashed on startup (see its stderr above) or not be an MCP server"
            .into(),
        CallError::Transport(TransportError::HandshakeTimeout(_)) => format!(
            "no answer to initialize within {:?}: is this an MCP server speaking newline-delimited JSON-RPC, and \
             does it keep its logs off stdout?",
            config.handshake_timeout
        ),
        CallError::Lifecycle(LifecycleError::InitializeRefused(_)) => {
            "the server refused initialize: its error message above says why".into()
        }
        CallError::Lifecycle(LifecycleError::MalformedInitialize(_)) => {
            "the initialize result is not valid MCP (it needs protocolVersion and serverInfo)".into()
        }
        _ => "the handshake failed: check the server's stderr, and run with RUST_LOG=debug for the wire events".into(),
    }
}

/// Whether `program` names an existing file, directly (with a `/`) or in a PATH directory.
fn on_path(program: &str) -> bool {
    if program.is_empty() {
        return false;
    }
    if is_path(program) {
        return std::path::Path::new(program).is_file();
    }
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|dir| dir.join(program).is_file()))
}

/// Whether `program` is a path (run as written) rather than a name looked up on PATH.
fn is_path(program: &str) -> bool {
    program.contains(std::path::MAIN_SEPARATOR) || program.contains('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_lookup() {
        assert!(on_path("sh"));
        assert!(!on_path("mcpstorm-no-such-program-xyz"));
        assert!(!on_path("/nonexistent/dir/prog"));
        assert!(!on_path(""));
    }

    #[test]
    fn a_missing_path_is_not_asked_about_path() {
        let hint = spawn_hint("/nonexistent/dir/prog");
        assert!(hint.contains("does not exist") && !hint.contains("PATH"), "{hint}");
        assert!(spawn_hint("./no-such-prog").contains("check the path"));
        assert!(spawn_hint("mcpstorm-no-such-program-xyz").contains("on PATH"));
        assert!(spawn_hint("/").contains("does not exist"), "a directory is not a program");
    }
}
