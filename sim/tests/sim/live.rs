//! `mcpstorm live`: the same scenario files in real time on loopback sockets. Short runs (a few seconds of real time
//! each); every assertion is about ordering and structure, never about how long something took.

use std::path::{Path, PathBuf};

use crate::common::fixtures::{ScenarioToml, fixed, scenario};
use crate::common::{mcpstorm, mcpstorm_env, run_scenario, scratch_in, sim, summary, text};

fn scratch(name: &str) -> PathBuf {
    scratch_in("live", name)
}

/// `mcpstorm live SCENARIO --out OUT --set ...`.
fn live(scenario: &Path, out: &Path, sets: &[&str]) -> std::process::Output {
    run_scenario("live", scenario, out, sets)
}

/// `text` as a scenario file in the scratch directory `name`, run live into `name/live` with `sets`: the report
/// directory and the command's output.
fn live_run(name: &str, text: &str, sets: &[&str]) -> (PathBuf, std::process::Output) {
    let dir = scratch(name);
    let path = scenario_file(&dir, text);
    let out = dir.join("live");
    let o = live(&path, &out, sets);
    (out, o)
}

/// Writes `text` as a scenario file in `dir`.
fn scenario_file(dir: &Path, text: &str) -> PathBuf {
    std::fs::create_dir_all(dir).expect("scratch dir");
    let path = dir.join("scenario.toml");
    std::fs::write(&path, text).expect("write scenario");
    path
}

