//! The gateway end to end against fake MCP servers on in-memory pipes, in paused time: routing by formula and by the
//! capability matrix, a clear error when no replica qualifies, the router's in-flight accounting on every way a call
//! can end, active health checks taking a dead replica out of rotation through the gateway's own clients (`routing`);
//! and the protected path: breakers, retries, budgets, bulkheads and degraded results (`protected`).

mod failover;
mod protected;
mod routing;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mcpstorm_core::Connector;
use mcpstorm_core::TransportError;
use mcpstorm_core::{ClientConfig, McpClient};
use mcpstorm_core::{DialFuture, Dialer, SeededRng};
use mcpstorm_fake::pipe::PipeDialer;
use mcpstorm_fake::{FakeServer, FakeServerConfig};

/// Endpoint name → its fake server, reached through in-memory pipes. An endpoint without a server refuses every
/// dial, as a host with nothing listening does.
#[derive(Debug)]
struct Pipes(BTreeMap<String, FakeServer>);

impl Connector for Pipes {
    fn connect(&self, _server: &str, endpoint: &str) -> Arc<McpClient> {
        Arc::new(pipe_client(&self.0, endpoint))
    }
}

/// [`Pipes`] whose clients share one in-flight limit, as one gateway process's clients may.
#[derive(Debug)]
struct SharedPipes(BTreeMap<String, FakeServer>, mcpstorm_core::resilience::InFlightLimit);

impl Connector for SharedPipes {
    fn connect(&self, _server: &str, endpoint: &str) -> Arc<McpClient> {
        Arc::new(pipe_client(&self.0, endpoint).with_global_limit(self.1.clone()))
    }
}

fn pipe_client(fakes: &BTreeMap<String, FakeServer>, endpoint: &str) -> McpClient {
    let mut config = ClientConfig { lifecycle_retries: 0, ..ClientConfig::default() };
    config.connect_timeout = Duration::from_millis(300);
    let dialer: Arc<dyn Dialer> = match fakes.get(endpoint) {
        Some(server) => Arc::new(PipeDialer(server.clone())),
        None => Arc::new(Refused(endpoint.to_owned())),
    };
    McpClient::new(endpoint, dialer, config, SeededRng::new(0))
}

/// A dialer to an endpoint where nothing listens.
#[derive(Debug)]
struct Refused(String);

impl Dialer for Refused {
    fn dial(&self) -> DialFuture<'_> {
        Box::pin(async move { Err(TransportError::ConnectFailed(format!("{}: connection refused", self.0))) })
    }

    fn describe(&self) -> String {
        format!("nothing at {}", self.0)
    }
}

fn fake(config: FakeServerConfig) -> FakeServer {
    FakeServer::new(config).expect("valid fake config")
}

/// Lets every task run until all of them wait on time or on each other (paused time only moves on then): what was
/// sent has arrived, and what could be answered has been.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}
