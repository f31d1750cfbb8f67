//! `diagnose`: layered checks against a real server, each pass/fail/skip with its timing and, on failure, a hint.
//!
//! | layer       | depends on         | what it checks                                                          |
//! |-------------|--------------------|-------------------------------------------------------------------------|
//! | `connect`   | -                  | the program starts (stdio) or the address accepts a connection (tcp)    |
//! | `handshake` | connect            | the era (`server/discover` probe, else `initialize`) and the version    |
//! | `version`   | handshake          | the server's version is one we speak                                    |
//! | `tools`     | version            | `tools/list` (every page), and every input/output schema compiles       |
//! | `auth`      | version            | the schemes the server declares, and whether a configured credential fits |
//! | `ping`      | version            | a few `ping`s (modern: `server/discover`): min/median/max round trip    |
//! | `call`      | tools              | the `--call` sample: arguments checked locally first, then sent         |
//! | `renewal`   | tools              | a forced session renewal (servers granting sessions), then close, reconnect, detect the era again; era and tool list hash unchanged |
//!
//! A layer whose prerequisite failed is skipped; independent layers still run. The exit code is 0 when nothing
//! failed, 1 when a check failed and 2 on bad input (an unparseable `--stdio`, `--call` arguments that are not a JSON
//! object), which is caught before anything is dialled.

mod report;

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use clap::Args;
use mcpstorm_core::jsonrpc::ErrorCode;
use mcpstorm_core::mcp::{InitializeResult, method};
use mcpstorm_core::session::Era;
use mcpstorm_core::{
    AuthScheme, CallError, CallOptions, Capabilities, ClientConfig, ConnectionStats, DialFuture, Dialer, Event,
    LifecycleError, LocalError, McpClient, Observer, Session, TracingObserver, TransportError, session,
};
use serde_json::{Value, json};
use tokio::time::Instant;

use self::report::{Check, Report};
use super::Failure;
use super::out::outln;
use super::peer::ServerArgs;

#[derive(Debug, Args)]
pub struct DiagnoseArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    /// Also call TOOL with JSON arguments (checked against its inputSchema first; invalid ones are not sent).
    #[arg(long, num_args = 2, value_names = ["TOOL", "JSON"])]
    pub call: Option<Vec<String>>,
    /// How many pings to time.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub pings: u32,
}

pub async fn run(args: DiagnoseArgs) -> Result<(), Failure> {
    let sample = sample_call(args.call.as_deref())?;
    let dialer = args.server.dialer()?;
    let config = args.server.config()?;
    let target = dialer.describe();
    let probe =
        Probe { dialer: Arc::new(TimedDialer { inner: dialer, last: Mutex::new(None) }), pages: Arc::default() };
    let client = McpClient::new(target.clone(), probe.dialer.clone(), config.clone(), args.server.rng())
        .with_observer(probe.pages.clone());
    let checks = Diagnosis { client: &client, config: &config, probe: &probe, args: &args }.run(sample).await;
    client.close().await;

    let report = Report::new(target, checks);
    if args.server.json {
        outln!("{}", serde_json::to_string_pretty(&report).unwrap_or_default())?;
    } else {
        let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        outln!("{}", report.render(color).trim_end_matches('\n'))?;
    }
    match report.failed() {
        0 => Ok(()),
        1 => Err(Failure::Failed("1 check failed".into())),
        n => Err(Failure::Failed(format!("{n} checks failed"))),
    }
}

/// `--call TOOL JSON`, parsed before anything is dialled: arguments must be a JSON object.
fn sample_call(call: Option<&[String]>) -> Result<Option<(String, Value)>, Failure> {
    let Some([tool, arguments]) = call else {
        return Ok(None);
    };
    let value: Value = serde_json::from_str(arguments)
        .map_err(|e| Failure::BadInput(format!("--call arguments are not valid JSON ({e}): {arguments}")))?;
    if !value.is_object() {
        return Err(Failure::BadInput(format!("--call arguments must be a JSON object, got {value}")));
    }
    Ok(Some((tool.clone(), value)))
}

