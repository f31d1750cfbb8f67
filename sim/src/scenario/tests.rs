//! Scenario loading: every kind of bad input gives its message at the right `line:column`, problems are collected,
//! `--set` and sweeps work, the shipped scenarios load, the schema file is current, and no input panics.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use proptest::prelude::*;

use super::*;

const BASE: &str = r#"name = "t"
duration = "10s"

[[servers]]
name = "a"
replicas = 2

[[servers.tools]]
name = "echo"
latency = { dist = "lognormal", p50_ms = 5, p99_ms = 40 }

[[servers]]
name = "b"

[[servers.tools]]
name = "get"

[load]
mode = "closed"
sessions = 10

[[load.mix]]
server = "a"
tool = "echo"

[[faults]]
kind = "latency_spike"
target = "a"
start = "1s"
duration = "2s"
extra = "100ms"
"#;

/// The fault of [`BASE`], whole.
const FAULT: &str = "kind = \"latency_spike\"\ntarget = \"a\"\nstart = \"1s\"\nduration = \"2s\"\nextra = \"100ms\"";

fn edit(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{from:?} is not in the text");
    text.replacen(from, to, 1)
}

fn load(text: &str, sets: &[&str]) -> Result<Scenario, ScenarioError> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    load_str(text, "t.toml", &sets)
}

fn problems(text: &str, sets: &[&str]) -> Vec<Problem> {
    match load(text, sets) {
        Ok(s) => panic!("expected problems, loaded {s:?}"),
        Err(e) => e.problems().to_vec(),
    }
}

/// 1-based line and column of the `|` in `needle` (which is matched without the `|`).
fn pos(text: &str, needle: &str) -> (usize, usize) {
    let bar = needle.find('|').unwrap_or(0);
    let plain = needle.replacen('|', "", 1);
    let at = text.find(&plain).unwrap_or_else(|| panic!("{plain:?} is not in the text")) + bar;
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, column)
}

/// Exactly one problem, about `key`, at the `|` of `at` in `text`, whose message contains `fragment`.
#[track_caller]
fn expect_one(text: &str, sets: &[&str], key: &str, at: &str, fragment: &str) {
    let found = problems(text, sets);
    assert_eq!(found.len(), 1, "expected one problem, got:\n{}", ScenarioError::Invalid(found.clone()));
    let p = &found[0];
    assert_eq!(p.key.as_deref(), Some(key), "{p}");
    assert!(p.message.contains(fragment), "{p}\ndoes not contain {fragment:?}");
    if at.is_empty() {
        assert_eq!(p.location, Location::Origin { origin: "t.toml".into() }, "{p}");
    } else {
        assert_eq!(p.line_column(), Some(pos(text, at)), "{p}");
    }
    let (line, column) = p.line_column().unwrap_or((0, 0));
    if line > 0 {
        assert!(p.to_string().starts_with(&format!("t.toml:{line}:{column}: {key}: ")), "{p}");
    }
}

#[test]
fn base_is_valid() {
    let s = load(BASE, &[]).expect("BASE is valid");
    assert_eq!((s.servers.len(), s.faults.len(), s.load.sessions), (2, 1, Some(10)));
    assert_eq!(s.checks.lost, Some(0), "lost = 0 is checked by default");
}

// ---------------------------------------------------------------------------------------------------------------
// Syntax and shape (serde)

#[test]
fn syntax_error_has_line_and_column() {
    let text = edit(BASE, "name = \"b\"", "name = \"b");
    let p = problems(&text, &[]);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].key, None);
    assert_eq!(p[0].line_column().map(|(l, _)| l), Some(pos(&text, "name = \"|b").0));
    assert!(p[0].to_string().starts_with("t.toml:13:"), "{}", p[0]);
    assert!(p[0].message.starts_with("TOML syntax: "), "{}", p[0]);

    let text = edit(BASE, "sessions = 10", "sessions = 10\nsessions = 11");
    let p = problems(&text, &[]);
    assert_eq!(p[0].line_column(), Some(pos(&text, "|sessions = 11")), "{}", p[0]);
    assert!(p[0].message.contains("duplicate key `sessions`"), "{}", p[0]);

    // A literal position, so that `pos` itself is checked once.
    let p = problems("name = \"t\"\nduration = = 1\n", &[]);
    assert_eq!(p[0].line_column(), Some((2, 12)), "{}", p[0]);
}

#[test]
fn unknown_key_at_top_level() {
    let text = format!("bogus = 1\n{BASE}");
    expect_one(&text, &[], "bogus", "|bogus", "unknown key; expected one of `name`");
    assert_eq!(problems(&text, &[])[0].line_column(), Some((1, 1)));
}

