//! `tools` and `call`: the same core the gateway uses, pointed at any MCP server.

use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use mcpstorm_core::{
    AuthScheme, CallError, CallOptions, ClientConfig, Credential, Dialer, HttpEndpoint, LocalError, McpClient,
    Observer, Secret, SeededRng, StdioDialer, TcpDialer, TracingObserver, TransportError, error::LifecycleError,
};
use serde_json::Value;

use super::Failure;
use super::authorize::{ClientIdentity, UserAuth};
use super::elicit::{self, ElicitMode};
use super::out::outln;
use super::terminal::{Bound, show};
use mcpstorm_core::session::EraMode;

/// Which server to talk to.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct Target {
    /// Start the server as a child process and speak MCP over its stdio, e.g. --stdio "python3 server.py".
    #[arg(long, value_name = "COMMAND")]
    pub stdio: Option<String>,
    /// Connect to a server speaking newline-delimited MCP over TCP.
    #[arg(long, value_name = "HOST:PORT")]
    pub tcp: Option<String>,
    /// Speak MCP Streamable HTTP (2025-11-25 sessions or 2026-07-28 stateless, detected) to the endpoint at URL,
    /// e.g. --http https://example.com/mcp.
    #[arg(long, value_name = "URL")]
    pub http: Option<String>,
}

#[derive(Debug, Args)]
pub struct ServerArgs {
    #[command(flatten)]
    pub target: Target,
    /// First-response timeout in seconds (the call's first phase), more than 0 and at most 86400 (a day).
    #[arg(long, default_value_t = 30.0)]
    pub timeout: f64,
    /// Reconnect attempts after a failed connect or handshake (backoff 1, 2, 4, 8 s ±20%), at most 100.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=MAX_RETRIES))]
    pub retries: u32,
    /// Print raw JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// A credential for servers that declare auth schemes (the mcpstorm session extension): the scheme
    /// (`bearer`, `api-key`, `mcp-jwt`) and the environment variable holding the secret, never the secret itself
    /// (command lines are visible to other users). Repeatable; the first the server accepts is used.
    #[arg(long = "auth", value_name = "SCHEME=ENV_VAR")]
    pub auth: Vec<String>,
    /// A header sent on every request to an --http server, its value read from an environment variable (never
    /// given on the command line), e.g. `--header Authorization=MCP_TOKEN` with MCP_TOKEN="Bearer ...". Repeatable.
    // `requires = "http"` is not enforced when a conflicting member of the group is present: name the conflicts.
    #[arg(long = "header", value_name = "NAME=ENV_VAR", conflicts_with_all = ["stdio", "tcp"])]
    pub headers: Vec<String>,
    /// With --retries: seeds the jitter of the reconnect backoff, the only random draw these commands make. Default:
    /// drawn from the OS and logged at debug level (`RUST_LOG=debug`), so a run can be replayed with the same draws.
    #[arg(long, requires = "retries")]
    pub seed: Option<u64>,
    /// With --http, against a server behind the MCP authorization spec (a 401 naming its metadata): the OAuth client
    /// id to use, pre-registered at its authorization server. Without it: a client ID metadata document
    /// (--oauth-client-metadata-url) where supported, else dynamic registration.
    #[arg(long, value_name = "ID", conflicts_with_all = ["stdio", "tcp"])]
    pub oauth_client_id: Option<String>,
    /// The environment variable holding the pre-registered client's secret (a confidential client).
    #[arg(long, value_name = "ENV_VAR", requires = "oauth_client_id")]
    pub oauth_client_secret_env: Option<String>,
    /// The URL of this client's metadata document, used as its client id where the server supports that.
    #[arg(long, value_name = "URL", conflicts_with_all = ["stdio", "tcp"])]
    pub oauth_client_metadata_url: Option<String>,
    /// The most tools a server's listing may hold (default 10,000); more is refused naming this flag.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub max_tools: Option<u64>,
    /// The most MiB a server's listing may take as JSON, all pages together (default 32).
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub max_tool_list_mib: Option<u64>,
}

