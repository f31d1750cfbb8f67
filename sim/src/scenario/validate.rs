//! Semantic checks: everything serde cannot see. Every rule that fails adds an [`Issue`] naming the key path; the
//! loader turns paths into `file:line:column`. All issues are collected, never only the first.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::error::{Problem, ScenarioError};
use serde_json::Value;

use super::path::KeyPath;
use super::ranges::{self, MIN_TICK, Upper};
use super::target::{GATEWAY, GOSSIP, names, resolve_target};
use super::{DriftKind, Fault, FaultKind, LoadMode, Scenario, ServerSpec, SwarmSpec};
use mcpstorm_core::router::FormulaSpec;
use mcpstorm_fake::{ConfigError, DEFAULT_MAX_IN_FLIGHT, FakeServerConfig, Transport};

/// The most retries an agent may make per call: beyond it a run is all retries.
pub const MAX_RETRIES: u32 = ranges::MAX_ATTEMPTS as u32;

/// One failed rule: the key path (`load.mix[2].tool`) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Issue {
    pub(crate) path: String,
    pub(crate) message: String,
}

/// Checks a scenario built in code (no file to point into): every problem names its key, located at `origin`.
pub fn validate(scenario: &Scenario, origin: &str) -> Result<(), ScenarioError> {
    let issues = check(scenario);
    if issues.is_empty() {
        return Ok(());
    }
    Err(ScenarioError::Invalid(
        issues
            .into_iter()
            .map(|i| Problem {
                location: super::error::Location::Origin { origin: origin.to_owned() },
                key: Some(i.path),
                message: i.message,
            })
            .collect(),
    ))
}

struct Checker {
    issues: Vec<Issue>,
}

impl Checker {
    fn fail(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.issues.push(Issue { path: path.into(), message: message.into() });
    }

    fn positive(&mut self, path: &str, d: Duration) {
        if d.is_zero() {
            self.fail(path, "must be longer than 0");
        }
    }

    fn at_least_one(&mut self, path: &str, n: usize) {
        if n == 0 {
            self.fail(path, "must be at least 1");
        }
    }

    fn probability(&mut self, path: &str, p: f64) {
        if !(p.is_finite() && (0.0..=1.0).contains(&p)) {
            self.fail(path, format!("must be between 0 and 1, got {p}"));
        }
    }
}

/// Every rule, in file order. An empty result means the scenario is valid (sweep values aside: the loader expands
/// and checks each one, since that needs the file).
pub(crate) fn check(s: &Scenario) -> Vec<Issue> {
    let mut c = Checker { issues: Vec::new() };
    check_top(&mut c, s);
    check_servers(&mut c, &s.servers);
    check_load(&mut c, s);
    check_agent_and_client(&mut c, s);
    check_faults(&mut c, s);
    check_checks_and_sweep(&mut c, s);
    check_routing(&mut c, s);
    check_ranges(&mut c, s);
    for (path, message) in s.swarm.as_ref().map(SwarmSpec::problems).unwrap_or_default() {
        c.fail(path, message);
    }
    c.issues
}

/// The upper bounds of every duration and count ([`ranges`]): what keeps the run's arithmetic far from overflow.
fn check_ranges(c: &mut Checker, s: &Scenario) {
    for key in ranges::durations(s) {
        if key.upper != Upper::RunByOwnRule && key.value > key.upper.of(s) {
            c.fail(key.path, format!("must be at most {}, got {}", key.upper.describe(s), ranges::shown(key.value)));
        }
    }
    for key in ranges::counts(s) {
        if key.value > key.max {
            c.fail(key.path, format!("must be at most {}, got {}", ranges::number(key.max), ranges::number(key.value)));
        }
    }
}