/// The files of a report directory, by name.
fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("report dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `timeseries.csv`'s column `name`, one value per second.
fn column(dir: &Path, name: &str) -> Vec<f64> {
    let text = std::fs::read_to_string(dir.join("timeseries.csv")).expect("timeseries.csv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let at = header.iter().position(|h| *h == name).expect("column");
    lines.map(|l| l.split(',').nth(at).expect("cell").parse().expect("number")).collect()
}

/// Open loop at 100 calls/s for 6 s on one server with a fixed 5 ms tool; 200 ms slower from 2 s to 4 s.
fn spike() -> String {
    api_lookup("live_spike", 5, &[], &[])
        .table("[[faults]]\nkind = \"latency_spike\"\ntarget = \"api\"\nstart = \"2s\"\nduration = \"2s\"\nextra = \"200ms\"")
        .build()
}

/// `name` on seed `seed` for 6 s: an open loop of 100 calls/s to `api`'s `lookup`, a fixed 5 ms on 64 workers, with
/// more keys for the server and the tool.
fn api_lookup(name: &str, seed: u64, server: &[&str], tool: &[&str]) -> ScenarioToml {
    scenario(name, "6s")
        .seed(seed)
        .server("api", &[server, &["workers = 64"]].concat())
        .tool("lookup", &[tool, &[&fixed(5)]].concat())
        .open(100.0, &[])
        .mix(None, "lookup")
}

#[test]
fn a_live_run_writes_the_sim_report_layout_with_its_mode_and_a_spike_raises_the_p99_in_its_window() {
    let dir = scratch("spike");
    let path = scenario_file(&dir, &spike());
    let out = dir.join("live");
    let o = live(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("mcpstorm live: live_spike (seed 5)"), "{}", text(&o));
    assert!(text(&o).contains("reproduce: mcpstorm live "), "{}", text(&o));
    let s = summary(&out);
    assert_eq!(s["mode"], "live");
    let totals = &s["totals"];
    let (offered, ok) = (totals["offered"].as_u64().expect("offered"), totals["ok"].as_u64().expect("ok"));
    // Poisson arrivals at 100/s for 6 s: 600 expected, a wide band either side.
    assert!((400..=800).contains(&offered), "offered {offered}");
    assert!(ok > 0 && ok <= offered, "ok {ok} of {offered}");
    assert_eq!(totals["lost"], 0);
    // The simulator's own report of the same file has the same files, and says it is a simulation.
    let simulated = dir.join("sim");
    let o = sim(&path, &simulated, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(files(&out), files(&simulated));
    assert_eq!(summary(&simulated)["mode"], "sim");
    // Seconds 2 and 3 are inside the spike; 0, 1 and 5 are outside it (4 holds the spike's last answers).
    let p99 = column(&out, "p99_ms");
    let inside = p99[2].min(p99[3]);
    let outside = p99[0].max(p99[1]).max(p99[5]);
    assert!(inside > outside, "P99 per second {p99:?}: the spike's window must be the slowest");
    assert!(inside >= 200.0, "P99 per second {p99:?}: the spike adds 200 ms");
}

/// Two replicas, round-robin; replica 1 crashes from 2 s to 4 s.
fn crash() -> String {
    api_lookup("live_crash", 9, &["replicas = 2"], &["annotations = { readOnlyHint = true }"])
        .table("[gateway]\nformula = \"round_robin\"")
        .table("[report]\ncalls = \"all\"")
        .table("[[faults]]\nkind = \"crash\"\ntarget = \"api#1\"\nstart = \"2s\"\nduration = \"2s\"")
        .build()
}

#[test]
fn a_crashed_replica_serves_nothing_in_its_window_and_calls_go_to_the_other() {
    let (out, o) = live_run("crash", &crash(), &[]);
    // The checks (none) pass; the run itself must not fail.
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let events = std::fs::read_to_string(out.join("events.csv")).expect("events.csv");
    assert!(events.contains(",host_crashed,api-1,"), "{events}");
    assert!(events.contains(",host_restarted,api-1,"), "{events}");
    // Attempts sent well inside the crash window: none succeeds on api-1, and api-0 serves.
    let calls = std::fs::read_to_string(out.join("calls.csv")).expect("calls.csv");
    let (mut ok_on_crashed, mut ok_on_other, mut ok_before_on_crashed) = (0, 0, 0);
    for row in calls.lines().skip(1) {
        let cells: Vec<&str> = row.split(',').collect();
        let (start, server, status) = (cells[1].parse::<f64>().expect("start_ms"), cells[3], cells[8]);
        let ok = status == "success";
        if (2_100.0..3_900.0).contains(&start) {
            ok_on_crashed += u32::from(ok && server == "api-1");
            ok_on_other += u32::from(ok && server == "api-0");
        } else if start < 1_900.0 {
            ok_before_on_crashed += u32::from(ok && server == "api-1");
        }
    }
    assert!(ok_before_on_crashed > 0, "api-1 served before its crash");
    assert_eq!(ok_on_crashed, 0, "a crashed replica answers nothing");
    assert!(ok_on_other > 0, "the other replica keeps serving");
}

#[test]
fn what_live_runs_cannot_do_is_refused_as_bad_input() {
    let dir = scratch("refused");
    let path = scenario_file(&dir, &spike());
    for (sets, key) in [
        (vec!["network.fail_rate=0.01"], "network.fail_rate"),
        (
            vec![
                "nodes.count=1",
                "faults[0]={ kind = \"clock_skew\", target = \"gateway\", start = \"1s\", offset = \"1s\" }",
            ],
            "clock_skew on a gateway node",
        ),
    ] {
        let out = dir.join(key.replace([' ', '.'], "_"));
        let o = live(&path, &out, &sets);
        assert_eq!(o.status.code(), Some(2), "{key}: {}", text(&o));
        assert!(text(&o).contains(&format!("live runs do not support {key}")), "{key}: {}", text(&o));
        assert!(!out.join("summary.json").exists(), "nothing runs");
    }
}

#[test]
fn gateway_nodes_run_as_processes_serve_the_agents_and_a_crashed_node_fails_only_its_share_until_it_restarts() {
    // Two gateway nodes (`mcpstorm gateway` processes) in front of two replicas; node 0's process is killed at 2 s
    // and started again at 4 s.
    let (out, o) = live_run(
        "nodes",
        &spike(),
        &[
            "servers[0].replicas=2",
            "nodes.count=2",
            "client.connect_timeout=\"300ms\"",
            "client.deadline=\"1s\"",
            "faults[0]={ kind = \"crash\", mode = \"refuse\", target = \"gateway-0\", start = \"2s\", duration = \"2s\" }",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("attempts   not recorded: the gateway processes made them"), "{}", text(&o));
    let s = summary(&out);
    assert_eq!(s["mode"], "live");
    assert_eq!(s["attempts_recorded"], false, "the attempt figures are not measured: the summary says so");
    let events = std::fs::read_to_string(out.join("events.csv")).expect("events.csv");
    assert!(events.contains(",host_crashed,gateway-0,"), "{events}");
    assert!(events.contains(",host_restarted,gateway-0,"), "{events}");
    // Each agent call goes to the next node in turn: while node 0 is down about half fail, before and after none.
    let (ok, errors) = (column(&out, "ok"), column(&out, "errors"));
    assert_eq!(errors[0] + errors[1], 0.0, "both nodes serve from the start: {errors:?}");
    assert!(ok[0] > 50.0 && ok[1] > 50.0, "{ok:?}");
    let during = errors[2] + errors[3];
    assert!(during > 40.0, "the crashed node's share fails: {errors:?}");
    assert!(ok[2] + ok[3] > 40.0, "the other node's share is served: {ok:?}");
    assert_eq!(errors[5], 0.0, "the restarted process serves again: {errors:?}");
}

#[test]
fn through_gateway_runs_the_load_hosts_gateways_as_processes_and_the_reproduce_line_says_so() {
    let dir = scratch("through");
    let path = scenario_file(&dir, &spike());
    let out = dir.join("live");
    let (p, o_) = (path.to_string_lossy(), out.to_string_lossy());
    let o = mcpstorm(&["live", p.as_ref(), "--out", o_.as_ref(), "--through-gateway", "--set", "duration=4s"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let s = summary(&out);
    assert_eq!(s["attempts_recorded"], false);
    assert!(s["totals"]["ok"].as_u64().expect("ok") > 200, "{s}");
    let reproduce = s["reproduce"].as_str().expect("reproduce").to_owned();
    assert!(reproduce.contains("--set 'nodes.count=1'"), "{reproduce}");
    // The printed line runs as it says (its --out aside): the same nodes, the same report.
    let again = dir.join("again");
    let words = shlex::split(&reproduce).expect("a shell line");
    let mut args: Vec<&str> = words.iter().skip(1).map(String::as_str).collect();
    let a = again.to_string_lossy();
    args.extend(["--out", a.as_ref()]);
    let o = mcpstorm(&args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(summary(&again)["attempts_recorded"], false);
}

/// Three load hosts share breakers through Redis (the simulator's double, behind a relay per gateway); the error
/// burst on `db` opens each one's breaker.
#[test]
fn breaker_sync_runs_live_through_the_redis_double_and_the_gateways_converge() {
    let dir = scratch("sync");
    let out = dir.join("live");
    let o = live(Path::new("scenarios/breaker_sync.toml"), &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let s = summary(&out);
    let convergence = s["totals"]["convergence"].as_array().expect("convergence");
    assert!(!convergence.is_empty(), "the breaker opened: {s}");
    assert!(
        convergence.iter().all(|c| c["converged_ms"].is_u64()),
        "every gateway heard of each opening through Redis: {convergence:?}"
    );
}

#[test]
fn a_run_this_machine_cannot_keep_in_real_time_stops_without_a_report() {
    let dir = scratch("overload");
    let path = scenario_file(&dir, &spike());
    let out = dir.join("live");
    // The machine stalls for a second, one second in (the `testing` feature's injected stall, which this crate's
    // tests build with): however fast the machine, the run falls behind and must stop.
    let o = mcpstorm_env(
        &[
            "live",
            &path.to_string_lossy(),
            "--out",
            &out.to_string_lossy(),
            "--allow-large",
            "--set",
            "duration=3s",
            "--set",
            "faults=[]",
            "--set",
            "report.calls=\"off\"",
        ],
        &[("MCPSTORM_TEST_LIVE_STALL_MS", "1000")],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("cannot keep up with the scenario in real time"), "{}", text(&o));
    assert!(!out.join("summary.json").exists(), "no misleading report");
}