#[derive(Debug, Args)]
#[command(after_help = "Exit codes: 0 when the tools are listed; 1 when the server cannot be reached or fails; 2 for \
bad input (arguments, a --stdio command that does not parse, an --http URL, a missing --auth variable).")]
pub struct ToolsArgs {
    #[command(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Args)]
#[command(after_help = "Exit codes: 0 when the tool returns a result; 1 when it returns an error result, or the \
server cannot be reached or fails; 2 for bad input (arguments that are not a JSON object or fail the tool's \
inputSchema, an unknown tool, a --stdio command that does not parse, an --http URL).")]
pub struct CallArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    /// Tool name.
    pub tool: String,
    /// Arguments as a JSON object.
    #[arg(default_value = "{}")]
    pub arguments: String,
    /// How to answer a form the server asks the user to fill mid-call (elicitation): `ask` on the terminal (the
    /// default when stdin is one), `decline` (the default otherwise), or `accept-defaults` (the form's defaults).
    #[arg(long, value_enum, value_name = "MODE")]
    pub elicit: Option<ElicitMode>,
}

/// How to reach the server: the dialer, and for `--http` the endpoint spoken to over its connections.
pub(super) struct Route {
    pub dialer: Arc<dyn Dialer>,
    pub http: Option<HttpEndpoint>,
}

impl Route {
    /// The server's name in messages: the URL for `--http` (it carries no credentials: the core refuses user info),
    /// else the dialer's description.
    pub fn describe(&self) -> String {
        self.http.as_ref().map_or_else(|| self.dialer.describe(), |e| e.url().to_owned())
    }

    /// A client over this route, with a wall clock for certificate validity and the given observer.
    pub fn client(self, config: ClientConfig, rng: SeededRng, observer: Arc<dyn Observer>) -> McpClient {
        let client = McpClient::new(self.describe(), self.dialer, config, rng)
            .with_clock(Arc::new(super::wall_clock()))
            .with_observer(observer);
        match self.http {
            Some(endpoint) => client.with_http(endpoint),
            None => client,
        }
    }
}

impl ServerArgs {
    /// The route for `--stdio`, `--tcp` or `--http`; an unparseable `--stdio` command, an unusable URL or a
    /// `--header` that cannot be sent is bad input.
    pub(super) fn route(&self) -> Result<Route, Failure> {
        let target = &self.target;
        if let Some(url) = &target.http {
            let endpoint = self.endpoint(url)?;
            return Ok(Route { dialer: Arc::new(endpoint.tcp_dialer()), http: Some(endpoint) });
        }
        let dialer: Arc<dyn Dialer> = match (&target.stdio, &target.tcp) {
            (Some(cmd), _) => {
                let words = shlex::split(cmd).filter(|w| !w.is_empty());
                let Some(mut words) = words else {
                    return Err(Failure::BadInput(format!("cannot parse --stdio command {cmd:?}")));
                };
                let program = words.remove(0);
                Arc::new(StdioDialer::new(program, words))
            }
            (None, Some(addr)) => Arc::new(TcpDialer { addr: addr.clone() }),
            (None, None) => return Err(Failure::BadInput("give --stdio, --tcp or --http".into())),
        };
        Ok(Route { dialer, http: None })
    }