fn check_top(c: &mut Checker, s: &Scenario) {
    if s.name.is_empty() {
        c.fail("name", "must not be empty");
    } else if s.name.starts_with('.') || !s.name.chars().all(|ch| ch.is_ascii_alphanumeric() || "_-.".contains(ch)) {
        c.fail(
            "name",
            format!("{:?} names the report directory: use only letters, digits, `_`, `-` and `.` (not first)", s.name),
        );
    }
    c.positive("duration", s.duration.0);
    c.positive("tick", s.tick.0);
    if !s.tick.0.is_zero() && s.tick.0 < MIN_TICK {
        c.fail("tick", format!("must be at least {} (every tick is executed), got {}", fmt(MIN_TICK), fmt(s.tick.0)));
    }
    c.probability("network.fail_rate", s.network.fail_rate);
    if let Some(max) = s.network.max_latency
        && max < s.network.latency
    {
        c.fail(
            "network.max_latency",
            format!(
                "must be at least network.latency ({}), got {}",
                super::units::format_duration(s.network.latency.0),
                super::units::format_duration(max.0)
            ),
        );
    }
}

fn check_servers(c: &mut Checker, servers: &[ServerSpec]) {
    if servers.is_empty() {
        c.fail("servers", "at least one server is needed");
    }
    let mut first_index: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, server) in servers.iter().enumerate() {
        let at = |field: &str| format!("servers[{i}].{field}");
        if server.name.is_empty() {
            c.fail(at("name"), "must not be empty");
        } else if server.name == GATEWAY {
            c.fail(at("name"), format!("{GATEWAY:?} is reserved: a clock_skew fault targets every load host by it"));
        } else if server.name.contains('#') {
            c.fail(at("name"), "must not contain `#` (faults use `name#i` for replica i)");
        } else if let Some(first) = first_index.get(server.name.as_str()) {
            c.fail(at("name"), format!("duplicate server name {:?} (also servers[{first}])", server.name));
        } else {
            first_index.insert(&server.name, i);
        }
        c.at_least_one(&at("replicas"), server.replicas);
        // The fake server's own checks, one tool at a time so that every bad tool is reported.
        // The fake's checks stop at the first problem, so each part is checked on its own: the server's fields
        // without tools, then every tool on a server with nothing else to complain about.
        let mut server_only = server.fake_config(0, 0);
        server_only.tools.clear();
        if server_only.name.is_empty() {
            server_only.name = "_".to_owned();
        }
        if let Err(ConfigError::Invalid { field, message }) = server_only.validate() {
            c.fail(at(&field), message);
        }
        let tool_base = FakeServerConfig {
            workers: None,
            max_in_flight_per_connection: DEFAULT_MAX_IN_FLIGHT,
            page_size: None,
            ..server_only
        };
        let mut tool_index: BTreeMap<&str, usize> = BTreeMap::new();
        for (t, tool) in server.tools.iter().enumerate() {
            let tool_at = |field: &str| format!("servers[{i}].tools[{t}].{field}");
            if let Some(first) = tool_index.get(tool.name.as_str()) {
                c.fail(tool_at("name"), format!("duplicate tool name {:?} (also tools[{first}])", tool.name));
            } else {
                tool_index.insert(&tool.name, t);
            }
            let one = FakeServerConfig { tools: vec![tool.clone()], ..tool_base.clone() };
            if let Err(ConfigError::Invalid { field, message }) = one.validate() {
                // The fake names fields `tools[0] "query": latency.p99_ms` (or `tools[0].name`).
                let prefix = format!("tools[0] {:?}: ", tool.name);
                let field = field
                    .strip_prefix(&prefix)
                    .or_else(|| field.strip_prefix("tools[0]."))
                    .map(str::to_owned)
                    .unwrap_or(field);
                // The fake stops at the tool's first problem; the latency is checked last, so check it here too.
                if !field.starts_with("latency.")
                    && let Err((latency_field, latency_message)) = tool.latency.validate()
                {
                    c.fail(tool_at(&field), message);
                    c.fail(tool_at(&format!("latency.{latency_field}")), latency_message);
                } else {
                    c.fail(tool_at(&field), message);
                }
            }
        }
    }
}

