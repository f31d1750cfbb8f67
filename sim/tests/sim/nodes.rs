//! Gateway nodes as hosts of their own (`[gateway] nodes`, `front = "http"`): agents reach them over simulated
//! Streamable HTTP, the nodes are the replicas' callers, a run is byte-identical run again, and a partition `from`
//! one node cuts that node's link only.

use std::path::{Path, PathBuf};

use crate::common::fixtures::{fixed, scenario};
use crate::common::{scratch_in, sim, summary, text};

fn scratch(name: &str) -> PathBuf {
    scratch_in("nodes", name)
}

const NODES: [&str; 2] = ["nodes.count=2", "load.hosts=2"];

/// Two nodes on api's two replicas, round-robin; node 1's link to api#0 is cut from 2 s to 6 s.
fn cut() -> String {
    scenario("nodes_cut", "8s")
        .seed(3)
        .server("api", &["replicas = 2", "workers = 8"])
        .tool("lookup", &["annotations = { readOnlyHint = true }", &fixed(20)])
        .open(200.0, &["hosts = 2"])
        .mix(None, "lookup")
        .table("[client]\nconnect_timeout = \"1s\"\nfirst_response = \"500ms\"\ndeadline = \"2s\"")
        .table("[gateway]\nformula = \"round_robin\"")
        .table("[nodes]\ncount = 2\nfront = \"http\"")
        .table("[[faults]]\nkind = \"partition\"\ntarget = \"api#0\"\nfrom = \"gateway-1\"\nstart = \"2s\"\nduration = \"4s\"")
        .build()
}

#[test]
fn nodes_serve_the_agents_calls_and_are_the_replicas_callers() {
    let out = scratch("smoke");
    let o = sim(Path::new("scenarios/smoke.toml"), &out, &NODES);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let totals = summary(&out)["totals"].clone();
    let ok = totals["ok"].as_u64().unwrap_or(0);
    assert!(ok > 1000, "calls served through the nodes: {totals}");
    assert_eq!(totals["ok"], totals["offered"], "{totals}");
    // Every attempt is the nodes', counted per replica as a load host's would be.
    assert_eq!(totals["replica_calls"]["echo-0"], totals["attempts"], "{totals}");
    let events = std::fs::read_to_string(out.join("events.csv")).expect("events.csv");
    for node in ["gateway-0", "gateway-1"] {
        assert!(events.contains(&format!(",connection_opened,echo-0,from {node}\n")), "{node} calls echo: {events}");
    }
    assert!(!events.contains("from load-"), "the load hosts reach no replica themselves: {events}");
}

#[test]
fn a_run_through_nodes_is_byte_identical_run_again() {
    let (a, b) = (scratch("again-a"), scratch("again-b"));
    for out in [&a, &b] {
        let o = sim(Path::new("scenarios/smoke.toml"), out, &NODES);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    for file in ["summary.json", "timeseries.csv", "events.csv", "calls.csv"] {
        let read = |dir: &Path| std::fs::read(dir.join(file)).expect(file);
        assert!(read(&a) == read(&b), "{file} differs between two runs of the same seed");
    }
}

/// api-0's ok attempts started inside the fault window (2 s to 6 s), from `calls.csv`.
fn ok_on_api0_in_window(dir: &Path) -> usize {
    let calls = std::fs::read_to_string(dir.join("calls.csv")).expect("calls.csv");
    let mut lines = calls.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no {name}"));
    let (start, server, status) = (col("start_ms"), col("server"), col("status"));
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f[server] == "api-0" && f[status] == "success")
        .filter(|f| f[start].parse::<f64>().is_ok_and(|t| (2000.0..6000.0).contains(&t)))
        .count()
}

