//! `diagnose`: layered checks against a real server, each pass/fail/skip with its timing and, on failure, a hint.
//!
//! | layer       | depends on         | what it checks                                                          |
//! |-------------|--------------------|-------------------------------------------------------------------------|
//! | `connect`   | -                  | the program starts (stdio) or the address accepts a connection (tcp, http) |
//! | `transport` | connect            | http only: each response's status, content type (JSON or SSE), session id, `MCP-Protocol-Version` |
//! | `handshake` | connect            | the era (`server/discover` probe, else `initialize`) and the version    |
//! | `version`   | handshake          | the server's version is one we speak                                    |
//! | `tools`     | version            | `tools/list` (every page), and every input/output schema compiles       |
//! | `auth`      | version            | the schemes the server declares, and whether a configured credential fits |
//! | `ping`      | version            | a few `ping`s (modern: `server/discover`): min/median/max round trip    |
//! | `call`      | tools              | the `--call` sample: arguments checked locally first, then sent         |
//! | `renewal`   | tools              | a forced session renewal, for servers that grant sessions (skipped for the others: nothing to renew) |
//! | `reconnect` | tools              | close, reconnect, detect the era again: era and tool list hash unchanged |
//!
//! A layer whose prerequisite failed is skipped; independent layers still run. The exit code is 0 when nothing
//! failed, 1 when a check failed and 2 on bad input (an unparseable `--stdio`, `--call` arguments that are not a JSON
//! object), which is caught before anything is dialled.
//!
//! One module per layer (`session` holds the first three, which one handshake performs), `probe` for what the client
//! is wrapped in to time them apart, `report` for the output.

mod anomalies;
mod auth;
mod call;
mod ping;
mod probe;
mod renewal;
mod report;
mod session;
mod tools;
mod transport;

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};

use clap::Args;
use mcpstorm_core::{ClientConfig, McpClient};
use serde_json::Value;

use self::anomalies::anomalies;
use self::auth::auth;
use self::call::sample_call;
use self::probe::{Probe, TimedDialer};
use self::report::{Check, Report, Status};
use super::Failure;
use super::out::outln;
use super::peer::{Route, ServerArgs};

#[derive(Debug, Args)]
#[command(after_help = "Exit codes: 0 when every layer passes (or is skipped); 1 when any check fails; 2 for bad \
input (arguments, a --stdio command that does not parse, an --http URL, a missing --auth variable).")]
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
    let route = args.server.route()?;
    let config = args.server.config()?;
    let target = route.describe();
    let http = route.http.is_some();
    let probe = Probe {
        dialer: Arc::new(TimedDialer { inner: route.dialer.clone(), last: Mutex::new(None) }),
        seen: Arc::default(),
    };
    let client =
        Route { dialer: probe.dialer.clone(), ..route }.client(config.clone(), args.server.rng(), probe.seen.clone());
    let mut checks = Diagnosis { client: &client, config: &config, probe: &probe, args: &args }.run(sample).await;
    if http {
        // Placed after connect, as the layer beneath the handshake; judged on every exchange of the run.
        let at = checks.iter().position(|c| c.name == "connect").map_or(0, |i| i + 1);
        let check = match checks.get(at.wrapping_sub(1)) {
            Some(connect) if connect.status == Status::Fail => Check::skip("transport", "skipped: connect failed"),
            _ => transport::transport(&probe.seen.exchanges),
        };
        checks.insert(at, check);
    }
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
                let renewal = self.renewal().await;
                let renewed = renewal.status != Status::Fail;
                checks.push(renewal);
                checks.push(match renewed {
                    true => self.reconnect(session.era, caps).await,
                    false => Check::skip("reconnect", "renewal failed"),
                });
                seen
            }
            None => {
                checks.extend(skip_all(&["call", "renewal", "reconnect"], "tools failed"));
                session.conn.stats()
            }
        };
        checks.push(anomalies(&seen));
        checks
    }
}

const LAYERS: [&str; 10] =
    ["connect", "handshake", "version", "tools", "auth", "ping", "call", "renewal", "reconnect", "anomalies"];