    /// `--http URL` with every `--header`; without an `Authorization` header, the OAuth client that answers the
    /// server's 401 (`authorize.rs`).
    fn endpoint(&self, url: &str) -> Result<HttpEndpoint, Failure> {
        let mut endpoint = HttpEndpoint::new(url).map_err(|e| Failure::BadInput(format!("--http: {e}")))?;
        let has_authorization = self.headers.iter().any(|h| h.to_ascii_lowercase().starts_with("authorization="));
        if !has_authorization {
            let client_secret = match &self.oauth_client_secret_env {
                Some(var) => Some(Secret::new(std::env::var(var).map_err(|_| {
                    Failure::BadInput(format!("--oauth-client-secret-env: environment variable {var} is not set"))
                })?)),
                None => None,
            };
            let identity = ClientIdentity {
                client_id: self.oauth_client_id.clone(),
                client_secret,
                metadata_url: self.oauth_client_metadata_url.clone(),
            };
            let clock: Arc<dyn mcpstorm_core::Clock> = Arc::new(super::wall_clock());
            endpoint = endpoint.with_authorizer(Arc::new(UserAuth::new(url, identity, clock)));
        }
        for arg in &self.headers {
            let (name, value) = from_env("--header", arg, "NAME")?;
            // The error names the header, never its value.
            endpoint =
                endpoint.with_header(name, value).map_err(|e| Failure::BadInput(format!("--header {arg}: {e}")))?;
        }
        Ok(endpoint)
    }

    /// The client settings these flags ask for (`--timeout`, `--retries`).
    pub(super) fn config(&self) -> Result<ClientConfig, Failure> {
        let first_response = Some(self.timeout)
            .filter(|t| *t > 0.0 && *t <= MAX_TIMEOUT_SECS)
            .and_then(|t| Duration::try_from_secs_f64(t).ok())
            .ok_or_else(|| {
                Failure::BadInput(format!(
                    "--timeout must be more than 0 and at most {MAX_TIMEOUT_SECS} seconds (a day), got {:?}",
                    self.timeout
                ))
            })?;
        let credentials = self.auth.iter().map(|a| credential(a)).collect::<Result<Vec<_>, _>>()?;
        let mut config = ClientConfig { lifecycle_retries: self.retries, credentials, ..ClientConfig::default() };
        config.connection.first_response = first_response;
        // In range by the flags' parsers, so the conversions cannot fail on any platform we build for.
        if let Some(n) = self.max_tools.and_then(|n| usize::try_from(n).ok()) {
            config.max_tools = n;
        }
        if let Some(mib) = self.max_tool_list_mib.and_then(|m| usize::try_from(m << 20).ok()) {
            config.max_tool_list_bytes = mib;
        }
        Ok(config)
    }

    fn client(&self) -> Result<McpClient, Failure> {
        Ok(self.route()?.client(self.config()?, self.rng(), Arc::new(TracingObserver::quiet_close())))
    }

    /// The process's random stream: `--seed`, or a seed from the OS.
    pub(super) fn rng(&self) -> SeededRng {
        super::process_rng(self.seed)
    }
}

/// The longest `--timeout`: a day. Longer waits are no timeout at all, and far larger ones overflow the clock.
const MAX_TIMEOUT_SECS: f64 = 86_400.0;

/// The most `--retries`: with the backoff capped at 10 s, 100 retries wait about a quarter of an hour.
const MAX_RETRIES: i64 = 100;

/// `--auth SCHEME=ENV_VAR` → the credential, read from the environment.
fn credential(arg: &str) -> Result<Credential, Failure> {
    let (scheme, secret) = from_env("--auth", arg, "SCHEME")?;
    let scheme: AuthScheme = serde_json::from_value(serde_json::Value::String(scheme.to_owned())).map_err(|_| {
        Failure::BadInput(format!("--auth {arg}: unknown scheme {scheme:?}; use bearer, api-key or mcp-jwt"))
    })?;
    Ok(Credential { scheme, secret })
}

/// `flag KEY=ENV_VAR` → the key and the variable's value: how every secret reaches the command, since command lines
/// are visible to other users. Errors name the flag and the variable, never a value.
fn from_env<'a>(flag: &str, arg: &'a str, key: &str) -> Result<(&'a str, Secret), Failure> {
    let bad = |why: String| Failure::BadInput(format!("{flag} {arg}: {why}"));
    let (name, var) = arg.split_once('=').ok_or_else(|| bad(format!("expected {key}=ENV_VAR")))?;
    let value = std::env::var(var).map_err(|_| bad(format!("environment variable {var} is not set")))?;
    Ok((name, Secret::new(value)))
}

