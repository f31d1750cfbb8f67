//! The core, unchanged, inside turmoil's simulated network against the fake server: the failure stories that need
//! a network to tell (crash, partition, a stream that stalls mid-call).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpstorm_core::CallOptions;
use mcpstorm_core::{CallError, LocalError, TransportError};
use mcpstorm_core::{ClientConfig, McpClient};
use mcpstorm_fake::FakeServer;
use mcpstorm_sim::world::{SERVER_PORT, TurmoilDialer, TurmoilListener};
use serde_json::json;
use tokio::time::Instant;

fn sim<'a>() -> turmoil::Sim<'a> {
    turmoil::Builder::new().rng_seed(7).simulation_duration(Duration::from_secs(120)).build()
}

fn serve(sim: &mut turmoil::Sim<'_>, server: FakeServer) {
    sim.host("srv", move || {
        let server = server.clone();
        async move {
            let listener = turmoil::net::TcpListener::bind(("0.0.0.0", SERVER_PORT)).await?;
            server.serve(TurmoilListener(listener)).await;
            Ok(())
        }
    });
}

fn client(first_response: Duration, stream_idle: Duration) -> Arc<McpClient> {
    let mut config = ClientConfig { lifecycle_retries: 0, ..ClientConfig::default() };
    config.connection.first_response = first_response;
    config.connection.stream_idle = stream_idle;
    config.connection.stall_probe = Duration::from_millis(500);
    config.connect_timeout = Duration::from_secs(2);
    Arc::new(McpClient::new(
        "srv",
        Arc::new(TurmoilDialer { host: "srv".into(), port: SERVER_PORT }),
        config,
        mcpstorm_core::SeededRng::new(0),
    ))
}

/// Runs the sim step by step, calling `at(now)` between steps, until the clients finish.
fn run_with(sim: &mut turmoil::Sim<'_>, mut at: impl FnMut(&mut turmoil::Sim<'_>, Duration)) {
    loop {
        let now = sim.elapsed();
        at(sim, now);
        if sim.step().expect("simulation step") {
            return;
        }
    }
}

#[test]
fn crash_mid_call_fails_pending_calls_without_waiting_for_their_timeouts() {
    let mut sim = sim();
    serve(&mut sim, FakeServer::builtin());
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let out = outcomes.clone();
    sim.client("agent", async move {
        let c = client(Duration::from_secs(30), Duration::from_secs(120));
        c.list_tools().await?;
        let calls: Vec<_> = (0..5)
            .map(|_| {
                let c = c.clone();
                tokio::spawn(async move {
                    let r = c.call_tool("sleep_ms", json!({"ms": 20_000}), CallOptions::default()).await;
                    (r, turmoil::sim_elapsed().unwrap_or_default())
                })
            })
            .collect();
        for call in calls {
            let outcome = call.await?;
            out.lock().unwrap().push(outcome);
        }
        Ok(())
    });
    let mut crashed = false;
    run_with(&mut sim, |sim, now| {
        if !crashed && now >= Duration::from_secs(1) {
            sim.crash("srv");
            crashed = true;
        }
    });
    let outcomes = outcomes.lock().unwrap();
    assert_eq!(outcomes.len(), 5);
    for (result, at) in outcomes.iter() {
        assert!(matches!(result, Err(CallError::Transport(_))), "{result:?}");
        // At the crash (turmoil resets the peer's streams), not at the 30 s first-response timeout nor the 20 s sleep.
        assert!(*at < Duration::from_millis(1100), "failed at {at:?}");
    }
}