fn check_load(c: &mut Checker, s: &Scenario) {
    let load = &s.load;
    match load.mode {
        LoadMode::Closed => {
            match load.sessions {
                None => c.fail("load.sessions", "is required when mode = \"closed\""),
                Some(n) => c.at_least_one("load.sessions", n),
            }
            if load.rate.is_some() {
                c.fail("load.rate", "applies only to mode = \"open\" (a closed loop's rate follows from sessions)");
            }
        }
        LoadMode::Open => {
            match load.rate {
                None => c.fail("load.rate", "is required when mode = \"open\" (calls per second)"),
                Some(r) if !(r.is_finite() && r > 0.0) => {
                    c.fail("load.rate", format!("must be a number of calls per second > 0, got {r}"))
                }
                Some(_) => {}
            }
            if load.sessions.is_some() {
                c.fail("load.sessions", "applies only to mode = \"closed\" (an open loop has no sessions)");
            }
        }
    }
    if load.calls == Some(0) {
        c.fail("load.calls", "must be at least 1 (omit it to call until the end of the run)");
    }
    c.at_least_one("load.hosts", load.hosts);
    if load.mix.is_empty() {
        c.fail("load.mix", "needs at least one entry: what the agents call");
    }
    for (j, entry) in load.mix.iter().enumerate() {
        let at = |field: &str| format!("load.mix[{j}].{field}");
        if !(entry.weight.is_finite() && entry.weight > 0.0) {
            c.fail(at("weight"), format!("must be a finite number > 0, got {}", entry.weight));
        }
        if !entry.args.is_object() {
            c.fail(at("args"), "must be a table of arguments, e.g. { message = \"hi\" }");
        }
        let Some(name) = &entry.server else {
            if !s.servers.iter().any(|srv| srv.tools.iter().any(|t| t.name == entry.tool)) {
                c.fail(at("tool"), format!("no server offers a tool {:?}", entry.tool));
            }
            continue;
        };
        match s.servers.iter().find(|srv| &srv.name == name) {
            None => c.fail(at("server"), format!("no server is named {name:?}{}", names(&s.servers))),
            Some(server) => {
                if !server.tools.iter().any(|t| t.name == entry.tool) {
                    let tools: Vec<String> = server.tools.iter().map(|t| format!("{:?}", t.name)).collect();
                    c.fail(
                        at("tool"),
                        format!(
                            "server {:?} has no tool {:?} (it has {})",
                            server.name,
                            entry.tool,
                            if tools.is_empty() { "none".to_owned() } else { tools.join(", ") }
                        ),
                    );
                }
            }
        }
    }
}

fn check_agent_and_client(c: &mut Checker, s: &Scenario) {
    if s.agent.retry.retries() && s.agent.max_retries == 0 {
        let mode = serde_json::to_value(s.agent.retry).ok().and_then(|v| v.as_str().map(str::to_owned));
        c.fail("agent.max_retries", format!("must be at least 1 with retry = {:?}", mode.unwrap_or_default()));
    }
    if s.agent.backoff.0 > s.agent.backoff_cap.0 {
        c.fail("agent.backoff", "must not exceed agent.backoff_cap");
    }
    let client = &s.client;
    c.at_least_one("client.max_in_flight", client.max_in_flight);
    c.at_least_one("client.per_connection", client.per_connection);
    c.at_least_one("client.http_connections", client.http_connections);
    c.positive("client.queue_wait", client.queue_wait.0);
    c.positive("client.first_response", client.first_response.0);
    c.positive("client.connect_timeout", client.connect_timeout.0);
    c.positive("client.deadline", client.deadline.0);
    for (key, message) in s.gateway.layers().problems() {
        c.fail(key, message);
    }
}