pub async fn tools(args: ToolsArgs) -> Result<(), Failure> {
    let client = args.server.client()?;
    let tools = client.list_tools().await.map_err(|e| failed(&client, &e))?;
    let session = client.session().await.map_err(|e| failed(&client, &e))?;
    client.close().await;
    if args.server.json {
        return outln!("{}", serde_json::to_string_pretty(&*tools).unwrap_or_default());
    }
    let info = &session.init.server_info;
    let name = |text: &str| show(text, Bound::NAME);
    let (server, version, protocol) = (name(&info.name), name(&info.version), name(&session.init.protocol_version));
    outln!("{server} {version} (protocol {protocol}): {} tools", tools.len())?;
    for t in tools.iter() {
        let hints: Vec<&str> =
            ["readOnlyHint", "idempotentHint", "destructiveHint"].into_iter().filter(|h| t.hint(h)).collect();
        // The first line of the description: a summary, as `--help` shows.
        let desc = name(t.description.as_deref().unwrap_or("").lines().next().unwrap_or(""));
        let hints = if hints.is_empty() { String::new() } else { format!(" [{}]", hints.join(", ")) };
        let signature = format!("{}({})", t.name, arguments(&t.input_schema));
        outln!("  {:<32} {desc}{hints}", name(&signature))?;
    }
    Ok(())
}

/// Most argument names a tool's line shows; the rest are counted (`tools --json` has the schema whole).
const MAX_ARGUMENTS: usize = 8;

/// A tool's argument names from its inputSchema's `properties`, optional ones marked `?`: `message, count?`.
fn arguments(schema: &Value) -> String {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return String::new() };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map_or(vec![], |r| r.iter().filter_map(Value::as_str).collect());
    let mut names: Vec<String> = props
        .keys()
        .take(MAX_ARGUMENTS)
        .map(|k| if required.contains(&k.as_str()) { k.clone() } else { format!("{k}?") })
        .collect();
    if props.len() > MAX_ARGUMENTS {
        names.push(format!("… {} more", props.len() - MAX_ARGUMENTS));
    }
    names.join(", ")
}

pub async fn call(args: CallArgs) -> Result<(), Failure> {
    let arguments: Value = serde_json::from_str(&args.arguments)
        .map_err(|e| Failure::BadInput(format!("arguments are not valid JSON ({e}): {}", args.arguments)))?;
    if !arguments.is_object() {
        return Err(Failure::BadInput(format!("arguments must be a JSON object, got {arguments}")));
    }
    let mut config = args.server.config()?;
    config.client_capabilities = elicit::capabilities();
    let mode = ElicitMode::resolve(args.elicit);
    // SDKs' ask-the-user calls (the Python SDK's `ctx.elicit`) need 2025-11-25's back-channel, as `mcpstorm gateway`
    // reasons for its `era`: a server that speaks both eras is spoken that one, so that its forms reach the user.
    // (A 2026-07-28-only server's input-required result is not answered: `call` says so, and `--json` prints it.)
    config.era_mode = EraMode::HandshakeFirst;
    let client = args.server.route()?.client(config, args.server.rng(), Arc::new(TracingObserver::quiet_close()));
    let (asks, answering) = elicit::answering(mode);
    let result =
        client.call_tool(&args.tool, arguments, CallOptions { asks: Some(asks), ..CallOptions::default() }).await;
    answering.abort();
    client.close().await;
    let result = result.map_err(|e| match e {
        CallError::Local(LocalError::UnknownTool(t)) => {
            Failure::BadInput(format!("{} has no tool {t:?} (see `mcpstorm tools`)", client.server()))
        }
        // Checked against the tool's inputSchema before sending: each line names the JSON pointer that failed.
        CallError::Local(LocalError::InvalidArguments(e)) => {
            // A violation quotes the server's schema (patterns, enum values) and the user's arguments.
            let lines: Vec<String> =
                e.violations.iter().map(|v| format!("  {}", show(&v.to_string(), Bound::ERROR))).collect();
            let more = if e.truncated { "\n  ..." } else { "" };
            Failure::BadInput(format!(
                "arguments do not match the inputSchema of {:?}:\n{}{more}",
                e.tool,
                lines.join("\n")
            ))
        }
        e => failed(&client, &e),
    })?;
    if result.extra.get("resultType").and_then(Value::as_str) == Some("input_required") && !args.server.json {
        return Err(Failure::Failed(format!(
            "{} asks for input the 2026-07-28 way (an input-required result), which `call` does not answer; \
             --json prints the questions",
            client.server()
        )));
    }
    if args.server.json {
        outln!("{}", serde_json::to_string_pretty(&result).unwrap_or_default())?;
    } else {
        outln!("{}", show(&result.joined_text(), Bound::TEXT))?;
    }
    if result.is_error {
        return Err(Failure::Failed(format!("tool {:?} returned an error result", args.tool)));
    }
    Ok(())
}

