//! `--set` arguments and sweeps: values land at their keys, bad ones are reported at the argument or value.

use super::*;

#[test]
fn set_changes_values() {
    assert_eq!(set(&["seed=7"]).seed, 7);
    assert_eq!(set(&["load.sessions=200"]).load.sessions, Some(200));
    assert_eq!(set(&["servers[0].tools[0].error_rate=0.5"]).servers[0].tools[0].error_rate, 0.5);
    assert_eq!(set(&["faults[0].start=\"2s\""]).faults[0].start.0, std::time::Duration::from_secs(2));
    assert_eq!(set(&["faults[0].start=2s"]).faults[0].start.0, std::time::Duration::from_secs(2), "bare string");
    assert_eq!(set(&["name=foo"]).name, "foo");
    assert_eq!(set(&["servers[1].workers=4"]).servers[1].workers, Some(4), "a key the file does not have");
    let s = set(&["agent.retry=immediate", "agent.max_retries=3"]);
    assert_eq!((s.agent.retry, s.agent.max_retries), (RetryMode::Immediate, 3), "a table the file does not have");
    assert_eq!(set(&["load.sessions=5", "load.sessions=6"]).load.sessions, Some(6), "the last one wins");
    let s = set(&["servers[0].tools[0].latency={ dist = \"fixed\", ms = 3 }"]);
    assert_eq!(s.servers[0].tools[0].latency, mcpstorm_fake::LatencyDist::Fixed { ms: 3.0 });
}

/// `[report] contrast` can be switched off from the command line: `"none"` is no contrast run, and the contrast
/// checks, which only a contrast run can judge, are then not judged (without any contrast they are refused). Only
/// the profile names and `"none"` are accepted.
#[test]
fn contrast_none_switches_it_off() {
    let with = format!("{BASE}\n[report]\ncontrast = \"naive\"\n\n[checks]\ncontrast_p99_ratio = 1.0\n");
    let on = load(&with, &[]).expect("valid");
    assert_eq!(on.report.contrast, Some(Contrast::Profile(GatewayProfile::Naive)));
    assert_eq!(on.report.contrast_profile(), Some(GatewayProfile::Naive));
    for off in ["report.contrast=\"none\"", "report.contrast=none"] {
        let s = load(&with, &[off]).expect("valid");
        assert_eq!((s.report.contrast, s.report.contrast_profile()), (Some(Contrast::Off), None), "{off}");
        let written = toml::to_string(&s).expect("serialize");
        assert!(written.contains("contrast = \"none\""), "{written}");
    }
    let without = edit(&with, "[report]\ncontrast = \"naive\"\n", "");
    let found: Vec<String> = problems(&without, &[]).iter().map(|p| p.to_string()).collect();
    assert!(found.len() == 1 && found[0].contains("needs `[report] contrast`"), "{found:?}");
    let found = problems(&with, &["report.contrast=off"]);
    let shown: Vec<String> = found.iter().map(|p| p.to_string()).collect();
    assert_eq!(
        shown,
        [
            "--set report.contrast=off: report.contrast: invalid value: string \"off\", expected \"default\", \"naive\" or \
          \"none\""
        ]
    );
}

#[test]
fn bad_set_arguments_name_the_argument() {
    let one = |sets: &[&str], fragment: &str| {
        let found = problems(BASE, sets);
        assert_eq!(found.len(), 1, "{sets:?}: {}", ScenarioError::Invalid(found.clone()));
        let shown = found[0].to_string();
        assert!(shown.starts_with(&format!("--set {}: ", sets[0])), "{shown}");
        assert!(shown.contains(fragment), "{shown}\ndoes not contain {fragment:?}");
    };
    one(&["load.sesions=3"], "load.sesions: unknown key; did you mean `sessions`? expected one of `mode`");
    one(&["bogus=3"], "bogus: unknown key");
    one(&["servers[5].name=x"], "servers[5]: index 5 is out of range: the array has 2 entries (0 to 1)");
    one(&["load.sessions[0]=1"], "load.sessions: is an integer, not an array");
    one(&["name.first=x"], "name: is a string, not a table");
    one(&["load.sessions"], "expected key=value");
    one(&["load..sessions=1"], "bad key path");
    one(&["load.sessions=abc"], "load.sessions: invalid type: string \"abc\", expected an integer >= 0");
    one(&["load.sessions=[1,"], "not a TOML value");
    one(&["load.sessions=0"], "load.sessions: must be at least 1");
    one(&["servers[0].tools[0].latency={ dist = \"fixed\" }"], "servers[0].tools[0].latency.ms: is required");
    // Every bad argument is reported, in the order given, after the file's own problems.
    let text = edit(BASE, "replicas = 2", "replicas = \"2\"");
    let found = problems(&text, &["load.sessions=x", "faults[3].start=1s", "a=1"]);
    let shown: Vec<String> = found.iter().map(|p| p.to_string()).collect();
    assert_eq!(
        shown,
        [
            "t.toml:6:12: servers[0].replicas: invalid type: string \"2\", expected an integer >= 0",
            "--set load.sessions=x: load.sessions: invalid type: string \"x\", expected an integer >= 0",
            "--set faults[3].start=1s: faults[3]: index 3 is out of range: the array has 1 entry (index 0)",
            "--set a=1: a: unknown key; expected one of `name`, `description`, `seed`, `duration`, `tick`, \
             `gateway_config`, `network`, `servers`, `load`, `agent`, `client`, `faults`, `checks`, `fidelity`, `sweep`, `gateway`, `nodes`, `identity_provider`, `report`, \
             `swarm`",
        ]
    );
}