fn check_faults(c: &mut Checker, s: &Scenario) {
    for (k, fault) in s.faults.iter().enumerate() {
        let at = |field: &str| format!("faults[{k}].{field}");
        let gateway = (fault.kind == FaultKind::ClockSkew && fault.target == GATEWAY)
            || (fault.kind == FaultKind::Partition && fault.target == GOSSIP);
        if fault.target == GOSSIP && !(s.gateway.gossip && s.load.hosts > 1) {
            c.fail(at("target"), "\"gossip\" needs [gateway] gossip = true and load.hosts > 1");
        }
        if !gateway && let Err(message) = resolve_target(&fault.target, &s.servers) {
            c.fail(at("target"), message);
        }
        check_window(c, s, k, fault);
        let kind: &str = fault.kind.as_ref();
        let allowed = allowed_keys(fault.kind);
        for (field, present) in present_keys(fault) {
            if present && !allowed.contains(&field) {
                let hint = owner_of(field).map(|o| format!(" (it belongs to {o})")).unwrap_or_default();
                c.fail(at(field), format!("does not apply to kind = {kind:?}{hint}"));
            }
        }
        match fault.kind {
            FaultKind::LatencySpike => {
                if fault.extra.is_none() && fault.multiplier.is_none() {
                    c.fail(at("kind"), "latency_spike needs `extra` (a duration), `multiplier` (>= 1), or both");
                }
                if let Some(extra) = fault.extra
                    && extra.0.is_zero()
                    && fault.multiplier.is_none()
                {
                    c.fail(at("extra"), "must be longer than 0 (or give a multiplier)");
                }
                if let Some(m) = fault.multiplier
                    && !(m.is_finite() && m >= 1.0)
                {
                    c.fail(at("multiplier"), format!("must be a finite number >= 1, got {m}"));
                }
            }
            FaultKind::ErrorBurst => match fault.rate {
                None => c.fail(at("kind"), "error_burst needs `rate`, the probability in [0, 1] a call fails"),
                Some(r) => c.probability(&at("rate"), r),
            },
            FaultKind::SchemaDrift => check_drift(c, s, k, fault),
            FaultKind::ClockSkew => {
                if fault.offset.is_none() && fault.drift.is_none() && fault.jump.is_none() {
                    c.fail(at("kind"), "clock_skew needs `offset`, `drift` or `jump` (or several)");
                }
                if let Some(d) = fault.drift
                    && !(d.is_finite() && d > -1.0 && d <= 10.0)
                {
                    c.fail(at("drift"), format!("must be a rate in (-1, 10] (0.02 = 2% fast), got {d}"));
                }
                if fault.reset && fault.duration.0.is_zero() {
                    c.fail(at("reset"), "needs a `duration`: the clock is reset when the fault ends");
                }
            }
            FaultKind::AuthRotation => match &fault.schemes {
                None => c.fail(at("kind"), "auth_rotation needs `schemes`, the schemes accepted from then on"),
                Some(list) if list.is_empty() => c.fail(at("schemes"), "must name at least one scheme"),
                Some(_) => {}
            },
            FaultKind::HttpStatus | FaultKind::StreamReset | FaultKind::SlowHeaders => check_http_fault(c, s, k, fault),
            FaultKind::Hang | FaultKind::Crash | FaultKind::Partition | FaultKind::SessionExpiry => {}
        }
    }
}

/// The HTTP faults act on the Streamable HTTP layer, so their target must speak it.
fn check_http_fault(c: &mut Checker, s: &Scenario, k: usize, fault: &Fault) {
    let at = |field: &str| format!("faults[{k}].{field}");
    if let Ok((server, _)) = resolve_target(&fault.target, &s.servers)
        && s.servers[server].transport != Transport::Http
    {
        let name = &s.servers[server].name;
        c.fail(at("target"), format!("{} needs an HTTP server: give {name:?} transport = \"http\"", fault.kind));
    }
    match fault.kind {
        FaultKind::HttpStatus => {
            match fault.status {
                None => c.fail(at("kind"), "http_status needs `status`, the HTTP status answered (400 to 599)"),
                Some(code) if !(400..=599).contains(&code) => {
                    c.fail(at("status"), format!("must be an error status, 400 to 599, got {code}"))
                }
                Some(_) => {}
            }
            if let Some(r) = fault.rate {
                c.probability(&at("rate"), r);
            }
        }
        FaultKind::StreamReset => match fault.rate {
            None => c.fail(at("kind"), "stream_reset needs `rate`, the probability in [0, 1] a stream is cut"),
            Some(r) => c.probability(&at("rate"), r),
        },
        _ => match fault.extra {
            Some(d) if !d.0.is_zero() => {}
            _ => c.fail(at("kind"), "slow_headers needs `extra`, how long each status line waits (longer than 0)"),
        },
    }
}

