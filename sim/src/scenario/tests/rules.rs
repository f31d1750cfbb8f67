//! Meaning: the semantic rules, and what code asks of a loaded scenario (`validate`, `resolve_target`,
//! `fake_config`).

use super::*;

#[test]
fn every_semantic_rule() {
    // (from, to, key, where, message fragment). `where` marks the reported position with `|`.
    let cases: &[(&str, &str, &str, &str, &str)] = &[
        ("duration = \"10s\"", "duration = \"0s\"", "duration", "duration = |\"0s\"", "longer than 0"),
        ("duration = \"10s\"", "duration = \"10s\"\ntick = \"0s\"", "tick", "tick = |", "longer than 0"),
        ("duration = \"10s\"", "duration = \"10s\"\ntick = \"11s\"", "tick", "tick = |", "at most 1s, got 11s"),
        ("duration = \"10s\"", "duration = \"10s\"\ntick = \"999ns\"", "tick", "tick = |", "at least 1us"),
        ("name = \"t\"", "name = \"../etc\"", "name", "name = |", "report directory"),
        ("name = \"t\"", "name = \"\"", "name", "name = |", "must not be empty"),
        (
            "duration = \"10s\"",
            "duration = \"10s\"\nnetwork = { fail_rate = 1.5 }",
            "network.fail_rate",
            "fail_rate = |1.5",
            "between 0 and 1",
        ),
        (
            "duration = \"10s\"",
            "duration = \"10s\"\nnetwork = { latency = \"5ms\", max_latency = \"2ms\" }",
            "network.max_latency",
            "max_latency = |",
            "at least network.latency",
        ),
        (
            "name = \"b\"",
            "name = \"a\"",
            "servers[1].name",
            "name = |\"a\"\n\n[[servers.tools]]\nname = \"get\"",
            "duplicate server name",
        ),
        ("name = \"b\"", "name = \"\"", "servers[1].name", "[[servers]]\nname = |\"\"", "must not be empty"),
        ("name = \"b\"", "name = \"b#1\"", "servers[1].name", "name = |\"b#1\"", "`#`"),
        ("replicas = 2", "replicas = 0", "servers[0].replicas", "replicas = |0", "at least 1"),
        ("replicas = 2", "replicas = 2\nworkers = 0", "servers[0].workers", "workers = |0", "at least 1"),
        (
            "replicas = 2",
            "replicas = 2\nmax_in_flight_per_connection = 0",
            "servers[0].max_in_flight_per_connection",
            "max_in_flight_per_connection = |0",
            "at least 1",
        ),
        (
            "name = \"get\"",
            "name = \"get\"\nerror_rate = 2.0",
            "servers[1].tools[0].error_rate",
            "error_rate = |2",
            "between 0 and 1",
        ),
        ("p99_ms = 40", "p99_ms = 4", "servers[0].tools[0].latency.p99_ms", "p99_ms = |4", "must be >= p50_ms"),
        (
            "name = \"get\"",
            "name = \"get\"\n[[servers.tools]]\nname = \"get\"",
            "servers[1].tools[1].name",
            "[[servers.tools]]\nname = |\"get\"\n\n[load]",
            "duplicate tool name",
        ),
        ("sessions = 10", "", "load.sessions", "|[load]", "required when mode = \"closed\""),
        ("sessions = 10", "sessions = 0", "load.sessions", "sessions = |0", "at least 1"),
        ("sessions = 10", "sessions = 10\nrate = 5.0", "load.rate", "rate = |5", "only to mode = \"open\""),
        (
            "mode = \"closed\"\nsessions = 10",
            "mode = \"open\"",
            "load.rate",
            "|[load]",
            "required when mode = \"open\"",
        ),
        (
            "mode = \"closed\"",
            "mode = \"open\"\nrate = 5.0",
            "load.sessions",
            "sessions = |10",
            "only to mode = \"closed\"",
        ),
        ("mode = \"closed\"\nsessions = 10", "mode = \"open\"\nrate = 0.0", "load.rate", "rate = |0", "> 0"),
        ("sessions = 10", "sessions = 10\nhosts = 0", "load.hosts", "hosts = |0", "at least 1"),
        ("sessions = 10", "sessions = 10\ncalls = 0", "load.calls", "calls = |0", "at least 1"),
        ("server = \"a\"", "server = \"c\"", "load.mix[0].server", "server = |\"c\"", "no server is named \"c\""),
        ("tool = \"echo\"", "tool = \"get\"", "load.mix[0].tool", "tool = |\"get\"", "has no tool \"get\""),
        ("tool = \"echo\"", "tool = \"echo\"\nweight = 0", "load.mix[0].weight", "weight = |0", "> 0"),
        ("tool = \"echo\"", "tool = \"echo\"\nweight = nan", "load.mix[0].weight", "weight = |nan", "> 0"),
        ("tool = \"echo\"", "tool = \"echo\"\nargs = 1", "load.mix[0].args", "args = |1", "table of arguments"),
        ("[load]", "[agent]\nmax_retries = 101\n\n[load]", "agent.max_retries", "max_retries = |101", "at most 100"),
        ("[load]", "[agent]\nretry = \"immediate\"\n\n[load]", "agent.max_retries", "|[agent]", "at least 1"),
        ("[load]", "[client]\nmax_in_flight = 0\n\n[load]", "client.max_in_flight", "max_in_flight = |0", "at least 1"),
        (
            "[load]",
            "[client]\nper_connection = 0\n\n[load]",
            "client.per_connection",
            "per_connection = |0",
            "at least 1",
        ),
        ("[load]", "[client]\ndeadline = \"0s\"\n\n[load]", "client.deadline", "deadline = |", "longer than 0"),
        ("[load]", "[client]\nqueue_wait = \"0ms\"\n\n[load]", "client.queue_wait", "queue_wait = |", "longer than 0"),
        ("target = \"a\"", "target = \"c\"", "faults[0].target", "target = |\"c\"", "no server is named \"c\""),
        (
            "target = \"a\"",
            "target = \"a#2\"",
            "faults[0].target",
            "target = |",
            "(a#0 to a#1), so there is no replica 2",
        ),
        ("target = \"a\"", "target = \"a#x\"", "faults[0].target", "target = |", "replica index"),
        ("target = \"a\"", "target = \"b#1\"", "faults[0].target", "target = |", "has 1 replica (b#0)"),
        ("start = \"1s\"", "start = \"9s\"", "faults[0].duration", "duration = |\"2s\"", "after the run ends"),
        (
            "duration = \"2s\"\nextra",
            "duration = \"0s\"\nextra",
            "faults[0].duration",
            "duration = |\"0s\"",
            "longer than 0",
        ),
        ("extra = \"100ms\"", "", "faults[0].kind", "kind = |", "needs `extra`"),
        ("extra = \"100ms\"", "multiplier = 0.5", "faults[0].multiplier", "multiplier = |0.5", ">= 1"),
        (
            "extra = \"100ms\"",
            "extra = \"100ms\"\nrate = 0.5",
            "faults[0].rate",
            "rate = |0.5",
            "does not apply to kind = \"latency_spike\"",
        ),
        (
            "kind = \"latency_spike\"",
            "kind = \"error_burst\"\nrate = 0.5",
            "faults[0].extra",
            "extra = |",
            "does not apply to kind = \"error_burst\"",
        ),
        (
            "kind = \"latency_spike\"\ntarget = \"a\"\nstart = \"1s\"\nduration = \"2s\"\nextra = \"100ms\"",
            "kind = \"error_burst\"\ntarget = \"a\"\nstart = \"1s\"\nduration = \"2s\"\nrate = 1.5",
            "faults[0].rate",
            "rate = |1.5",
            "between 0 and 1",
        ),
        (
            "kind = \"latency_spike\"\ntarget = \"a\"\nstart = \"1s\"\nduration = \"2s\"\nextra = \"100ms\"",
            "kind = \"error_burst\"\ntarget = \"a\"\nstart = \"1s\"\nduration = \"2s\"",
            "faults[0].kind",
            "kind = |\"error_burst\"",
            "needs `rate`",
        ),
        (
            "kind = \"latency_spike\"",
            "kind = \"crash\"",
            "faults[0].extra",
            "extra = |",
            "does not apply to kind = \"crash\"",
        ),
        (
            FAULT,
            "kind = \"schema_drift\"\ntarget = \"a\"\nstart = \"1s\"\nduration = \"2s\"\nwhat = \"version\"\nversion = \"2\"",
            "faults[0].duration",
            "duration = |\"2s\"",
            "at an instant",
        ),
        (
            FAULT,
            "kind = \"schema_drift\"\ntarget = \"a\"\nstart = \"1s\"",
            "faults[0].kind",
            "kind = |",
            "needs `what`",
        ),
        (
            FAULT,
            "kind = \"schema_drift\"\ntarget = \"a\"\nstart = \"1s\"\nwhat = \"add_required\"\ntool = \"echo\"\nparam = \"p\"",
            "faults[0].what",
            "what = |",
            "needs `schema`",
        ),
        (
            FAULT,
            "kind = \"schema_drift\"\ntarget = \"a\"\nstart = \"1s\"\nwhat = \"rename\"\ntool = \"nope\"\nto = \"x\"",
            "faults[0].tool",
            "tool = |\"nope\"",
            "has no tool \"nope\"",
        ),
        (
            FAULT,
            "kind = \"schema_drift\"\ntarget = \"a\"\nstart = \"1s\"\nwhat = \"version\"\nversion = \"2\"\nto = \"x\"",
            "faults[0].to",
            "to = |",
            "does not apply to what = \"version\"",
        ),
        (
            FAULT,
            "kind = \"schema_drift\"\ntarget = \"a\"\nstart = \"1s\"\nwhat = \"replace\"\ntool = \"echo\"\nschema = { type = \"string\" }",
            "faults[0].schema",
            "schema = |",
            "\"type\": \"object\"",
        ),
        (
            FAULT,
            "kind = \"schema_drift\"\ntarget = \"a\"\nstart = \"10s\"\nwhat = \"version\"\nversion = \"2\"",
            "faults[0].start",
            "start = |",
            "at or after the end",
        ),
        (
            FAULT,
            "kind = \"clock_skew\"\ntarget = \"gateway\"\nstart = \"1s\"",
            "faults[0].kind",
            "kind = |",
            "needs `offset`, `drift` or `jump`",
        ),
        (
            FAULT,
            "kind = \"clock_skew\"\ntarget = \"a\"\nstart = \"1s\"\ndrift = -2.0",
            "faults[0].drift",
            "drift = |",
            "rate in (-1, 10]",
        ),
        (
            FAULT,
            "kind = \"clock_skew\"\ntarget = \"a\"\nstart = \"1s\"\noffset = \"-3 parsecs\"",
            "faults[0].offset",
            "offset = |",
            "invalid signed duration",
        ),
        (
            FAULT,
            "kind = \"clock_skew\"\ntarget = \"a\"\nstart = \"1s\"\njump = \"1s\"\nreset = true",
            "faults[0].reset",
            "reset = |",
            "needs a `duration`",
        ),
        (
            FAULT,
            "kind = \"clock_skew\"\ntarget = \"a\"\nstart = \"1s\"\njump = \"1s\"\nrate = 0.5",
            "faults[0].rate",
            "rate = |",
            "belongs to error_burst",
        ),
        (
            FAULT,
            "kind = \"session_expiry\"\ntarget = \"gateway\"\nstart = \"1s\"",
            "faults[0].target",
            "target = |\"gateway\"",
            "no server is named \"gateway\"",
        ),
        (
            FAULT,
            "kind = \"auth_rotation\"\ntarget = \"a\"\nstart = \"1s\"\nschemes = []",
            "faults[0].schemes",
            "schemes = |",
            "at least one scheme",
        ),
        (
            FAULT,
            "kind = \"auth_rotation\"\ntarget = \"a\"\nstart = \"1s\"",
            "faults[0].kind",
            "kind = |",
            "needs `schemes`",
        ),
        ("name = \"b\"", "name = \"gateway\"", "servers[1].name", "name = |\"gateway\"", "reserved"),
        (
            "[load]",
            "[checks]\nerror_window_s = 11\n\n[load]",
            "checks.error_window_s",
            "error_window_s = |",
            "longer than the run",
        ),
        ("[load]", "[gateway]\nprofile = \"clever\"\n\n[load]", "gateway.profile", "profile = |", "unknown variant"),
        (
            "[load]",
            "[gateway]\ncredentials = [{ scheme = \"bearer\", secret = \"s\", extra = 1 }]\n\n[load]",
            "gateway.credentials[0].extra",
            "|extra = 1",
            "expected `scheme` or `secret`",
        ),
        ("[load]", "[checks]\np99_ms = -1.0\n\n[load]", "checks.p99_ms", "p99_ms = |-1", ">= 0"),
        ("[load]", "[checks]\nerror_rate = 2.0\n\n[load]", "checks.error_rate", "error_rate = |2", "between 0 and 1"),
        ("[load]", "[gateway]\nformula = \"fastest\"\n\n[load]", "gateway.formula", "formula = |", "unknown formula"),
        (
            "[load]",
            "[gateway]\nformula = \"expr:scor\"\n\n[load]",
            "gateway.formula",
            "formula = |",
            "unknown variable",
        ),
        (
            "[load]",
            "[gateway.router]\nfailure_threshold = 0\n\n[load]",
            "gateway.router.failure_threshold",
            "failure_threshold = |0",
            "at least 1",
        ),
        (
            "[load]",
            "[gateway]\nrequirements = [{ argument = \"\", attribute = \"language_support\" }]\n\n[load]",
            "gateway.requirements[0].argument",
            "argument = |",
            "must name a call argument",
        ),
        (
            "replicas = 2",
            "replicas = 2\ncapabilities = { language = [\"rust\"] }",
            "servers[0].capabilities.language",
            "language = |[",
            "`<attribute>_support`",
        ),
        ("replicas = 2", "replicas = 2\ntags = [\"server:b\"]", "servers[0].tags", "tags = |", "automatic"),
        ("replicas = 2", "replicas = 2\nlatency_p95_ms = 0", "servers[0].latency_p95_ms", "latency_p95_ms = |0", "> 0"),
        (
            "replicas = 2",
            "replicas = 2\nhealth_check = { tool = \"nope\" }",
            "servers[0].health_check.tool",
            "tool = |\"nope\"",
            "has no tool \"nope\"",
        ),
        ("replicas = 2", "replicas = 2\njoin_at = \"10s\"", "servers[0].join_at", "join_at = |", "before the end"),
        (
            "replicas = 2",
            "replicas = 2\njoin_at = \"5s\"\nleave_at = \"4s\"",
            "servers[0].leave_at",
            "leave_at = |",
            "after join_at",
        ),
        ("server = \"a\"\ntool = \"echo\"", "tool = \"nope\"", "load.mix[0].tool", "tool = |", "no server offers"),
    ];
    for (from, to, key, at, fragment) in cases {
        let text = edit(BASE, from, to);
        expect_one(&text, &[], key, at, fragment);
    }
}