#[test]
fn unknown_keys_nested_in_servers_tools_latency_faults_and_mix() {
    let cases = [
        (edit(BASE, "name = \"b\"", "name = \"b\"\nwrkers = 3"), "servers[1].wrkers", "|wrkers"),
        (edit(BASE, "name = \"get\"", "name = \"get\"\ncolour = \"red\""), "servers[1].tools[0].colour", "|colour"),
        (edit(BASE, "p99_ms = 40 }", "p99_ms = 40, p95_ms = 20 }"), "servers[0].tools[0].latency.p95_ms", "|p95_ms"),
        (edit(BASE, "extra = \"100ms\"", "extra = \"100ms\"\nrat = 1"), "faults[0].rat", "|rat = 1"),
        (edit(BASE, "tool = \"echo\"", "tool = \"echo\"\nargz = {}"), "load.mix[0].argz", "|argz"),
        (format!("{BASE}\n[agent]\nretries = 3\n"), "agent.retries", "|retries"),
        (format!("{BASE}\n[checks]\np999_ms = 3\n"), "checks.p999_ms", "|p999_ms"),
    ];
    for (text, key, at) in cases {
        expect_one(&text, &[], key, at, "unknown key");
    }
}

#[test]
fn wrong_types_and_bad_values() {
    let cases = [
        ("sessions = 10", "sessions = \"ten\"", "load.sessions", "sessions = |\"ten\"", "expected an integer >= 0"),
        ("sessions = 10", "sessions = -1", "load.sessions", "sessions = |-1", "expected an integer >= 0"),
        ("sessions = 10", "sessions = 1.5", "load.sessions", "sessions = |1.5", "expected an integer >= 0"),
        ("replicas = 2", "replicas = true", "servers[0].replicas", "replicas = |true", "invalid type: boolean"),
        ("name = \"t\"", "name = 5", "name", "name = |5", "expected a string"),
        ("mode = \"closed\"", "mode = \"closd\"", "load.mode", "mode = |\"closd\"", "unknown variant `closd`"),
        ("kind = \"latency_spike\"", "kind = \"flood\"", "faults[0].kind", "kind = |\"flood\"", "unknown variant"),
        ("dist = \"lognormal\"", "dist = \"gamma\"", "servers[0].tools[0].latency.dist", "dist = |\"gamma\"", "gamma"),
        ("duration = \"10s\"", "duration = \"10 parsecs\"", "duration", "duration = |\"10", "invalid duration"),
        ("duration = \"10s\"", "duration = 10", "duration", "duration = |10", "expected a string"),
        ("start = \"1s\"", "start = \"-1s\"", "faults[0].start", "start = |\"-1s\"", "invalid duration"),
    ];
    for (from, to, key, at, fragment) in cases {
        let text = edit(BASE, from, to);
        expect_one(&text, &[], key, at, fragment);
    }
    let start = BASE.find("[load]").unwrap_or(0);
    let end = BASE.find("[[faults]]").unwrap_or(0);
    let text = format!("load = 3\n{}{}", &BASE[..start], &BASE[end..]);
    expect_one(&text, &[], "load", "load = |3", "invalid type: integer `3`, expected a table");
}

#[test]
fn missing_required_keys() {
    // Nested: reported at the table's header.
    let text = edit(BASE, "[[servers]]\nname = \"b\"", "[[servers]]\nreplicas = 1");
    expect_one(&text, &[], "servers[1].name", "|[[servers]]\nreplicas = 1", "is required");
    // Top level: no position to point at, so the file itself.
    let text = edit(BASE, "duration = \"10s\"\n", "");
    expect_one(&text, &[], "duration", "", "is required");
    assert_eq!(problems(&text, &[])[0].to_string(), "t.toml: duration: is required");
}

#[test]
fn serde_problems_are_collected() {
    let text = edit(BASE, "replicas = 2", "replicas = \"two\"\nzone = \"x\"");
    let text = edit(&text, "sessions = 10", "sessions = 10\nthink = \"1s\"");
    let text = format!("colour = 1\n{text}");
    let found = problems(&text, &[]);
    let keys: Vec<_> = found.iter().map(|p| p.key.clone().unwrap_or_default()).collect();
    assert_eq!(keys, ["colour", "servers[0].replicas", "servers[0].zone", "load.think"], "in file order");
    let display = ScenarioError::Invalid(found).to_string();
    assert_eq!(display.lines().count(), 4, "{display}");
    assert!(display.lines().all(|l| l.starts_with("t.toml:")), "{display}");
}

// ---------------------------------------------------------------------------------------------------------------
// Meaning (validation)

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
fn read_errors_name_the_file() {
    let err = load_file(Path::new("/nonexistent/x.toml"), &[]).expect_err("no such file");
    assert!(err.to_string().starts_with("/nonexistent/x.toml: cannot read the scenario: "), "{err}");
    assert_eq!(err.count(), 1);
}