/// The fault's window: a positive duration that ends inside the run, or none at all for an instant fault.
fn check_window(c: &mut Checker, s: &Scenario, k: usize, fault: &Fault) {
    let at = |field: &str| format!("faults[{k}].{field}");
    if fault.kind.instant() {
        if !fault.duration.0.is_zero() {
            c.fail(at("duration"), format!("{} happens at an instant: give no duration", fault.kind));
        }
    } else if fault.kind != FaultKind::ClockSkew {
        c.positive(&at("duration"), fault.duration.0);
    }
    match fault.start.0.checked_add(fault.duration.0) {
        Some(end) if end <= s.duration.0 && (!fault.kind.instant() || end < s.duration.0) => {}
        // A zero-length run is reported once, at `duration`.
        _ if s.duration.0.is_zero() => {}
        _ if fault.kind.instant() => {
            c.fail(at("start"), format!("the fault happens at or after the end of the run ({})", fmt(s.duration.0)))
        }
        _ => c.fail(
            at("duration"),
            format!(
                "the fault ends at {} (start + duration), after the run ends ({})",
                fault.start.0.checked_add(fault.duration.0).map_or("never".into(), fmt),
                fmt(s.duration.0)
            ),
        ),
    }
}

fn check_drift(c: &mut Checker, s: &Scenario, k: usize, fault: &Fault) {
    let at = |field: &str| format!("faults[{k}].{field}");
    let Some(what) = fault.what else {
        c.fail(at("kind"), "schema_drift needs `what`: \"add_required\", \"replace\", \"rename\" or \"version\"");
        return;
    };
    let require = |c: &mut Checker, field: &str, present: bool, meaning: &str| {
        if !present {
            c.fail(at("what"), format!("what = {:?} needs `{field}` ({meaning})", what.as_ref()));
        }
    };
    let needs_tool = what != DriftKind::Version;
    require(c, "tool", fault.tool.is_some() || !needs_tool, "the tool that changes");
    match what {
        DriftKind::AddRequired => {
            require(c, "param", fault.param.as_deref().is_some_and(|p| !p.is_empty()), "the new parameter's name");
            require(c, "schema", fault.schema.is_some(), "its property schema, with a `default`");
        }
        DriftKind::Replace => {
            require(c, "schema", fault.schema.is_some(), "the tool's new input schema");
            if let Some(schema) = &fault.schema
                && schema.get("type").and_then(Value::as_str) != Some("object")
            {
                c.fail(at("schema"), format!("must be a JSON Schema with \"type\": \"object\", got {schema}"));
            }
        }
        DriftKind::Rename => require(c, "to", fault.to.as_deref().is_some_and(|t| !t.is_empty()), "the new name"),
        DriftKind::Version => require(c, "version", fault.version.is_some(), "the new serverInfo.version"),
    }
    for (field, present, applies) in [
        ("param", fault.param.is_some(), what == DriftKind::AddRequired),
        ("schema", fault.schema.is_some(), matches!(what, DriftKind::AddRequired | DriftKind::Replace)),
        ("to", fault.to.is_some(), what == DriftKind::Rename),
        ("version", fault.version.is_some(), what == DriftKind::Version),
        ("tool", fault.tool.is_some(), needs_tool),
    ] {
        if present && !applies {
            c.fail(at(field), format!("does not apply to what = {:?}", what.as_ref()));
        }
    }
    // The tool must exist on the target server as configured (drifts in one run do not chain renames).
    if let (Some(tool), Ok((server, _))) = (&fault.tool, resolve_target(&fault.target, &s.servers))
        && !s.servers[server].tools.iter().any(|t| &t.name == tool)
    {
        c.fail(at("tool"), format!("server {:?} has no tool {tool:?}", s.servers[server].name));
    }
}

