//! `[load] mode = "replay"` as the scenario loads: its trace read (relative to the scenario's file) and checked
//! against the scenario, kept in `load.replay` for the run (`world::replay` deals its calls to the load hosts).
//!
//! A trace row's server is a replica (`db-1` in the simulator, `db#1` at a gateway) or a server name; it must name
//! one of the scenario's servers, and the tool one of that server's tools. The arguments are not in a trace (only
//! their hash): a call takes those of the `[[load.mix]]` entry that names its server and tool. Where none does, an
//! entry is added for it, with the arguments of a mix entry for that tool without a server, else none: the agent
//! fills the required ones from the tool's schema, as for every call.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::Problem;
use super::model::Scenario;
use super::rules::Issue;
use super::servers::ServerSpec;
use super::shared::empty_args;
use super::trace::{self, MAX_PROBLEMS, Row, Trace, TraceCall};
use super::workload::{LoadMode, MixEntry};

/// Why a trace cannot be used: a problem with the scenario's key (`load.trace`: the file cannot be read), or with
/// rows of the trace, each at `trace:line:column`.
#[derive(Debug)]
pub(crate) enum TraceError {
    Key(Issue),
    Rows(Vec<Problem>),
}

/// With `mode = "replay"`, reads `load.trace` (relative to the directory of `origin`, the scenario's path), checks it
/// against the scenario's servers and keeps it in `load.replay`; adds a mix entry for each server and tool the mix
/// does not name. Other modes: nothing.
pub(crate) fn attach(scenario: &mut Scenario, origin: &str) -> Result<(), TraceError> {
    if scenario.load.mode != LoadMode::Replay {
        return Ok(());
    }
    let Some(name) = scenario.load.trace.as_deref() else { return Ok(()) };
    let path = Path::new(origin).parent().unwrap_or(Path::new("")).join(name);
    let shown = path.display().to_string();
    let text = std::fs::read(&path)
        .map_err(|e| format!("cannot read the trace {shown}: {e}"))
        .and_then(|b| String::from_utf8(b).map_err(|_| format!("the trace {shown} is not UTF-8 text")))
        .map_err(|message| TraceError::Key(Issue { path: "load.trace".into(), message }))?;
    let (format, rows) = trace::parse(&text, &shown).map_err(TraceError::Rows)?;
    let mut problems = Vec::new();
    let mut calls = Vec::new();
    let mut retries_skipped = 0;
    for row in &rows {
        if !row.first {
            retries_skipped += 1;
            continue;
        }
        match resolve(scenario, row) {
            Ok(entry) => calls.push((row.start_us, TraceCall { offset: Duration::ZERO, entry, line: row.line })),
            Err((column, message)) if problems.len() < MAX_PROBLEMS => {
                problems.push(trace::at(&shown, row.line, column, message));
            }
            Err(_) => {}
        }
    }
    if !problems.is_empty() {
        return Err(TraceError::Rows(problems));
    }
    if calls.is_empty() {
        let message = format!("the trace {shown} holds no first attempts: nothing to replay");
        return Err(TraceError::Key(Issue { path: "load.trace".into(), message }));
    }
    // Sorted by start (a file lists attempts as they finished); stable, so ties keep their file order.
    calls.sort_by_key(|(start, _)| *start);
    let first = calls.first().map_or(0, |(start, _)| *start);
    let calls = calls
        .into_iter()
        .map(|(start, call)| TraceCall { offset: Duration::from_micros(start - first), ..call })
        .collect();
    scenario.load.replay = Some(Arc::new(Trace { path, format, calls, retries_skipped }));
    Ok(())
}

/// The mix entry of `row`'s call, added when the mix has none; or the column and message of what is wrong.
fn resolve(scenario: &mut Scenario, row: &Row) -> Result<usize, (usize, String)> {
    let server = server_of(&scenario.servers, &row.server).ok_or_else(|| {
        let names: Vec<String> = scenario.servers.iter().map(|s| format!("{:?}", s.name)).collect();
        let message = format!(
            "server {:?} is not in the scenario (it has {}; a replica `NAME-N` or `NAME#N` counts as NAME)",
            row.server,
            names.join(", ")
        );
        (row.at.0, message)
    })?;
    if !server.tools.iter().any(|t| t.name == row.tool) {
        let tools: Vec<String> = server.tools.iter().map(|t| format!("{:?}", t.name)).collect();
        let message = format!("server {:?} has no tool {:?} (it has {})", server.name, row.tool, tools.join(", "));
        return Err((row.at.1, message));
    }
    let name = server.name.clone();
    let mix = &mut scenario.load.mix;
    let named = |m: &MixEntry| m.server.as_deref() == Some(name.as_str()) && m.tool == row.tool;
    if let Some(entry) = mix.iter().position(named) {
        return Ok(entry);
    }
    let args =
        mix.iter().find(|m| m.server.is_none() && m.tool == row.tool).map_or_else(empty_args, |m| m.args.clone());
    mix.push(MixEntry { server: Some(name), tool: row.tool.to_owned(), weight: 1.0, args });
    Ok(mix.len() - 1)
}

/// The scenario server a trace's server names: itself, or a replica of it (`NAME-N` as the simulator names replica
/// hosts, `NAME#N` as a gateway names replicas). An exact name wins over a replica's.
fn server_of<'s>(servers: &'s [ServerSpec], name: &str) -> Option<&'s ServerSpec> {
    let replica_of = |sep: char| {
        name.rsplit_once(sep).filter(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).map(|(s, _)| s)
    };
    let exact = |n: &str| servers.iter().find(|s| s.name == n);
    exact(name).or_else(|| replica_of('-').and_then(exact)).or_else(|| replica_of('#').and_then(exact))
}
