//! `tools` and `call`: the same core the gateway uses, pointed at any MCP server.

use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use mcpstorm_core::client::{ClientConfig, McpClient};
use mcpstorm_core::conn::CallOptions;
use mcpstorm_core::observe::TracingObserver;
use mcpstorm_core::rt::{Dialer, SeededRng, StdioDialer, TcpDialer};
use mcpstorm_core::session::ext::{AuthScheme, Credential, Secret};
use mcpstorm_core::{CallError, LocalError};
use serde_json::Value;

use super::Failure;

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
}

#[derive(Debug, Args)]
pub struct ServerArgs {
    #[command(flatten)]
    pub target: Target,
    /// First-response timeout in seconds (the call's first phase).
    #[arg(long, default_value_t = 30.0)]
    pub timeout: f64,
    /// Reconnect attempts after a failed connect or handshake (backoff 1, 2, 4, 8 s ±20%).
    #[arg(long, default_value_t = 0)]
    pub retries: u32,
    /// Print raw JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// A credential for servers that declare auth schemes (the mcpstorm session extension): the scheme
    /// (`bearer`, `api-key`, `mcp-jwt`) and the environment variable holding the secret, never the secret itself
    /// (command lines are visible to other users). Repeatable; the first the server accepts is used.
    #[arg(long = "auth", value_name = "SCHEME=ENV_VAR")]
    pub auth: Vec<String>,
    /// Seed of the client's random stream (reconnect backoff jitter). Default: drawn from the OS and logged at debug
    /// level (`RUST_LOG=debug`), so a run can be replayed with the same draws.
    #[arg(long)]
    pub seed: Option<u64>,
}

#[derive(Debug, Args)]
pub struct ToolsArgs {
    #[command(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Args)]
pub struct CallArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    /// Tool name.
    pub tool: String,
    /// Arguments as a JSON object.
    #[arg(default_value = "{}")]
    pub arguments: String,
}

impl ServerArgs {
    /// The dialer for `--stdio` or `--tcp`; an unparseable `--stdio` command is bad input.
    pub(super) fn dialer(&self) -> Result<Arc<dyn Dialer>, Failure> {
        match (&self.target.stdio, &self.target.tcp) {
            (Some(cmd), _) => {
                let words = shlex::split(cmd).filter(|w| !w.is_empty());
                let Some(mut words) = words else {
                    return Err(Failure::BadInput(format!("cannot parse --stdio command {cmd:?}")));
                };
                let program = words.remove(0);
                Ok(Arc::new(StdioDialer::new(program, words)))
            }
            (None, Some(addr)) => Ok(Arc::new(TcpDialer { addr: addr.clone() })),
            (None, None) => Err(Failure::BadInput("give --stdio or --tcp".into())),
        }
    }

    /// The client settings these flags ask for (`--timeout`, `--retries`).
    pub(super) fn config(&self) -> Result<ClientConfig, Failure> {
        if !(self.timeout.is_finite() && self.timeout > 0.0) {
            return Err(Failure::BadInput(format!("--timeout must be a positive number, got {}", self.timeout)));
        }
        let credentials = self.auth.iter().map(|a| credential(a)).collect::<Result<Vec<_>, _>>()?;
        let mut config = ClientConfig { lifecycle_retries: self.retries, credentials, ..ClientConfig::default() };
        config.connection.first_response = Duration::from_secs_f64(self.timeout);
        Ok(config)
    }

    fn client(&self) -> Result<McpClient, Failure> {
        let dialer = self.dialer()?;
        let config = self.config()?;
        let name = dialer.describe();
        Ok(McpClient::new(name, dialer, config, self.rng()).with_observer(Arc::new(TracingObserver::default())))
    }

    /// The process's random stream: `--seed`, or a seed from the OS.
    pub(super) fn rng(&self) -> SeededRng {
        super::process_rng(self.seed)
    }
}

/// `--auth SCHEME=ENV_VAR` → the credential, read from the environment. Errors name the variable, never a value.
fn credential(arg: &str) -> Result<Credential, Failure> {
    let bad = |why: String| Failure::BadInput(format!("--auth {arg}: {why}"));
    let (scheme, var) = arg.split_once('=').ok_or_else(|| bad("expected SCHEME=ENV_VAR".into()))?;
    let scheme: AuthScheme = serde_json::from_value(serde_json::Value::String(scheme.to_owned()))
        .map_err(|_| bad(format!("unknown scheme {scheme:?}; use bearer, api-key or mcp-jwt")))?;
    let secret = std::env::var(var).map_err(|_| bad(format!("environment variable {var} is not set")))?;
    Ok(Credential { scheme, secret: Secret::new(secret) })
}

pub async fn tools(args: ToolsArgs) -> Result<(), Failure> {
    let client = args.server.client()?;
    let tools = client.list_tools().await.map_err(|e| failed(&client, &e))?;
    let session = client.session().await.map_err(|e| failed(&client, &e))?;
    if args.server.json {
        println!("{}", serde_json::to_string_pretty(&*tools).unwrap_or_default());
    } else {
        let info = &session.init.server_info;
        println!("{} {} (protocol {}): {} tools", info.name, info.version, session.init.protocol_version, tools.len());
        for t in tools.iter() {
            let hints: Vec<&str> =
                ["readOnlyHint", "idempotentHint", "destructiveHint"].into_iter().filter(|h| t.hint(h)).collect();
            let desc = t.description.as_deref().unwrap_or("").lines().next().unwrap_or("");
            let hints = if hints.is_empty() { String::new() } else { format!(" [{}]", hints.join(", ")) };
            println!("  {:<32} {desc}{hints}", t.name);
        }
    }
    client.close().await;
    Ok(())
}

pub async fn call(args: CallArgs) -> Result<(), Failure> {
    let arguments: Value = serde_json::from_str(&args.arguments)
        .map_err(|e| Failure::BadInput(format!("arguments are not valid JSON ({e}): {}", args.arguments)))?;
    if !arguments.is_object() {
        return Err(Failure::BadInput(format!("arguments must be a JSON object, got {arguments}")));
    }
    let client = args.server.client()?;
    let result = client.call_tool(&args.tool, arguments, CallOptions::default()).await;
    client.close().await;
    let result = result.map_err(|e| match e {
        CallError::Local(LocalError::UnknownTool(t)) => {
            Failure::BadInput(format!("{} has no tool {t:?} (see `mcpstorm tools`)", client.server()))
        }
        // Checked against the tool's inputSchema before sending: each line names the JSON pointer that failed.
        CallError::Local(LocalError::InvalidArguments(e)) => {
            let lines: Vec<String> = e.violations.iter().map(|v| format!("  {v}")).collect();
            let more = if e.truncated { "\n  ..." } else { "" };
            Failure::BadInput(format!(
                "arguments do not match the inputSchema of {:?}:\n{}{more}",
                e.tool,
                lines.join("\n")
            ))
        }
        e => failed(&client, &e),
    })?;
    if args.server.json {
        println!("{}", serde_json::to_string_pretty(&result).unwrap_or_default());
    } else {
        println!("{}", result.joined_text());
    }
    if result.is_error {
        return Err(Failure::Failed(format!("tool {:?} returned an error result", args.tool)));
    }
    Ok(())
}

fn failed(client: &McpClient, e: &CallError) -> Failure {
    Failure::Failed(format!("{}: {} error: {e}", client.server(), e.class()))
}
