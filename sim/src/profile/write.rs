//! The measurement as a scenario file: one server with the measured tools, and a load that repeats the measurement
//! (the same calls, one at a time, with the same arguments), so that `mcpstorm sim` on it shows the server as it was
//! measured, and every fault and gateway setting can then be tried against it.

use std::fmt::Write as _;

use mcpstorm_fake::LatencyDist;
use serde_json::Value;

use super::fit::{SIMULATOR_CALL_MS, Shape};
use super::knee::Knee;
use super::measure::ToolProfile;
use super::quantile;
use crate::scenario::GATEWAY_CONFIG;

/// Everything a profile run learnt, and how it was started.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The command line, as the user can run it again.
    pub command: String,
    /// When, in UTC (real-time figures are quoted with their date).
    pub when: String,
    pub server_name: String,
    pub server_version: String,
    pub protocol: String,
    /// Over Streamable HTTP (the scenario's server then speaks it too).
    pub http: bool,
    pub tools: Vec<(ToolProfile, Shape)>,
    pub knee: Option<Knee>,
    /// Tools listed but not measured: not marked read-only (nothing asked for), or not named by `--tool`.
    pub skipped: Vec<String>,
    /// Why [`skipped`](Self::skipped) were not measured, as the console and the scenario's comment say it.
    pub skipped_why: &'static str,
}

/// How a tool's latency relates to the measured calls, as a comment.
fn simulator_call(s: &mut String) {
    let _ = writeln!(
        s,
        "# Each tool's latency is the measured call less {SIMULATOR_CALL_MS} ms, what the simulator adds to a call (a tick \
         for the\n# round trip, half a tick on average as it keeps whole milliseconds): simulated calls take what was \
         measured.\n"
    );
}

/// Why the tools not measured were left out, when `--tool` chose none.
pub const NOT_READ_ONLY: &str = "not marked readOnlyHint; measure one with --tool NAME";
/// Why the tools not measured were left out, when `--tool` chose the others.
pub const NOT_NAMED: &str = "not named by --tool";

/// A name the scenario format accepts (letters, digits, `_`, `-`), from what the server calls itself.
pub fn scenario_name(name: &str) -> String {
    let cleaned: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    let trimmed = cleaned.trim_matches('_');
    if trimmed.is_empty() { "server".to_owned() } else { trimmed.to_owned() }
}

/// The scenario file's text: its load repeats the per-tool measurement (each tool's calls, one at a time).
pub fn scenario_text(m: &Measured) -> String {
    let server = scenario_name(&m.server_name);
    let mut s = String::new();
    header(&mut s, m);
    s.push_str("# Run it: mcpstorm sim THIS_FILE. Its load repeats the measurement above.\n");
    simulator_call(&mut s);
    let total_calls: u64 = m.tools.iter().map(|(t, _)| t.calls).sum();
    let measured_ms: f64 = m.tools.iter().map(|(t, _)| t.latencies_ms.iter().sum::<f64>()).sum();
    // The closed loop ends after `calls`; the duration only bounds it (twice the measured time, at least 10 s).
    let duration_s = ((measured_ms * 2.0 / 1000.0).ceil() as u64).max(10);
    let names: Vec<&str> = m.tools.iter().map(|(t, _)| t.tool.name.as_str()).collect();
    let description = format!("{} as measured: {}", m.server_name, names.join(", "));
    top(&mut s, m, &format!("{server}_profile"), &description, duration_s);
    let _ =
        writeln!(s, "\n[load]\nmode = \"closed\"\nsessions = 1\nthink_time = \"0s\"\ncalls = {total_calls}\nhosts = 1");
    for (t, _) in &m.tools {
        mix(&mut s, &server, t, Some(t.calls.max(1)));
    }
    s
}

