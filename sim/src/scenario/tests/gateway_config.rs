//! `gateway_config`: a scenario that names a gateway config file runs that file's `[gateway]`, `[client]` and
//! router declarations, building the very core configuration the process builds from it; setting them twice, a
//! `--set` of them, a missing file and the file's own problems are each a clear error at the right place.

use super::gateway_file::TABLES;
use super::*;
use crate::scenario::tables::{GatewayFile, gateway_config};

/// A gateway file an operator deploys: every table a scenario takes, and a server with router declarations.
fn deployed() -> String {
    let servers = r#"
[gateway.router]
refresh_every = "250ms"

[[servers]]
name = "a"
tags = ["fast"]
capabilities = { language_support = ["python", "rust"] }
latency_p95_ms = 40.0
max_concurrent_requests = 8

[[servers.replicas]]
tcp = "127.0.0.1:9001"

[[servers.replicas]]
http = "http://127.0.0.1:9002/mcp"
"#;
    format!("[listen]\nhttp = \"127.0.0.1:8848\"\n\n{TABLES}{servers}")
}

/// A scenario naming `gw.toml` beside it: its servers are modelled, its gateway settings are the file's.
const SCENARIO: &str = r#"name = "t"
duration = "10s"
gateway_config = "gw.toml"

[[servers]]
name = "a"
replicas = 2

[[servers.tools]]
name = "echo"

[[servers]]
name = "b"
tags = ["slow"]

[[servers.tools]]
name = "get"

[load]
mode = "closed"
sessions = 1

[[load.mix]]
server = "a"
tool = "echo"
"#;

/// A directory of its own for one test, holding `gw.toml` (when given) and `s.toml`; returns the scenario's path.
fn files(test: &str, gateway: Option<&str>, scenario: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpstorm-gateway-config-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let _ = std::fs::remove_file(dir.join("gw.toml"));
    if let Some(text) = gateway {
        std::fs::write(dir.join("gw.toml"), text).expect("write gw.toml");
    }
    let path = dir.join("s.toml");
    std::fs::write(&path, scenario).expect("write s.toml");
    path
}

fn loaded(path: &Path, sets: &[&str]) -> Result<Scenario, ScenarioError> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    load_file(path, &sets)
}

#[test]
fn a_referenced_file_builds_the_core_configuration_the_process_builds() {
    let path = files("same", Some(&deployed()), SCENARIO);
    let file = GatewayFile::load(&path.with_file_name("gw.toml")).unwrap_or_else(|e| panic!("{e}"));
    let s = loaded(&path, &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.gateway, file.gateway);
    assert_eq!(s.client, file.client);
    assert_eq!(s.gateway_config, None, "a loaded scenario holds the tables as its own");
    // The conversions the process and a simulated node build with; the core's configurations have no `PartialEq`:
    // their debug forms show every field.
    let core = gateway_config(&file.gateway, &file.client);
    assert_eq!(format!("{:?}", gateway_config(&s.gateway, &s.client)), format!("{core:?}"));
    assert_eq!(core.call_deadline, std::time::Duration::from_secs(5), "not the default: the file's value");
    assert_eq!(format!("{:?}", s.gateway.router.to_core()), format!("{:?}", file.gateway.router.to_core()));
    let client = |c: &ClientSpec, g: &GatewaySpec| format!("{:?} {:?}", c.to_core(g), c.pool());
    assert_eq!(client(&s.client, &s.gateway), client(&file.client, &file.gateway));
    for (server, up) in s.servers.iter().zip(&file.servers) {
        assert_eq!(
            format!("{:?}", server.declared()),
            format!("{:?}", up.declared()),
            "{}: the router sees what the file declares",
            server.name
        );
        let replicas = up.replicas.len();
        assert_eq!(s.client.lifecycle_retries(replicas), file.client.lifecycle_retries(replicas));
    }
    assert_eq!(s.servers[1].tags, ["slow"], "a server the file does not name keeps its own declarations");
    // The scenario as run, written and read again, needs no file: the report's copy and a swarm's failure file.
    let again = load_str(&toml::to_string(&s).expect("serializes"), "copy.toml", &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again, s);
}

#[test]
fn a_table_set_in_both_places_names_both_keys() {
    let text = edit(SCENARIO, "\n[load]", "\n[client]\ndeadline = \"9s\"\n\n[load]");
    let path = files("both", Some(&deployed()), &text);
    let err = loaded(&path, &[]).expect_err("[client] and gateway_config");
    let p = &err.problems()[0];
    assert_eq!((err.problems().len(), p.key.as_deref()), (1, Some("client")), "{err}");
    assert_eq!(p.line_column(), Some(pos(&text, "\n|[client]")), "{err}");
    for says in ["gateway_config", "gw.toml", "never merged"] {
        assert!(p.message.contains(says), "{err}\nlacks {says:?}");
    }
    // A router declaration of a server the file names, too; a server it does not name keeps its own.
    let text = edit(SCENARIO, "replicas = 2\n", "replicas = 2\nlatency_p95_ms = 10.0\n");
    let err = loaded(&files("declared", Some(&deployed()), &text), &[]).expect_err("declared twice");
    let p = &err.problems()[0];
    assert_eq!(p.key.as_deref(), Some("servers[0].latency_p95_ms"), "{err}");
    assert!(p.message.contains("gw.toml") && p.message.contains("gateway_config"), "{err}");
}

