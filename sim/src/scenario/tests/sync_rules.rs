//! `[gateway.sync]` in a scenario: the Redis host its URL names, the faults that may target it, `partition ... from`,
//! and the `gossip` key it replaced.

use super::*;

/// BASE with three load hosts and breaker sync on, Redis on host `redis`.
fn synced() -> String {
    let hosts = edit(BASE, "sessions = 10", "sessions = 10\nhosts = 3");
    edit(&hosts, "[load]", "[gateway.sync]\nredis = \"redis://redis:6379\"\n\n[load]")
}

/// The synced scenario with its fault replaced by `fault`.
fn with_fault(fault: &str) -> String {
    edit(&synced(), FAULT, fault)
}

#[test]
fn a_synced_scenario_places_redis_on_the_host_its_url_names() {
    let s = load(&synced(), &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(RedisHost::of(&s.gateway), Some(RedisHost { name: "redis".into(), port: 6379 }));
    for fault in [
        "kind = \"crash\"\ntarget = \"redis\"\nstart = \"1s\"\nduration = \"2s\"",
        "kind = \"hang\"\ntarget = \"redis\"\nstart = \"1s\"\nduration = \"2s\"",
        "kind = \"partition\"\ntarget = \"redis\"\nstart = \"1s\"\nduration = \"2s\"",
        "kind = \"latency_spike\"\ntarget = \"redis\"\nstart = \"1s\"\nduration = \"2s\"\nextra = \"50ms\"",
        "kind = \"partition\"\ntarget = \"a#1\"\nstart = \"1s\"\nduration = \"2s\"\nfrom = \"load-2\"",
    ] {
        let s = load(&with_fault(fault), &[]).unwrap_or_else(|e| panic!("{fault}: {e}"));
        assert_eq!(s.faults.len(), 1);
    }
}

#[test]
fn the_redis_url_must_name_a_host_of_its_own_and_nothing_from_outside_the_file() {
    let text = synced();
    let url = "redis = |\"redis://redis:6379\"";
    for (to, key, at, fragment) in [
        ("redis://a-1:6379", "gateway.sync.redis", url, "clashes with server \"a\""),
        ("redis://b:6379", "gateway.sync.redis", url, "clashes with server \"b\""),
        ("redis://load-1:6379", "gateway.sync.redis", url, "load hosts"),
        ("redis://10.0.0.1:6379", "gateway.sync.redis", url, "must name the simulated host"),
        ("redis://:secret@redis:6379", "gateway.sync.redis", url, "no password"),
    ] {
        let edited = edit(&text, "redis://redis:6379", to);
        expect_one(&edited, &[], key, &at.replace("redis://redis:6379", to), fragment);
    }
    let env = edit(&text, "redis = \"redis://redis:6379\"", "redis = \"redis://redis:6379\"\npassword_env = \"PW\"");
    expect_one(&env, &[], "gateway.sync.password_env", "password_env = |", "reads no environment");
    let node = edit(&text, "redis = \"redis://redis:6379\"", "redis = \"redis://redis:6379\"\nnode = \"n\"");
    expect_one(&node, &[], "gateway.sync.node", "node = |", "by its host");
}

#[test]
fn faults_on_redis_are_the_ones_redis_can_have_and_from_names_a_load_host() {
    let cases = [
        (
            "kind = \"error_burst\"\ntarget = \"redis\"\nstart = \"1s\"\nduration = \"2s\"\nrate = 1.0",
            "faults[0].kind",
            "kind = |\"error_burst\"",
            "does not apply to Redis",
        ),
        (
            "kind = \"latency_spike\"\ntarget = \"redis\"\nstart = \"1s\"\nduration = \"2s\"\nmultiplier = 2.0",
            "faults[0].multiplier",
            "multiplier = |",
            "fixed `extra`",
        ),
        (
            "kind = \"partition\"\ntarget = \"a\"\nstart = \"1s\"\nduration = \"2s\"\nfrom = \"load-3\"",
            "faults[0].from",
            "from = |",
            "not a load host (load-0 to load-2)",
        ),
        (
            "kind = \"crash\"\ntarget = \"a\"\nstart = \"1s\"\nduration = \"2s\"\nfrom = \"load-0\"",
            "faults[0].from",
            "from = |",
            "(it belongs to partition)",
        ),
    ];
    for (fault, key, at, fragment) in cases {
        expect_one(&with_fault(fault), &[], key, at, fragment);
    }
    // Without sync, `redis` is no host at all.
    let unsynced = edit(BASE, FAULT, "kind = \"crash\"\ntarget = \"redis\"\nstart = \"1s\"\nduration = \"2s\"");
    expect_one(&unsynced, &[], "faults[0].target", "target = |\"redis\"", "no server is named \"redis\"");
}

#[test]
fn gossip_is_refused_naming_its_replacement() {
    let text = edit(BASE, "[load]", "[gateway]\ngossip = true\n\n[load]");
    expect_one(&text, &[], "gateway.gossip", "|gossip = ", "[gateway.sync] redis = \"redis://redis:6379\"");
}
