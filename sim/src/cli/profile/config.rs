//! `mcpstorm profile --config GATEWAY.toml`: every server of a gateway config measured, each replica reached as
//! the gateway reaches it (its routes from the gateway crate, headers read from the environment; the `[client]`
//! table's settings), and written as one scenario whose gateway settings are the config's own, by reference.
//!
//! Per server, every replica's calls are pooled into its tools' latencies and error rates (replicas are meant to be
//! alike, and the scenario models them alike); the concurrency sweep runs on its first replica only, since each
//! replica is as many workers again. The safety rules are the single server's: read-only tools unless named with
//! `--tool`, and only replicas on this machine's loopback without `--i-own-this-server`.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use mcpstorm_core::{McpClient, TracingObserver};
use mcpstorm_gateway::config::{GatewayFile, ReplicaAddr, UpstreamSpec};
use mcpstorm_gateway::upstreams;
use serde_json::{Value, json};

use super::super::Failure;
use super::super::out::outln;
use super::super::peer::{Route, Target};
use super::{Plan, ProfileArgs, as_json, local_only, print, write_checked};
use crate::profile::{self, Measured, Upstream, fit};

pub(super) async fn run(path: &Path, args: &ProfileArgs, given: &[(String, Value)]) -> Result<(), Failure> {
    if args.out.exists() && !args.force {
        return Err(Failure::BadInput(format!("{} exists; pass --force to overwrite it", args.out.display())));
    }
    let file = GatewayFile::load(path).map_err(|e| Failure::BadInput(e.to_string()))?;
    if !args.i_own_this_server {
        for server in &file.servers {
            for replica in &server.replicas {
                local_only(&target(replica.addr())).await?;
            }
        }
    }
    let reference = relative(path, &args.out)?;
    let clock: Arc<dyn mcpstorm_core::Clock> = Arc::new(crate::gateway::cli::wall_clock());
    let naive = file.gateway.profile == mcpstorm_core::session::GatewayProfile::Naive;
    let routes = upstreams::routes(&file.servers, &file.client.pool(), &clock, (None, naive))
        .map_err(|e| Failure::BadInput(format!("{}: {e}", path.display())))?;
    let max_c = usize::try_from(args.max_concurrency).unwrap_or(usize::MAX);
    let mut clients = Vec::new();
    for server in &file.servers {
        let mut config = file.client.to_core(&file.gateway);
        config.lifecycle_retries = file.client.lifecycle_retries(server.replicas.len());
        config.connection.max_in_flight = config.connection.max_in_flight.max(max_c);
        let replicas = (0..server.replicas.len()).filter_map(|i| {
            let id = server.replica_id(i);
            let route = routes.get(&id)?;
            let route = Route { dialer: route.dialer.clone(), http: route.http.clone() };
            let rng = mcpstorm_gateway::cli::process_rng(None);
            Some(Arc::new(route.client(config.clone(), rng, Arc::new(TracingObserver::quiet_close()))))
        });
        clients.push((server, replicas.collect::<Vec<_>>()));
    }
    let result = measure_all(&clients, args, given, max_c).await;
    for client in clients.iter().flat_map(|(_, c)| c) {
        client.close().await;
    }
    let servers = result?;
    let written = write_checked(vec![(args.out.clone(), profile::config_scenario_text(&reference, &servers))])?;
    if args.server.json {
        let each: Vec<Value> = servers.iter().map(|up| as_json(&up.measured, &[])).collect();
        let scenario = args.out.display().to_string();
        let doc = json!({ "config": path.display().to_string(), "servers": each, "scenario": scenario });
        return outln!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
    }
    for up in &servers {
        outln!("{} ({} replicas):", up.name, up.replicas)?;
        print(&up.measured, &[])?;
    }
    print_written(&written)
}

/// Lists every server's tools (its first replica's), checks that each named tool is some server's, then measures
/// each server on the tools it lists of those named (else its read-only ones).
async fn measure_all(
    clients: &[(&UpstreamSpec, Vec<Arc<McpClient>>)],
    args: &ProfileArgs,
    given: &[(String, Value)],
    max_c: usize,
) -> Result<Vec<Upstream>, Failure> {
    let mut listed = Vec::new();
    for (server, replicas) in clients {
        let Some(first) = replicas.first() else { continue };
        let tools = first.list_tools().await.map_err(|e| Failure::Failed(format!("{}: {e}", first.server())))?;
        listed.push((*server, replicas, tools.iter().map(|t| t.name.clone()).collect::<BTreeSet<String>>()));
    }
    let asked = args.tools.iter().chain(given.iter().map(|(n, _)| n)).chain(args.knee_tool.iter());
    for name in asked {
        if !listed.iter().any(|(_, _, names)| names.contains(name)) {
            return Err(Failure::BadInput(format!("no server of the gateway config lists a tool {name:?}")));
        }
    }
    let mut out = Vec::new();
    for (server, replicas, names) in &listed {
        let mine = |n: &String| names.contains(n);
        let given: Vec<(String, Value)> = given.iter().filter(|(n, _)| mine(n)).cloned().collect();
        let mut plan = Plan::of(args, &given, max_c);
        plan.tools.retain(mine);
        plan.knee_tool = plan.knee_tool.filter(mine);
        let mut measured = Vec::new();
        for (i, client) in replicas.iter().enumerate() {
            plan.http = matches!(server.replicas.get(i).and_then(|r| r.addr()), Some(ReplicaAddr::Http(_)));
            let one = super::profile_with(client, &plan).await?;
            // The other replicas: the tools the first chose, and no sweep.
            plan.tools = one.tools.iter().map(|(t, _)| t.tool.name.clone()).collect();
            plan.max_concurrency = 0;
            measured.push(one);
        }
        let Some(measured) = pooled(measured) else { continue };
        out.push(Upstream { name: server.name.clone(), replicas: server.replicas.len(), measured });
    }
    Ok(out)
}