// ---------------------------------------------------------------------------------------------------------------
// --set

fn set(sets: &[&str]) -> Scenario {
    load(BASE, sets).unwrap_or_else(|e| panic!("{sets:?}: {e}"))
}

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

#[test]
fn bad_set_arguments_name_the_argument() {
    let one = |sets: &[&str], fragment: &str| {
        let found = problems(BASE, sets);
        assert_eq!(found.len(), 1, "{sets:?}: {}", ScenarioError::Invalid(found.clone()));
        let shown = found[0].to_string();
        assert!(shown.starts_with(&format!("--set {}: ", sets[0])), "{shown}");
        assert!(shown.contains(fragment), "{shown}\ndoes not contain {fragment:?}");
    };
    one(&["load.sesions=3"], "load.sesions: unknown key; expected one of `mode`");
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
            "--set a=1: a: unknown key; expected one of `name`, `description`, `seed`, `duration`, `tick`, `network`, \
             `servers`, `load`, `agent`, `client`, `faults`, `checks`, `sweep`, `gateway`, `report`",
        ]
    );
}

// ---------------------------------------------------------------------------------------------------------------
// Sweeps

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

// ---------------------------------------------------------------------------------------------------------------
// Shipped scenarios and the schema

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn shipped() -> Vec<PathBuf> {
    let dir = workspace().join("scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("scenarios/ exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}

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
        // The TOML form (which expand_sweep uses) reads back as the same scenario, but for the secrets, which it
        // writes redacted (and expand_sweep puts back).
        let again = toml::to_string(&s).expect("serializes");
        assert!(s.gateway.credentials.iter().all(|c| !again.contains(c.secret.expose())), "{}", file.display());
        let mut reloaded = load_str(&again, "again", &[]).expect("reloads");
        for c in &reloaded.gateway.credentials {
            assert_eq!(c.secret.expose(), mcpstorm_core::session::ext::Secret::REDACTED);
        }
        reloaded.gateway.credentials = s.gateway.credentials.clone();
        assert_eq!(reloaded, s, "{}", file.display());
        if let Some(sweep) = &s.sweep {
            assert_eq!(expand_sweep(&s).expect("expands").len(), sweep.values.len());
        }
    }
}

#[test]
fn concurrency_knee_is_seed_002s_experiment() {
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
fn schema_file_is_current() {
    let path = workspace().join(schema::SCHEMA_FILE);
    let generated = schema::schema_json();
    if std::env::var_os("MCPSTORM_WRITE_SCHEMA").is_some() {
        std::fs::write(&path, &generated).expect("write the schema");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} is out of date: regenerate it with `MCPSTORM_WRITE_SCHEMA=1 cargo test -p mcpstorm-sim schema`",
        schema::SCHEMA_FILE
    );
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

// ---------------------------------------------------------------------------------------------------------------
// Odds and ends

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

// ---------------------------------------------------------------------------------------------------------------
// No input panics

/// A shipped scenario's text: 0 smoke, 1 retry_storm, 2 concurrency_knee (with a sweep).
fn shipped_text(i: usize) -> String {
    let name = ["smoke", "retry_storm", "concurrency_knee"][i % 3];
    std::fs::read_to_string(workspace().join(format!("scenarios/{name}.toml"))).expect("a shipped scenario")
}

#[derive(Debug, Clone)]
enum Mutation {
    Delete { at: usize, len: usize },
    Insert { at: usize, text: String },
    Replace { at: usize, len: usize, text: String },
    DuplicateLine { line: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let token = prop_oneof![
        Just("=".to_owned()),
        Just("\"".to_owned()),
        Just("[".to_owned()),
        Just("]]".to_owned()),
        Just("\n".to_owned()),
        Just("{".to_owned()),
        Just("0".to_owned()),
        Just("-1".to_owned()),
        Just("nan".to_owned()),
        Just("1e400".to_owned()),
        Just("\"0s\"".to_owned()),
        Just("\"999999999999h\"".to_owned()),
        Just("#".to_owned()),
        Just(".".to_owned()),
        Just("é".to_owned()),
        "[a-z_]{1,8}",
        any::<String>(),
    ];
    prop_oneof![
        (any::<usize>(), 1..20usize).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<usize>(), token.clone()).prop_map(|(at, text)| Mutation::Insert { at, text }),
        (any::<usize>(), 1..12usize, token).prop_map(|(at, len, text)| Mutation::Replace { at, len, text }),
        any::<usize>().prop_map(|line| Mutation::DuplicateLine { line }),
    ]
}

fn apply(text: &str, m: &Mutation) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    let n = chars.len().max(1);
    match m {
        Mutation::Delete { at, len } => {
            let at = at % n;
            chars.drain(at..(at + len).min(chars.len()));
        }
        Mutation::Insert { at, text } => {
            let at = at % (chars.len() + 1);
            chars.splice(at..at, text.chars());
        }
        Mutation::Replace { at, len, text } => {
            let at = at % n;
            let end = (at + len).min(chars.len());
            chars.splice(at.min(end)..end, text.chars());
        }
        Mutation::DuplicateLine { line } => {
            let lines: Vec<&str> = text.lines().collect();
            let i = line % lines.len().max(1);
            let mut out: Vec<&str> = lines.clone();
            if let Some(l) = lines.get(i) {
                out.insert(i, l);
            }
            return out.join("\n");
        }
    }
    chars.into_iter().collect()
}

