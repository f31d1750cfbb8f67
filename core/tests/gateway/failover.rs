//! Failover for what was never sent: a replica whose address refuses connections costs no call of a tool without
//! annotations (not idempotent), leaves the rotation at its first refusal, and is readmitted by a background probe
//! once it answers again. Without failover (the naive gateway) the same replica fails its share of the calls.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpstorm_core::router::{FormulaSpec, MAX_PROBE_GAP, Router, RouterConfig, ServerEntry, StaticRegistry};
use mcpstorm_core::{CallError, Delivery, Event, Observer};
use mcpstorm_core::{CancelToken, ClientConfig, Connector, McpClient};
use mcpstorm_core::{DialFuture, Dialer, SeededRng, TokioClock, TransportError};
use mcpstorm_core::{Gateway, GatewayConfig, ResilienceConfig, ToolCall};
use mcpstorm_fake::pipe::PipeDialer;
use mcpstorm_fake::{FakeServer, FakeServerConfig};
use serde_json::json;

use super::fake;

/// `deposit`: side effects, no annotations, as most real tools are.
fn ledger() -> FakeServer {
    let config = FakeServerConfig::from_toml_str(
        r#"
name = "ledger"
[[tools]]
name = "deposit"
input_schema = { type = "object" }
reply = "deposited"
"#,
    )
    .expect("valid fake config");
    fake(config)
}

/// A replica that can be killed and restarted: while down, every dial is refused at once, as a port with no
/// process behind it is.
#[derive(Debug)]
struct Killable {
    pipe: PipeDialer,
    up: Arc<AtomicBool>,
}

impl Dialer for Killable {
    fn dial(&self) -> DialFuture<'_> {
        if self.up.load(Ordering::SeqCst) {
            return self.pipe.dial();
        }
        Box::pin(async { Err(TransportError::ConnectFailed("ledger-1: Connection refused (os error 111)".into())) })
    }

    fn describe(&self) -> String {
        "a killable ledger".into()
    }
}

#[derive(Debug)]
struct Replicas {
    live: FakeServer,
    killable: Arc<Killable>,
}

impl Connector for Replicas {
    fn connect(&self, _server: &str, endpoint: &str) -> Arc<McpClient> {
        let config = ClientConfig { lifecycle_retries: 0, ..ClientConfig::default() };
        let dialer: Arc<dyn Dialer> = match endpoint {
            "ledger-1" => self.killable.clone(),
            _ => Arc::new(PipeDialer(self.live.clone())),
        };
        Arc::new(McpClient::new(endpoint, dialer, config, SeededRng::new(0)))
    }
}

/// Ejections and readmissions as the observer sees them.
#[derive(Debug, Default)]
struct Ejections(Mutex<Vec<String>>);

impl Observer for Ejections {
    fn event(&self, event: &Event<'_>) {
        if let Event::Ejection { replica, ejected, .. } = event {
            let what = if *ejected { "ejected" } else { "readmitted" };
            self.0.lock().expect("not poisoned").push(format!("{what} {replica}"));
        }
    }
}

/// A round-robin gateway over `ledger-0` (always up) and `ledger-1` (down until `up` is set).
fn gateway(failover: bool) -> (Arc<Gateway>, Arc<AtomicBool>, Arc<Ejections>) {
    let up = Arc::new(AtomicBool::new(false));
    let connector =
        Replicas { live: ledger(), killable: Arc::new(Killable { pipe: PipeDialer(ledger()), up: up.clone() }) };
    let router = Router::new(
        RouterConfig::default(),
        FormulaSpec::RoundRobin.build(),
        SeededRng::new(3),
        tokio::time::Instant::now(),
    );
    let resilience = ResilienceConfig { failover, ..ResilienceConfig::protective() };
    let config = GatewayConfig { resilience, ..GatewayConfig::default() };
    let registry = Box::new(StaticRegistry::new(vec![
        ServerEntry::new("ledger", ["ledger-0", "ledger-1"]).with_tools(["deposit"]),
    ]));
    let seen = Arc::new(Ejections::default());
    let clock = Arc::new(TokioClock::new(0));
    let gw = Gateway::new(router, registry, Arc::new(connector), clock, config, SeededRng::new(11))
        .with_observer(seen.clone());
    (Arc::new(gw), up, seen)
}