/// What the client is wrapped in so the layers can be told apart: the dial's own timing, and `tools/list` pages.
struct Probe {
    dialer: Arc<TimedDialer>,
    pages: Arc<PageCounter>,
}

/// Times each dial, so the connect layer is measured apart from the handshake that follows it in `session()`.
#[derive(Debug)]
struct TimedDialer {
    inner: Arc<dyn Dialer>,
    last: Mutex<Option<Duration>>,
}

impl TimedDialer {
    fn take_last(&self) -> Option<Duration> {
        self.last.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

impl Dialer for TimedDialer {
    fn dial(&self) -> DialFuture<'_> {
        Box::pin(async move {
            let started = Instant::now();
            let stream = self.inner.dial().await;
            *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(started.elapsed());
            stream
        })
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}

/// Counts finished `tools/list` requests (the pages of a listing); everything goes on to the log as usual.
#[derive(Debug)]
struct PageCounter(AtomicU64, TracingObserver);

impl Default for PageCounter {
    fn default() -> Self {
        PageCounter(AtomicU64::new(0), TracingObserver::quiet_close())
    }
}

impl PageCounter {
    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl Observer for PageCounter {
    fn event(&self, event: &Event<'_>) {
        if let Event::RequestFinished { method: method::TOOLS_LIST, .. } = event {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
        self.1.event(event);
    }
}

struct Diagnosis<'a> {
    client: &'a McpClient,
    config: &'a ClientConfig,
    probe: &'a Probe,
    args: &'a DiagnoseArgs,
}

/// Why the layers after a failed one were skipped.
fn skip_all(names: &[&'static str], why: &str) -> Vec<Check> {
    names.iter().map(|n| Check::skip(n, format!("skipped: {why}"))).collect()
}

impl Diagnosis<'_> {
    async fn run(&self, sample: Option<(String, Value)>) -> Vec<Check> {
        let mut checks = Vec::new();
        let session = match self.connect_and_handshake(&mut checks).await {
            Some(s) => s,
            None => {
                let done: Vec<&str> = checks.iter().map(|c| c.name).collect();
                let rest: Vec<&'static str> = LAYERS.iter().copied().filter(|l| !done.contains(l)).collect();
                let failed = checks.last().map_or("connect", |c| c.name);
                checks.extend(skip_all(&rest, &format!("{failed} failed")));
                return checks;
            }
        };
        let (tools, caps) = self.tools().await;
        checks.push(tools);
        checks.push(auth(&session.init, self.config));
        checks.push(self.ping(session.era).await);
        // Read before the renewal check replaces the connection: what this server sent on it so far.
        let seen = match &caps {
            Some(caps) => {
                checks.push(self.call(caps, sample).await);
                let seen = session.conn.stats();
                checks.push(self.renewal(session.era, caps).await);
                seen
            }
            None => {
                checks.extend(skip_all(&["call", "renewal"], "tools failed"));
                session.conn.stats()
            }
        };
        checks.push(anomalies(&seen));
        checks
    }

    /// Layers 1 to 3, which one `session()` performs together; `None` when any failed (the rest depend on them).
    async fn connect_and_handshake(&self, checks: &mut Vec<Check>) -> Option<Session> {
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

    /// Layer 4: the listing (all pages) and whether every schema compiles.
    async fn tools(&self) -> (Check, Option<Arc<Capabilities>>) {
        let before = self.probe.pages.get();
        let started = Instant::now();
        let result = self.client.capabilities().await;
        let took = started.elapsed();
        let pages = self.probe.pages.get() - before;
        let caps = match result {
            Ok(caps) => caps,
            Err(e) => {
                let hint = match &e {
                    CallError::Protocol(obj) if obj.code == ErrorCode::METHOD_NOT_FOUND.0 => {
                        "the server does not implement tools/list: does it declare the `tools` capability?"
                    }
                    CallError::MalformedResponse(_) => {
                        "the tools/list result is not valid MCP (each tool needs a name and an inputSchema object)"
                    }
                    _ => "tools/list failed: check the server's stderr and try `mcpstorm tools` with RUST_LOG=debug",
                };
                return (Check::fail("tools", Some(took), e.to_string(), hint), None);
            }
        };
        let count = caps.tools().len();
        let unusable: Vec<_> = caps.entries().filter_map(|t| t.schemas().err()).collect();
        let plural = |n: u64, word: &str| if n == 1 { format!("1 {word}") } else { format!("{n} {word}s") };
        let listed = format!("{} in {}", plural(count as u64, "tool"), plural(pages, "page"));
        let data = json!({
            "count": count,
            "pages": pages,
            "hash": caps.hash().to_hex(),
            "tools": caps.entries().map(|t| t.name()).collect::<Vec<_>>(),
            "unusable": unusable.iter().map(|e| json!({
                "tool": e.tool, "schema": e.schema.field(), "error": e.message,
            })).collect::<Vec<_>>(),
        });
        let check = if unusable.is_empty() {
            let all = if count == 0 { "the server lists no tools" } else { "every schema compiles" };
            Check::pass("tools", Some(took), format!("{listed}, {all}"))
        } else {
            Check::fail(
                "tools",
                Some(took),
                format!("{listed}, {} with a schema that does not compile", unusable.len()),
                "calls to these tools fail locally (their arguments cannot be checked): fix the schema on the \
                 server; a remote $ref or an unknown $schema draft is refused, never fetched",
            )
            .details(unusable.iter().map(|e| format!("{}: {}: {}", e.tool, e.schema.field(), e.message)).collect())
        };
        (check.data(data), Some(caps))
    }

    /// Layer 6: a few pings on the priority lane.
    async fn ping(&self, era: Era) -> Check {
        // The modern era has no `ping`; the client times `server/discover` instead.
        let (what, hint) = match era {
            Era::Legacy => {
                ("pings", "every MCP server must answer `ping` with an empty result, at any time after initialize")
            }
            Era::Modern => (
                "server/discover round trips (the modern era has no ping)",
                "a modern server must answer server/discover at any time, with the request's _meta envelope",
            ),
        };
        let started = Instant::now();
        let mut samples = Vec::new();
        for _ in 0..self.args.pings {
            match self.client.ping().await {
                Ok(rtt) => samples.push(rtt),
                Err(e) => {
                    return Check::fail(
                        "ping",
                        Some(started.elapsed()),
                        format!("round trip {} of {} failed: {e}", samples.len() + 1, self.args.pings),
                        hint,
                    );
                }
            }
        }
        samples.sort();
        let (min, max) = (samples[0], samples[samples.len() - 1]);
        let median = samples[samples.len() / 2];
        let fmt = |d: Duration| format!("{:.2}", report::ms(d));
        Check::pass(
            "ping",
            Some(started.elapsed()),
            format!("{} {what}: min {} / median {} / max {} ms", samples.len(), fmt(min), fmt(median), fmt(max)),
        )
        .data(json!({
            "count": samples.len(),
            "min_ms": report::ms(min),
            "median_ms": report::ms(median),
            "max_ms": report::ms(max),
        }))
    }

    /// Layer 7: the optional sample call. Arguments that fail the inputSchema are reported and never sent.
    async fn call(&self, caps: &Capabilities, sample: Option<(String, Value)>) -> Check {
        let Some((tool, arguments)) = sample else {
            return Check::skip("call", "no --call TOOL 'JSON' given");
        };
        if caps.tool(&tool).is_none() {
            let names: Vec<&str> = caps.entries().map(|t| t.name()).collect();
            return Check::fail(
                "call",
                None,
                format!("the server has no tool {tool:?}; not sent"),
                "tool names are case-sensitive; `mcpstorm tools` lists them",
            )
            .details(vec![format!("tools: {}", names.join(", "))]);
        }
        let started = Instant::now();
        let result = self.client.call_tool(&tool, arguments, CallOptions::default()).await;
        let took = Some(started.elapsed());
        match result {
            Ok(r) if !r.is_error => {
                Check::pass("call", took, format!("{tool} returned: {}", first_line(&r.joined_text())))
                    .data(json!({"sent": true, "result": r}))
            }
            Ok(r) => Check::fail(
                "call",
                took,
                format!("{tool} returned an error result: {}", first_line(&r.joined_text())),
                "the tool itself reported the failure (isError: true): check the arguments and the server's logs",
            )
            .data(json!({"sent": true, "result": r})),
            Err(CallError::Local(LocalError::InvalidArguments(e))) => {
                let mut details: Vec<String> = e.violations.iter().map(ToString::to_string).collect();
                if e.truncated {
                    details.push("...".into());
                }
                Check::fail(
                    "call",
                    took,
                    format!("arguments do not match the inputSchema of {tool:?}; not sent"),
                    "fix the values at the JSON pointers above (`mcpstorm tools --json` shows the inputSchema)",
                )
                .details(details)
                .data(json!({
                    "sent": false,
                    "violations": e.violations.iter().map(|v| json!({
                        "pointer": v.pointer, "keyword": v.keyword, "message": v.message,
                    })).collect::<Vec<_>>(),
                }))
            }
            Err(e @ CallError::Local(LocalError::UnusableSchema(_))) => Check::fail(
                "call",
                took,
                format!("{e}; not sent"),
                "the tool's schema does not compile (see the tools check), so its calls are never sent",
            ),
            Err(e) => {
                let hint = match &e {
                    CallError::Protocol(obj) if obj.code == ErrorCode::INVALID_PARAMS.0 => {
                        "the server rejected arguments that match its own inputSchema: its validation and its \
                         schema disagree"
                    }
                    CallError::Protocol(_) => "the server answered with a JSON-RPC error: see its message and logs",
                    CallError::MalformedResponse(_) => {
                        "the result is not valid MCP, or its structuredContent violates the tool's outputSchema"
                    }
                    CallError::Local(LocalError::FirstResponseTimeout(_) | LocalError::IdleTimeout(_)) => {
                        "the tool is slow or hung: raise --timeout if it is expected to take this long"
                    }
                    _ => "the connection failed during the call: check the server's stderr",
                };
                Check::fail("call", took, format!("{} error: {e}", e.class()), hint)
            }
        }
    }

    /// Layer 8: renew the session in place (when the server grants sessions), then close the connection, reconnect
    /// with a fresh handshake and re-list: the hash must not change. The era cache is cleared too, so the new
    /// connection settles its era from scratch (a `server/discover` probe, and `initialize` for a legacy server)
    /// instead of reusing the first connection's answer.
    async fn renewal(&self, era: Era, before: &Capabilities) -> Check {
        let started = Instant::now();
        let renewed = match self.client.renew_session().await {
            Ok(None) => "no session granted (plain MCP): nothing to renew".to_owned(),
            Ok(Some(grant)) => format!("session renewed in place ({} s TTL)", grant.ttl_ms / 1000),
            Err(e) => {
                return Check::fail(
                    "renewal",
                    Some(started.elapsed()),
                    format!("the server granted a session but refused to renew it: {e}"),
                    "the client replaces such sessions with new ones (a full handshake each time): implement \
                     mcpstorm/session/renew or grant longer TTLs",
                );
            }
        };
        let mut check = self.reconnect(era, before).await;
        check.summary = format!("{renewed}; {}", check.summary);
        check
    }

    /// The second half of layer 8: a fresh connection must settle on the same era and tool list.
    async fn reconnect(&self, era: Era, before: &Capabilities) -> Check {
        let old_conn = self.client.session().await.ok().map(|s| s.conn.id());
        let compiled = self.client.schema_compilations();
        let started = Instant::now();
        self.client.close().await;
        self.client.era_cache().invalidate(self.client.server());
        let session = match self.client.session().await {
            Ok(s) => s,
            Err(e) => {
                return Check::fail(
                    "renewal",
                    Some(started.elapsed()),
                    format!("could not reconnect: {e}"),
                    "the server accepted one session but not a second: does it serve a single connection, or exit \
                     after the first?",
                );
            }
        };
        let after = self.client.capabilities().await;
        let took = Some(started.elapsed());
        let after = match after {
            Ok(caps) => caps,
            Err(e) => {
                return Check::fail(
                    "renewal",
                    took,
                    format!("reconnected, but tools/list failed: {e}"),
                    "the second session behaves differently from the first: check the server's stderr",
                );
            }
        };
        let recompiled = self.client.schema_compilations() - compiled;
        let fresh = old_conn != Some(session.conn.id());
        let data = json!({
            "new_connection": fresh,
            "era_before": era,
            "era_after": session.era,
            "hash_before": before.hash().to_hex(),
            "hash_after": after.hash().to_hex(),
            "recompiled": recompiled,
        });
        let short = |caps: &Capabilities| caps.hash().to_hex()[..12].to_owned();
        if !fresh {
            return Check::fail(
                "renewal",
                took,
                "close() did not replace the connection",
                "mcpstorm bug: the session survived close(); please report it",
            )
            .data(data);
        }
        if session.era != era {
            return Check::fail(
                "renewal",
                took,
                format!("the era changed across sessions: {era} first, {} after reconnecting", session.era),
                "the server answers server/discover differently on a new connection: is it decided per connection \
                 by something other than the first request?",
            )
            .data(data);
        }
        if before.hash() == after.hash() {
            return Check::pass(
                "renewal",
                took,
                format!(
                    "new connection, era re-detected ({era}); tool list hash unchanged ({}…), {recompiled} schemas \
                     recompiled",
                    short(&after)
                ),
            )
            .data(data);
        }
        let names = |caps: &Capabilities| caps.entries().map(|t| t.name().to_owned()).collect::<Vec<_>>();
        let (old, new) = (names(before), names(&after));
        let mut details = vec![format!("hash before {}…, after {}…", short(before), short(&after))];
        let added: Vec<&String> = new.iter().filter(|n| !old.contains(n)).collect();
        let removed: Vec<&String> = old.iter().filter(|n| !new.contains(n)).collect();
        if !added.is_empty() {
            details.push(format!("added: {}", added.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")));
        }
        if !removed.is_empty() {
            details.push(format!("removed: {}", removed.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")));
        }
        if added.is_empty() && removed.is_empty() {
            details.push("same tool names: a description, schema or annotation differs".into());
        }
        Check::fail(
            "renewal",
            took,
            "the tool list changed across sessions",
            "the server lists different tools per session (generated descriptions, ordering, ids?): every renewal \
             then re-validates against a new schema; make the listing deterministic",
        )
        .details(details)
        .data(data)
    }
}

const LAYERS: [&str; 9] = ["connect", "handshake", "version", "tools", "auth", "ping", "call", "renewal", "anomalies"];

/// What the server sent that the protocol does not allow, as the connection counted it (the log shows only the
/// 1st, 10th, 100th, ... of each): frames that are not JSON-RPC and responses to ids never issued fail the check;
/// notifications dropped because their queue was full are the client's limit, reported but not failed.
fn anomalies(seen: &ConnectionStats) -> Check {
    let data = json!({
        "rejected_frames": seen.rejected_frames,
        "unknown_responses": seen.unknown_responses,
        "notifications_dropped": seen.notifications_dropped,
    });
    let mut parts = Vec::new();
    for (n, what) in [
        (seen.rejected_frames, "frames that are not JSON-RPC"),
        (seen.unknown_responses, "responses to ids never issued"),
        (seen.notifications_dropped, "notifications dropped (queue full)"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    if seen.rejected_frames + seen.unknown_responses == 0 {
        let summary = if parts.is_empty() { "none".to_owned() } else { parts.join(", ") };
        return Check::pass("anomalies", None, summary).data(data);
    }
    let hint = "the server wrote what JSON-RPC does not allow on this connection (a stdio server must write only \
                JSON-RPC messages on stdout: logs belong on stderr)";
    Check::fail("anomalies", None, parts.join(", "), hint).data(data)
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
    let addr = server.target.tcp.as_deref().unwrap_or("the address");
    match e {
        TransportError::SpawnFailed(_) => {
            let program = server.target.stdio.as_deref().and_then(shlex::split).and_then(|w| w.into_iter().next());
            let program = program.unwrap_or_default();
            Some(if on_path(&program) {
                format!("{program:?} was found but could not be started: is it executable?")
            } else {
                format!("is {program:?} on PATH? It was not found; give its full path or check the spelling")
            })
        }
        TransportError::ConnectFailed(_) if server.target.tcp.is_some() => {
            Some(format!("is the server listening on {addr}? (\"connection refused\" means nothing is)"))
        }
        TransportError::ConnectFailed(_) => {
            Some("the program started, but its stdin/stdout could not be attached".into())
        }
        TransportError::ConnectTimeout(_) => {
            Some(format!("is {addr} reachable? A wrong address or a firewall makes connects hang"))
        }
        _ => None,
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
            "the server refused initialize: its error message says why (a capability or version it requires?)".into()
        }
        CallError::Lifecycle(LifecycleError::MalformedInitialize(_)) => {
            "the initialize result is not valid MCP (it needs protocolVersion and serverInfo)".into()
        }
        _ => "the handshake failed: check the server's stderr, and run with RUST_LOG=debug for the wire events".into(),
    }
}

/// Layer 5: the schemes the server declares (the mcpstorm session extension's `io.mcpstorm/authSchemes`) and
/// whether a configured credential fits one; other auth-looking declarations are reported but not checked.
fn auth(init: &InitializeResult, config: &ClientConfig) -> Check {
    let meta = init.extra.get("_meta");
    if let Some(accepted) = session::auth_schemes(meta) {
        let names = |s: &[AuthScheme]| s.iter().map(<&str>::from).collect::<Vec<_>>().join(", ");
        let offered: Vec<AuthScheme> = config.credentials.iter().map(|c| c.scheme).collect();
        let data = json!({"accepted": names(&accepted), "offered": names(&offered)});
        return match session::pick_credential(&config.credentials, &accepted) {
            Some(c) => Check::pass(
                "auth",
                None,
                format!("server accepts {}; using a {} credential", names(&accepted), c.scheme),
            )
            .data(data),
            None => Check::fail(
                "auth",
                None,
                format!(
                    "server accepts {}, configured credentials: {}",
                    names(&accepted),
                    if offered.is_empty() { "none".to_owned() } else { names(&offered) }
                ),
                "every call will fail with MCP_AUTH_MISMATCH before it is sent: pass --auth SCHEME=ENV_VAR with a \
                 scheme the server accepts",
            )
            .data(data),
        };
    }
    let mut found = Vec::new();
    find_auth("capabilities", &init.capabilities, 3, &mut found);
    if let Some(meta) = meta {
        find_auth("_meta", meta, 1, &mut found);
    }
    if found.is_empty() {
        return Check::skip("auth", "server declares no auth schemes");
    }
    let declared: Vec<String> = found.iter().map(|(path, v)| format!("{path} = {v}")).collect();
    Check::skip("auth", "server declares auth in a form mcpstorm does not negotiate: not checked")
        .details(declared)
        .data(json!({"declared": found.into_iter().map(|(p, v)| json!({"at": p, "value": v})).collect::<Vec<_>>()}))
}

/// Keys mentioning auth, down to `depth` levels of objects.
fn find_auth(path: &str, value: &Value, depth: u32, found: &mut Vec<(String, Value)>) {
    let Some(map) = value.as_object() else {
        return;
    };
    for (key, v) in map {
        let here = format!("{path}.{key}");
        if key.to_ascii_lowercase().contains("auth") {
            found.push((here, v.clone()));
        } else if depth > 1 {
            find_auth(&here, v, depth - 1, found);
        }
    }
}

/// A result's first line, for a summary (the report bounds it when it is shown; `data.result` has it all).
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

/// Whether `program` names an existing file, directly (with a `/`) or in a PATH directory.
fn on_path(program: &str) -> bool {
    if program.is_empty() {
        return false;
    }
    if program.contains(std::path::MAIN_SEPARATOR) || program.contains('/') {
        return std::path::Path::new(program).is_file();
    }
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|dir| dir.join(program).is_file()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn init(capabilities: Value, meta: Option<Value>) -> InitializeResult {
        let mut v = json!({
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities,
            "serverInfo": {"name": "s", "version": "1"},
        });
        if let Some(m) = meta {
            v["_meta"] = m;
        }
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn auth_is_skipped_when_nothing_is_declared() {
        let c = auth(&init(json!({"tools": {"listChanged": true}}), None), &ClientConfig::default());
        assert_eq!(c.status, report::Status::Skip);
        assert_eq!(c.summary, "server declares no auth schemes");
    }

    #[test]
    fn auth_reports_declarations_in_capabilities_and_meta() {
        let c = auth(
            &init(
                json!({"tools": {}, "experimental": {"auth": {"schemes": ["bearer"]}}}),
                Some(json!({"io.example/authSchemes": ["api-key"], "other": 1})),
            ),
            &ClientConfig::default(),
        );
        assert_eq!(c.status, report::Status::Skip);
        assert_eq!(
            c.details,
            vec![
                r#"capabilities.experimental.auth = {"schemes":["bearer"]}"#.to_owned(),
                r#"_meta.io.example/authSchemes = ["api-key"]"#.to_owned(),
            ]
        );
    }

    #[test]
    fn auth_checks_declared_schemes_against_configured_credentials() {
        use mcpstorm_core::{Credential, Secret};
        let declared = init(json!({}), Some(json!({"io.mcpstorm/authSchemes": ["mcp-jwt", "api-key"]})));
        let with = |schemes: &[AuthScheme]| ClientConfig {
            credentials: schemes.iter().map(|&scheme| Credential { scheme, secret: Secret::new("s3cr3t") }).collect(),
            ..ClientConfig::default()
        };
        let ok = auth(&declared, &with(&[AuthScheme::Bearer, AuthScheme::ApiKey]));
        assert_eq!(ok.status, report::Status::Pass, "{}", ok.summary);
        assert_eq!(ok.summary, "server accepts mcp-jwt, api-key; using a api-key credential");
        let none = auth(&declared, &with(&[]));
        assert_eq!(none.status, report::Status::Fail);
        assert_eq!(none.summary, "server accepts mcp-jwt, api-key, configured credentials: none");
        let wrong = auth(&declared, &with(&[AuthScheme::Bearer]));
        assert_eq!(wrong.status, report::Status::Fail);
        for c in [ok, none, wrong] {
            assert!(!format!("{c:?}").contains("s3cr3t"), "a secret in the report: {c:?}");
        }
    }

    #[test]
    fn call_arguments_must_be_a_json_object() {
        let call = |args: &str| sample_call(Some(&["echo".to_owned(), args.to_owned()][..]));
        assert!(matches!(call("{"), Err(Failure::BadInput(m)) if m.contains("not valid JSON")));
        assert!(matches!(call("[1]"), Err(Failure::BadInput(m)) if m.contains("must be a JSON object")));
        assert!(matches!(call(r#"{"a": 1}"#), Ok(Some((t, v))) if t == "echo" && v == json!({"a": 1})));
        assert!(matches!(sample_call(None), Ok(None)));
    }

    #[test]
    fn program_lookup() {
        assert!(on_path("sh"));
        assert!(!on_path("mcpstorm-no-such-program-xyz"));
        assert!(!on_path("/nonexistent/dir/prog"));
        assert!(!on_path(""));
    }
}
