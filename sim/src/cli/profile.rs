//! `mcpstorm profile`: measure a real server and write it as a scenario (see `crate::profile`).

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use mcpstorm_core::{McpClient, TracingObserver};
use serde_json::{Value, json};

use super::Failure;
use super::out::outln;
use super::peer::{ServerArgs, Target};
use super::terminal::{Bound, show};
use crate::profile::{self, Knee, Measured, ToolProfile, fit, measure::MeasureError, quantile};

mod config;

#[derive(Debug, Args)]
#[command(after_help = "Measures each tool one call at a time (latency distribution, error rate), then sweeps \
concurrency 1, 2, 4, … on one tool to find the server's knee, and writes a scenario whose server behaves alike and \
whose load repeats the measurement: `mcpstorm sim FILE`. Only tools the server marks readOnlyHint are called unless \
named with --tool, and a server that is not on this machine is refused without --i-own-this-server.

Exit codes: 0 when the scenario is written; 1 when the server cannot be reached or no call of a tool is answered; 2 \
for bad input (arguments, an unknown tool, arguments that fail a tool's inputSchema, a non-loopback target without \
--i-own-this-server, an existing --out without --force).")]
pub struct ProfileArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    /// Measure every server of this gateway config file (each replica as the gateway reaches it: its URL and
    /// headers, its command, its address) and write one scenario whose servers behave alike, whose load calls them
    /// all, and whose gateway settings are the file's own, by reference (`gateway_config`).
    #[arg(
        long = "config",
        value_name = "GATEWAY.toml",
        // One more way to name what to measure: in the group of --stdio, --tcp and --http, which needs exactly one.
        group = "Target",
        conflicts_with_all = ["headers", "auth", "timeout", "retries"]
    )]
    pub config: Option<PathBuf>,
    /// Where to write the scenario (TOML).
    #[arg(long, value_name = "FILE.toml")]
    pub out: PathBuf,
    /// Overwrite --out if it exists.
    #[arg(long)]
    pub force: bool,
    /// Measure this tool (repeatable). Default: every tool the server marks readOnlyHint, since each is called
    /// hundreds of times.
    #[arg(long = "tool", value_name = "NAME")]
    pub tools: Vec<String>,
    /// A tool's arguments as a JSON object, e.g. --args 'search={"q":"rust"}' (repeatable). Default: from its
    /// inputSchema (each required property's default, first example, const or first enum value, else its type's
    /// zero).
    #[arg(long = "args", value_name = "TOOL=JSON")]
    pub args: Vec<String>,
    /// Calls per tool, one at a time, after 3 warm-up calls.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(2..=100_000))]
    pub calls: u64,
    /// The concurrency sweep goes 1, 2, 4, … up to this many calls in flight, and stops early once the throughput
    /// falls (0: no sweep).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u64).range(0..=1024))]
    pub max_concurrency: u64,
    /// Calls per step of the sweep (at least four per call in flight).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub sweep_calls: u64,
    /// The tool the sweep calls. Default: the first measured tool.
    #[arg(long, value_name = "NAME")]
    pub knee_tool: Option<String>,
    /// Send the measurement's load to a server that is not on this machine's loopback. Only to your own server.
    #[arg(long)]
    pub i_own_this_server: bool,
}

/// Warm-up calls per tool, not counted.
const WARMUP: u64 = 3;

pub async fn run(args: ProfileArgs) -> Result<(), Failure> {
    let given = given_arguments(&args.args)?;
    if let Some(path) = &args.config {
        return config::run(path, &args, &given).await;
    }
    let knee_out = knee_path(&args.out);
    for path in [&args.out, &knee_out] {
        if path.exists() && !args.force {
            return Err(Failure::BadInput(format!("{} exists; pass --force to overwrite it", path.display())));
        }
    }
    if !args.i_own_this_server {
        local_only(&args.server.target).await?;
    }
    let mut config = args.server.config()?;
    let max_c = usize::try_from(args.max_concurrency).unwrap_or(usize::MAX);
    config.connection.max_in_flight = config.connection.max_in_flight.max(max_c);
    let client =
        Arc::new(args.server.route()?.client(config, args.server.rng(), Arc::new(TracingObserver::quiet_close())));
    let result = profile_with(&client, &Plan::of(&args, &given, max_c)).await;
    client.close().await;
    let measured = result?;
    let mut files = vec![(args.out.clone(), profile::scenario_text(&measured))];
    if let Some(text) = profile::knee_text(&measured) {
        files.push((knee_out, text));
    }
    let written = write_checked(files)?;
    if args.server.json {
        return outln!("{}", serde_json::to_string_pretty(&as_json(&measured, &written)).unwrap_or_default());
    }
    print(&measured, &written)
}