/// Loading either works or gives problems that all print; it never panics.
fn never_panics(text: &str, sets: &[String]) {
    match load_str(text, "fuzz.toml", sets) {
        Ok(s) => {
            let _ = expand_sweep(&s);
        }
        Err(e) => {
            assert!(!e.to_string().is_empty());
            assert!(e.count() >= 1);
        }
    }
}

// 256 cases each by default; PROPTEST_CASES=N for a longer hunt.
proptest! {
    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        never_panics(&text, &[]);
    }

    #[test]
    fn tomlish_text_never_panics(text in "[a-z_\\[\\]{}=\"., 0-9\n#-]{0,200}") {
        never_panics(&text, &[]);
    }

    #[test]
    fn mutated_scenarios_never_panic(file in 0..3usize, mutations in prop::collection::vec(mutation(), 1..6)) {
        let mut text = shipped_text(file);
        for m in &mutations {
            text = apply(&text, m);
        }
        never_panics(&text, &[]);
    }

    #[test]
    fn arbitrary_set_arguments_never_panic(
        sets in prop::collection::vec(
            prop_oneof![
                any::<String>(),
                "[a-z_.\\[\\]0-9]{0,30}=[a-z0-9\"\\[\\]{}=., ]{0,20}",
                "(seed|name|load\\.sessions|faults\\[0\\]\\.start|servers\\[[0-3]\\]\\.tools\\[0\\]\\.latency|sweep\\.param)=.{0,12}",
            ],
            0..4,
        )
    ) {
        never_panics(&shipped_text(1), &sets);
        never_panics(&shipped_text(2), &sets);
    }
}

