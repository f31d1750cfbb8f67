//! Three `mcpstorm gateway` processes sharing breakers through a real `redis-server` (`[gateway.sync]`): a
//! force-open on one node shows on the other two; with Redis killed, every node still serves calls and says the
//! link is down; once Redis is back on its port, the nodes reconnect by themselves and sync resumes.
//!
//! `redis-server` comes from Debian's package (`.ci/run` installs it); without it the test says so and passes,
//! unless `MCPSTORM_REQUIRE_PEERS=1`, where it fails.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::fixtures::gateway;
use crate::common::{mcpstorm, text};
use crate::gateway::{Running, TOKEN, TOKEN_ENV, http, start};
use crate::servers::Fake;

/// A `redis-server` on a loopback port of its own, without persistence; killed when dropped.
struct Redis {
    child: Option<Child>,
    port: u16,
}

impl Redis {
    /// `None` (the test skips) when there is no `redis-server` and peers are not required.
    fn start() -> Option<Redis> {
        let port = std::net::TcpListener::bind("127.0.0.1:0").ok()?.local_addr().ok()?.port();
        let mut redis = Redis { child: None, port };
        if !redis.run() {
            if std::env::var("MCPSTORM_REQUIRE_PEERS").is_ok_and(|v| v == "1") {
                panic!("redis-server missing: apt-get install redis-server");
            }
            eprintln!("\n*** SKIPPING: redis-server missing (apt-get install redis-server) ***\n");
            return None;
        }
        Some(redis)
    }