/// Writes each scenario once every one validates: what we write must run, so a profile that does not validate is
/// our bug, said before a file is left behind.
fn write_checked(files: Vec<(PathBuf, String)>) -> Result<Vec<PathBuf>, Failure> {
    for (path, text) in &files {
        crate::scenario::load_str(text, &path.display().to_string(), &[])
            .map_err(|e| Failure::Failed(format!("the measured scenario does not validate (a bug): {e}")))?;
    }
    for (path, text) in &files {
        std::fs::write(path, text).map_err(|e| Failure::Failed(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(files.into_iter().map(|(p, _)| p).collect())
}

/// What one server's measurement does: which tools, with which arguments, and the sweep.
struct Plan<'a> {
    /// The tools to measure; empty: every tool the server marks readOnlyHint.
    tools: Vec<String>,
    given: &'a [(String, Value)],
    knee_tool: Option<String>,
    calls: u64,
    /// The sweep's most calls in flight (0: no sweep), and its calls per step.
    max_concurrency: usize,
    sweep_calls: u64,
    /// Over Streamable HTTP.
    http: bool,
}

impl<'a> Plan<'a> {
    /// The flags' plan for the one server they name.
    fn of(args: &ProfileArgs, given: &'a [(String, Value)], max_concurrency: usize) -> Self {
        Plan {
            tools: args.tools.clone(),
            given,
            knee_tool: args.knee_tool.clone(),
            calls: args.calls,
            max_concurrency,
            sweep_calls: args.sweep_calls,
            http: args.server.target.http.is_some(),
        }
    }
}

/// `x.toml` → `x.knee.toml`: the sweep's scenario, beside the measurement's.
fn knee_path(out: &std::path::Path) -> PathBuf {
    let stem = out.file_stem().map_or_else(|| "profile".into(), |s| s.to_string_lossy().into_owned());
    out.with_file_name(format!("{stem}.knee.toml"))
}

async fn profile_with(client: &Arc<McpClient>, plan: &Plan<'_>) -> Result<Measured, Failure> {
    let given = plan.given;
    let failed = |e: &dyn std::fmt::Display| Failure::Failed(show(&format!("{}: {e}", client.server()), Bound::ERROR));
    let listed = client.list_tools().await.map_err(|e| failed(&e))?;
    let session = client.session().await.map_err(|e| failed(&e))?;
    let names: Vec<&str> = listed.iter().map(|t| t.name.as_str()).collect();
    for name in plan.tools.iter().chain(given.iter().map(|(n, _)| n)).chain(plan.knee_tool.iter()) {
        if !names.contains(&name.as_str()) {
            return Err(Failure::BadInput(show(
                &format!("{} has no tool {name:?}; it lists: {}", client.server(), names.join(", ")),
                Bound::ERROR,
            )));
        }
    }
    let chosen: Vec<_> = if plan.tools.is_empty() {
        listed.iter().filter(|t| t.hint("readOnlyHint")).collect()
    } else {
        listed.iter().filter(|t| plan.tools.contains(&t.name)).collect()
    };
    if chosen.is_empty() {
        return Err(Failure::BadInput(show(
            &format!(
                "{} marks no tool readOnlyHint, and profiling calls each tool hundreds of times: name the ones that \
                 are safe to call with --tool (it lists: {})",
                client.server(),
                names.join(", ")
            ),
            Bound::ERROR,
        )));
    }
    let mut tools = Vec::with_capacity(chosen.len());
    for tool in &chosen {
        let arguments = given
            .iter()
            .find(|(n, _)| *n == tool.name)
            .map_or_else(|| profile::sample_arguments(&tool.input_schema), |(_, a)| a.clone());
        let measured = profile::measure(client, tool, arguments, plan.calls, WARMUP)
            .await
            .map_err(|e| measure_failure(client, &tool.name, e))?;
        let shape = fit(&measured.latencies_ms);
        tools.push((measured, shape));
    }
    let knee = knee(client, plan, &tools).await?;
    let skipped = listed.iter().filter(|t| !chosen.iter().any(|c| c.name == t.name)).map(|t| t.name.clone()).collect();
    let info = &session.init.server_info;
    Ok(Measured {
        command: command_line(),
        when: now_utc(),
        server_name: info.name.clone(),
        server_version: info.version.clone(),
        protocol: session.init.protocol_version.clone(),
        http: plan.http,
        tools,
        knee,
        skipped,
        // Read-only or not, a tool `--tool` did not name was left out because it was not named.
        skipped_why: if plan.tools.is_empty() { profile::NOT_READ_ONLY } else { profile::NOT_NAMED },
    })
}

async fn knee(
    client: &Arc<McpClient>,
    plan: &Plan<'_>,
    tools: &[(ToolProfile, profile::Shape)],
) -> Result<Option<Knee>, Failure> {
    let max_c = plan.max_concurrency;
    let on = match &plan.knee_tool {
        Some(name) => tools.iter().find(|(t, _)| t.tool.name == *name),
        None => tools.first(),
    };
    let (Some((tool, _)), true) = (on, max_c > 0) else { return Ok(None) };
    profile::sweep(client, &tool.tool.name, &tool.arguments, max_c, plan.sweep_calls)
        .await
        .map(Some)
        .map_err(|e| measure_failure(client, &tool.tool.name, e))
}

fn measure_failure(client: &McpClient, tool: &str, e: MeasureError) -> Failure {
    match e {
        MeasureError::Arguments(why) => Failure::BadInput(show(
            &format!("arguments for {tool:?} fail its inputSchema ({why}); give some with --args '{tool}={{...}}'"),
            Bound::ERROR,
        )),
        MeasureError::NoAnswer(e) => {
            Failure::Failed(show(&format!("{}: no call of {tool:?} was answered: {e}", client.server()), Bound::ERROR))
        }
    }
}

/// `--args TOOL=JSON`, each a JSON object.
fn given_arguments(args: &[String]) -> Result<Vec<(String, Value)>, Failure> {
    args.iter()
        .map(|a| {
            let (tool, json) =
                a.split_once('=').ok_or_else(|| Failure::BadInput(format!("--args {a}: expected TOOL=JSON")))?;
            let value: Value = serde_json::from_str(json)
                .map_err(|e| Failure::BadInput(format!("--args {a}: not valid JSON ({e})")))?;
            if !value.is_object() {
                return Err(Failure::BadInput(format!("--args {a}: arguments must be a JSON object")));
            }
            Ok((tool.to_owned(), value))
        })
        .collect()
}

/// Refuses a --tcp or --http target that does not resolve to loopback addresses only: the measurement is load.
async fn local_only(target: &Target) -> Result<(), Failure> {
    let host_port = match (&target.tcp, &target.http) {
        (Some(addr), _) => addr.clone(),
        (None, Some(url)) => authority(url)?,
        (None, None) => return Ok(()),
    };
    let addrs: Vec<_> = tokio::net::lookup_host(host_port.as_str())
        .await
        .map_err(|e| Failure::BadInput(format!("cannot resolve {host_port}: {e}")))?
        .collect();
    if addrs.is_empty() || addrs.iter().any(|a| !a.ip().is_loopback()) {
        return Err(Failure::BadInput(format!(
            "{host_port} is not on this machine's loopback: profiling sends hundreds of calls and a concurrency \
             sweep; pass --i-own-this-server if it is yours"
        )));
    }
    Ok(())
}

/// `host:port` of an http(s) URL (the port defaulted by the scheme).
fn authority(url: &str) -> Result<String, Failure> {
    let bad = || Failure::BadInput(format!("--http {url}: not an http:// or https:// URL"));
    let (scheme, rest) = url.split_once("://").ok_or_else(bad)?;
    let default_port = match scheme {
        "http" => 80,
        "https" => 443,
        _ => return Err(bad()),
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let has_port = host
        .rsplit_once(':')
        .is_some_and(|(h, p)| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && !h.ends_with(':'));
    if host.is_empty() {
        return Err(bad());
    }
    Ok(if has_port && !host.ends_with(']') { host.to_owned() } else { format!("{host}:{default_port}") })
}

/// The command line as typed, quoted so that it runs again.
fn command_line() -> String {
    let words: Vec<String> =
        std::env::args()
            .enumerate()
            .map(|(i, a)| {
                if i == 0 { "mcpstorm".to_owned() } else { shlex::try_quote(&a).map_or(a.clone(), |q| q.into_owned()) }
            })
            .collect();
    words.join(" ")
}

/// Now, to the minute, in UTC: the measurement is real time, so the file says when.
fn now_utc() -> String {
    // A live command: the one place this process learns the time of day.
    #[allow(clippy::disallowed_methods)]
    let now = std::time::SystemTime::now();
    let text = humantime::format_rfc3339_seconds(now).to_string();
    text.get(..16).map_or(text.clone(), |m| format!("{} {} UTC", &m[..10], &m[11..]))
}

fn print(m: &Measured, written: &[PathBuf]) -> Result<(), Failure> {
    outln!(
        "{} {} (protocol {})",
        show(&m.server_name, Bound::NAME),
        show(&m.server_version, Bound::NAME),
        show(&m.protocol, Bound::NAME)
    )?;
    outln!("  {:<28} {:>6} {:>9} {:>9} {:>9} {:>7}  shape", "tool", "calls", "p50 ms", "p99 ms", "max ms", "errors")?;
    for (t, shape) in &m.tools {
        let v = &t.latencies_ms;
        let kind = match shape.latency {
            mcpstorm_fake::LatencyDist::Fixed { .. } => "fixed",
            mcpstorm_fake::LatencyDist::Lognormal { .. } => "lognormal",
            _ => "empirical",
        };
        outln!(
            "  {:<28} {:>6} {:>9.3} {:>9.3} {:>9.3} {:>6.1}%  {kind}",
            show(&t.tool.name, Bound::NAME),
            t.calls,
            quantile(v, 0.5),
            quantile(v, 0.99),
            quantile(v, 1.0),
            t.error_rate() * 100.0
        )?;
    }
    for (t, _) in m.tools.iter().filter(|(t, _)| t.error_rate() > 0.5) {
        let said = t.first_error.as_deref().and_then(|e| e.lines().next()).unwrap_or("");
        outln!(
            "warning: {} failed {:.0}% of its calls (first: {}): check its arguments (--args)",
            show(&t.tool.name, Bound::NAME),
            t.error_rate() * 100.0,
            show(said, Bound::ERROR)
        )?;
    }
    if let Some(k) = &m.knee {
        let steps: Vec<String> = k.steps.iter().map(|s| format!("{} → {:.0}/s", s.concurrency, s.throughput)).collect();
        outln!("knee on {}: {}", show(&k.tool, Bound::NAME), steps.join(", "))?;
        match k.workers {
            Some(w) => outln!("  saturates like a server with {w} workers")?,
            None => outln!("  no knee: the throughput still grew at the last step (raise --max-concurrency)")?,
        }
    }
    if !m.skipped.is_empty() {
        outln!("not measured ({}): {}", m.skipped_why, show(&m.skipped.join(", "), Bound::TEXT))?;
    }
    for path in written {
        let shown = path.display().to_string();
        let quoted = shlex::try_quote(&shown).map_or_else(|_| shown.clone(), |q| q.into_owned());
        outln!("wrote {shown}; run it: mcpstorm sim {quoted}")?;
    }
    Ok(())
}

fn as_json(m: &Measured, written: &[PathBuf]) -> Value {
    let tools: Vec<Value> = m
        .tools
        .iter()
        .map(|(t, shape)| {
            let v = &t.latencies_ms;
            json!({
                "tool": t.tool.name, "calls": t.calls, "arguments": t.arguments,
                "p50_ms": quantile(v, 0.5), "p90_ms": quantile(v, 0.9), "p99_ms": quantile(v, 0.99),
                "max_ms": quantile(v, 1.0), "error_rate": t.error_rate(),
                "errors": {"tool": t.errors.tool, "jsonrpc": t.errors.jsonrpc, "unanswered": t.errors.transport},
                "latency": shape.latency,
            })
        })
        .collect();
    let knee = m.knee.as_ref().map(|k| {
        json!({
            "tool": k.tool, "workers": k.workers,
            "steps": k.steps.iter().map(|s| json!({
                "concurrency": s.concurrency, "calls": s.calls, "ok": s.ok, "seconds": s.seconds,
                "throughput": s.throughput, "p50_ms": s.p50_ms, "p99_ms": s.p99_ms,
            })).collect::<Vec<_>>(),
        })
    });
    json!({
        "server": m.server_name, "version": m.server_version, "protocol": m.protocol, "when": m.when,
        "tools": tools, "knee": knee, "skipped": m.skipped, "skipped_why": m.skipped_why, "scenario": written.first().map(|p| p.display().to_string()),
        "knee_scenario": written.get(1).map(|p| p.display().to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_authority_of_a_url_gets_the_schemes_port() {
        assert_eq!(authority("http://127.0.0.1:9001/mcp").ok(), Some("127.0.0.1:9001".into()));
        assert_eq!(authority("https://example.com/mcp").ok(), Some("example.com:443".into()));
        assert_eq!(authority("http://localhost").ok(), Some("localhost:80".into()));
        assert_eq!(authority("http://[::1]:8080/mcp").ok(), Some("[::1]:8080".into()));
        assert_eq!(authority("http://[::1]/mcp").ok(), Some("[::1]:80".into()));
        assert!(authority("ftp://x").is_err() && authority("http://").is_err());
    }

    #[test]
    fn args_must_be_a_tool_and_a_json_object() {
        assert!(given_arguments(&["echo={\"message\":\"hi\"}".into()]).is_ok());
        assert!(given_arguments(&["echo".into()]).is_err());
        assert!(given_arguments(&["echo=[1]".into()]).is_err());
        assert!(given_arguments(&["echo={".into()]).is_err());
    }
}