#[test]
fn sweeps_keep_the_real_secrets_and_the_profile_can_be_set() {
    let text = format!(
        "{BASE}\n[gateway]\ncredentials = [{{ scheme = \"bearer\", secret = \"s3cr3t\" }}]\n\n[sweep]\nparam = \"load.sessions\"\nvalues = [1, 2]\n"
    );
    let s = load(&text, &["gateway.profile=naive"]).expect("valid");
    assert_eq!(s.gateway.profile, mcpstorm_core::session::ext::GatewayProfile::Naive);
    let runs = expand_sweep(&s).expect("expands");
    assert_eq!(runs.len(), 2);
    for (_, run) in runs {
        assert_eq!(run.gateway.credentials[0].secret.expose(), "s3cr3t", "a sweep run lost the secret");
        assert_eq!(run.gateway.profile, mcpstorm_core::session::ext::GatewayProfile::Naive);
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
    assert_eq!(c.breaker.map(|b| b.open_base), Some(std::time::Duration::from_secs(2)));
    assert_eq!(c.budget.map(|b| b.ratio), Some(0.1));
    assert_eq!(c.fallbacks.get("echo"), Some("echo_cached"));
    let naive = set(&["gateway.breaker.open=\"2s\"", "gateway.profile=naive"]).gateway.layers().to_core();
    assert!(naive.breaker.is_none() && naive.retry.is_none() && naive.budget.is_none() && naive.throttle.is_none());
    let text = format!("{BASE}\n[gateway.throttle]\nk = 2\nwindw = \"1s\"\n");
    assert_eq!(problems(&text, &[]).len(), 1, "unknown keys in a layer table are rejected");
}

#[test]
fn resilience_checks_need_a_fault_window() {
    let text = edit(BASE, FAULT, "kind = \"session_expiry\"\ntarget = \"a\"\nstart = \"1s\"");
    let text = format!("{text}\n[checks]\nrecovery_s = 10\n");
    expect_one(&text, &[], "checks.recovery_s", "recovery_s = |10", "needs a fault with a duration");
    assert!(load(BASE, &["checks.healthy_p99_ratio=1.1", "checks.amplification_during_fault=1.2"]).is_ok());
}

// ---------------------------------------------------------------------------------------------------------------
// Ranges and run cost

/// Every optional table and array the format has, present once (a second fault for the clock-skew keys), so that
/// every duration and count key exists and can be `--set`.
const FULL: &str = r#"name = "full"
duration = "10s"
tick = "1ms"

[network]
latency = "1ms"
max_latency = "2ms"

[[servers]]
name = "a"
replicas = 2
workers = 8
page_size = 10
cache_ttl_ms = 1000
session_ttl = "60s"
latency_p95_ms = 100
max_concurrent_requests = 20
join_at = "1s"
leave_at = "9s"

[[servers.tools]]
name = "echo"
latency = { dist = "steps", default_steps = 2, default_step_ms = 5 }
progress_ms = 5

[load]
mode = "closed"
sessions = 10
think_time = "10ms"
calls = 1000
hosts = 2

[[load.mix]]
server = "a"
tool = "echo"
weight = 1

[agent]
retry = "polite"
max_retries = 2
backoff = "100ms"
backoff_cap = "1s"

[client]
max_in_flight = 50
per_connection = 50
queue_wait = "1s"
first_response = "1s"
connect_timeout = "1s"
deadline = "2s"

[[faults]]
kind = "latency_spike"
target = "a"
start = "2s"
duration = "1s"
extra = "10ms"
multiplier = 2.0

[[faults]]
kind = "clock_skew"
target = "a"
start = "3s"
duration = "1s"
offset = "+1m"
jump = "-10s"
reset = true

[gateway.router]
check_interval = "15s"
check_timeout = "5s"
failure_threshold = 3
error_window = "5m"
ewma_decay = "10s"
drift_window = "5m"
drift_penalty = "10m"
refresh_every = "1s"

[gateway.breaker]
window = "10s"
window_calls = 20
slow_call = "2s"
minimum_calls = 10
open = "5s"
open_max = "60s"
half_open_probes = 3
half_open_max_wait = "10s"

[gateway.retry]
max_attempts = 3
base = "100ms"
cap = "10s"

[gateway.budget]
ttl = "10s"

[gateway.throttle]
window = "2m"

[gateway.bulkhead]
max_concurrent = 8
per_server = { a = 4 }
queue_wait = "1s"

[gateway.limiter]
kind = "aimd"
initial = 8
min = 1
max = 16
timeout = "5s"
"#;

/// The patterns the schema gives durations and signed durations (see `Dur` and `SignedDur`).
fn is_duration(node: &serde_json::Value) -> bool {
    node.get("pattern").and_then(|p| p.as_str()).is_some_and(|p| p.contains("[0-9]+\\s*[a-zA-Zµ]+"))
}

/// Every leaf key of the schema, as a path with `[0]` for array entries, with its schema (references resolved).
fn schema_leaves() -> Vec<(String, serde_json::Value)> {
    fn walk(
        root: &serde_json::Value,
        node: &serde_json::Value,
        path: &str,
        depth: usize,
        out: &mut Vec<(String, serde_json::Value)>,
    ) {
        if depth > 16 {
            return;
        }
        if let Some(target) = node.get("$ref").and_then(|r| r.as_str()) {
            let name = target.trim_start_matches("#/definitions/");
            if let Some(def) = root.pointer(&format!("/definitions/{name}")) {
                walk(root, def, path, depth + 1, out);
            }
            return;
        }
        for combined in ["allOf", "oneOf", "anyOf"] {
            for part in node.get(combined).and_then(|a| a.as_array()).into_iter().flatten() {
                walk(root, part, path, depth + 1, out);
            }
        }
        if let Some(items) = node.get("items") {
            walk(root, items, &format!("{path}[0]"), depth + 1, out);
        }
        let props = node.get("properties").and_then(|p| p.as_object());
        for (key, child) in props.into_iter().flatten() {
            let child_path = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
            walk(root, child, &child_path, depth + 1, out);
        }
        let typed = node.get("type").and_then(|t| t.as_str());
        if props.is_none() && node.get("items").is_none() && typed.is_some_and(|t| t != "object") {
            out.push((path.to_owned(), node.clone()));
        }
    }
    let schema = schema::schema();
    let mut out = Vec::new();
    walk(&schema, &schema, "", 0, &mut out);
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out.dedup_by(|a, b| a.0 == b.0);
    out
}

/// `servers[3].tools[12].x` as `servers[0].tools[0].x`: the schema's shape of a path.
fn first_entries(path: &str) -> String {
    let mut out = String::new();
    let mut in_index = false;
    for ch in path.chars() {
        match ch {
            '[' => {
                in_index = true;
                out.push_str("[0]");
            }
            ']' => in_index = false,
            _ if in_index => {}
            _ => out.push(ch),
        }
    }
    out
}

/// FULL with `sets` applied, without cost limits: only the ranges apply.
fn load_full(sets: &[&str]) -> Result<Scenario, ScenarioError> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    load_str_with(FULL, "full.toml", &sets, &Limits::NONE)
}

