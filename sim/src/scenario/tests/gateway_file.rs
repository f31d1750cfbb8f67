//! The gateway's tables as a file of their own ([`tables::GatewayFile`]): the same tables load to the same core
//! configurations as in a scenario, and a bad value reads the same, at the same place, as in a scenario.

use super::*;
use crate::scenario::tables::GatewayFile;

/// `[gateway]`, `[client]` and `[[servers]]`, as a scenario holds them.
const TABLES: &str = r#"[gateway]
formula = "round_robin"

[gateway.breaker]
open = "2s"
open_growth = 3.0

[gateway.retry]
backoff = "seed"
jitter = 0.1

[client]
max_in_flight = 20
deadline = "5s"

[[servers]]
name = "a"
replicas = 2

[[servers.tools]]
name = "echo"
"#;

/// The lines a scenario needs before the tables (top-level keys come first in TOML), and its other tables after.
const HEAD: &str = "name = \"t\"\nduration = \"10s\"\n";
const TAIL: &str = "\n[load]\nmode = \"closed\"\nsessions = 1\n\n[[load.mix]]\ntool = \"echo\"\n";

fn scenario(tables: &str) -> Result<Scenario, ScenarioError> {
    load_str(&format!("{HEAD}{tables}{TAIL}"), "t.toml", &[])
}

#[test]
fn the_tables_load_to_the_core_configurations_a_scenario_gives() {
    let file = GatewayFile::load_str(TABLES, "gateway.toml").unwrap_or_else(|e| panic!("{e}"));
    let s = scenario(TABLES).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(file.gateway, s.gateway);
    assert_eq!(file.client, s.client);
    assert_eq!(file.servers, s.servers);
    // The core's configurations have no `PartialEq`: their debug forms show every field.
    let core = file.gateway.layers().to_core();
    assert_eq!(format!("{core:?}"), format!("{:?}", s.gateway.layers().to_core()));
    assert_eq!(core.breaker.map(|b| (b.open, b.open_growth)), Some((std::time::Duration::from_secs(2), 3.0)));
    assert_eq!(file.gateway.router.to_core(), s.gateway.router.to_core());
    let client = |t: &ClientSpec, g: &GatewaySpec| format!("{:?}", t.to_core(g));
    assert_eq!(client(&file.client, &file.gateway), client(&s.client, &s.gateway));
    assert_eq!(file.servers[0].fake_config(1, 7), s.servers[0].fake_config(1, 7));
}

#[test]
fn a_bad_value_reads_the_same_at_the_same_place() {
    for (from, to) in [
        ("open = \"2s\"", "open = \"0s\""),
        ("open_growth = 3.0", "open_growth = 0.5"),
        ("max_in_flight = 20", "max_in_flight = 0"),
        ("replicas = 2", "replicas = 2\nworkers = 0"),
        ("formula = \"round_robin\"", "formula = \"fastest\""),
        ("deadline = \"5s\"", "deadline = \"8d\""),
        ("replicas = 2", "replicas = 2\nwrkers = 3"),
    ] {
        let bad = edit(TABLES, from, to);
        let in_file = GatewayFile::load_str(&bad, "t.toml").expect_err(to).problems().to_vec();
        let in_scenario = scenario(&bad).expect_err(to).problems().to_vec();
        assert_eq!(in_file.len(), 1, "{to}: {}", ScenarioError::Invalid(in_file.clone()));
        let (file, scen) = (&in_file[0], &in_scenario[0]);
        assert_eq!((&file.key, &file.message), (&scen.key, &scen.message), "{to}");
        let (line, column) = file.line_column().unwrap_or_default();
        assert_eq!(Some((line + 2, column)), scen.line_column(), "{to}: the scenario has two lines more above");
    }
}

#[test]
fn other_tables_are_refused() {
    let err = GatewayFile::load_str(&format!("{TABLES}{TAIL}"), "t.toml").expect_err("[load] is not a gateway table");
    assert_eq!(err.problems()[0].key.as_deref(), Some("load"), "{err}");
    assert!(err.to_string().contains("unknown key"), "{err}");
}

#[test]
fn the_old_backoff_spelling_is_the_proportional_backoff() {
    let file = GatewayFile::load_str(TABLES, "t.toml").unwrap_or_else(|e| panic!("{e}"));
    let new = GatewayFile::load_str(&edit(TABLES, "\"seed\"", "\"proportional\""), "t.toml").expect("valid");
    assert_eq!(file.gateway.retry, new.gateway.retry);
    assert_eq!(new.gateway.retry.map(|r| r.backoff), Some(crate::scenario::layers::BackoffKind::Proportional));
}
