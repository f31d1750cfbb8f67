//! The gateway process's config ([`tables::GatewayFile`]): a scenario's `[gateway]` and `[client]` tables pasted
//! into it load to the same core configurations as in the scenario (what was tuned is what runs), and a bad value
//! reads the same, at the same place, as in the scenario.

use super::*;
use crate::scenario::tables::{GatewayFile, gateway_config};

/// `[gateway]` and `[client]`, as a scenario holds them.
pub(super) const TABLES: &str = r#"[gateway]
formula = "round_robin"
requirements = [{ argument = "language", attribute = "language_support" }]

[gateway.breaker]
open = "2s"
open_growth = 3.0

[gateway.retry]
backoff = "seed"
jitter = 0.1

[client]
max_in_flight = 20
deadline = "5s"
"#;

/// The scenario's servers (fake) and the gateway's (real replicas): the only tables that differ.
const SCENARIO_SERVERS: &str = "\n[[servers]]\nname = \"a\"\nreplicas = 2\n\n[[servers.tools]]\nname = \"echo\"\n";
const GATEWAY_SERVERS: &str = "\n[[servers]]\nname = \"a\"\n[[servers.replicas]]\ntcp = \"127.0.0.1:9001\"\n[[servers.replicas]]\nstdio = \"python3 a.py\"\n";

/// The lines a scenario needs before the tables (top-level keys come first in TOML), and its other tables after.
const HEAD: &str = "name = \"t\"\nduration = \"10s\"\n";
const TAIL: &str = "\n[load]\nmode = \"closed\"\nsessions = 1\n\n[[load.mix]]\ntool = \"echo\"\n";

fn scenario(tables: &str) -> Result<Scenario, ScenarioError> {
    load_str(&format!("{HEAD}{tables}{SCENARIO_SERVERS}{TAIL}"), "t.toml", &[])
}

fn gateway(tables: &str) -> Result<GatewayFile, ScenarioError> {
    GatewayFile::load_str(&format!("{tables}{GATEWAY_SERVERS}"), "gateway.toml")
}

#[test]
fn pasted_tables_build_the_core_configuration_the_scenario_builds() {
    let file = gateway(TABLES).unwrap_or_else(|e| panic!("{e}"));
    let s = scenario(TABLES).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(file.gateway, s.gateway);
    assert_eq!(file.client, s.client);
    // The very functions both build with; the core's configurations have no `PartialEq`: their debug forms show
    // every field.
    let core = gateway_config(&file.gateway, &file.client);
    assert_eq!(format!("{core:?}"), format!("{:?}", gateway_config(&s.gateway, &s.client)));
    let breaker = core.resilience.breaker.as_ref().map(|b| (b.open, b.open_growth));
    assert_eq!(breaker, Some((std::time::Duration::from_secs(2), 3.0)));
    assert_eq!(core.call_deadline, std::time::Duration::from_secs(5));
    assert_eq!(core.requirement_rules, [("language".to_owned(), "language_support".to_owned())]);
    let client = |t: &ClientSpec, g: &GatewaySpec| format!("{:?} {:?}", t.to_core(g), t.pool());
    assert_eq!(client(&file.client, &file.gateway), client(&s.client, &s.gateway));
    let formula = |g: &GatewaySpec| {
        let rng = mcpstorm_core::SeededRng::new(1);
        g.router(rng, tokio::time::Instant::now()).map(|r| r.formula_name().to_owned())
    };
    assert_eq!(formula(&file.gateway), Ok("round_robin".to_owned()));
    assert_eq!(formula(&file.gateway), formula(&s.gateway));
}

#[test]
fn a_bad_value_reads_the_same_at_the_same_place() {
    for (from, to) in [
        ("open = \"2s\"", "open = \"0s\""),
        ("open_growth = 3.0", "open_growth = 0.5"),
        ("max_in_flight = 20", "max_in_flight = 0"),
        ("formula = \"round_robin\"", "formula = \"fastest\""),
        ("deadline = \"5s\"", "deadline = \"8d\""),
        ("jitter = 0.1", "jitter = 0.1\njiter = 3"),
    ] {
        let bad = edit(TABLES, from, to);
        let in_file = gateway(&bad).expect_err(to).problems().to_vec();
        let in_scenario = scenario(&bad).expect_err(to).problems().to_vec();
        assert_eq!(in_file.len(), 1, "{to}: {}", ScenarioError::Invalid(in_file.clone()));
        let (file, scen) = (&in_file[0], &in_scenario[0]);
        assert_eq!((&file.key, &file.message), (&scen.key, &scen.message), "{to}");
        let (line, column) = file.line_column().unwrap_or_default();
        assert_eq!(Some((line + 2, column)), scen.line_column(), "{to}: the scenario has two lines more above");
    }
}