/// The concurrency sweep, repeated: the same tool at each step's calls in flight, through no gateway protection
/// (as `profile` called it). `None` without a sweep.
pub fn knee_text(m: &Measured) -> Option<String> {
    let knee = m.knee.as_ref()?;
    let (tool, _) = m.tools.iter().find(|(t, _)| t.tool.name == knee.tool)?;
    let server = scenario_name(&m.server_name);
    let mut s = String::new();
    header(&mut s, m);
    s.push_str("# Run it: mcpstorm sim THIS_FILE. Its sweep repeats the concurrency sweep above, one row per step\n");
    s.push_str("# (sweep.csv: ok_per_s, p50_ms, p99_ms against the live figures).\n\n");
    let calls = knee.steps.iter().map(|st| st.calls).max().unwrap_or(1);
    let live_s: f64 = knee.steps.iter().map(|st| st.seconds).sum();
    let duration_s = ((live_s * 3.0).ceil() as u64).saturating_add(10);
    let description = format!("{}: the concurrency sweep on {}", m.server_name, knee.tool);
    top(&mut s, m, &format!("{server}_knee"), &description, duration_s);
    s.push_str("\n# profile called the server directly: no gateway layer between, as the naive profile.\n");
    s.push_str("[gateway]\nprofile = \"naive\"\n");
    let _ = writeln!(s, "\n[load]\nmode = \"closed\"\nsessions = 1\nthink_time = \"0s\"\ncalls = {calls}\nhosts = 1");
    mix(&mut s, &server, tool, None);
    let values: Vec<String> = knee.steps.iter().map(|st| st.concurrency.to_string()).collect();
    let _ = writeln!(s, "\n[sweep]\nparam = \"load.sessions\"\nvalues = [{}]", values.join(", "));
    Some(s)
}

/// The top-level keys, the network and the server with its tools.
fn top(s: &mut String, m: &Measured, name: &str, description: &str, duration_s: u64) {
    keys(s, name, description, duration_s, None);
    server(s, m, &scenario_name(&m.server_name), 1);
}

/// The top-level keys (`gateway_config` naming `config` when given) and the network.
fn keys(s: &mut String, name: &str, description: &str, duration_s: u64, config: Option<&str>) {
    let _ = writeln!(s, "name = {}", toml_str(name));
    let _ = writeln!(s, "description = {}", toml_str(description));
    let _ = writeln!(s, "seed = 1\nduration = \"{duration_s}s\"");
    if let Some(config) = config {
        s.push_str("# The gateway's [gateway], [client] and each server's router declarations: the config's own.\n");
        let _ = writeln!(s, "{GATEWAY_CONFIG} = {}", toml_str(config));
    }
    s.push_str("\n# The measured latencies include the transport: the simulated network adds next to nothing.\n");
    s.push_str("[network]\nlatency = \"0s\"\n\n");
}

/// The server `name` as measured, `replicas` alike, with its tools.
fn server(s: &mut String, m: &Measured, name: &str, replicas: usize) {
    let _ = writeln!(s, "[[servers]]\nname = {}", toml_str(name));
    if replicas > 1 {
        let _ = writeln!(s, "replicas = {replicas}");
    }
    let _ = writeln!(s, "version = {}", toml_str(&m.server_version));
    match m.knee.as_ref().map(|k| (k.workers, k)) {
        Some((Some(w), k)) => {
            let _ = writeln!(s, "workers = {w}  # from the concurrency knee on {}", toml_str(&k.tool));
        }
        Some((None, k)) => {
            let top = k.steps.last().map_or(0, |st| st.concurrency);
            let _ = writeln!(s, "# workers: unbounded; the throughput still grew at {top} calls in flight");
        }
        None => {}
    }
    if m.http {
        s.push_str("transport = \"http\"\n");
    }
    for (t, shape) in &m.tools {
        tool_table(s, t, shape);
    }
}

/// One server of a gateway config, measured: its name there, its replicas, and what they answered (every replica's
/// calls pooled; the knee from its first replica).
#[derive(Debug, Clone)]
pub struct Upstream {
    pub name: String,
    pub replicas: usize,
    pub measured: Measured,
}

