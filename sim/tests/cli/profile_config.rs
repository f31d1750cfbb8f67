//! `mcpstorm profile --config`: every server of a gateway config, each replica reached as the gateway reaches it,
//! measured into one scenario that names the config (`gateway_config`) for its gateway settings; `mcpstorm sim` runs
//! it with a fault added on top. And what it refuses: a replica off this machine, the single server's flags beside
//! --config.

use std::path::Path;

use serde_json::Value;

use crate::common::fixtures::gateway;
use crate::common::{mcpstorm, scratch_in, sim, summary, text};
use crate::servers::Fake;

/// A server of two alike replicas (over TCP), whose read-only `work` takes 5 ms.
const LEDGER: &str = r#"
name = "ledger"

[[tools]]
name = "work"
annotations = { readOnlyHint = true }
latency = { dist = "fixed", ms = 5 }

[[tools]]
name = "write"
"#;

/// A server over Streamable HTTP, whose read-only `find` takes 2 ms.
const SEARCH: &str = r#"
name = "search"

[[tools]]
name = "find"
annotations = { readOnlyHint = true }
latency = { dist = "fixed", ms = 2 }
"#;

/// The flags that keep a measurement short.
const SHORT: [&str; 6] = ["--calls", "20", "--max-concurrency", "4", "--sweep-calls", "20"];

fn profile(config: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let (config, out) = (config.to_string_lossy(), out.to_string_lossy());
    let mut args = vec!["profile", "--config", config.as_ref(), "--out", out.as_ref(), "--json"];
    args.extend(extra);
    mcpstorm(&args)
}

#[test]
fn every_upstream_is_measured_into_a_scenario_that_names_the_config_and_sim_runs_it_with_a_fault() {
    let (a0, a1, search) = (Fake::start(Some(LEDGER)), Fake::start(Some(LEDGER)), Fake::start_http(Some(SEARCH)));
    let dir = scratch_in("profile", "config");
    std::fs::create_dir_all(dir.join("out")).expect("scratch dir");
    let config = dir.join("gw.toml");
    let servers = format!(
        "[[servers]]\nname = \"ledger\"\nmax_concurrent_requests = 6\n[[servers.replicas]]\ntcp = {:?}\n\
         [[servers.replicas]]\ntcp = {:?}",
        a0.addr, a1.addr
    );
    let text_of = gateway().table("[client]\ndeadline = \"7s\"").table(&servers).http("search", &search.url()).build();
    std::fs::write(&config, &text_of).expect("write gw.toml");
    let file = dir.join("out").join("fleet.toml");

    let o = profile(&config, &file, &SHORT);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let m: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("--json ({e}): {}", text(&o)));
    let measured: Vec<(&str, u64)> = m["servers"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["tools"].as_array().into_iter().flatten())
        .map(|t| (t["tool"].as_str().unwrap_or(""), t["calls"].as_u64().unwrap_or(0)))
        .collect();
    // Both replicas of the ledger answered 20 calls each; the tool that is not read-only is left alone.
    assert_eq!(measured, [("work", 40), ("find", 20)], "{m}");

    let written = std::fs::read_to_string(&file).expect("scenario written");
    assert!(written.contains("gateway_config = \"../gw.toml\""), "named from the scenario's directory: {written}");
    let copied = written.lines().any(|l| l.starts_with("[gateway") || l.starts_with("[client"));
    assert!(!copied, "by reference, not a copy: {written}");
    assert!(written.contains("name = \"ledger\"\nreplicas = 2"), "{written}");
    assert!(written.contains("transport = \"http\""), "the search server speaks HTTP: {written}");

    // A fault on top, and the checks decide: 0 or 1, never bad input.
    let run = dir.join("run");
    let fault = "faults=[{ kind = \"crash\", target = \"ledger#0\", start = \"1s\", duration = \"2s\" }]";
    let o = sim(&file, &run, &[fault]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", text(&o));
    let s = summary(&run);
    assert!(s["servers"]["ledger"]["ok"].as_u64().is_some_and(|ok| ok > 0), "{s}");
    assert!(s["servers"]["search"]["ok"].as_u64().is_some_and(|ok| ok > 0), "{s}");
    let copy = std::fs::read_to_string(run.join("scenario.toml")).expect("the scenario as run");
    assert!(copy.contains("deadline = \"7s\""), "the run used the config's [client]: {copy}");

    // The config's settings are edited in the config, not over it.
    let o = sim(&file, &dir.join("run2"), &["client.deadline=9s"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("edit that file"), "{}", text(&o));
}

#[test]
fn a_replica_off_this_machine_and_the_single_servers_flags_are_refused() {
    let dir = scratch_in("profile", "config-refused");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let config = dir.join("gw.toml");
    std::fs::write(&config, gateway().tcp("far", "192.0.2.1:9000").build()).expect("write gw.toml");
    let out = dir.join("s.toml");
    let o = profile(&config, &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--i-own-this-server") && !out.exists(), "{}", text(&o));
    let o = profile(&config, &out, &["--tcp", "127.0.0.1:9"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("cannot be used with"), "{}", text(&o));
    let o = profile(&dir.join("missing.toml"), &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("missing.toml: cannot read it"), "{}", text(&o));
}
