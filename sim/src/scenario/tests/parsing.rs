//! Reading and parsing: TOML syntax, the format's shape as serde sees it, unreadable and non-UTF-8 files.

use super::*;

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

/// An unknown key near a valid one (a typo) names it, still at the key's file:line:column and with every valid key
/// listed; one near none gets no guess.
#[test]
fn unknown_key_suggests_the_nearest_valid_one() {
    let text = edit(BASE, "replicas = 2", "replcas = 2");
    expect_one(
        &text,
        &[],
        "servers[0].replcas",
        "|replcas",
        "unknown key; did you mean `replicas`? expected one of `name`",
    );
    let shown = problems(&text, &[])[0].to_string();
    assert!(shown.starts_with("t.toml:6:1: servers[0].replcas: unknown key; did you mean `replicas`?"), "{shown}");
    let cases = [
        (edit(BASE, "name = \"b\"", "name = \"b\"\nwrkers = 3"), "servers[1].wrkers", "|wrkers", "`workers`"),
        (edit(BASE, "extra = \"100ms\"", "extra = \"100ms\"\nrat = 1"), "faults[0].rat", "|rat = 1", "`rate`"),
        (format!("{BASE}\n[checks]\np999_ms = 3\n"), "checks.p999_ms", "|p999_ms", "`p99_ms`"),
        (format!("{BASE}\n[agent]\nmax_retires = 3\n"), "agent.max_retires", "|max_retires", "`max_retries`"),
    ];
    for (text, key, at, name) in cases {
        expect_one(&text, &[], key, at, &format!("unknown key; did you mean {name}? expected one of"));
    }
    let text = edit(BASE, "name = \"get\"", "name = \"get\"\ncolour = \"red\"");
    expect_one(&text, &[], "servers[1].tools[0].colour", "|colour", "unknown key; expected one of");
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

#[test]
fn read_errors_name_the_file() {
    let err = load_file(Path::new("/nonexistent/x.toml"), &[]).expect_err("no such file");
    assert!(err.to_string().starts_with("/nonexistent/x.toml: cannot read it: "), "{err}");
    assert_eq!(err.count(), 1);
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
