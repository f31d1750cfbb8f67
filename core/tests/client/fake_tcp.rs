//! The core against the fake server over real loopback TCP: the connection failure stories.

use std::sync::Arc;
use std::time::Duration;

use mcpstorm_core::CallOptions;
use mcpstorm_core::TcpDialer;
use mcpstorm_core::{CallError, LocalError, TransportError};
use mcpstorm_core::{ClientConfig, McpClient};
use mcpstorm_fake::FakeServer;
use serde_json::json;
use tokio::task::JoinHandle;
use tokio::time::Instant;

async fn start(server: &FakeServer) -> (String, JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
    let addr = listener.local_addr().expect("bound address").to_string();
    let server = server.clone();
    (addr, tokio::spawn(async move { server.serve(listener).await }))
}

fn client(addr: &str, first_response: Duration) -> Arc<McpClient> {
    let mut config = ClientConfig { lifecycle_retries: 0, ..ClientConfig::default() };
    config.connection.first_response = first_response;
    config.connection.stall_probe = Duration::from_millis(300);
    Arc::new(McpClient::new(
        "fake",
        Arc::new(TcpDialer { addr: addr.to_owned() }),
        config,
        mcpstorm_core::SeededRng::new(0),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_dying_mid_call_fails_pending_calls_at_once() {
    let server = FakeServer::builtin();
    let (addr, serving) = start(&server).await;
    let c = client(&addr, Duration::from_secs(30));
    c.list_tools().await.unwrap();
    let calls: Vec<_> = (0..20)
        .map(|_| {
            let c = c.clone();
            tokio::spawn(async move { c.call_tool("sleep_ms", json!({"ms": 20_000}), CallOptions::default()).await })
        })
        .collect();
    while server.stats().in_progress < 20 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let killed_at = Instant::now();
    serving.abort();
    for call in calls {
        let err = call.await.unwrap().unwrap_err();
        assert_eq!(err, CallError::Transport(TransportError::Closed));
    }
    // At the hang-up, not at the 30 s first-response timeout nor the 20 s sleep.
    let took = killed_at.elapsed();
    assert!(took < Duration::from_secs(2), "pending calls failed after {took:?}");
    // With the server gone, reconnecting is refused cleanly.
    let err = c.call_tool("echo", json!({"message": "x"}), CallOptions::default()).await.unwrap_err();
    assert!(matches!(err, CallError::Transport(TransportError::ConnectFailed(_))), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_that_stops_answering_times_out_in_phase_and_the_connection_is_rebuilt() {
    let server = FakeServer::builtin();
    let (addr, _serving) = start(&server).await;
    let c = client(&addr, Duration::from_millis(500));
    c.list_tools().await.unwrap();
    let first_conn = c.session().await.unwrap().conn.clone();

    server.control().set_hung(true);
    let started = Instant::now();
    let err = c.call_tool("echo", json!({"message": "x"}), CallOptions::default()).await.unwrap_err();
    assert_eq!(err, CallError::Local(LocalError::FirstResponseTimeout(Duration::from_millis(500))));
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(500) && took < Duration::from_secs(2), "{took:?}");
    // The silent stream fails its ping probe and is closed...
    let deadline = Instant::now() + Duration::from_secs(5);
    while first_conn.is_open() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(matches!(first_conn.closed(), Some(TransportError::Stalled(_))), "{:?}", first_conn.closed());

    // ...and once the server answers again, the next call runs on a new connection.
    server.control().set_hung(false);
    let r = c.call_tool("echo", json!({"message": "back"}), CallOptions::default()).await.unwrap();
    assert_eq!(r.joined_text(), "back");
    let second_conn = c.session().await.unwrap().conn;
    assert_ne!(second_conn.id(), first_conn.id());
    assert!(server.stats().connections_total >= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn global_in_flight_limit_is_shared_and_every_permit_comes_back() {
    let server = FakeServer::builtin();
    let (addr, _serving) = start(&server).await;
    let limit = mcpstorm_core::resilience::InFlightLimit::new(8);
    let a = Arc::new(
        McpClient::new(
            "a",
            Arc::new(TcpDialer { addr: addr.clone() }),
            ClientConfig::default(),
            mcpstorm_core::SeededRng::new(0),
        )
        .with_global_limit(limit.clone()),
    );
    let b = Arc::new(
        McpClient::new("b", Arc::new(TcpDialer { addr }), ClientConfig::default(), mcpstorm_core::SeededRng::new(0))
            .with_global_limit(limit.clone()),
    );
    a.list_tools().await.unwrap();
    b.list_tools().await.unwrap();
    let calls: Vec<_> = (0..40)
        .map(|i| {
            let c = if i % 2 == 0 { a.clone() } else { b.clone() };
            tokio::spawn(async move { c.call_tool("sleep_ms", json!({"ms": 50}), CallOptions::default()).await })
        })
        .collect();
    let mut peak = 0;
    while server.stats().completed < 40 {
        peak = peak.max(server.stats().in_progress);
        assert!(limit.in_flight() <= 8);
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    for call in calls {
        call.await.unwrap().unwrap();
    }
    assert!(peak <= 8, "server saw {peak} concurrent calls through a limit of 8");
    assert_eq!(limit.in_flight(), 0);
}