#[test]
fn partition_times_calls_out_and_the_connection_is_rebuilt_after_repair() {
    let mut sim = sim();
    serve(&mut sim, FakeServer::builtin());
    let log = Arc::new(Mutex::new(Vec::new()));
    let out = log.clone();
    sim.client("agent", async move {
        let c = client(Duration::from_secs(1), Duration::from_secs(120));
        c.list_tools().await?;
        let first_conn = c.session().await?.conn.id();
        // Every 500 ms, one call; the partition covers 3 s to 8 s.
        for _ in 0..24 {
            let started = Instant::now();
            let r = c.call_tool("echo", json!({"message": "x"}), CallOptions::default()).await;
            let conn = c.session().await.ok().map(|s| s.conn.id());
            out.lock().unwrap().push((turmoil::sim_elapsed().unwrap_or_default(), r.map(|_| ()), conn, started));
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        assert!(first_conn.0 < u64::MAX);
        Ok(())
    });
    let (mut cut, mut healed) = (false, false);
    run_with(&mut sim, |sim, now| {
        if !cut && now >= Duration::from_secs(3) {
            sim.partition("agent", "srv");
            cut = true;
        }
        if !healed && now >= Duration::from_secs(8) {
            sim.repair("agent", "srv");
            healed = true;
        }
    });
    let log = log.lock().unwrap();
    let during: Vec<_> =
        log.iter().filter(|(t, ..)| *t > Duration::from_secs(3) && *t < Duration::from_secs(8)).collect();
    assert!(!during.is_empty());
    assert!(during.iter().all(|(_, r, ..)| r.is_err()), "calls during the partition must fail: {during:?}");
    // The first failure is the call's own first-response timeout; the stream is then declared dead and reconnects are
    // refused at once while the partition lasts.
    assert!(during.iter().any(|(_, r, ..)| matches!(r, Err(CallError::Local(LocalError::FirstResponseTimeout(_))))));
    assert!(during.iter().any(|(_, r, ..)| matches!(r, Err(CallError::Transport(TransportError::ConnectFailed(_))))));
    let after: Vec<_> = log.iter().filter(|(t, ..)| *t > Duration::from_secs(9)).collect();
    assert!(
        !after.is_empty() && after.iter().all(|(_, r, ..)| r.is_ok()),
        "calls after repair must succeed: {after:?}"
    );
    let before_conn = log.iter().find(|(t, ..)| *t < Duration::from_secs(3)).and_then(|e| e.2);
    let after_conn = after.last().and_then(|e| e.2);
    assert_ne!(before_conn, after_conn, "the connection was rebuilt");
}

#[test]
fn a_stream_that_stalls_mid_call_is_caught_by_the_idle_timeout() {
    let mut sim = sim();
    serve(&mut sim, FakeServer::builtin());
    let outcome = Arc::new(Mutex::new(None));
    let out = outcome.clone();
    sim.client("agent", async move {
        let c = client(Duration::from_secs(5), Duration::from_secs(2));
        c.list_tools().await?;
        let (tx, mut progress) = tokio::sync::mpsc::channel(64);
        let opts = CallOptions { progress: Some(tx), ..CallOptions::default() };
        let started = Instant::now();
        // 40 steps of 250 ms: progress every 250 ms for 10 s, far past the 5 s first-response timeout.
        let call = tokio::spawn({
            let c = c.clone();
            async move { c.call_tool("slow_progress", json!({"steps": 40, "step_ms": 250}), opts).await }
        });
        let mut events = 0;
        while progress.recv().await.is_some() {
            events += 1;
        }
        let result = call.await?;
        *out.lock().unwrap() = Some((result, started.elapsed(), events));
        Ok(())
    });
    let mut cut = false;
    run_with(&mut sim, |sim, now| {
        // At 6 s every segment between them starts to vanish: progress stops arriving mid-call.
        if !cut && now >= Duration::from_secs(6) {
            sim.partition("agent", "srv");
            cut = true;
        }
    });
    let (result, took, events) = outcome.lock().unwrap().take().expect("the call finished");
    assert_eq!(result, Err(CallError::Local(LocalError::IdleTimeout(Duration::from_secs(2)))));
    assert!(events >= 15, "progress flowed before the stall ({events} events)");
    // Last progress just before 6 s, then 2 s of silence.
    assert!(took > Duration::from_secs(7) && took < Duration::from_secs(9), "{took:?}");
}

#[test]
fn sim_clock_reads_the_simulated_epoch_plus_the_hosts_offset() {
    use mcpstorm_core::Clock;
    use mcpstorm_sim::world::{EPOCH_SECS, SimClock};

    let mut sim = turmoil::Builder::new()
        .epoch(std::time::UNIX_EPOCH + Duration::from_secs(EPOCH_SECS))
        .simulation_duration(Duration::from_secs(600))
        .build();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let out = seen.clone();
    sim.client("gateway", async move {
        let ahead = SimClock::new(180_000);
        let exact = SimClock::default();
        out.lock().unwrap().push((exact.wall_ms(), ahead.wall_ms()));
        tokio::time::sleep(Duration::from_secs(10)).await;
        out.lock().unwrap().push((exact.wall_ms(), ahead.wall_ms()));
        Ok(())
    });
    sim.run().expect("simulation");
    let seen = seen.lock().unwrap();
    let epoch_ms = EPOCH_SECS * 1000;
    // Wall time follows simulated time, not the machine's clock; the offset holds throughout.
    assert!(seen[0].0 >= epoch_ms && seen[0].0 < epoch_ms + 100, "{seen:?}");
    assert_eq!(seen[1].0 - seen[0].0, 10_000);
    assert_eq!(seen[0].1 - seen[0].0, 180_000);
    assert_eq!(seen[1].1 - seen[1].0, 180_000);
}
