//! The clients of the baseline (`baseline.rs`), both written elsewhere: rmcp's (Rust, Streamable HTTP over reqwest)
//! and the Python SDK's (`tests/peers/py_baseline_client.py`), and what a workload's calls came to.

use std::process::Stdio;
use std::time::Duration;

use futures_util::future::join_all;
use mcpstorm_tests::real_servers::repo_root;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, ChildStdout, Command};
use tokio::time::Instant;

/// What a workload's calls came to: the latency of each ok call, and each error as the client reported it; from the
/// Python loop also each call's span, to place a fault on.
#[derive(Debug, Default)]
pub struct Outcome {
    pub ok_ms: Vec<f64>,
    pub errors: Vec<String>,
    pub spans: Vec<Span>,
}

/// One call on the Python loop's time line: ms since the loop began, and its error if it failed.
#[derive(Debug, Clone)]
pub struct Span {
    pub start_ms: f64,
    pub end_ms: f64,
    pub error: Option<String>,
}

impl Outcome {
    pub fn ok(&self) -> usize {
        self.ok_ms.len()
    }

    /// The `q` quantile of the ok calls' latencies (nearest rank), in ms; 0 without ok calls.
    pub fn quantile_ms(&self, q: f64) -> f64 {
        let mut sorted = self.ok_ms.clone();
        sorted.sort_by(f64::total_cmp);
        let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len().max(1));
        sorted.get(rank - 1).copied().unwrap_or(0.0)
    }

    fn record(&mut self, started: Instant, outcome: Result<(), String>) {
        match outcome {
            Ok(()) => self.ok_ms.push(started.elapsed().as_secs_f64() * 1000.0),
            Err(e) => self.errors.push(e),
        }
    }

    pub fn merge(&mut self, other: Outcome) {
        self.ok_ms.extend(other.ok_ms);
        self.errors.extend(other.errors);
    }
}

type Session = RunningService<RoleClient, ()>;

/// An rmcp client session at `url`. rmcp keeps at most 16 ordinary POSTs in progress by default (a POST stops
/// counting once its answer opens an SSE stream); `in_flight` raises that so a burst really is in flight at once,
/// whichever way the middle frames its answers.
pub async fn rmcp_session(url: &str, in_flight: usize) -> Session {
    let config = StreamableHttpClientTransportConfig::with_uri(url).max_concurrent_requests(in_flight);
    let transport = StreamableHttpClientTransport::from_config(config);
    ().serve(transport).await.unwrap_or_else(|e| panic!("rmcp could not connect to {url}: {e}"))
}

async fn rmcp_call(session: &Session, tool: &'static str, arguments: &Value) -> Result<(), String> {
    let arguments = arguments.as_object().cloned().unwrap_or_default();
    let result = session
        .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
        .await
        .map_err(|e| e.to_string())?;
    if result.is_error == Some(true) {
        return Err(format!("tool error: {:?}", result.content));
    }
    Ok(())
}

/// One rmcp session sending `calls` calls at once (`join_all`), as an orchestrator fanning out tool calls does.
pub async fn rmcp_burst(url: &str, tool: &'static str, arguments: Value, calls: usize) -> Outcome {
    let session = rmcp_session(url, calls).await;
    let results = join_all((0..calls).map(|_| async {
        let started = Instant::now();
        (started, rmcp_call(&session, tool, &arguments).await)
    }))
    .await;
    let mut outcome = Outcome::default();
    for (started, result) in results {
        outcome.record(started, result);
    }
    let _ = session.cancel().await;
    outcome
}

/// How long a closed loop runs.
#[derive(Debug, Clone, Copy)]
pub enum Bound {
    /// Each session makes this many calls.
    Calls(usize),
    /// Each session calls back to back for this long; only the calls that end within it count.
    Time(Duration),
}