#[test]
fn a_set_of_a_taken_table_names_the_file_to_edit_and_another_file_may_be_set() {
    let path = files("set", Some(&deployed()), SCENARIO);
    let err = loaded(&path, &["client.deadline=9s"]).expect_err("--set of a taken table");
    let p = &err.problems()[0];
    assert_eq!(p.location, Location::Set { arg: "client.deadline=9s".into() }, "{err}");
    assert!(p.message.contains("edit that file") && p.message.contains("gw.toml"), "{err}");
    // Another file is the way to try other settings.
    let other = path.with_file_name("other.toml");
    std::fs::write(&other, deployed().replace("deadline = \"5s\"", "deadline = \"9s\"")).expect("write");
    let s = loaded(&path, &["gateway_config=other.toml"]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.client.deadline.0, std::time::Duration::from_secs(9));
}

#[test]
fn a_missing_file_is_reported_at_the_scenarios_key() {
    let path = files("missing", None, SCENARIO);
    let err = loaded(&path, &[]).expect_err("no gw.toml");
    let p = &err.problems()[0];
    assert_eq!((err.problems().len(), p.key.as_deref()), (1, Some("gateway_config")), "{err}");
    assert_eq!(p.line_column(), Some(pos(SCENARIO, "gateway_config = |\"gw.toml\"")), "{err}");
    assert!(p.message.contains("cannot read the gateway config") && p.message.contains("gw.toml"), "{err}");
    assert!(err.to_string().starts_with(&format!("{}:3:18: gateway_config: ", path.display())), "{err}");
    let err = loaded(&files("empty", None, &edit(SCENARIO, "\"gw.toml\"", "\" \"")), &[]).expect_err("empty");
    assert!(err.to_string().contains("must name a gateway config file"), "{err}");
}

#[test]
fn the_files_own_problems_keep_their_place_in_it() {
    let bad = edit(&deployed(), "max_in_flight = 20", "max_in_flight = 0\nmax_in_flite = 3");
    let path = files("broken", Some(&bad), SCENARIO);
    let err = loaded(&path, &[]).expect_err("a broken gw.toml");
    let gw = path.with_file_name("gw.toml").display().to_string();
    let [first, rest @ ..] = err.problems() else { panic!("no problems: {err}") };
    assert_eq!(first.key.as_deref(), Some("gateway_config"), "the scenario's key first: {err}");
    assert_eq!(first.line_column(), Some((3, 18)), "{err}");
    // Exactly what the gateway itself says of the file, in the same places.
    let own = GatewayFile::load(Path::new(&gw)).expect_err("the gateway refuses it too");
    assert_eq!(rest, own.problems(), "{err}");
    assert!(rest.iter().any(|p| p.key.as_deref() == Some("client.max_in_flite")), "{err}");
    assert!(rest.iter().all(|p| p.to_string().starts_with(&format!("{gw}:"))), "{err}");
}

#[test]
fn a_scenario_rule_broken_by_the_files_settings_is_placed_in_the_file() {
    // Valid for the gateway; in a scenario, Redis is a simulated host, so the address is refused where it is written.
    let synced = format!("[gateway.sync]\nredis = \"redis://127.0.0.1:6379\"\n\n{}", deployed());
    let path = files("rule", Some(&synced), SCENARIO);
    GatewayFile::load(&path.with_file_name("gw.toml")).unwrap_or_else(|e| panic!("{e}"));
    let err = loaded(&path, &[]).expect_err("an address in a scenario");
    let p = err.problems().iter().find(|p| p.key.as_deref() == Some("gateway.sync.redis"));
    let gw = path.with_file_name("gw.toml").display().to_string();
    assert!(p.is_some_and(|p| p.to_string().starts_with(&format!("{gw}:2:9: "))), "{err}");
    assert!(p.is_some_and(|p| p.message.contains("runs this file")), "{err}");
}

#[test]
fn a_sweep_may_compare_gateway_files() {
    let path = files(
        "sweep",
        Some(&deployed()),
        &format!("{SCENARIO}\n[sweep]\nparam = \"gateway_config\"\nvalues = [\"gw.toml\", \"gw2.toml\"]\n"),
    );
    std::fs::write(path.with_file_name("gw2.toml"), deployed().replace("deadline = \"5s\"", "deadline = \"7s\""))
        .expect("write");
    let s = loaded(&path, &[]).unwrap_or_else(|e| panic!("{e}"));
    let rows = expand_sweep(&s).unwrap_or_else(|e| panic!("{e}"));
    let deadlines: Vec<u64> = rows.iter().map(|(_, r)| r.client.deadline.0.as_secs()).collect();
    assert_eq!(deadlines, [5, 7]);
}