#[test]
fn sweep_expands_one_scenario_per_value() {
    let text = format!("{BASE}\n[sweep]\nparam = \"load.sessions\"\nvalues = [1, 20, 300]\n");
    let base = load(&text, &[]).expect("valid");
    let runs = expand_sweep(&base).expect("expands");
    let got: Vec<_> = runs.iter().map(|(label, s)| (label.as_str(), s.load.sessions, s.sweep.is_none())).collect();
    assert_eq!(got, [("1", Some(1), true), ("20", Some(20), true), ("300", Some(300), true)]);
    // Everything else is the base.
    let mut again = runs[1].1.clone();
    again.load.sessions = base.load.sessions;
    again.sweep = base.sweep.clone();
    assert_eq!(again, base);

    let text = format!("{BASE}\n[sweep]\nparam = \"faults[0].extra\"\nvalues = [\"1s\", \"2s\"]\n");
    let runs = expand_sweep(&load(&text, &[]).expect("valid")).expect("expands");
    assert_eq!(runs[1].0, "2s");
    assert_eq!(runs[1].1.faults[0].extra.map(|d| d.0), Some(std::time::Duration::from_secs(2)));

    // A key the file leaves at its default, and --set combined with a sweep.
    let text = format!("{BASE}\n[sweep]\nparam = \"seed\"\nvalues = [1, 2]\n");
    let runs = expand_sweep(&load(&text, &["load.sessions=3"]).expect("valid")).expect("expands");
    assert_eq!(runs.iter().map(|(_, s)| (s.seed, s.load.sessions)).collect::<Vec<_>>(), [(1, Some(3)), (2, Some(3))]);

    assert!(expand_sweep(&load(BASE, &[]).expect("valid")).expect("no sweep").is_empty());

    // A seed beyond TOML's i64 (from `--seed`) survives expansion.
    let text = format!("{BASE}\n[sweep]\nparam = \"load.sessions\"\nvalues = [1, 2]\n");
    let mut big = load(&text, &[]).expect("valid");
    big.seed = u64::MAX;
    let runs = expand_sweep(&big).expect("expands");
    assert!(runs.iter().all(|(_, s)| s.seed == u64::MAX));

    // Values added after loading have no rows: an error, not a silent partial sweep.
    if let Some(sweep) = &mut big.sweep {
        sweep.values.push(toml::Value::Integer(7));
    }
    let error = expand_sweep(&big).expect_err("not loaded").to_string();
    assert!(error.contains("this sweep was not loaded"), "{error}");
}