/// (ok calls, attempts sent to ledger-1) over `n` sequential calls.
async fn deposits(gw: &Gateway, n: usize) -> (usize, usize) {
    let (mut ok, mut to_dead) = (0, 0);
    for _ in 0..n {
        let routed = gw.call(ToolCall::new("deposit", json!({}))).await;
        to_dead += routed.attempts().filter(|a| &*a.endpoint == "ledger-1").count();
        ok += usize::from(routed.outcome().is_ok_and(|r| !r.is_error));
    }
    (ok, to_dead)
}

#[tokio::test(start_paused = true)]
async fn a_refusing_replica_costs_no_call_of_a_tool_that_is_not_idempotent() {
    let (gw, _, seen) = gateway(true);
    let (ok, to_dead) = deposits(&gw, 40).await;
    assert_eq!(ok, 40, "every call served by the live replica");
    assert_eq!(to_dead, 1, "one refusal ejects the dead replica: no call is routed to it after that");
    assert_eq!(*seen.0.lock().unwrap(), ["ejected ledger-1"]);
    let ejected = gw.with_router(|r| r.ejected(tokio::time::Instant::now()));
    assert_eq!(ejected.iter().map(|e| e.replica.as_str()).collect::<Vec<_>>(), ["ledger-1"]);
}

#[tokio::test(start_paused = true)]
async fn without_failover_the_dead_replica_fails_its_share() {
    let (gw, _, seen) = gateway(false);
    let (ok, to_dead) = deposits(&gw, 40).await;
    assert!(ok < 40, "{ok} ok: the naive gateway has no failover");
    assert_eq!(40 - ok, to_dead, "each call routed to the dead replica failed");
    let routed = gw.call(ToolCall::new("deposit", json!({}))).await;
    let last = routed.attempts().last().expect("one attempt");
    if &*last.endpoint == "ledger-1" {
        let error = last.outcome.as_ref().expect_err("refused");
        assert_eq!(error.delivery(), Delivery::NeverSent);
        assert!(matches!(error, CallError::Transport(TransportError::ConnectFailed(_))), "{error}");
    }
    assert!(seen.0.lock().unwrap().is_empty(), "no ejection without failover");
}

#[tokio::test(start_paused = true)]
async fn a_probe_readmits_the_replica_soon_after_it_answers_again() {
    let (gw, up, seen) = gateway(true);
    let cancel = CancelToken::new();
    let background = tokio::spawn(gw.clone().run_background(cancel.clone()));
    let (ok, _) = deposits(&gw, 4).await;
    assert_eq!(ok, 4);
    // Down for 20 s: the probes back off, and keep it out of rotation.
    tokio::time::sleep(Duration::from_secs(20)).await;
    let (ok, to_dead) = deposits(&gw, 10).await;
    assert_eq!((ok, to_dead), (10, 0), "still ejected: no call goes to it");
    let restarted = tokio::time::Instant::now();
    up.store(true, Ordering::SeqCst);
    let readmitted = loop {
        if gw.with_router(|r| r.ejected(tokio::time::Instant::now()).is_empty()) {
            break tokio::time::Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let after = readmitted - restarted;
    assert!(after <= MAX_PROBE_GAP + Duration::from_millis(50), "readmitted {after:?} after the restart");
    let (ok, to_back) = deposits(&gw, 10).await;
    assert_eq!(ok, 10);
    assert_eq!(to_back, 5, "back in round-robin rotation");
    assert_eq!(*seen.0.lock().unwrap(), ["ejected ledger-1", "readmitted ledger-1"]);
    cancel.cancel("test over");
    background.await.expect("background task ends");
}