/// The scenario of a whole gateway config: a server per upstream, as measured, and a load that repeats every
/// measurement through the gateway, whose settings are the config's own: `gateway_config` names `config` (relative
/// to the scenario's directory).
pub fn config_scenario_text(config: &str, servers: &[Upstream]) -> String {
    let mut s = String::new();
    if let Some(first) = servers.first() {
        let _ =
            writeln!(s, "# Measured from a gateway config's servers by `mcpstorm profile` on {}:", first.measured.when);
        let _ = writeln!(s, "#   {}", one_line(&first.measured.command));
    }
    for up in servers {
        let _ = writeln!(
            s,
            "# {} ({} replica{}):",
            one_line(&up.name),
            up.replicas,
            if up.replicas == 1 { "" } else { "s" }
        );
        measurements(&mut s, &up.measured);
    }
    s.push_str("# Run it: mcpstorm sim THIS_FILE, with faults on top: add [[faults]] below, or\n");
    s.push_str("#   --set 'faults=[{ kind = \"crash\", target = \"NAME#0\", start = \"2s\", duration = \"3s\" }]'.\n");
    simulator_call(&mut s);
    let tools = servers.iter().flat_map(|up| up.measured.tools.iter().map(move |(t, _)| (up, t)));
    let total_calls: u64 = tools.clone().map(|(_, t)| t.calls).sum();
    let measured_ms: f64 = tools.clone().map(|(_, t)| t.latencies_ms.iter().sum::<f64>()).sum();
    let duration_s = ((measured_ms * 2.0 / 1000.0).ceil() as u64).max(10);
    let names: Vec<&str> = servers.iter().map(|up| up.name.as_str()).collect();
    let description = format!("the servers of {config} as measured: {}", names.join(", "));
    keys(&mut s, "gateway_profile", &description, duration_s, Some(config));
    for up in servers {
        server(&mut s, &up.measured, &up.name, up.replicas);
        s.push('\n');
    }
    let _ =
        writeln!(s, "[load]\nmode = \"closed\"\nsessions = 1\nthink_time = \"0s\"\ncalls = {total_calls}\nhosts = 1");
    for (up, t) in tools {
        mix(&mut s, &up.name, t, Some(t.calls.max(1)));
    }
    s
}

fn mix(s: &mut String, server: &str, t: &ToolProfile, weight: Option<u64>) {
    let _ = writeln!(s, "\n[[load.mix]]\nserver = {}\ntool = {}", toml_str(server), toml_str(&t.tool.name));
    if let Some(w) = weight {
        let _ = writeln!(s, "weight = {w}");
    }
    if let Some(args) = inline(&t.arguments).filter(|a| a != "{}") {
        let _ = writeln!(s, "args = {args}");
    }
}

fn header(s: &mut String, m: &Measured) {
    let _ = writeln!(s, "# Measured from a real server by `mcpstorm profile` on {}:", m.when);
    let _ = writeln!(s, "#   {}", one_line(&m.command));
    measurements(s, m);
}