    /// Starts the server on its port and waits until it answers; `false` when there is no `redis-server`.
    fn run(&mut self) -> bool {
        let port = self.port.to_string();
        let child = Command::new("redis-server")
            .args(["--port", &port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let Ok(child) = child else { return false };
        self.child = Some(child);
        until("redis-server answers", || std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok());
        true
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Waits until `done` holds, checking every 10 ms; fails naming `what` after 20 s (a liveness bound, not a
/// performance target). Returns how many checks failed first: the wait, in 10 ms steps.
fn until(what: &str, mut done: impl FnMut() -> bool) -> u32 {
    let mut checks = 0;
    while !done() {
        checks += 1;
        assert!(checks < 2000, "still waiting after 20 s: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
    checks
}

fn config(fake: &str, port: u16, node: &str) -> String {
    config_with(fake, port, node, "")
}

/// [`config`] with more `[gateway]` tables.
fn config_with(fake: &str, port: u16, node: &str, more: &str) -> String {
    let sync = format!("[gateway.sync]\nredis = \"redis://127.0.0.1:{port}\"\nnode = {node:?}");
    gateway().drain("1s").tcp("alpha", fake).table(&sync).table(more).admin(TOKEN_ENV).build()
}

/// The value of the sample `name` (with its labels, as printed) in the node's `/metrics`.
fn metric(node: &Running, sample: &str) -> Option<f64> {
    let (_, body) = http(&node.admin, "GET", "/metrics", None, None);
    body.lines().find_map(|l| l.strip_prefix(sample)?.strip_prefix(' ')?.trim().parse().ok())
}

/// The state of the node's breaker of `alpha#0`'s `tool`, as `/admin/breakers` lists it.
fn state(node: &Running, tool: &str) -> String {
    let (_, body) = http(&node.admin, "GET", "/admin/breakers", Some(TOKEN), None);
    let listed: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let row =
        listed["breakers"].as_array().into_iter().flatten().find(|b| b["replica"] == "alpha#0" && b["tool"] == tool);
    row.and_then(|b| b["state"].as_str()).unwrap_or("none").to_owned()
}

fn switch(node: &Running, tool: &str, action: &str) {
    let body = json!({"server": "alpha", "tool": tool, "action": action});
    let (status, said) = http(&node.admin, "POST", "/admin/breakers", Some(TOKEN), Some(&body));
    assert_eq!(status, 200, "{said}");
}

const CONNECTED: &str = "mcpstorm_gateway_sync_connected";

#[test]
fn three_gateways_share_breakers_through_redis_and_serve_through_its_outage() {
    let Some(mut redis) = Redis::start() else { return };
    let fake = Fake::start(None);
    let nodes: Vec<Running> =
        (1..=3).map(|i| start(&config(&fake.addr, redis.port, &format!("gw-{i}")), &format!("sync-{i}"))).collect();
    for node in &nodes {
        until("every node connected to Redis", || metric(node, CONNECTED) == Some(1.0));
    }

    // An operator's force-open on one node holds on the other two.
    switch(&nodes[0], "echo", "force_open");
    for node in &nodes[1..] {
        let polls = until("the force-open reaches the other nodes", || state(node, "echo") == "forced_open");
        eprintln!("force-open seen on another node after {polls} polls of 10 ms");
    }
    let o = mcpstorm(&["call", "--http", &nodes[2].mcp, "echo", r#"{"message": "x"}"#]);
    assert_eq!(o.status.code(), Some(1), "a forced-open tool answers degraded on every node: {}", text(&o));
    switch(&nodes[1], "echo", "reset");
    for node in [&nodes[0], &nodes[2]] {
        until("the reset reaches the other nodes", || state(node, "echo") == "closed");
    }

    // A switch in force when Redis dies.
    switch(&nodes[0], "slow_progress", "force_open");
    for node in &nodes[1..] {
        until("the second force-open reaches the other nodes", || state(node, "slow_progress") == "forced_open");
    }

    // Redis dies: every node says so, and every node still serves calls, deciding alone.
    redis.kill();
    for node in &nodes {
        until("every node sees the link down", || metric(node, CONNECTED) == Some(0.0));
        assert!(metric(node, "mcpstorm_gateway_sync_events_total{event=\"outage\"}").is_some_and(|n| n >= 1.0));
        let o = mcpstorm(&["call", "--http", &node.mcp, "echo", r#"{"message": "no redis"}"#]);
        assert_eq!(o.status.code(), Some(0), "calls are served without Redis: {}", text(&o));
        assert_eq!(String::from_utf8_lossy(&o.stdout), "no redis\n");
    }

    // Redis comes back on its port: the nodes reconnect on their own, and sync resumes.
    assert!(redis.run(), "redis-server restarts");
    for node in &nodes {
        until("every node reconnected", || metric(node, CONNECTED) == Some(1.0));
    }
    switch(&nodes[2], "sleep_ms", "force_open");
    for node in &nodes[..2] {
        until("a force-open after the restart reaches the other nodes", || state(node, "sleep_ms") == "forced_open");
    }

    // A node that starts late reads the states in force from Redis, with no new transition: the forced `sleep_ms`,
    // and not the `echo` that was forced, then reset, before it started.
    let late = start(&config(&fake.addr, redis.port, "gw-late"), "sync-late");
    until("the late node connected", || metric(&late, CONNECTED) == Some(1.0));
    until("the late node holds the force-open in force", || state(&late, "sleep_ms") == "forced_open");
    assert_ne!(state(&late, "echo"), "forced_open", "a switch that was reset is not replayed");
    // Redis restarted empty: the nodes that hold the switch made before the outage published it again.
    until("the late node holds the switch made before Redis restarted", || {
        state(&late, "slow_progress") == "forced_open"
    });
}

#[test]
fn a_node_that_alone_lost_a_replica_does_not_eject_it_from_the_others() {
    let Some(redis) = Redis::start() else { return };
    let (fake, mut lost) = (Fake::start(None), Fake::start(None));
    // The same replica, `alpha#0`, as two servers: node `gw-cut`'s will die (its link is cut), `gw-fine`'s lives.
    let breaker = "[gateway.breaker]\nminimum_calls = 2\nopen = \"30s\"\n[gateway.retry]\nenabled = false\n\
                   [client]\nlifecycle_retries = 0\nconnect_timeout = \"1s\"\n";
    let cut = start(&config_with(&lost.addr, redis.port, "gw-cut", breaker), "poison-cut");
    let fine = start(&config_with(&fake.addr, redis.port, "gw-fine", breaker), "poison-fine");
    for node in [&cut, &fine] {
        until("both nodes connected to Redis", || metric(node, CONNECTED) == Some(1.0));
    }
    lost.stop();
    // Calls on the cut-off node fail until its breaker opens.
    until("the cut-off node opens its breaker", || {
        mcpstorm(&["call", "--http", &cut.mcp, "echo", r#"{"message": "x"}"#]);
        state(&cut, "echo") == "open"
    });
    let suspected = "mcpstorm_gateway_sync_events_total{event=\"suspected\"}";
    until("the other node hears of it and makes its breaker suspect", || metric(&fine, suspected) >= Some(1.0));
    // Uncorroborated (no failure of its own, no second node): probes decide, and they succeed.
    for i in 0..20 {
        let o = mcpstorm(&["call", "--http", &fine.mcp, "echo", &format!(r#"{{"message": "call {i}"}}"#)]);
        assert_eq!(o.status.code(), Some(0), "call {i} on the node that reaches the replica: {}", text(&o));
    }
    assert_eq!(state(&fine, "echo"), "closed");
    let followed = "mcpstorm_gateway_sync_events_total{event=\"followed\"}";
    assert_eq!(metric(&fine, followed), Some(0.0), "a lone remote open is never followed");
}