/// The first replica's measurement with every other replica's calls of each tool added, each tool fitted again.
fn pooled(replicas: Vec<Measured>) -> Option<Measured> {
    let mut replicas = replicas.into_iter();
    let mut first = replicas.next()?;
    let others: Vec<Measured> = replicas.collect();
    for (tool, shape) in &mut first.tools {
        for other in &others {
            let Some((theirs, _)) = other.tools.iter().find(|(t, _)| t.tool.name == tool.tool.name) else { continue };
            tool.latencies_ms.extend_from_slice(&theirs.latencies_ms);
            tool.calls += theirs.calls;
            tool.errors.tool += theirs.errors.tool;
            tool.errors.jsonrpc += theirs.errors.jsonrpc;
            tool.errors.transport += theirs.errors.transport;
            if tool.first_error.is_none() {
                tool.first_error.clone_from(&theirs.first_error);
            }
        }
        tool.latencies_ms.sort_by(f64::total_cmp);
        *shape = fit(&tool.latencies_ms);
    }
    Some(first)
}

/// A replica's address as the flags of one server would give it, for the loopback rule.
fn target(addr: Option<ReplicaAddr<'_>>) -> Target {
    let (mut http, mut tcp) = (None, None);
    match addr {
        Some(ReplicaAddr::Http(url)) => http = Some(url.to_owned()),
        Some(ReplicaAddr::Tcp(at)) => tcp = Some(at.to_owned()),
        Some(ReplicaAddr::Stdio(_)) | None => {}
    }
    Target { stdio: None, tcp, http }
}

/// `config` as the scenario at `out` names it: relative to the scenario's directory, so that the two can move
/// together; absolute when they share no root.
fn relative(config: &Path, out: &Path) -> Result<String, Failure> {
    let absolute = |p: &Path| -> Result<PathBuf, Failure> {
        let p = if p.is_absolute() { p.to_owned() } else { std::env::current_dir().map_err(io)?.join(p) };
        Ok(p.components().fold(PathBuf::new(), |mut acc, c| {
            match c {
                Component::CurDir => {}
                Component::ParentDir => {
                    acc.pop();
                }
                other => acc.push(other),
            }
            acc
        }))
    };
    let config = absolute(config)?;
    let dir = absolute(out)?.parent().map(Path::to_owned).unwrap_or_default();
    let (a, b): (Vec<_>, Vec<_>) = (config.components().collect(), dir.components().collect());
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    if common == 0 {
        return Ok(config.display().to_string());
    }
    let mut rel = PathBuf::new();
    for _ in common..b.len() {
        rel.push("..");
    }
    for c in &a[common..] {
        rel.push(c);
    }
    // TOML strings take forward slashes on every platform the scenario may move to.
    Ok(rel.to_string_lossy().replace('\\', "/"))
}

fn io(e: std::io::Error) -> Failure {
    Failure::Failed(format!("cannot read the working directory: {e}"))
}

fn print_written(written: &[PathBuf]) -> Result<(), Failure> {
    for path in written {
        let shown = path.display().to_string();
        let quoted = shlex::try_quote(&shown).map_or_else(|_| shown.clone(), |q| q.into_owned());
        outln!("wrote {shown}; run it: mcpstorm sim {quoted}, with faults: add [[faults]] or --set 'faults=[...]'")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_is_named_from_the_scenarios_directory() {
        let rel = |c: &str, o: &str| relative(Path::new(c), Path::new(o)).ok();
        assert_eq!(rel("/a/gw.toml", "/a/s.toml").as_deref(), Some("gw.toml"));
        assert_eq!(rel("/a/conf/gw.toml", "/a/out/s.toml").as_deref(), Some("../conf/gw.toml"));
        assert_eq!(rel("/a/./gw.toml", "/a/out/../s.toml").as_deref(), Some("gw.toml"));
        assert_eq!(rel("/a/gw.toml", "/a/b/c/s.toml").as_deref(), Some("../../gw.toml"));
    }
}
