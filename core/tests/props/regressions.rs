//! Minimised counter-examples the connection property found in the core (all fixed).

use std::time::Duration;

use mcpstorm_core::jsonrpc::Message;
use mcpstorm_core::mcp::method;
use mcpstorm_core::{CallError, CancelToken, LocalError, TransportError};
use mcpstorm_core::{CallOptions, Connection, ConnectionConfig, conn::Lane};
use mcpstorm_fake::doubles::peer::{self};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::paused_runtime;

/// One connection permit, a 64-byte pipe the peer never reads: call A's request blocks the writer; B queues in the
/// normal lane and gives up (its permit comes back, its message stays); C takes the permit, registers, and waits for
/// lane space. Returns C's task, started at `t0`.
async fn call_stuck_on_the_normal_lane(conn: &Connection) -> JoinHandle<(Result<Value, CallError>, Instant)> {
    let settle = || async {
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
    };
    let spawn = |cancel: Option<CancelToken>| {
        let conn = conn.clone();
        tokio::spawn(async move {
            let opts = CallOptions { cancel, ..CallOptions::default() };
            let r = conn.request("test/echo", Some(json!({"pad": "x".repeat(100)})), opts).await;
            (r, Instant::now())
        })
    };
    let (a, b) = (CancelToken::new(), CancelToken::new());
    let _a = spawn(Some(a.clone()));
    settle().await; // A is written: the writer is stuck flushing into the full pipe
    a.cancel("a");
    let _b = spawn(Some(b.clone()));
    settle().await; // B's request waits in the normal lane (capacity = max_in_flight = 1)
    b.cancel("b");
    settle().await; // B gave up; its message still fills the lane
    let c = spawn(None);
    settle().await;
    assert_eq!((conn.pending(), conn.stats().in_flight), (1, 1), "C registered and holds the permit");
    c
}

fn one_permit() -> ConnectionConfig {
    ConnectionConfig { max_in_flight: 1, call_deadline: Duration::from_secs(60), ..ConnectionConfig::default() }
}

#[test]
fn stalled_connection_fails_a_call_waiting_for_lane_space_at_once() {
    paused_runtime().block_on(async {
        let (conn, _peer) = peer::connect(one_permit(), 64);
        let c = call_stuck_on_the_normal_lane(&conn).await;
        // A ping on the priority lane times out (5 s), the stall probe goes unanswered (2 s): the stream is declared
        // dead at t0 + 7 s and every pending call must fail then with `Stalled`.
        let t0 = Instant::now();
        let ping = conn.request(method::PING, None, CallOptions { lane: Lane::Priority, ..CallOptions::default() });
        assert!(matches!(ping.await, Err(CallError::Local(LocalError::FirstResponseTimeout(_)))));
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert!(matches!(conn.closed(), Some(TransportError::Stalled(_))), "{:?}", conn.closed());
        let (result, at) = c.await.expect("task");
        // Before the fix: Err(Local(DeadlineExceeded)) at t0 + 60 s, the call's deadline.
        assert!(matches!(result, Err(CallError::Transport(TransportError::Stalled(_)))), "{result:?}");
        assert_eq!(at - t0, Duration::from_secs(7));
    });
}

#[test]
fn shutdown_fails_a_call_waiting_for_lane_space_at_once() {
    paused_runtime().block_on(async {
        let (conn, _peer) = peer::connect(one_permit(), 64);
        let c = call_stuck_on_the_normal_lane(&conn).await;
        let t0 = Instant::now();
        conn.shutdown();
        let (result, at) = c.await.expect("task");
        // Before the fix: Err(Local(DeadlineExceeded)) at t0 + 60 s.
        assert_eq!((result, at - t0), (Err(CallError::Transport(TransportError::Shutdown)), Duration::ZERO));
    });
}

#[test]
fn hang_up_fails_a_call_waiting_for_lane_space_with_the_connections_reason() {
    paused_runtime().block_on(async {
        let (conn, peer) = peer::connect(one_permit(), 64);
        let c = call_stuck_on_the_normal_lane(&conn).await;
        let t0 = Instant::now();
        peer.hang_up();
        let (result, at) = c.await.expect("task");
        assert_eq!(conn.closed(), Some(TransportError::Closed));
        // Before the fix: Err(Transport(Shutdown)) ("connection shut down locally"): the writer's exit closed the lane.
        assert_eq!((result, at - t0), (Err(CallError::Transport(TransportError::Closed)), Duration::ZERO));
    });
}

#[test]
fn writer_blocked_in_a_write_stops_at_shutdown_and_releases_the_guard() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use mcpstorm_core::conn::ConnectionParts;
    use mcpstorm_core::{NoopObserver, observe::ConnId};

    /// Stands in for what `ConnectionParts::guard` really holds, e.g. a stdio server's child process.
    struct Guard(Arc<AtomicBool>);
    impl Drop for Guard {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    paused_runtime().block_on(async {
        let released = Arc::new(AtomicBool::new(false));
        let (ours, _theirs) = tokio::io::duplex(64);
        let (read, write) = tokio::io::split(ours);
        let (sink, source) = mcpstorm_core::transport::line_transport(read, write, 1 << 20);
        let parts = ConnectionParts {
            id: ConnId(0),
            server: "peer".into(),
            config: ConnectionConfig::default(),
            observer: Arc::new(NoopObserver),
            global: None,
            on_notification: None,
            guard: Some(Box::new(Guard(released.clone()))),
        };
        let conn = Connection::start(sink, source, parts);
        // A request larger than the pipe: the writer blocks in its flush, and the peer never reads.
        let call = tokio::spawn({
            let conn = conn.clone();
            async move { conn.request("test/echo", Some(json!({"pad": "x".repeat(200)})), CallOptions::default()).await }
        });
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        conn.shutdown();
        assert_eq!(call.await.expect("task"), Err(CallError::Transport(TransportError::Shutdown)));
        drop(conn);
        tokio::time::sleep(Duration::from_secs(3600)).await;
        // Before the fix: still held an hour later; released only when the peer reads or closes its end.
        assert!(released.load(Ordering::SeqCst), "the connection's tasks still hold the guard");
    });
}

#[test]
fn progress_before_the_first_response_timeout_starts_the_idle_phase() {
    // With `stream_idle` shorter than `first_response`, progress at 0.5 s starts the idle phase and the call ends at
    // 1.5 s with `IdleTimeout`. Before the fix it ended with `FirstResponseTimeout(5s)` at 5 s, because the progress
    // time was only read when the first-response timer fired.
    paused_runtime().block_on(async {
        let cfg = ConnectionConfig {
            first_response: Duration::from_secs(5),
            stream_idle: Duration::from_secs(1),
            ..ConnectionConfig::default()
        };
        let (conn, mut peer) = peer::connect(cfg, 1 << 16);
        let t0 = Instant::now();
        let call = tokio::spawn({
            let conn = conn.clone();
            async move { (conn.request(method::TOOLS_CALL, Some(json!({})), CallOptions::default()).await, Instant::now()) }
        });
        let req = peer.request().await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let params = json!({"progressToken": req.id.as_number(), "progress": 1});
        peer.send(Message::notification(method::PROGRESS, Some(params))).await;
        let (result, at) = call.await.expect("task");
        assert_eq!(
            (result, at - t0),
            (Err(CallError::Local(LocalError::IdleTimeout(Duration::from_secs(1)))), Duration::from_millis(1500))
        );
    });
}