#[test]
fn each_replica_names_exactly_one_address_and_secrets_come_from_the_environment() {
    let cases = [
        (
            "tcp = \"127.0.0.1:9001\"",
            "tcp = \"127.0.0.1:9001\"\nstdio = \"x\"",
            "servers[0].replicas[0]",
            "exactly one",
        ),
        ("tcp = \"127.0.0.1:9001\"", "http = \"ftp://x\"", "servers[0].replicas[0].http", "not an http"),
        (
            "tcp = \"127.0.0.1:9001\"",
            "http = \"http://127.0.0.1:9/mcp\"\nheaders = { Authorization = \"Bearer abc\" }",
            "servers[0].replicas[0].headers.Authorization",
            "env:NAME",
        ),
        (
            "tcp = \"127.0.0.1:9001\"",
            "tcp = \"127.0.0.1:9001\"\nheaders = { X = \"1\" }",
            "servers[0].replicas[0].headers",
            "only to an `http`",
        ),
        ("stdio = \"python3 a.py\"", "stdio = \"python3 'a.py\"", "servers[0].replicas[1].stdio", "unclosed quote"),
        (
            "stdio = \"python3 a.py\"",
            "stdio = \"python3 a.py\"\nenv = { GITHUB_TOKEN = \"ghp_abc\" }",
            "servers[0].replicas[1].env.GITHUB_TOKEN",
            "this variable may hold a secret",
        ),
        (
            "stdio = \"python3 a.py\"",
            "stdio = \"python3 a.py\"\nenv = { X = \"env:\" }",
            "servers[0].replicas[1].env.X",
            "needs a variable name",
        ),
        (
            "tcp = \"127.0.0.1:9001\"",
            "tcp = \"127.0.0.1:9001\"\nenv = { X = \"1\" }",
            "servers[0].replicas[0].env",
            "only to a `stdio`",
        ),
        (
            "tcp = \"127.0.0.1:9001\"",
            "tcp = \"127.0.0.1:9001\"\ncwd = \"/srv\"",
            "servers[0].replicas[0].cwd",
            "only to a `stdio`",
        ),
        (
            "stdio = \"python3 a.py\"",
            "stdio = \"python3 a.py\"\ncwd = \" \"",
            "servers[0].replicas[1].cwd",
            "must not be empty",
        ),
    ];
    for (from, to, key, says) in cases {
        let text = edit(&format!("{TABLES}{GATEWAY_SERVERS}"), from, to);
        let err = GatewayFile::load_str(&text, "g.toml").expect_err(to);
        let problem = err.problems().iter().find(|p| p.key.as_deref() == Some(key));
        assert!(problem.is_some_and(|p| p.message.contains(says)), "{to}: {err}");
        assert!(problem.is_some_and(|p| p.line_column().is_some()), "{to}: located in the file: {err}");
    }
}

#[test]
fn a_reachable_bind_needs_agent_tokens_and_names_are_unique() {
    let open = format!("[listen]\nhttp = \"0.0.0.0:8848\"\n{TABLES}{GATEWAY_SERVERS}");
    let err = GatewayFile::load_str(&open, "g.toml").expect_err("0.0.0.0 without tokens");
    assert!(err.to_string().contains("agent_tokens_env"), "{err}");
    let with_tokens =
        open.replace("http = \"0.0.0.0:8848\"", "http = \"0.0.0.0:8848\"\nagent_tokens_env = [\"AGENT_TOKEN\"]");
    GatewayFile::load_str(&with_tokens, "g.toml").unwrap_or_else(|e| panic!("{e}"));
    let twice = format!("{TABLES}{GATEWAY_SERVERS}{GATEWAY_SERVERS}");
    let err = GatewayFile::load_str(&twice, "g.toml").expect_err("duplicate server");
    assert!(err.to_string().contains("duplicate server name"), "{err}");
}

#[test]
fn other_tables_are_refused() {
    let err = gateway(&format!("{TABLES}{TAIL}")).expect_err("[load] is not a gateway table");
    assert_eq!(err.problems()[0].key.as_deref(), Some("load"), "{err}");
    assert!(err.to_string().contains("unknown key"), "{err}");
}