/// The HTTP faults: their keys, their ranges, and a target that speaks HTTP.
#[test]
fn http_faults() {
    let http = edit(BASE, "replicas = 2", "replicas = 2\ntransport = \"http\"");
    let fault = |body: &str| edit(&http, FAULT, &format!("target = \"a\"\nstart = \"1s\"\nduration = \"2s\"\n{body}"));
    for ok in [
        "kind = \"http_status\"\nstatus = 429\nrate = 0.5\nretry_after = \"2s\"",
        "kind = \"stream_reset\"\nrate = 1.0",
        "kind = \"slow_headers\"\nextra = \"1s\"",
    ] {
        load(&fault(ok), &[]).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
    let cases: &[(&str, &str, &str, &str)] = &[
        ("kind = \"http_status\"", "faults[0].kind", "kind = |", "needs `status`"),
        ("kind = \"http_status\"\nstatus = 200", "faults[0].status", "status = |200", "400 to 599, got 200"),
        ("kind = \"http_status\"\nstatus = 503\nrate = 2.0", "faults[0].rate", "rate = |2", "between 0 and 1"),
        ("kind = \"stream_reset\"", "faults[0].kind", "kind = |", "stream_reset needs `rate`"),
        ("kind = \"slow_headers\"", "faults[0].kind", "kind = |", "slow_headers needs `extra`"),
        (
            "kind = \"slow_headers\"\nextra = \"1s\"\nrate = 0.5",
            "faults[0].rate",
            "rate = |0.5",
            "does not apply to kind = \"slow_headers\" (it belongs to error_burst, http_status, stream_reset)",
        ),
        (
            "kind = \"stream_reset\"\nrate = 0.5\nstatus = 500",
            "faults[0].status",
            "status = |500",
            "belongs to http_status",
        ),
    ];
    for (body, key, at, fragment) in cases {
        expect_one(&fault(body), &[], key, at, fragment);
    }
    // On a server that speaks NDJSON, an HTTP fault is refused at its target.
    let ndjson = edit(&fault("kind = \"stream_reset\"\nrate = 1.0"), "transport = \"http\"", "");
    expect_one(&ndjson, &[], "faults[0].target", "target = |\"a\"", "stream_reset needs an HTTP server: give \"a\"");
}

#[test]
fn hang_crash_and_partition_reject_every_option() {
    for kind in ["hang", "crash", "partition"] {
        let text = edit(BASE, "kind = \"latency_spike\"", &format!("kind = \"{kind}\""));
        let text = edit(&text, "extra = \"100ms\"", "extra = \"1s\"\nmultiplier = 2.0\nrate = 0.5");
        let keys: Vec<_> = problems(&text, &[]).into_iter().filter_map(|p| p.key).collect();
        assert_eq!(keys, ["faults[0].extra", "faults[0].multiplier", "faults[0].rate"], "{kind}");
        let ok = edit(BASE, "kind = \"latency_spike\"", &format!("kind = \"{kind}\""));
        let ok = edit(&ok, "extra = \"100ms\"", "");
        load(&ok, &[]).unwrap_or_else(|e| panic!("{kind} without options is valid: {e}"));
    }
}

#[test]
fn semantic_problems_are_collected_each_on_its_own_line() {
    let text = edit(BASE, "replicas = 2", "replicas = 0");
    let text = edit(&text, "sessions = 10", "sessions = 0");
    let text = edit(&text, "target = \"a\"", "target = \"zz\"");
    let text = edit(&text, "p99_ms = 40 }", "p99_ms = 1 }\nerror_rate = -1.0");
    let err = load(&text, &[]).expect_err("five problems");
    let shown = err.to_string();
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(lines.len(), 5, "{shown}");
    assert!(lines[0].starts_with("t.toml:6:12: servers[0].replicas: "), "{shown}");
    assert!(lines[1].starts_with("t.toml:10:54: servers[0].tools[0].latency.p99_ms: "), "{shown}");
    assert!(lines[2].starts_with("t.toml:11:14: servers[0].tools[0].error_rate: "), "{shown}");
    assert!(lines[3].starts_with("t.toml:21:12: load.sessions: "), "{shown}");
    assert!(lines[4].contains("faults[0].target"), "{shown}");
    assert_eq!(err.count(), 5);
}

#[test]
fn resilience_checks_need_a_fault_window() {
    let text = edit(BASE, FAULT, "kind = \"session_expiry\"\ntarget = \"a\"\nstart = \"1s\"");
    let text = format!("{text}\n[checks]\nrecovery_s = 10\n");
    expect_one(&text, &[], "checks.recovery_s", "recovery_s = |10", "needs a fault with a duration");
    assert!(load(BASE, &["checks.healthy_p99_ratio=1.1", "checks.amplification_during_fault=1.2"]).is_ok());
}

#[test]
fn validate_checks_scenarios_built_in_code() {
    let mut s = load(BASE, &[]).expect("valid");
    assert!(validate(&s, "code").is_ok());
    s.load.hosts = 0;
    s.agent.max_retries = 1000;
    let err = validate(&s, "code").expect_err("invalid");
    assert_eq!(
        err.to_string(),
        "code: load.hosts: must be at least 1\ncode: agent.max_retries: must be at most 100, got 1,000"
    );
}

#[test]
fn resolve_target_finds_servers_and_replicas() {
    let s = load(BASE, &[]).expect("valid");
    assert_eq!(resolve_target("a", &s.servers), Ok((0, None)));
    assert_eq!(resolve_target("a#1", &s.servers), Ok((0, Some(1))));
    assert_eq!(resolve_target("b", &s.servers), Ok((1, None)));
    assert!(resolve_target("b#1", &s.servers).is_err());
    assert!(resolve_target("", &s.servers).is_err());
}

#[test]
fn fake_config_derives_a_seed_per_replica() {
    let s = load(BASE, &[]).expect("valid");
    let a0 = s.servers[0].fake_config(0, 1);
    let a1 = s.servers[0].fake_config(1, 1);
    assert_eq!((a0.name.as_str(), a0.version.as_str(), a0.tools.len()), ("a", "1.0.0", 1));
    assert_ne!(a0.seed, a1.seed, "replicas draw differently");
    assert_eq!(a0.seed, s.servers[0].fake_config(0, 1).seed, "the same run draws the same");
    assert_ne!(a0.seed, s.servers[0].fake_config(0, 2).seed, "another seed draws differently");
    assert_ne!(a0.seed, s.servers[1].fake_config(0, 1).seed, "another server draws differently");
    assert!(a0.validate().is_ok());
}