#[test]
fn bad_sweeps() {
    let sweep = |param: &str, values: &str| format!("{BASE}\n[sweep]\nparam = \"{param}\"\nvalues = {values}\n");
    let text = sweep("load.sesions", "[1, 2]");
    expect_one(&text, &[], "load.sesions", "param = |\"load.sesions\"", "unknown key");
    let text = sweep("servers", "[1, 2]");
    expect_one(&text, &[], "sweep.param", "param = |", "is an array, not a single value");
    let text = sweep("load..x", "[1]");
    expect_one(&text, &[], "sweep.param", "param = |", "expected a key");
    let text = sweep("sweep.param", "[\"x\"]");
    expect_one(&text, &[], "sweep.param", "param = |", "cannot sweep itself");
    let text = sweep("servers[4].workers", "[1]");
    expect_one(&text, &[], "sweep.param", "param = |", "index 4 is out of range");
    let text = sweep("load.sessions", "[]");
    expect_one(&text, &[], "sweep.values", "values = |[]", "at least one value");
    let text = sweep("load.sessions", "[1, 2, 1]");
    expect_one(&text, &[], "sweep.values[2]", "values = [1, 2, |1]", "repeats 1");
    let text = sweep("load.sessions", "[1, [2]]");
    expect_one(&text, &[], "sweep.values[1]", "values = [1, |[2]]", "single value");
    // A value that does not fit the key is reported at the value, naming the key.
    let text = sweep("load.sessions", "[1, 0, \"many\"]");
    let found = problems(&text, &[]);
    assert_eq!(found.len(), 2, "{}", ScenarioError::Invalid(found.clone()));
    assert_eq!(found[0].key.as_deref(), Some("load.sessions"));
    assert_eq!(found[0].line_column(), Some(pos(&text, "values = [1, |0")));
    assert!(found[0].message.contains("at least 1 (with sweep value load.sessions = 0)"), "{}", found[0]);
    assert_eq!(found[1].line_column(), Some(pos(&text, "values = [1, 0, |\"many\"")));
    assert!(found[1].message.contains("invalid type: string \"many\""), "{}", found[1]);
    // A value that breaks another rule: the fault no longer fits in the run.
    let text = sweep("duration", "[\"10s\", \"2s\"]");
    let found = problems(&text, &[]);
    assert_eq!(found.len(), 1, "{}", ScenarioError::Invalid(found.clone()));
    assert_eq!(found[0].key.as_deref(), Some("faults[0].duration"));
    assert!(found[0].message.ends_with("(with sweep value duration = 2s)"), "{}", found[0]);
}

#[test]
fn sweeps_keep_the_real_secrets_and_the_profile_can_be_set() {
    let text = format!(
        "{BASE}\n[gateway]\ncredentials = [{{ scheme = \"bearer\", secret = \"s3cr3t\" }}]\n\n[sweep]\nparam = \"load.sessions\"\nvalues = [1, 2]\n"
    );
    let s = load(&text, &["gateway.profile=naive"]).expect("valid");
    assert_eq!(s.gateway.profile, mcpstorm_core::session::GatewayProfile::Naive);
    let runs = expand_sweep(&s).expect("expands");
    assert_eq!(runs.len(), 2);
    for (_, run) in runs {
        assert_eq!(run.gateway.credentials[0].secret.expose(), "s3cr3t", "a sweep run lost the secret");
        assert_eq!(run.gateway.profile, mcpstorm_core::session::GatewayProfile::Naive);
    }
}

#[test]
fn gateway_layer_tables_load_set_and_report_bad_values_at_their_keys() {
    let text = format!("{BASE}\n[gateway.breaker]\nfailure_rate = 2.0\n");
    expect_one(&text, &[], "gateway.breaker.failure_rate", "failure_rate = |2.0", "(0, 1]");
    let found = problems(BASE, &["gateway.retry.max_attempts=0"]);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].key.as_deref(), Some("gateway.retry.max_attempts"));
    assert_eq!(found[0].location, Location::Set { arg: "gateway.retry.max_attempts=0".into() }, "{}", found[0]);
    let s = set(&["gateway.breaker.open=\"2s\"", "gateway.budget.ratio=0.1", "gateway.fallbacks.echo=\"echo_cached\""]);
    let c = s.gateway.layers().to_core();
    assert_eq!(c.breaker.map(|b| b.open), Some(std::time::Duration::from_secs(2)));
    assert_eq!(c.budget.map(|b| b.ratio), Some(0.1));
    assert_eq!(c.fallbacks.get("echo"), Some("echo_cached"));
    let naive = set(&["gateway.breaker.open=\"2s\"", "gateway.profile=naive"]).gateway.layers().to_core();
    assert!(naive.breaker.is_none() && naive.retry.is_none() && naive.budget.is_none() && naive.throttle.is_none());
    let text = format!("{BASE}\n[gateway.throttle]\nk = 2\nwindw = \"1s\"\n");
    assert_eq!(problems(&text, &[]).len(), 1, "unknown keys in a layer table are rejected");
}
