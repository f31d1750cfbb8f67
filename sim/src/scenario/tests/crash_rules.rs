//! A `crash`'s `mode`: named, listed when misspelt, taken by crashes only, defaulted by what the target is, and
//! the agents' `retry_after` option with it.

use super::*;

/// [`BASE`] with its fault a crash of `target`, plus `extra` lines.
fn crash(target: &str, extra: &str) -> String {
    let fault = format!("kind = \"crash\"\ntarget = \"{target}\"\nstart = \"1s\"\nduration = \"2s\"{extra}");
    edit(BASE, FAULT, &fault)
}

#[test]
fn every_mode_loads_and_a_replica_defaults_to_refuse() {
    for mode in CrashMode::ALL {
        let s = load(&crash("a#1", &format!("\nmode = \"{mode}\"")), &[]).unwrap_or_else(|e| panic!("{mode}: {e}"));
        assert_eq!(s.faults[0].mode, Some(mode));
    }
    let s = load(&crash("a#1", ""), &[]).expect("valid");
    assert_eq!((s.faults[0].mode, s.faults[0].crash_mode(true)), (None, CrashMode::Refuse));
    assert_eq!(s.faults[0].crash_mode(false), CrashMode::Hang, "a gateway node's or Redis's host");
}

#[test]
fn an_unknown_mode_is_refused_at_its_value_with_the_modes_listed() {
    let text = crash("a", "\nmode = \"explode\"");
    expect_one(&text, &[], "faults[0].mode", "mode = |\"explode\"", "unknown variant `explode`");
    let shown = load(&text, &[]).expect_err("refused").to_string();
    assert!(shown.contains("`refuse`, `hang`, `reset`"), "the modes are listed: {shown}");
}

#[test]
fn mode_belongs_to_crash_only_and_redis_only_hangs() {
    let spike = edit(BASE, "extra = \"100ms\"", "extra = \"100ms\"\nmode = \"hang\"");
    expect_one(
        &spike,
        &[],
        "faults[0].mode",
        "mode = |\"hang\"",
        "does not apply to kind = \"latency_spike\" (it belongs to crash)",
    );
    let synced = format!("{}\n[gateway.sync]\nredis = \"redis://redis:6379\"\n", crash("redis", "\nmode = \"refuse\""));
    expect_one(&synced, &[], "faults[0].mode", "mode = |\"refuse\"", "a crash of Redis takes mode = \"hang\" only");
    let hangs = synced.replace("mode = \"refuse\"", "mode = \"hang\"");
    load(&hangs, &[]).unwrap_or_else(|e| panic!("Redis may hang: {e}"));
}

#[test]
fn retry_after_needs_a_retry_to_spend() {
    let text = format!("{BASE}\n[agent]\nretry_after = true\n");
    expect_one(&text, &[], "agent.max_retries", "|[agent]", "must be at least 1 with retry_after = true");
    let ok = format!("{BASE}\n[agent]\nretry_after = true\nmax_retries = 2\n");
    let s = load(&ok, &[]).unwrap_or_else(|e| panic!("{e}"));
    assert!(s.agent.retry_after && s.agent.retry == RetryMode::None);
}