/// The HTTP status a refused request carried (the transport turns a 4xx into a JSON-RPC error with `httpStatus`).
fn http_status(e: &CallError) -> Option<u64> {
    let obj = match e {
        CallError::Protocol(obj) | CallError::Lifecycle(LifecycleError::InitializeRefused(obj)) => obj,
        _ => return None,
    };
    obj.data.as_ref()?.get("httpStatus")?.as_u64()
}

/// What a 404 from an --http endpoint most often means: the URL lacks the endpoint's path.
fn not_found_hint(url: &str) -> String {
    let path = url.split_once("://").map_or("", |(_, rest)| rest.find('/').map_or("", |i| &rest[i..]));
    if path.is_empty() || path == "/" {
        let base = url.trim_end_matches('/');
        format!(" (nothing is served at the root: MCP servers usually serve Streamable HTTP at /mcp; try {base}/mcp)")
    } else {
        format!(" (nothing is served at {path}: check the endpoint's path; MCP servers usually use /mcp)")
    }
}

/// A call's failure as one line; the error may quote the server (its message, its data). A transport that cannot
/// be configured is bad input: nothing was sent, and running the command again cannot help.
fn failed(client: &McpClient, e: &CallError) -> Failure {
    let mut line = show(&format!("{}: {} error: {e}", client.server(), e.class()), Bound::ERROR);
    if http_status(e) == Some(404) {
        line.push_str(&not_found_hint(client.server()));
    }
    match e {
        CallError::Transport(TransportError::Config(_)) => Failure::BadInput(line),
        _ => Failure::Failed(line),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn argument_names_mark_the_optional_ones() {
        let schema = json!({"type": "object", "properties": {"message": {}, "count": {}}, "required": ["message"]});
        let shown = arguments(&schema);
        assert!(shown.contains("message") && !shown.contains("message?") && shown.contains("count?"), "{shown}");
        assert_eq!(arguments(&json!({"type": "object"})), "");
        let many: serde_json::Map<String, Value> = (0..10).map(|i| (format!("a{i}"), json!({}))).collect();
        assert!(arguments(&json!({"properties": many})).ends_with("… 2 more"));
    }

    #[test]
    fn a_404_at_the_root_suggests_the_mcp_path() {
        assert!(not_found_hint("http://127.0.0.1:8000").contains("try http://127.0.0.1:8000/mcp"));
        assert!(not_found_hint("http://127.0.0.1:8000/").contains("try http://127.0.0.1:8000/mcp"));
        let deeper = not_found_hint("https://example.com/api/v1");
        assert!(deeper.contains("nothing is served at /api/v1") && !deeper.contains("try"), "{deeper}");
    }
}
