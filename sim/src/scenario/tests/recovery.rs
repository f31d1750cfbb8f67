//! A file with syntax errors: the rest of it is read and checked in the same run (issue 48 item 6), every problem
//! in file order, without the problems the syntax errors themselves cause (a key on a line that could not be read
//! reported missing, a rule judging a default that the lost line may have set).

use super::*;
use crate::scenario::tables::GatewayFile;

/// Each problem as `line: key: message`, in the order reported.
fn lines(text: &str) -> Vec<String> {
    problems(text, &[])
        .iter()
        .map(|p| {
            let (line, _) = p.line_column().unwrap_or((0, 0));
            format!("{line}: {}: {}", p.key.as_deref().unwrap_or("-"), p.message)
        })
        .collect()
}

fn line_of(text: &str, needle: &str) -> usize {
    pos(text, needle).0
}

#[test]
fn a_syntax_error_and_a_bad_replica_in_another_table_are_reported_together_in_order() {
    // Server b's extra line is broken; fault 0 names a replica that server a does not have.
    let text = edit(BASE, "name = \"b\"\n", "name = \"b\"\ntimeout = 2x\n");
    let text = edit(&text, "target = \"a\"", "target = \"a#2\"");
    let p = problems(&text, &[]);
    assert_eq!(p.len(), 2, "{p:#?}");
    assert_eq!(p[0].line_column(), Some(pos(&text, "timeout = |2x")), "{}", p[0]);
    assert!(p[0].message.starts_with("TOML syntax: "), "{}", p[0]);
    assert_eq!(p[1].line_column(), Some(pos(&text, "target = |\"a#2\"")), "{}", p[1]);
    assert_eq!(p[1].key.as_deref(), Some("faults[0].target"));
    assert!(p[1].message.contains("no replica 2"), "{}", p[1]);
    assert!(p.iter().all(|p| p.to_string().starts_with("t.toml:")), "{p:#?}");
}

#[test]
fn a_key_on_a_broken_line_is_not_reported_missing_nor_its_server_unknown() {
    // Server a's name cannot be read: no "is required", and no "no server is named a" for the mix and the fault.
    let text = edit(BASE, "name = \"a\"", "name = a");
    assert_eq!(
        lines(&text),
        [format!(
            "{}: -: TOML syntax: string values must be quoted, expected literal string",
            line_of(&text, "|name = a")
        )]
    );

    // The scenario's own name, before any table.
    let text = edit(BASE, "name = \"t\"", "name = \"t");
    let p = problems(&text, &[]);
    assert_eq!(p.len(), 1, "{p:#?}");
}

#[test]
fn a_rule_that_depends_on_a_broken_table_waits_for_the_fix() {
    // With `replicas` unreadable, server a would have the default single replica and `a#1` would look wrong.
    let text = edit(BASE, "replicas = 2", "replicas = 2x");
    let text = edit(&text, "target = \"a\"", "target = \"a#1\"");
    let p = problems(&text, &[]);
    assert_eq!(p.len(), 1, "{p:#?}");
    assert_eq!(p[0].line_column(), Some(pos(&text, "replicas = |2x")), "{}", p[0]);
}

#[test]
fn the_rest_of_the_file_after_an_unreadable_line_is_still_read() {
    // toml alone gives up on the file after a line that is not `key = value`.
    let text = edit(BASE, "duration = \"10s\"\n", "duration = \"10s\"\nthis is not toml\n");
    let text = edit(&text, "target = \"a\"", "target = \"a#2\"");
    let text = edit(&text, "sessions = 10", "sesions = 10");
    let p = lines(&text);
    assert_eq!(p.len(), 2, "{p:#?}");
    assert!(p[0].starts_with(&format!("{}: -: TOML syntax: ", line_of(&text, "|this is not"))), "{p:#?}");
    // An unknown key is a problem of the file's shape: the meaning checks wait for it, as without syntax errors.
    let unknown = format!("{}: load.sesions: unknown key; did you mean `sessions`?", line_of(&text, "|sesions"));
    assert!(p[1].starts_with(&unknown), "{p:#?}");

    // Without it, the bad replica is reported too.
    let text = edit(&text, "sesions = 10", "sessions = 10");
    let p = lines(&text);
    assert_eq!(p.len(), 2, "{p:#?}");
    assert!(p[1].starts_with(&format!("{}: faults[0].target: ", line_of(&text, "|target = \"a#2\""))), "{p:#?}");
}

#[test]
fn every_syntax_error_is_reported_once() {
    let text = edit(BASE, "replicas = 2", "replicas = [1, 2");
    let text = edit(&text, "sessions = 10", "sessions = 10 10");
    let text = edit(&text, "extra = \"100ms\"", "extra = \"100ms");
    let p = problems(&text, &[]);
    let at: Vec<usize> = p.iter().map(|p| p.line_column().map_or(0, |(l, _)| l)).collect();
    assert!(p.iter().all(|p| p.message.starts_with("TOML syntax: ")), "{p:#?}");
    // The unclosed array is reported where toml sees that it runs on: at the next table's header.
    let after = line_of(&text, "|[[servers.tools]]");
    assert_eq!(at, [after, line_of(&text, "|sessions"), line_of(&text, "|extra")], "{p:#?}");
}

#[test]
fn a_broken_header_reports_its_syntax_error_alone() {
    // Server b's header is broken: which table its keys belonged to is unknown, so nothing else is judged.
    let text = edit(BASE, "[[servers]]\nname = \"b\"", "[[servers]\nname = \"b\"");
    let text = edit(&text, "target = \"a\"", "target = \"a#2\"");
    let p = problems(&text, &[]);
    assert_eq!(p.len(), 1, "{p:#?}");
    assert!(p[0].message.contains("unclosed array table"), "{}", p[0]);
}

#[test]
fn a_gateway_config_reports_its_syntax_error_and_its_bad_value_together() {
    let text = "[listen]\nhttp = \"127.0.0.1:8080\"\nmax_calls_in_flight = 1x\n\n[client]\nmax_in_flight = 0\n\n\
                [[servers]]\nname = \"a\"\n[[servers.replicas]]\ntcp = \"127.0.0.1:9001\"\n";
    let e = GatewayFile::load_str(text, "gateway.toml").map(|_| ()).unwrap_err();
    let p = e.problems();
    assert_eq!(p.len(), 2, "{e}");
    assert_eq!(p[0].line_column(), Some(pos(text, "max_calls_in_flight = |1x")), "{e}");
    assert_eq!(p[1].key.as_deref(), Some("client.max_in_flight"), "{e}");
    assert!(e.to_string().starts_with("gateway.toml:3:"), "{e}");
}