/// What was measured of one server, as comments.
fn measurements(s: &mut String, m: &Measured) {
    let over = if m.http { "Streamable HTTP" } else { "its transport" };
    let _ = writeln!(
        s,
        "# Server {} {} (protocol {}), over {over}.",
        one_line(&m.server_name),
        one_line(&m.server_version),
        one_line(&m.protocol)
    );
    s.push_str("# Per tool, calls one at a time (latency of every answered call, in ms):\n");
    for (t, shape) in &m.tools {
        let v = &t.latencies_ms;
        let e = t.errors;
        let _ = writeln!(
            s,
            "#   {}: {} calls, p50 {:.3}, p90 {:.3}, p99 {:.3}, max {:.3}; errors {} ({} isError, {} JSON-RPC, {} \
             unanswered); shape {}",
            one_line(&t.tool.name),
            t.calls,
            quantile(v, 0.5),
            quantile(v, 0.9),
            quantile(v, 0.99),
            quantile(v, 1.0),
            e.total(),
            e.tool,
            e.jsonrpc,
            e.transport,
            shape_note(shape)
        );
    }
    if let Some(k) = &m.knee {
        let _ = writeln!(s, "# Concurrency sweep on {} (in flight: ok calls/s, p50, p99 ms):", one_line(&k.tool));
        for st in &k.steps {
            let _ = writeln!(
                s,
                "#   {:>4}: {:>9.1}/s  p50 {:.3}  p99 {:.3}",
                st.concurrency, st.throughput, st.p50_ms, st.p99_ms
            );
        }
    }
    if !m.skipped.is_empty() {
        let _ = writeln!(s, "# Not measured ({}): {}", m.skipped_why, one_line(&m.skipped.join(", ")));
    }
}

fn shape_note(shape: &Shape) -> String {
    let kind = match &shape.latency {
        LatencyDist::Fixed { .. } => "fixed (every call within 5% of the median)",
        LatencyDist::Lognormal { .. } => "lognormal (fits the calls)",
        _ => "empirical (measured quantiles)",
    };
    match shape.ks {
        Some(d) if d > shape.ks_critical => {
            format!("{kind}; a lognormal through p50 and p99 misses by {d:.3} > {:.3}", shape.ks_critical)
        }
        _ => kind.to_owned(),
    }
}

fn tool_table(s: &mut String, t: &ToolProfile, shape: &Shape) {
    let tool = &t.tool;
    let _ = writeln!(s, "\n[[servers.tools]]\nname = {}", toml_str(&tool.name));
    if let Some(title) = &tool.title {
        let _ = writeln!(s, "title = {}", toml_str(title));
    }
    if let Some(d) = &tool.description {
        let _ = writeln!(s, "description = {}", toml_str(d));
    }
    for (key, value) in [
        ("input_schema", Some(&tool.input_schema)),
        ("output_schema", tool.output_schema.as_ref()),
        ("annotations", tool.annotations.as_ref()),
    ] {
        if let Some(text) = value.and_then(inline) {
            let _ = writeln!(s, "{key} = {text}");
        }
    }
    if tool.output_schema.is_some() {
        // A tool that declares an output schema answers with structured content that matches it.
        s.push_str("structured_content = true\n");
    }
    let latency = toml::Value::try_from(&shape.latency).ok().and_then(|v| inline_toml(&v));
    if let Some(latency) = latency {
        let _ = writeln!(s, "latency = {latency}");
    }
    let rate = t.error_rate();
    if rate > 0.0 {
        let _ = writeln!(s, "error_rate = {:.4}", (rate * 10_000.0).round() / 10_000.0);
        if t.errors.jsonrpc > t.errors.tool {
            s.push_str("error_kind = \"jsonrpc\"\n");
        }
    }
}

/// JSON as an inline TOML value. TOML has no null: a member or element that is null is left out (a schema's
/// `"default": null` says no more than its absence).
fn inline(json: &Value) -> Option<String> {
    inline_toml(&to_toml(json)?)
}

fn inline_toml(v: &toml::Value) -> Option<String> {
    Some(v.to_string())
}

fn to_toml(json: &Value) -> Option<toml::Value> {
    Some(match json {
        Value::Null => return None,
        Value::Bool(b) => toml::Value::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => toml::Value::Integer(i),
            None => toml::Value::Float(n.as_f64()?),
        },
        Value::String(s) => toml::Value::String(s.clone()),
        Value::Array(a) => toml::Value::Array(a.iter().filter_map(to_toml).collect()),
        Value::Object(o) => toml::Value::Table(o.iter().filter_map(|(k, v)| Some((k.clone(), to_toml(v)?))).collect()),
    })
}

fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

/// Server-controlled text inside a comment: one line.
fn one_line(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}