fn full(sets: &[&str]) -> Scenario {
    load_full(sets).unwrap_or_else(|e| panic!("{sets:?}:\n{e}"))
}

#[test]
fn every_duration_key_of_the_schema_has_a_range() {
    let s = full(&[]);
    let schema: BTreeSet<String> =
        schema_leaves().into_iter().filter(|(_, node)| is_duration(node)).map(|(path, _)| path).collect();
    let ranged: BTreeSet<String> = ranges::durations(&s).iter().map(|k| first_entries(&k.path)).collect();
    assert!(schema.len() >= 35, "the walk found the durations: {schema:?}");
    assert_eq!(ranged, schema, "every duration key has a range (ranges::durations) and nothing else does");
    for key in ranges::durations(&s) {
        assert!(key.value <= key.upper.of(&s), "FULL is in range: {key:?}");
        assert!(key.upper.of(&s) <= ranges::MAX_DURATION, "{key:?}");
    }
}

/// The integer keys that need no maximum: the seed (any u64 seeds a run) and the checks' thresholds (only compared
/// with the run's figures, never computed with).
fn unbounded(path: &str) -> bool {
    path == "seed" || path.starts_with("checks.")
}

/// Sets `key` to `value` in FULL (no cost limits) and returns the problems at `key` that are about a maximum.
fn over_the_top(key: &str, value: &str) -> Vec<Problem> {
    match load_full(&[&format!("{key}={value}")]) {
        Ok(_) => Vec::new(),
        Err(e) => e
            .problems()
            .iter()
            .filter(|p| p.key.as_deref() == Some(key) && p.message.starts_with("must be at most"))
            .cloned()
            .collect(),
    }
}

#[test]
fn every_count_of_the_schema_has_a_maximum_that_validation_enforces() {
    let leaves = schema_leaves();
    let mut checked = Vec::new();
    for (path, node) in &leaves {
        let integer = node.get("type").and_then(|t| t.as_str()) == Some("integer");
        let max = node.get("maximum").and_then(|m| m.as_f64());
        if !integer && max.is_none() || unbounded(path) {
            continue;
        }
        let Some(max) = max else { panic!("{path}: an integer key without a maximum in the schema") };
        let (at_max, beyond) = if integer {
            (format!("{}", max as u64), format!("{}", max as u64 + 1))
        } else {
            (format!("{max:?}"), format!("{:?}", max * 1.5))
        };
        let beyond_found = over_the_top(path, &beyond);
        assert!(!beyond_found.is_empty(), "{path} = {beyond} (above the schema's maximum) is accepted");
        // The scenario's own rules group digits; the fake server's (tools) print them plain.
        let message = &beyond_found[0].message;
        assert!(message.contains(&ranges::number(max)) || message.contains(&at_max), "{}", beyond_found[0]);
        assert!(over_the_top(path, &at_max).is_empty(), "{path} = {at_max} (the schema's maximum) is refused");
        checked.push(path.clone());
    }
    // The walk reached the tables: servers, tools' latency, load, the gateway's layers.
    for key in [
        "servers[0].replicas",
        "servers[0].tools[0].latency.default_steps",
        "servers[0].tools[0].progress_ms",
        "load.sessions",
        "load.rate",
        "gateway.breaker.window_calls",
        "gateway.limiter.warmup",
    ] {
        assert!(checked.iter().any(|c| c == key), "{key} was not checked: {checked:?}");
    }
}

#[test]
fn range_messages_name_the_key_and_the_bound() {
    let shown = |sets: &[&str]| load_full(sets).map_or_else(|e| e.to_string(), |_| panic!("{sets:?} accepted"));
    assert_eq!(
        shown(&["client.deadline=\"18446744073709551615s\""]),
        "--set client.deadline=\"18446744073709551615s\": client.deadline: must be at most 7days (a week), got \
         18446744073709551615s"
    );
    assert!(shown(&["network.latency=\"11s\""]).contains("must be at most the run's duration (10s), got 11s"));
    assert!(shown(&["load.think_time=\"1h\""]).contains("load.think_time: must be at most the run's duration"));
    assert!(
        shown(&["faults[1].offset=\"-8d\""]).contains("faults[1].offset: must be at most 7days (a week), got 8days")
    );
    assert!(
        shown(&[
            "duration=\"500ms\"",
            "tick=\"600ms\"",
            "faults=[]",
            "servers[0].join_at=\"1ms\"",
            "servers[0].leave_at=\"2ms\""
        ])
        .contains("tick: must be at most the run's duration (500ms), got 600ms")
    );
    assert!(shown(&["servers[0].tools[0].latency.default_step_ms=1e12"]).contains("at most 86400000 (one day)"));
    // The tops and bottoms of the ranges are accepted: a week either way, and a 1 µs tick.
    full(&["client.deadline=\"7d\"", "tick=\"1us\"", "faults[1].jump=\"+7d\""]);
}