/// Each optional fault key and whether it is given.
fn present_keys(f: &Fault) -> [(&'static str, bool); 17] {
    [
        ("status", f.status.is_some()),
        ("retry_after", f.retry_after.is_some()),
        ("extra", f.extra.is_some()),
        ("multiplier", f.multiplier.is_some()),
        ("rate", f.rate.is_some()),
        ("tool", f.tool.is_some()),
        ("what", f.what.is_some()),
        ("param", f.param.is_some()),
        ("schema", f.schema.is_some()),
        ("to", f.to.is_some()),
        ("version", f.version.is_some()),
        ("notify", f.notify),
        ("offset", f.offset.is_some()),
        ("drift", f.drift.is_some()),
        ("jump", f.jump.is_some()),
        ("reset", f.reset),
        ("schemes", f.schemes.is_some()),
    ]
}

const DRIFT_KEYS: [&str; 7] = ["tool", "what", "param", "schema", "to", "version", "notify"];
const SKEW_KEYS: [&str; 4] = ["offset", "drift", "jump", "reset"];

fn allowed_keys(kind: FaultKind) -> &'static [&'static str] {
    match kind {
        FaultKind::LatencySpike => &["extra", "multiplier"],
        FaultKind::ErrorBurst => &["rate"],
        FaultKind::SchemaDrift => &DRIFT_KEYS,
        FaultKind::ClockSkew => &SKEW_KEYS,
        FaultKind::AuthRotation => &["schemes"],
        FaultKind::HttpStatus => &["status", "rate", "retry_after"],
        FaultKind::StreamReset => &["rate"],
        FaultKind::SlowHeaders => &["extra"],
        FaultKind::Hang | FaultKind::Crash | FaultKind::Partition | FaultKind::SessionExpiry => &[],
    }
}

/// The kind a key belongs to, for the error message.
fn owner_of(field: &str) -> Option<&'static str> {
    match field {
        "extra" => Some("latency_spike, slow_headers"),
        "multiplier" => Some("latency_spike"),
        "rate" => Some("error_burst, http_status, stream_reset"),
        "status" | "retry_after" => Some("http_status"),
        "schemes" => Some("auth_rotation"),
        f if DRIFT_KEYS.contains(&f) => Some("schema_drift"),
        f if SKEW_KEYS.contains(&f) => Some("clock_skew"),
        _ => None,
    }
}

fn fmt(d: Duration) -> String {
    super::units::format_duration(d)
}

fn check_checks_and_sweep(c: &mut Checker, s: &Scenario) {
    if let Some(p99) = s.checks.p99_ms
        && !(p99.is_finite() && p99 >= 0.0)
    {
        c.fail("checks.p99_ms", format!("must be a number of milliseconds >= 0, got {p99}"));
    }
    if let Some(rate) = s.checks.error_rate {
        c.probability("checks.error_rate", rate);
    }
    if let Some(window) = s.checks.error_window_s
        && window > s.duration.0.as_secs()
    {
        let run = fmt(s.duration.0);
        c.fail("checks.error_window_s", format!("{window} s is longer than the run ({run}): it could never fail"));
    }
    let ratios = [
        ("checks.amplification_during_fault", s.checks.amplification_during_fault),
        ("checks.healthy_p99_ratio", s.checks.healthy_p99_ratio),
        ("checks.recovery_s", s.checks.recovery_s),
        ("checks.contrast_p99_ratio", s.checks.contrast_p99_ratio),
    ];
    for (key, limit) in ratios {
        if let Some(v) = limit
            && !(v.is_finite() && v >= 0.0)
        {
            c.fail(key, format!("must be a finite number >= 0, got {v}"));
        }
    }
    let windowed = [
        ("checks.amplification_during_fault", s.checks.amplification_during_fault.is_some()),
        ("checks.healthy_p99_ratio", s.checks.healthy_p99_ratio.is_some()),
        ("checks.recovery_s", s.checks.recovery_s.is_some()),
    ];
    for (key, set) in windowed {
        if set && !s.faults.iter().any(|f| !f.kind.instant()) {
            c.fail(key, "needs a fault with a duration: it is measured over the fault windows");
        }
    }
    let contrasted = [
        ("checks.contrast_p99_ratio", s.checks.contrast_p99_ratio.is_some()),
        ("checks.contrast_extra_errors", s.checks.contrast_extra_errors.is_some()),
    ];
    for (key, set) in contrasted {
        // Switched off (`contrast = "none"`): not judged, so nothing to refuse.
        if !set || s.report.contrast == Some(super::model::Contrast::Off) {
            continue;
        }
        if s.report.contrast.is_none() {
            c.fail(
                key,
                "needs `[report] contrast`: it compares this run with the other gateway profile's (with contrast = \
                 \"none\" it is not judged)",
            );
        } else if s.sweep.is_some() {
            c.fail(key, "is not evaluated in a sweep (its rows run without a contrast run)");
        }
    }
    let Some(sweep) = &s.sweep else { return };
    match KeyPath::parse(&sweep.param) {
        Err(e) => c.fail("sweep.param", e),
        Ok(path) if path.first_key() == Some("sweep") => c.fail("sweep.param", "a sweep cannot sweep itself"),
        Ok(_) => {}
    }
    if sweep.values.is_empty() {
        c.fail("sweep.values", "needs at least one value");
    }
    let mut seen = BTreeSet::new();
    for (i, value) in sweep.values.iter().enumerate() {
        let at = format!("sweep.values[{i}]");
        if matches!(value, toml::Value::Array(_) | toml::Value::Table(_)) {
            c.fail(at, format!("must be a single value (string, number or boolean), got {value}"));
        } else if !seen.insert(super::overrides::label(value)) {
            c.fail(at, format!("repeats {value}: each value is one run, labelled by the value"));
        }
    }
}