#[test]
fn a_partition_from_one_node_leaves_the_other_nodes_calls_on_that_replica_alone() {
    let dir = scratch("cut");
    std::fs::create_dir_all(&dir).expect("scratch");
    let scenario = dir.join("nodes_cut.toml");
    std::fs::write(&scenario, cut()).expect("write");
    let (cut, whole) = (dir.join("cut"), dir.join("whole"));
    let o = sim(&scenario, &cut, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = sim(&scenario, &whole, &["faults=[]"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let events = std::fs::read_to_string(cut.join("events.csv")).expect("events.csv");
    assert!(events.contains(",partitioned,api-0,from gateway-1\n"), "one link cut: {events}");
    assert!(
        !events.lines().any(|l| l.contains(",api-0,") && l.contains("gateway-0") && !l.contains("connection_opened")),
        "nothing happens to gateway-0's link to api-0: {events}"
    );
    // Round-robin on each node: with both links, api-0 serves half of each node's calls; with node 1's cut, it
    // still serves gateway-0's half, all of them ok.
    let (cut_ok, whole_ok) = (ok_on_api0_in_window(&cut), ok_on_api0_in_window(&whole));
    assert!(whole_ok > 100, "api-0 serves both nodes without the cut: {whole_ok}");
    assert!(2 * cut_ok * 100 >= whole_ok * 95, "gateway-0's calls on api-0 stay: {cut_ok} of {whole_ok}");
    assert!(cut_ok * 100 < whole_ok * 60, "gateway-1's calls on api-0 stop: {cut_ok} of {whole_ok}");
}

#[test]
fn a_crashed_node_fails_only_its_own_agents_calls_and_restarts_afresh() {
    let out = scratch("crash");
    let crash = "faults[0]={ kind = \"crash\", target = \"gateway-0\", start = \"2s\", duration = \"1s\" }";
    let o = sim(Path::new("scenarios/smoke.toml"), &out, &[NODES[0], NODES[1], crash]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let events = std::fs::read_to_string(out.join("events.csv")).expect("events.csv");
    assert!(events.contains(",host_crashed,gateway-0,") && events.contains(",host_restarted,gateway-0,"), "{events}");
    let totals = summary(&out)["totals"].clone();
    let transport = totals["errors_by_class"]["transport"].as_u64().unwrap_or(0);
    assert!(transport > 0, "the crashed node's agents lose their calls: {totals}");
    assert_eq!(totals["errors"].as_u64(), Some(transport), "and nothing else fails: {totals}");
    // The restarted node serves again: its agents' calls after the crash are ok.
    let rows = std::fs::read_to_string(out.join("timeseries.csv")).expect("timeseries.csv");
    let header: Vec<&str> = rows.lines().next().unwrap_or_default().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no {name}"));
    let (ok, errors) = (col("ok"), col("errors"));
    let second_4: Vec<&str> = rows.lines().nth(5).unwrap_or_default().split(',').collect();
    assert_eq!(second_4[errors], "0", "no error once gateway-0 is back: {rows}");
    assert!(second_4[ok].parse::<u64>().is_ok_and(|n| n > 500), "both nodes serve again: {rows}");
}

#[test]
fn a_nodes_degraded_answer_ends_the_agents_call_as_degraded() {
    let out = scratch("degraded");
    let o = sim(Path::new("scenarios/breaker_sync.toml"), &out, &NODES[..1]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let totals = summary(&out)["totals"].clone();
    let answered: u64 = totals["degraded"].as_object().map_or(0, |m| m.values().filter_map(|v| v.as_u64()).sum());
    assert!(answered > 0, "the nodes' breakers open and they answer degraded: {totals}");
    assert_eq!(totals["errors_by_class"]["degraded"].as_u64(), Some(answered), "{totals}");
}

/// schema_drift through two nodes: at 4 s the server adds a required parameter without telling anyone
/// (`list_changed`), at 8 s it bumps its version and says so. The node's client re-fetches the listing when a call is
/// refused for its parameters, and that re-fetch re-lists the server for the node's agents as the notification
/// would have: their calls carry the new parameter from then on. Before, the agents kept the stale schema until 8 s
/// and half the run's calls failed (the in-process gateway's agents failed 0.1%).
#[test]
fn a_schema_drift_without_list_changed_reaches_the_agents_through_a_node() {
    let out = scratch("drift");
    let o = sim(Path::new("scenarios/schema_drift.toml"), &out, &NODES);
    assert_eq!(o.status.code(), Some(0), "the scenario's checks hold through nodes: {}", text(&o));
    let totals = &summary(&out)["totals"];
    let (ok, errors) = (totals["ok"].as_u64().expect("ok"), totals["errors"].as_u64().expect("errors"));
    assert!(ok > 1_000, "{totals}");
    assert!(errors * 100 < ok, "under 1% of calls fail once the drift is seen: {errors} errors, {ok} ok");
}