/// What `--set key=value` on FULL does, as a property: loading succeeds with the value inside its range, or fails
/// with every problem located (at a line of the file or at the `--set`), and a value above a week is named.
fn set_duration(key: &ranges::DurationKey, value: &str) -> Result<(), TestCaseError> {
    let sets = [format!("{}=\"{value}\"", key.path)];
    let parsed = humantime::parse_duration(value.trim_start_matches(['+', '-'])).ok();
    match load_str(FULL, "full.toml", &sets) {
        Ok(s) => {
            let now = ranges::durations(&s).into_iter().find(|k| k.path == key.path);
            let now = now.ok_or_else(|| TestCaseError::fail(format!("{} vanished", key.path)))?;
            prop_assert!(now.value <= now.upper.of(&s), "{} = {value} accepted out of range", key.path);
            prop_assert!(now.value <= ranges::MAX_DURATION);
        }
        Err(e) => {
            for p in e.problems() {
                prop_assert!(matches!(p.location, Location::File { .. } | Location::Set { .. }), "unlocated: {p}");
            }
            if parsed.is_some_and(|d| d > ranges::MAX_DURATION) {
                // A fault's window and join/leave are reported by their own rules, somewhere in their table.
                let table = key.path.rsplit_once('.').map_or("", |(t, _)| t);
                let named = e
                    .problems()
                    .iter()
                    .filter_map(|p| p.key.as_deref())
                    .any(|k| k == key.path || (key.upper == ranges::Upper::RunByOwnRule && k.starts_with(table)));
                prop_assert!(named, "{} = {value} refused without naming it:\n{e}", key.path);
            }
        }
    }
    Ok(())
}

fn duration_text() -> impl Strategy<Value = String> {
    let unit = prop_oneof![
        Just("ns"),
        Just("us"),
        Just("ms"),
        Just("s"),
        Just("m"),
        Just("h"),
        Just("d"),
        Just("w"),
        Just("y")
    ];
    let sign = prop_oneof![Just(""), Just("+"), Just("-")];
    let number = prop_oneof![
        any::<u64>().prop_map(|n| n.to_string()),
        (0..10_000u64).prop_map(|n| n.to_string()),
        "[0-9]{19,30}",
        Just("18446744073709551615".to_owned()),
        Just("604800".to_owned()),
    ];
    (sign, number, unit).prop_map(|(sign, n, unit)| format!("{sign}{n}{unit}"))
}

proptest! {
    #[test]
    fn any_duration_set_on_any_key_is_in_range_or_refused_where_it_was_given(
        index in any::<prop::sample::Index>(),
        value in duration_text(),
    ) {
        let keys = ranges::durations(&full(&[]));
        set_duration(&keys[index.index(keys.len())], &value)?;
    }
}

#[test]
fn every_duration_key_refuses_the_largest_duration() {
    for key in ranges::durations(&full(&[])) {
        set_duration(&key, "18446744073709551615s").unwrap_or_else(|e| panic!("{}: {e}", key.path));
        set_duration(&key, "7d").unwrap_or_else(|e| panic!("{}: {e}", key.path));
    }
}

#[test]
fn run_cost_is_estimated_from_the_keys_that_drive_it() {
    let base = load(BASE, &[]).expect("valid");
    let cost = cost::estimate(&base);
    // Closed loop: 10 sessions for 10 s, each call a 2 ms round trip plus the 5 ms median of `echo`.
    assert!((cost.calls - 10.0 * 10.0 / 0.007).abs() < 1.0, "{cost}");
    assert_eq!(cost.hosts, 4.0, "3 replicas and a load host");
    // 10 s of load plus the drain: 2 × 30 s deadline + 10 s connect timeout + 10 s.
    assert_eq!(cost.ticks, 90_000.0);
    assert_eq!(cost.work, 90_000.0 * 64.0);
    assert!(cost.over(&Limits::DEFAULT).is_none());
    let open =
        load(&edit(BASE, "mode = \"closed\"\nsessions = 10", "mode = \"open\"\nrate = 200.0"), &[]).expect("open");
    assert_eq!(cost::estimate(&open).calls, 2_000.0, "200 calls/s for 10 s");
    let capped = load(BASE, &["load.calls=50"]).expect("valid");
    assert_eq!(cost::estimate(&capped).calls, 50.0, "load.calls caps the estimate");
}