/// The gateway's routing settings and the servers' routing declarations.
fn check_routing(c: &mut Checker, s: &Scenario) {
    let g = &s.gateway;
    if let Err(e) = g.formula.parse::<FormulaSpec>() {
        c.fail("gateway.formula", e.to_string());
    }
    for (i, rule) in g.requirements.iter().enumerate() {
        if rule.argument.is_empty() {
            c.fail(format!("gateway.requirements[{i}].argument"), "must name a call argument");
        }
        if rule.attribute.is_empty() {
            c.fail(format!("gateway.requirements[{i}].attribute"), "must name a server capability");
        }
    }
    let r = &g.router;
    for (key, d) in r.durations() {
        c.positive(&format!("gateway.router.{key}"), d.0);
    }
    if r.failure_threshold == 0 {
        c.fail("gateway.router.failure_threshold", "must be at least 1");
    }
    if !(r.drift_drop.is_finite() && r.drift_drop > 0.0 && r.drift_drop <= 1.0) {
        c.fail("gateway.router.drift_drop", format!("must be a share in (0, 1], got {}", r.drift_drop));
    }
    for (i, server) in s.servers.iter().enumerate() {
        check_server_routing(c, s, i, server);
    }
}

fn check_server_routing(c: &mut Checker, s: &Scenario, i: usize, server: &ServerSpec) {
    let at = |field: &str| format!("servers[{i}].{field}");
    for tag in &server.tags {
        if tag.is_empty() {
            c.fail(at("tags"), "a tag must not be empty");
        } else if tag.starts_with("server:") {
            c.fail(at("tags"), format!("{tag:?}: `server:` tags are automatic (every server has `server:<name>`)"));
        }
    }
    for (attribute, values) in &server.capabilities {
        if !attribute.ends_with("_support") || attribute.len() == "_support".len() {
            c.fail(
                at(&format!("capabilities.{attribute}")),
                "a capability is named `<attribute>_support` (e.g. language_support), as servers declare it in _meta",
            );
        }
        if values.iter().any(String::is_empty) {
            c.fail(at(&format!("capabilities.{attribute}")), "values must not be empty strings");
        }
    }
    if let Some(ms) = server.latency_p95_ms
        && !(ms.is_finite() && ms > 0.0)
    {
        c.fail(at("latency_p95_ms"), format!("must be a number of milliseconds > 0, got {ms}"));
    }
    if server.max_concurrent_requests == Some(0) {
        c.fail(at("max_concurrent_requests"), "must be at least 1");
    }
    if let Some(check) = &server.health_check {
        if !server.tools.iter().any(|t| t.name == check.tool) {
            c.fail(at("health_check.tool"), format!("server {:?} has no tool {:?}", server.name, check.tool));
        }
        if !check.arguments.is_object() {
            c.fail(at("health_check.arguments"), "must be a table of arguments");
        }
    }
    let end = s.duration.0;
    if let Some(join) = server.join_at
        && !end.is_zero()
        && join.0 >= end
    {
        c.fail(at("join_at"), format!("must be before the end of the run ({})", fmt(end)));
    }
    if let Some(leave) = server.leave_at {
        if !end.is_zero() && leave.0 > end {
            c.fail(at("leave_at"), format!("must not be after the end of the run ({})", fmt(end)));
        }
        if leave.0 <= server.join_at.unwrap_or_default().0 {
            c.fail(at("leave_at"), "must be after join_at (and after the start)");
        }
    }
}