/// `sessions` rmcp sessions, each calling `tool` back to back (a closed loop, no think time) within `bound`.
pub async fn rmcp_loop(url: &str, tool: &'static str, arguments: Value, sessions: usize, bound: Bound) -> Outcome {
    let clients = join_all((0..sessions).map(|_| rmcp_session(url, 1))).await;
    let started = Instant::now();
    let outcomes = join_all(clients.iter().map(|session| {
        let arguments = &arguments;
        async move {
            let mut outcome = Outcome::default();
            for i in 0.. {
                let call_started = Instant::now();
                let result = match bound {
                    Bound::Calls(calls) if i >= calls => break,
                    Bound::Calls(_) => rmcp_call(session, tool, arguments).await,
                    Bound::Time(window) => {
                        let Some(left) = window.checked_sub(started.elapsed()) else { break };
                        match tokio::time::timeout(left, rmcp_call(session, tool, arguments)).await {
                            Ok(result) => result,
                            Err(_) => break,
                        }
                    }
                };
                outcome.record(call_started, result);
            }
            outcome
        }
    }))
    .await;
    let mut all = Outcome::default();
    for outcome in outcomes {
        all.merge(outcome);
    }
    for session in clients {
        let _ = session.cancel().await;
    }
    all
}

/// The Python SDK's client as `sessions` closed-loop agents of `calls` calls each, started and connected: the loop
/// runs from the moment this returns. Killed on drop.
pub struct PythonLoop {
    child: Child,
    stdout: BufReader<ChildStdout>,
    /// What it wrote on stderr, read as it comes (a full pipe would stall it).
    stderr: tokio::task::JoinHandle<String>,
    /// When the loop began (its `ready` line was read): the origin of its spans, a few ms late at most.
    began: Instant,
}

impl PythonLoop {
    pub async fn start(python: &str, url: &str, tool: &str, arguments: Value, sessions: usize, calls: usize) -> Self {
        let mut child = Command::new(python)
            .arg(repo_root().join("tests/peers/py_baseline_client.py"))
            .args([url, tool, &arguments.to_string(), &sessions.to_string(), &calls.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start py_baseline_client.py");
        let mut stdout = BufReader::new(child.stdout.take().expect("a stdout pipe"));
        let mut pipe = child.stderr.take().expect("a stderr pipe");
        let stderr = tokio::spawn(async move {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text).await;
            text
        });
        let mut line = String::new();
        let read = tokio::time::timeout(Duration::from_secs(60), stdout.read_line(&mut line)).await;
        assert!(
            matches!(read, Ok(Ok(n)) if n > 0) && line.trim() == "ready",
            "py_baseline_client.py did not connect to {url}: {read:?} {line:?}"
        );
        PythonLoop { child, stdout, stderr, began: Instant::now() }
    }

    /// Now on the loop's time line, in ms.
    pub fn now_ms(&self) -> f64 {
        self.began.elapsed().as_secs_f64() * 1000.0
    }

    /// Waits (at most 5 minutes) for the loop to end, and reads what it printed.
    pub async fn finish(mut self) -> Outcome {
        let mut text = String::new();
        let read = tokio::time::timeout(Duration::from_secs(300), self.stdout.read_to_string(&mut text)).await;
        assert!(matches!(read, Ok(Ok(_))), "py_baseline_client.py did not finish: {read:?}");
        let status = self.child.wait().await.expect("wait for py_baseline_client.py");
        let stderr = self.stderr.await.unwrap_or_default();
        let printed: Value = serde_json::from_str(text.lines().next().unwrap_or_default())
            .unwrap_or_else(|e| panic!("py_baseline_client.py ({status}) printed no counts ({e}): {text}\n{stderr}"));
        // The counts came before the clients closed: a client that failed to close has not failed a call.
        if !status.success() {
            eprintln!("py_baseline_client.py: {status} after printing its counts:\n{stderr}");
        }
        let list = |key: &str| printed[key].as_array().cloned().unwrap_or_default();
        let span = |call: &Value, error: Option<String>| Span {
            start_ms: call[0].as_f64().unwrap_or_default(),
            end_ms: call[1].as_f64().unwrap_or_default(),
            error,
        };
        let mut outcome = Outcome::default();
        for call in list("ok") {
            let span = span(&call, None);
            outcome.ok_ms.push(span.end_ms - span.start_ms);
            outcome.spans.push(span);
        }
        for call in list("errors") {
            let error = call[2].as_str().unwrap_or_default().to_owned();
            outcome.errors.push(error.clone());
            outcome.spans.push(span(&call, Some(error)));
        }
        outcome
    }
}