#[test]
fn runs_beyond_the_cost_limits_are_refused_naming_their_keys_unless_allowed() {
    // (sets, the key the problem is reported at, a fragment naming the figure over its limit)
    let cases: [(&[&str], &str, &str); 7] = [
        (&["load.sessions=1000000"], "load.sessions", "calls 1.4e9 > 50,000,000 (load.sessions, duration"),
        (&["load.sessions=1000000"], "load.sessions", "memory 15.3 GiB > 2.0 GiB (load.sessions)"),
        (&["duration=\"6d\""], "load.sessions", "ticks 518,480,000 > 100,000,000 (duration, tick)"),
        (&["load.hosts=300"], "load.hosts", "hosts 303 > 200 (load.hosts)"),
        (&["servers[0].replicas=500"], "servers[0].replicas", "hosts 502 > 200 (servers[0].replicas, load.hosts)"),
        (&["tick=\"1us\"", "duration=\"60s\""], "duration", "ticks 140,000,000 > 100,000,000 (duration, tick,"),
        (&["client.deadline=\"7d\""], "duration", "(duration, tick, client.deadline, client.connect_timeout)"),
    ];
    for (set, key, fragment) in cases {
        let found = problems(BASE, set);
        assert_eq!(found.len(), 1, "{set:?}: {}", ScenarioError::Invalid(found.clone()));
        let p = &found[0];
        assert_eq!(p.key.as_deref(), Some(key), "{p}");
        assert!(p.message.contains(fragment), "{set:?}: {p}\ndoes not contain {fragment:?}");
        assert!(p.message.contains("pass --allow-large"), "{p}");
        assert!(matches!(p.location, Location::File { .. } | Location::Set { .. }), "{p}");
        let sets: Vec<String> = set.iter().map(|s| s.to_string()).collect();
        load_str_with(BASE, "t.toml", &sets, &Limits::NONE)
            .unwrap_or_else(|e| panic!("{set:?} with --allow-large: {e}"));
    }
    // Ranges stay with --allow-large.
    let sets = ["duration=\"100000h\"".to_owned()];
    assert!(load_str_with(BASE, "t.toml", &sets, &Limits::NONE).is_err());
}

#[test]
fn each_sweep_row_is_held_to_the_cost_limits() {
    let text = format!("{BASE}\n[sweep]\nparam = \"load.sessions\"\nvalues = [1, 1000000]\n");
    let found = problems(&text, &[]);
    assert_eq!(found.len(), 1, "{}", ScenarioError::Invalid(found.clone()));
    assert_eq!(found[0].key.as_deref(), Some("load.sessions"));
    assert_eq!(found[0].line_column(), Some(pos(&text, "values = [1, |1000000]")));
    assert!(found[0].message.ends_with("(with sweep value load.sessions = 1000000)"), "{}", found[0]);
    // The base alone is not run when it sweeps, so only rows count.
    let text = format!(
        "{}\n[sweep]\nparam = \"load.sessions\"\nvalues = [1, 2]\n",
        edit(BASE, "sessions = 10", "sessions = 5000000")
    );
    assert!(load(&text, &[]).is_ok());
}

#[test]
fn shipped_scenarios_cost_a_fraction_of_the_limits() {
    // Margin: every shipped run (and sweep row) stays below an eighth of each limit.
    let margin = 8.0;
    let l = Limits::DEFAULT;
    for file in shipped() {
        let s = load_file(&file, &[]).unwrap_or_else(|e| panic!("{}:\n{e}", file.display()));
        let rows = match &s.sweep {
            None => vec![("".to_owned(), s.clone())],
            Some(_) => expand_sweep(&s).expect("expands"),
        };
        for (label, row) in rows {
            let c = cost::estimate(&row);
            let within = c.calls * margin <= l.calls
                && c.hosts * margin <= l.hosts
                && c.ticks * margin <= l.ticks
                && c.work * margin <= l.work
                && c.memory * margin <= l.memory;
            assert!(within, "{} {label}: {c} is within {margin}x of the limits ({l})", file.display());
        }
    }
}

#[test]
fn a_file_that_is_not_utf8_is_refused_at_its_first_bad_byte() {
    let dir = std::env::temp_dir().join(format!("mcpstorm-scenario-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("latin1.toml");
    // "é" in Latin-1 (0xE9) on line 2, after `description = "caf` (18 characters).
    let mut bytes = b"name = \"t\"\ndescription = \"caf".to_vec();
    bytes.extend([0xE9, b'"', b'\n']);
    std::fs::write(&path, &bytes).expect("write");
    let err = load_file(&path, &[]).expect_err("not UTF-8");
    let p = &err.problems()[0];
    assert_eq!(p.line_column(), Some((2, 19)), "{p}");
    assert!(p.message.contains("invalid byte (0xe9) at byte offset 29"), "{p}");
    assert!(err.to_string().starts_with(&format!("{}:2:19: not UTF-8", path.display())), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
