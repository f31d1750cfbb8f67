//! Meaning: the semantic rules, and what code asks of a loaded scenario (`validate`, `resolve_target`,
//! `fake_config`).

use super::*;

/// One semantic rule seen from a file: [`BASE`] with `from` replaced by `to` gives exactly one problem, about `key`,
/// at the `|` of `at`, whose message contains `fragment`.
struct Case {
    from: &'static str,
    to: &'static str,
    key: &'static str,
    at: &'static str,
    fragment: &'static str,
}

impl Case {
    #[track_caller]
    fn expect(&self) {
        expect_one(&edit(BASE, self.from, self.to), &[], self.key, self.at, self.fragment);
    }
}

#[test]
fn every_semantic_rule() {
    let cases = [
        Case {
            from: "duration = \"10s\"",
            to: "duration = \"0s\"",
            key: "duration",
            at: "duration = |\"0s\"",
            fragment: "longer than 0",
        },
        Case {
            from: "duration = \"10s\"",
            to: "duration = \"10s\"\ntick = \"0s\"",
            key: "tick",
            at: "tick = |",
            fragment: "longer than 0",
        },
        Case {
            from: "duration = \"10s\"",
            to: "duration = \"10s\"\ntick = \"11s\"",
            key: "tick",
            at: "tick = |",
            fragment: "at most 1s, got 11s",
        },
        Case {
            from: "duration = \"10s\"",
            to: "duration = \"10s\"\ntick = \"999ns\"",
            key: "tick",
            at: "tick = |",
            fragment: "at least 1ms",
        },
        Case {
            from: "name = \"t\"",
            to: "name = \"../etc\"",
            key: "name",
            at: "name = |",
            fragment: "report directory",
        },
        Case { from: "name = \"t\"", to: "name = \"\"", key: "name", at: "name = |", fragment: "must not be empty" },
        Case {
            from: "duration = \"10s\"",
            to: "duration = \"10s\"\nnetwork = { fail_rate = 1.5 }",
            key: "network.fail_rate",
            at: "fail_rate = |1.5",
            fragment: "between 0 and 1",
        },
        Case {
            from: "duration = \"10s\"",
            to: "duration = \"10s\"\nnetwork = { latency = \"5ms\", max_latency = \"2ms\" }",
            key: "network.max_latency",
            at: "max_latency = |",
            fragment: "at least network.latency",
        },
        Case {
            from: "name = \"b\"",
            to: "name = \"a\"",
            key: "servers[1].name",
            at: "name = |\"a\"\n\n[[servers.tools]]\nname = \"get\"",
            fragment: "duplicate server name",
        },
        Case {
            from: "name = \"b\"",
            to: "name = \"\"",
            key: "servers[1].name",
            at: "[[servers]]\nname = |\"\"",
            fragment: "must not be empty",
        },
        Case {
            from: "name = \"b\"",
            to: "name = \"b#1\"",
            key: "servers[1].name",
            at: "name = |\"b#1\"",
            fragment: "`#`",
        },
        Case {
            from: "replicas = 2",
            to: "replicas = 0",
            key: "servers[0].replicas",
            at: "replicas = |0",
            fragment: "at least 1",
        },
        Case {
            from: "replicas = 2",
            to: "replicas = 2\nworkers = 0",
            key: "servers[0].workers",
            at: "workers = |0",
            fragment: "at least 1",
        },
        Case {
            from: "replicas = 2",
            to: "replicas = 2\nmax_in_flight_per_connection = 0",
            key: "servers[0].max_in_flight_per_connection",
            at: "max_in_flight_per_connection = |0",
            fragment: "at least 1",
        },
        Case {
            from: "name = \"get\"",
            to: "name = \"get\"\nerror_rate = 2.0",
            key: "servers[1].tools[0].error_rate",
            at: "error_rate = |2",
            fragment: "between 0 and 1",
        },
        Case {
            from: "p99_ms = 40",
            to: "p99_ms = 4",
            key: "servers[0].tools[0].latency.p99_ms",
            at: "p99_ms = |4",
            fragment: "must be >= p50_ms",
        },
        Case {
            from: "name = \"get\"",
            to: "name = \"get\"\n[[servers.tools]]\nname = \"get\"",
            key: "servers[1].tools[1].name",
            at: "[[servers.tools]]\nname = |\"get\"\n\n[load]",
            fragment: "duplicate tool name",
        },
        Case {
            from: "sessions = 10",
            to: "",
            key: "load.sessions",
            at: "|[load]",
            fragment: "required when mode = \"closed\"",
        },
        Case {
            from: "sessions = 10",
            to: "sessions = 0",
            key: "load.sessions",
            at: "sessions = |0",
            fragment: "at least 1",
        },
        Case {
            from: "sessions = 10",
            to: "sessions = 10\nrate = 5.0",
            key: "load.rate",
            at: "rate = |5",
            fragment: "only to mode = \"open\"",
        },
        Case {
            from: "mode = \"closed\"\nsessions = 10",
            to: "mode = \"open\"",
            key: "load.rate",
            at: "|[load]",
            fragment: "required when mode = \"open\"",
        },
        Case {
            from: "mode = \"closed\"",
            to: "mode = \"open\"\nrate = 5.0",
            key: "load.sessions",
            at: "sessions = |10",
            fragment: "only to mode = \"closed\"",
        },
        Case {
            from: "mode = \"closed\"\nsessions = 10",
            to: "mode = \"open\"\nrate = 0.0",
            key: "load.rate",
            at: "rate = |0",
            fragment: "> 0",
        },
        Case {
            from: "sessions = 10",
            to: "sessions = 10\nhosts = 0",
            key: "load.hosts",
            at: "hosts = |0",
            fragment: "at least 1",
        },
        Case {
            from: "sessions = 10",
            to: "sessions = 10\ncalls = 0",
            key: "load.calls",
            at: "calls = |0",
            fragment: "at least 1",
        },
        Case {
            from: "server = \"a\"",
            to: "server = \"c\"",
            key: "load.mix[0].server",
            at: "server = |\"c\"",
            fragment: "no server is named \"c\"",
        },
        Case {
            from: "tool = \"echo\"",
            to: "tool = \"get\"",
            key: "load.mix[0].tool",
            at: "tool = |\"get\"",
            fragment: "has no tool \"get\"",
        },
        Case {
            from: "tool = \"echo\"",
            to: "tool = \"echo\"\nweight = 0",
            key: "load.mix[0].weight",
            at: "weight = |0",
            fragment: "> 0",
        },
        Case {
            from: "tool = \"echo\"",
            to: "tool = \"echo\"\nweight = nan",
            key: "load.mix[0].weight",
            at: "weight = |nan",
            fragment: "> 0",
        },
        Case {
            from: "tool = \"echo\"",
            to: "tool = \"echo\"\nargs = 1",
            key: "load.mix[0].args",
            at: "args = |1",
            fragment: "table of arguments",
        },
        Case {
            from: "[load]",
            to: "[agent]\nmax_retries = 101\n\n[load]",
            key: "agent.max_retries",
            at: "max_retries = |101",
            fragment: "at most 100",
        },
        Case {
            from: "[load]",
            to: "[agent]\nretry = \"immediate\"\n\n[load]",
            key: "agent.max_retries",
            at: "|[agent]",
            fragment: "at least 1",
        },
        Case {
            from: "[load]",
            to: "[client]\nmax_in_flight = 0\n\n[load]",
            key: "client.max_in_flight",
            at: "max_in_flight = |0",
            fragment: "at least 1",
        },
        Case {
            from: "[load]",
            to: "[client]\nper_connection = 0\n\n[load]",
            key: "client.per_connection",
            at: "per_connection = |0",
            fragment: "at least 1",
        },
        Case {
            from: "[load]",
            to: "[client]\ndeadline = \"0s\"\n\n[load]",
            key: "client.deadline",
            at: "deadline = |",
            fragment: "longer than 0",
        },
        Case {
            from: "[load]",
            to: "[client]\nqueue_wait = \"0ms\"\n\n[load]",
            key: "client.queue_wait",
            at: "queue_wait = |",
            fragment: "longer than 0",
        },
        Case {
            from: "target = \"a\"",
            to: "target = \"c\"",
            key: "faults[0].target",
            at: "target = |\"c\"",
            fragment: "no server is named \"c\"",
        },
        Case {
            from: "target = \"a\"",
            to: "target = \"a#2\"",
            key: "faults[0].target",
            at: "target = |",
            fragment: "(a#0 to a#1), so there is no replica 2",
        },
        Case {
            from: "target = \"a\"",
            to: "target = \"a#x\"",
            key: "faults[0].target",
            at: "target = |",
            fragment: "replica index",
        },
        Case {
            from: "target = \"a\"",
            to: "target = \"b#1\"",
            key: "faults[0].target",
            at: "target = |",
            fragment: "has 1 replica (b#0)",
        },
        Case {
            from: "start = \"1s\"",
            to: "start = \"9s\"",
            key: "faults[0].duration",
            at: "duration = |\"2s\"",
            fragment: "after the run ends",
        },
        Case {
            from: "duration = \"2s\"\nextra",
            to: "duration = \"0s\"\nextra",
            key: "faults[0].duration",
            at: "duration = |\"0s\"",
            fragment: "longer than 0",
        },
        Case { from: "extra = \"100ms\"", to: "", key: "faults[0].kind", at: "kind = |", fragment: "needs `extra`" },
        Case {
            from: "extra = \"100ms\"",
            to: "multiplier = 0.5",
            key: "faults[0].multiplier",
            at: "multiplier = |0.5",
            fragment: ">= 1",
        },
        Case {
            from: "extra = \"100ms\"",
            to: "extra = \"100ms\"\nrate = 0.5",
            key: "faults[0].rate",
            at: "rate = |0.5",
            fragment: "does not apply to kind = \"latency_spike\"",
        },
        Case {
            from: "kind = \"latency_spike\"",
            to: "kind = \"error_burst\"\nrate = 0.5",
            key: "faults[0].extra",
            at: "extra = |",
            fragment: "does not apply to kind = \"error_burst\"",
        },
        Case {
            from: "kind = \"latency_spike\"\ntarget = \"a\"\nstart = \"1s\"\nduration = \"2s\"\nextra = \"100ms\"",
            to: "kind = \"error_burst\"\ntarget = \"a\"\nstart = \"1s\"\nduration = \"2s\"\nrate = 1.5",
            key: "faults[0].rate",
            at: "rate = |1.5",
            fragment: "between 0 and 1",
        },
        Case {
            from: "kind = \"latency_spike\"\ntarget = \"a\"\nstart = \"1s\"\nduration = \"2s\"\nextra = \"100ms\"",
            to: "kind = \"error_burst\"\ntarget = \"a\"\nstart = \"1s\"\nduration = \"2s\"",
            key: "faults[0].kind",
            at: "kind = |\"error_burst\"",
            fragment: "needs `rate`",
        },
        Case {
            from: "kind = \"latency_spike\"",
            to: "kind = \"crash\"",
            key: "faults[0].extra",
            at: "extra = |",
            fragment: "does not apply to kind = \"crash\"",
        },
        Case {
            from: FAULT,
            to: "kind = \"schema_drift\"\ntarget = \"a\"\nstart = \"1s\"\nduration = \"2s\"\nwhat = \"version\"\nversion = \"2\"",
            key: "faults[0].duration",
            at: "duration = |\"2s\"",
            fragment: "at an instant",
        },
        Case {
            from: FAULT,
            to: "kind = \"schema_drift\"\ntarget = \"a\"\nstart = \"1s\"",
            key: "faults[0].kind",
            at: "kind = |",
            fragment: "needs `what`",
        },
        Case {
            from: FAULT,
            to: "kind = \"schema_drift\"\ntarget = \"a\"\nstart = \"1s\"\nwhat = \"add_required\"\ntool = \"echo\"\nparam = \"p\"",
            key: "faults[0].what",
            at: "what = |",
            fragment: "needs `schema`",
        },
        Case {
            from: FAULT,
            to: "kind = \"schema_drift\"\ntarget = \"a\"\nstart = \"1s\"\nwhat = \"rename\"\ntool = \"nope\"\nto = \"x\"",
            key: "faults[0].tool",
            at: "tool = |\"nope\"",
            fragment: "has no tool \"nope\"",
        },
        Case {
            from: FAULT,
            to: "kind = \"schema_drift\"\ntarget = \"a\"\nstart = \"1s\"\nwhat = \"version\"\nversion = \"2\"\nto = \"x\"",
            key: "faults[0].to",
            at: "to = |",
            fragment: "does not apply to what = \"version\"",
        },
        Case {
            from: FAULT,
            to: "kind = \"schema_drift\"\ntarget = \"a\"\nstart = \"1s\"\nwhat = \"replace\"\ntool = \"echo\"\nschema = { type = \"string\" }",
            key: "faults[0].schema",
            at: "schema = |",
            fragment: "\"type\": \"object\"",
        },
        Case {
            from: FAULT,
            to: "kind = \"schema_drift\"\ntarget = \"a\"\nstart = \"10s\"\nwhat = \"version\"\nversion = \"2\"",
            key: "faults[0].start",
            at: "start = |",
            fragment: "at or after the end",
        },
        Case {
            from: FAULT,
            to: "kind = \"clock_skew\"\ntarget = \"gateway\"\nstart = \"1s\"",
            key: "faults[0].kind",
            at: "kind = |",
            fragment: "needs `offset`, `drift` or `jump`",
        },
        Case {
            from: FAULT,
            to: "kind = \"clock_skew\"\ntarget = \"a\"\nstart = \"1s\"\ndrift = -2.0",
            key: "faults[0].drift",
            at: "drift = |",
            fragment: "rate in (-1, 10]",
        },
        Case {
            from: FAULT,
            to: "kind = \"clock_skew\"\ntarget = \"a\"\nstart = \"1s\"\noffset = \"-3 parsecs\"",
            key: "faults[0].offset",
            at: "offset = |",
            fragment: "invalid signed duration",
        },
        Case {
            from: FAULT,
            to: "kind = \"clock_skew\"\ntarget = \"a\"\nstart = \"1s\"\njump = \"1s\"\nreset = true",
            key: "faults[0].reset",
            at: "reset = |",
            fragment: "needs a `duration`",
        },
        Case {
            from: FAULT,
            to: "kind = \"clock_skew\"\ntarget = \"a\"\nstart = \"1s\"\njump = \"1s\"\nrate = 0.5",
            key: "faults[0].rate",
            at: "rate = |",
            fragment: "belongs to error_burst",
        },
        Case {
            from: FAULT,
            to: "kind = \"session_expiry\"\ntarget = \"gateway\"\nstart = \"1s\"",
            key: "faults[0].target",
            at: "target = |\"gateway\"",
            fragment: "no server is named \"gateway\"",
        },
        Case {
            from: FAULT,
            to: "kind = \"auth_rotation\"\ntarget = \"a\"\nstart = \"1s\"\nschemes = []",
            key: "faults[0].schemes",
            at: "schemes = |",
            fragment: "at least one scheme",
        },
        Case {
            from: FAULT,
            to: "kind = \"auth_rotation\"\ntarget = \"a\"\nstart = \"1s\"",
            key: "faults[0].kind",
            at: "kind = |",
            fragment: "needs `schemes`",
        },
        Case {
            from: "name = \"b\"",
            to: "name = \"gateway\"",
            key: "servers[1].name",
            at: "name = |\"gateway\"",
            fragment: "reserved",
        },
        Case {
            from: "[load]",
            to: "[checks]\nerror_window_s = 11\n\n[load]",
            key: "checks.error_window_s",
            at: "error_window_s = |",
            fragment: "longer than the run",
        },
        Case {
            from: "[load]",
            to: "[gateway]\nprofile = \"clever\"\n\n[load]",
            key: "gateway.profile",
            at: "profile = |",
            fragment: "unknown variant",
        },
        Case {
            from: "[load]",
            to: "[gateway]\ncredentials = [{ scheme = \"bearer\", secret = \"s\", extra = 1 }]\n\n[load]",
            key: "gateway.credentials[0].extra",
            at: "|extra = 1",
            fragment: "expected `scheme` or `secret`",
        },
        Case {
            from: "[load]",
            to: "[checks]\np99_ms = -1.0\n\n[load]",
            key: "checks.p99_ms",
            at: "p99_ms = |-1",
            fragment: ">= 0",
        },
        Case {
            from: "[load]",
            to: "[checks]\nerror_rate = 2.0\n\n[load]",
            key: "checks.error_rate",
            at: "error_rate = |2",
            fragment: "between 0 and 1",
        },
        Case {
            from: "[load]",
            to: "[gateway]\nformula = \"fastest\"\n\n[load]",
            key: "gateway.formula",
            at: "formula = |",
            fragment: "unknown formula",
        },
        Case {
            from: "[load]",
            to: "[gateway]\nformula = \"expr:scor\"\n\n[load]",
            key: "gateway.formula",
            at: "formula = |",
            fragment: "unknown variable",
        },
        Case {
            from: "[load]",
            to: "[gateway.router]\nfailure_threshold = 0\n\n[load]",
            key: "gateway.router.failure_threshold",
            at: "failure_threshold = |0",
            fragment: "at least 1",
        },
        Case {
            from: "[load]",
            to: "[gateway]\nrequirements = [{ argument = \"\", attribute = \"language_support\" }]\n\n[load]",
            key: "gateway.requirements[0].argument",
            at: "argument = |",
            fragment: "must name a call argument",
        },
        Case {
            from: "replicas = 2",
            to: "replicas = 2\ncapabilities = { language = [\"rust\"] }",
            key: "servers[0].capabilities.language",
            at: "language = |[",
            fragment: "`<attribute>_support`",
        },
        Case {
            from: "replicas = 2",
            to: "replicas = 2\ntags = [\"server:b\"]",
            key: "servers[0].tags",
            at: "tags = |",
            fragment: "automatic",
        },
        Case {
            from: "replicas = 2",
            to: "replicas = 2\nlatency_p95_ms = 0",
            key: "servers[0].latency_p95_ms",
            at: "latency_p95_ms = |0",
            fragment: "> 0",
        },
        Case {
            from: "replicas = 2",
            to: "replicas = 2\nhealth_check = { tool = \"nope\" }",
            key: "servers[0].health_check.tool",
            at: "tool = |\"nope\"",
            fragment: "has no tool \"nope\"",
        },
        Case {
            from: "replicas = 2",
            to: "replicas = 2\njoin_at = \"10s\"",
            key: "servers[0].join_at",
            at: "join_at = |",
            fragment: "before the end",
        },
        Case {
            from: "replicas = 2",
            to: "replicas = 2\njoin_at = \"5s\"\nleave_at = \"4s\"",
            key: "servers[0].leave_at",
            at: "leave_at = |",
            fragment: "after join_at",
        },
        Case {
            from: "server = \"a\"\ntool = \"echo\"",
            to: "tool = \"nope\"",
            key: "load.mix[0].tool",
            at: "tool = |",
            fragment: "no server offers",
        },
    ];
    for case in cases {
        case.expect();
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
            "does not apply to kind = \"slow_headers\" (it belongs to error_burst, http_status, stream_reset, idp_outage)",
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
