//! Semantic checks: everything serde cannot see. Every rule that fails adds an [`Issue`] naming the key path; the
//! loader turns paths into `file:line:column`. All issues are collected, never only the first.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::error::{Problem, ScenarioError};
use super::model::{FaultKind, LoadMode, RetryMode, Scenario, ServerSpec};
use super::path::KeyPath;
use crate::fake::{ConfigError, FakeServerConfig};

/// The most retries an agent may make per call: beyond it a run is all retries.
pub const MAX_RETRIES: u32 = 100;

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
    c.issues
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
    if !s.tick.0.is_zero() && !s.duration.0.is_zero() && s.tick.0 > s.duration.0 {
        c.fail("tick", format!("must not be longer than duration ({})", humantime::format_duration(s.duration.0)));
    }
    c.probability("network.fail_rate", s.network.fail_rate);
    if let Some(max) = s.network.max_latency
        && max < s.network.latency
    {
        c.fail(
            "network.max_latency",
            format!(
                "must be at least network.latency ({}), got {}",
                humantime::format_duration(s.network.latency.0),
                humantime::format_duration(max.0)
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
        let tool_base = FakeServerConfig { workers: None, page_size: None, ..server_only };
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
        match s.servers.iter().find(|srv| srv.name == entry.server) {
            None => c.fail(at("server"), format!("no server is named {:?}{}", entry.server, names(&s.servers))),
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
        if !(entry.weight.is_finite() && entry.weight > 0.0) {
            c.fail(at("weight"), format!("must be a finite number > 0, got {}", entry.weight));
        }
        if !entry.args.is_object() {
            c.fail(at("args"), "must be a table of arguments, e.g. { message = \"hi\" }");
        }
    }
}

fn names(servers: &[ServerSpec]) -> String {
    if servers.is_empty() {
        return String::new();
    }
    let names: Vec<String> = servers.iter().map(|s| format!("{:?}", s.name)).collect();
    format!(" (servers: {})", names.join(", "))
}

fn check_agent_and_client(c: &mut Checker, s: &Scenario) {
    if s.agent.max_retries > MAX_RETRIES {
        c.fail("agent.max_retries", format!("must be at most {MAX_RETRIES}, got {}", s.agent.max_retries));
    }
    if s.agent.retry == RetryMode::Immediate && s.agent.max_retries == 0 {
        c.fail("agent.max_retries", "must be at least 1 with retry = \"immediate\"");
    }
    let client = &s.client;
    c.at_least_one("client.max_in_flight", client.max_in_flight);
    c.at_least_one("client.per_connection", client.per_connection);
    c.positive("client.queue_wait", client.queue_wait.0);
    c.positive("client.first_response", client.first_response.0);
    c.positive("client.connect_timeout", client.connect_timeout.0);
    c.positive("client.deadline", client.deadline.0);
}

fn check_faults(c: &mut Checker, s: &Scenario) {
    for (k, fault) in s.faults.iter().enumerate() {
        let at = |field: &str| format!("faults[{k}].{field}");
        if let Err(message) = resolve_target(&fault.target, &s.servers) {
            c.fail(at("target"), message);
        }
        c.positive(&at("duration"), fault.duration.0);
        match fault.start.0.checked_add(fault.duration.0) {
            Some(end) if end <= s.duration.0 => {}
            // A zero-length run is reported once, at `duration`.
            _ if s.duration.0.is_zero() => {}
            _ => c.fail(
                at("duration"),
                format!(
                    "the fault ends at {} (start + duration), after the run ends ({})",
                    fault.start.0.checked_add(fault.duration.0).map_or("never".into(), fmt),
                    fmt(s.duration.0)
                ),
            ),
        }
        let kind = fault.kind.as_str();
        let reject = |c: &mut Checker, field: &str, present: bool, why: &str| {
            if present {
                c.fail(at(field), format!("does not apply to kind = {kind:?}{why}"));
            }
        };
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
                reject(c, "rate", fault.rate.is_some(), " (an error_burst has a rate)");
            }
            FaultKind::ErrorBurst => {
                match fault.rate {
                    None => c.fail(at("kind"), "error_burst needs `rate`, the probability in [0, 1] a call fails"),
                    Some(r) => c.probability(&at("rate"), r),
                }
                reject(c, "extra", fault.extra.is_some(), " (a latency_spike has extra)");
                reject(c, "multiplier", fault.multiplier.is_some(), " (a latency_spike has a multiplier)");
            }
            FaultKind::Hang | FaultKind::Crash | FaultKind::Partition => {
                reject(c, "extra", fault.extra.is_some(), "");
                reject(c, "multiplier", fault.multiplier.is_some(), "");
                reject(c, "rate", fault.rate.is_some(), "");
            }
        }
    }
}

fn fmt(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// A fault target: `(server index, Some(replica))` for `name#i`, `(server index, None)` for every replica.
pub fn resolve_target(target: &str, servers: &[ServerSpec]) -> Result<(usize, Option<usize>), String> {
    let (name, replica) = match target.split_once('#') {
        None => (target, None),
        Some((name, i)) => match i.parse::<usize>() {
            Ok(i) => (name, Some(i)),
            Err(_) => return Err(format!("{target:?}: after `#` comes a replica index (0, 1, ...), got {i:?}")),
        },
    };
    let Some(index) = servers.iter().position(|s| s.name == name) else {
        return Err(format!("no server is named {name:?}{}", names(servers)));
    };
    if let Some(i) = replica {
        let replicas = servers[index].replicas;
        if i >= replicas {
            return Err(format!(
                "server {name:?} has {replicas} replica{} ({}), so there is no replica {i}",
                if replicas == 1 { "" } else { "s" },
                match replicas {
                    0 => "none".to_owned(),
                    1 => format!("{name}#0"),
                    n => format!("{name}#0 to {name}#{}", n - 1),
                }
            ));
        }
    }
    Ok((index, replica))
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
