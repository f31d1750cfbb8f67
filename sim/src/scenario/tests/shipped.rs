//! The shipped scenarios and the format's JSON Schema file.

use super::*;

#[test]
fn shipped_scenarios_load_validate_and_survive_a_round_trip() {
    let files = shipped();
    let names: Vec<_> = files.iter().filter_map(|p| p.file_stem()?.to_str().map(str::to_owned)).collect();
    for expected in ["smoke", "concurrency_knee", "retry_storm", "schema_drift", "clock_skew"] {
        assert!(names.iter().any(|n| n == expected), "scenarios/{expected}.toml is missing: {names:?}");
    }
    for file in files {
        let s = load_file(&file, &[]).unwrap_or_else(|e| panic!("{}:\n{e}", file.display()));
        let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        assert_eq!(s.name, stem, "{}: name matches the file", file.display());
        let text = std::fs::read_to_string(&file).expect("readable");
        assert!(text.starts_with("#:schema ./scenario.schema.json\n"), "{}: schema directive", file.display());
        // The TOML form (a report's copy of the scenario) reads back as the same scenario, but for the secrets,
        // which it writes redacted.
        let again = toml::to_string(&s).expect("serializes");
        assert!(s.gateway.credentials.iter().all(|c| !again.contains(c.secret.expose())), "{}", file.display());
        let mut reloaded = load_str(&again, "again", &[]).expect("reloads");
        for c in &reloaded.gateway.credentials {
            assert_eq!(c.secret.expose(), mcpstorm_core::Secret::REDACTED);
        }
        reloaded.gateway.credentials = s.gateway.credentials.clone();
        assert_eq!(reloaded, s, "{}", file.display());
        if let Some(sweep) = &s.sweep {
            assert_eq!(expand_sweep(&s).expect("expands").len(), sweep.values.len());
        }
    }
}

#[test]
fn concurrency_knee_is_the_concurrent_client_designs_experiment() {
    let s = load_file(&workspace().join("scenarios/concurrency_knee.toml"), &[]).expect("valid");
    let runs = expand_sweep(&s).expect("expands");
    let rows: Vec<_> = runs.iter().map(|(label, run)| (label.as_str(), run.load.sessions)).collect();
    assert_eq!(
        rows,
        [
            ("1", Some(1)),
            ("10", Some(10)),
            ("50", Some(50)),
            ("100", Some(100)),
            ("200", Some(200)),
            ("500", Some(500))
        ]
    );
    assert_eq!((s.load.calls, s.servers[0].workers, s.client.max_in_flight), (Some(500), Some(200), 1000));
    assert_eq!(s.servers[0].tools[0].latency, mcpstorm_fake::LatencyDist::Fixed { ms: 200.0 });
}

#[test]
fn schema_files_are_current() {
    for (file, generated) in
        [(schema::SCHEMA_FILE, schema::schema_json()), (schema::GATEWAY_SCHEMA_FILE, schema::gateway_schema_json())]
    {
        let path = workspace().join(file);
        if std::env::var_os("MCPSTORM_WRITE_SCHEMA").is_some() {
            std::fs::write(&path, &generated).expect("write the schema");
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "{file} is out of date: regenerate it with `MCPSTORM_WRITE_SCHEMA=1 cargo test -p mcpstorm-sim schema`",
        );
    }
}

#[test]
fn the_example_gateway_config_is_valid_and_described_by_its_schema() {
    let path = workspace().join("examples/gateway.toml");
    let file = crate::scenario::tables::GatewayFile::load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(file.servers.len(), 2);
    let schema = schema::gateway_schema();
    for key in ["listen", "servers", "gateway", "client", "admin"] {
        assert!(schema.pointer(&format!("/properties/{key}")).is_some(), "gateway schema lacks `{key}`");
    }
}

#[test]
fn schema_describes_the_format() {
    let schema = schema::schema();
    let props = schema.pointer("/properties").and_then(|p| p.as_object()).expect("top-level properties");
    for key in ["name", "seed", "duration", "tick", "network", "servers", "load", "agent", "client", "faults", "checks"]
    {
        assert!(props.contains_key(key), "schema lacks `{key}`");
    }
    assert_eq!(schema.pointer("/additionalProperties"), Some(&serde_json::json!(false)), "unknown keys are errors");
    assert_eq!(schema.pointer("/properties/duration/type"), Some(&serde_json::json!("string")));
    let defs = schema.pointer("/definitions").and_then(|d| d.as_object()).expect("definitions");
    for def in ["ServerSpec", "ToolConfig", "LatencyDist", "Load", "Fault", "FaultKind", "Sweep"] {
        assert!(defs.contains_key(def), "schema lacks the definition {def}");
    }
}