#[test]
fn the_old_backoff_spelling_is_the_proportional_backoff() {
    let file = gateway(TABLES).unwrap_or_else(|e| panic!("{e}"));
    let new = gateway(&edit(TABLES, "\"seed\"", "\"proportional\"")).expect("valid");
    assert_eq!(file.gateway.retry, new.gateway.retry);
    assert_eq!(new.gateway.retry.map(|r| r.backoff), Some(crate::scenario::layers::BackoffKind::Proportional));
}

#[test]
fn breaker_sync_is_a_gateway_table_checked_where_it_is_written() {
    let good = gateway("[gateway.sync]\nredis = \"redis://127.0.0.1:6379/2\"\nnode = \"gw-1\"\n")
        .unwrap_or_else(|e| panic!("{e}"));
    let sync = good.gateway.sync.expect("[gateway.sync]");
    assert_eq!((sync.redis.as_str(), sync.key.as_str()), ("redis://127.0.0.1:6379/2", "mcpstorm:breakers"));
    for (to, says) in [("http://127.0.0.1:6379", "not a Redis URL"), ("rediss://127.0.0.1:6379", "TLS")] {
        let err = gateway(&format!("[gateway.sync]\nredis = \"{to}\"\n")).expect_err(to);
        let problem = err.problems().iter().find(|p| p.key.as_deref() == Some("gateway.sync.redis"));
        assert!(problem.is_some_and(|p| p.message.contains(says)), "{to}: {err}");
        assert!(problem.is_some_and(|p| p.line_column().is_some()), "{to}: located in the file: {err}");
    }
    // In a scenario, the URL names the simulated host that runs Redis: an address is refused there.
    let err = scenario("[gateway.sync]\nredis = \"redis://127.0.0.1:6379\"\n").expect_err("an address in a scenario");
    assert!(err.to_string().contains("must name the simulated host"), "{err}");
}

#[test]
fn oauth_tables_refuse_forgeable_algorithms_a_wide_skew_and_a_token_for_a_stdio_replica() {
    let text = "[listen]\nhttp = \"0.0.0.0:8848\"\n\
                [auth]\nissuer = \"https://idp.example\"\naudience = \"gw\"\nalgorithms = [\"HS256\", \"none\", \"RS256\"]\nleeway = \"10m\"\n\
                [[servers]]\nname = \"a\"\n[[servers.replicas]]\nstdio = \"x\"\n[servers.oauth]\nclient_id = \"\"\n";
    let Err(e) = tables::GatewayFile::load_str(text, "g.toml") else { panic!("loaded") };
    let keys: Vec<_> = e.problems().iter().filter_map(|p| p.key.clone()).collect();
    for key in [
        "auth.audience",
        "auth.algorithms[0]",
        "auth.algorithms[1]",
        "auth.leeway",
        "servers[0].oauth.client_id",
        "servers[0].oauth.client_secret_env",
        "servers[0].oauth",
    ] {
        assert!(keys.iter().any(|k| k == key), "{key} not named: {e}");
    }
    assert!(!keys.iter().any(|k| k == "listen.http"), "[auth] lets a public bind in: {e}");
    assert!(!keys.iter().any(|k| k == "auth.algorithms[2]"), "{e}");
    assert!(e.to_string().contains("can be forged"), "{e}");
}

#[test]
fn a_gateway_with_auth_reads_its_introspection_and_client_secrets_from_the_environment() {
    let text = "[auth]\nissuer = \"https://idp.example\"\naudience = \"https://gw.example/mcp\"\n\
                [auth.introspection]\nclient_id = \"gw\"\nclient_secret_env = \"INTROSPECT\"\n\
                [[servers]]\nname = \"a\"\n[[servers.replicas]]\nhttp = \"https://a.example/mcp\"\n\
                [servers.oauth]\nclient_id = \"gw\"\nclient_secret_env = \"A_SECRET\"\n";
    let file = tables::GatewayFile::load_str(text, "g.toml").unwrap_or_else(|e| panic!("{e}"));
    let vars: Vec<_> =
        crate::gateway::config::environment::references(&file).into_iter().map(|r| (r.key, r.var)).collect();
    assert!(vars.contains(&("auth.introspection.client_secret_env".into(), "INTROSPECT".into())), "{vars:?}");
    assert!(vars.contains(&("servers[0].oauth.client_secret_env".into(), "A_SECRET".into())), "{vars:?}");
}
