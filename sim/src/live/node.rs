//! The gateway nodes of a live run (`[gateway] nodes`, or `--through-gateway`): each an `mcpstorm gateway` process
//! of this very binary, as an operator would deploy it, started with a config file written from the scenario:
//!
//! - `[[servers]]`: the scenario's servers, each replica at this node's relay to it (so a partition can cut one
//!   node's link, `from = "gateway-1"`), over NDJSON or Streamable HTTP as the scenario says;
//! - `[gateway]` and `[client]`: the scenario's own tables, as pasted into a gateway config (what was tuned is what
//!   runs); with `[gateway.sync]`, Redis is the run's Redis double behind this node's relay, and the node is named
//!   after its host;
//! - `[listen]`: loopback, with no bound on one agent session's calls in flight (a load host multiplexes its agents
//!   over one session per node, as the simulated nodes allow).
//!
//! Agent sessions are signed with one key drawn from the scenario's seed, shared by the nodes. The process's own
//! attempts are not the recorder's: a live run through nodes records what the agents saw.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rand::RngCore;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::oneshot;

use super::endpoint::Service;
use super::middle::usage::Usage;
use crate::scenario::ranges::MAX_CONCURRENCY;
use crate::scenario::tables::GatewayFile;
use crate::scenario::{ListenSpec, UpstreamSpec};
use crate::seed::Seed;

/// How long a node may take to serve after it is started: its servers' first listing is bounded by
/// `gateway::node::STARTUP_LISTING` (3 s), and the rest is the process starting.
pub const READY_WITHIN: Duration = Duration::from_secs(10);

/// Lines of a node's stderr kept, to say why it did not start.
const KEPT_LINES: usize = 20;

/// What the process prints once it serves (see `cli::gateway`), before `http://ADDR/mcp`.
const SERVING: &str = "serving MCP at http://";

/// The session key the nodes of a run share, hex, drawn from the scenario's seed.
pub fn session_key(seed: u64) -> String {
    let mut key = [0u8; mcpstorm_core::serve::MIN_KEY_BYTES];
    Seed::new(seed).fork("live gateway session key").rng().fill_bytes(&mut key);
    key.iter().map(|b| format!("{b:02x}")).collect()
}

/// The config file of node `name`: the scenario's `[gateway]` and `[client]` tables,
/// `servers` (each replica where this node reaches it), Redis at `redis` with `[gateway.sync]`, served on `listen`.
pub fn config(
    scenario: &crate::scenario::Scenario,
    name: &str,
    servers: Vec<UpstreamSpec>,
    redis: Option<SocketAddr>,
    listen: SocketAddr,
) -> GatewayFile {
    let mut gateway = scenario.gateway.clone();
    if let (Some(sync), Some(redis)) = (gateway.sync.as_mut(), redis) {
        sync.redis = format!("redis://{redis}");
        sync.node = Some(name.to_owned());
    }
    let listen = ListenSpec {
        http: listen.to_string(),
        max_calls_in_flight: usize::try_from(MAX_CONCURRENCY).unwrap_or(usize::MAX),
        ..ListenSpec::default()
    };
    GatewayFile {
        listen,
        servers,
        gateway,
        client: scenario.client.clone(),
        admin: None,
        history: None,
        auth: None,
        telemetry: None,
    }
}

/// One node's process. Killed when dropped.
#[derive(Debug)]
pub struct NodeProcess {
    name: String,
    exe: PathBuf,
    /// The config file (removed when dropped); after the first start it names the port the node serves on, so a
    /// restart serves where the relays point.
    config: PathBuf,
    key: String,
    addr: SocketAddr,
    child: Option<Child>,
    /// The newest lines of its stderr.
    lines: Arc<Mutex<VecDeque<String>>>,
    /// Its CPU and memory, measured from outside, when it is a run's middle (`--middle mcpstorm`).
    usage: Option<Usage>,
}

impl NodeProcess {
    /// Starts node `name` of `exe` with `file` (its `[listen] http` port 0: the process picks one) and waits until
    /// it serves, up to [`READY_WITHIN`]. The config is written to `dir`.
    pub async fn launch(exe: &Path, dir: &Path, name: &str, file: GatewayFile, key: String) -> io::Result<Self> {
        NodeProcess::launch_measured(exe, dir, name, file, key, None).await
    }

    /// [`NodeProcess::launch`], its process group counted in `usage` (each start's).
    pub async fn launch_measured(
        exe: &Path,
        dir: &Path,
        name: &str,
        mut file: GatewayFile,
        key: String,
        usage: Option<Usage>,
    ) -> io::Result<Self> {
        let config = dir.join(format!("mcpstorm-live-{}-{name}.toml", std::process::id()));
        write_config(&config, &file)?;
        let mut node = NodeProcess {
            name: name.to_owned(),
            exe: exe.to_owned(),
            config,
            key,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            child: None,
            lines: Arc::default(),
            usage,
        };
        let serving = node.spawn()?;
        let ready = tokio::time::timeout(READY_WITHIN, serving).await;
        let addr = match ready {
            Ok(Ok(addr)) => addr,
            Ok(Err(_)) => return Err(node.failed("exited before it served")),
            Err(_) => return Err(node.failed(&format!("did not serve within {} s", READY_WITHIN.as_secs()))),
        };
        node.addr = addr;
        file.listen.http = addr.to_string();
        write_config(&node.config, &file)?;
        Ok(node)
    }

    /// Where agents reach it (`/mcp`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Starts the process; the receiver gets the address it serves on once it says so.
    fn spawn(&mut self) -> io::Result<oneshot::Receiver<SocketAddr>> {
        let mut child = Command::new(&self.exe)
            .arg("gateway")
            .arg("--config")
            .arg(&self.config)
            .env(mcpstorm_core::serve::SESSION_KEY_ENV, &self.key)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            // A group of its own: what `usage` measures.
            .process_group(0)
            .spawn()?;
        if let (Some(usage), Some(pid)) = (&self.usage, child.id()) {
            usage.watch(pid);
        }
        let (tx, rx) = oneshot::channel();
        if let Some(stderr) = child.stderr.take() {
            let (lines, name) = (self.lines.clone(), self.name.clone());
            tokio::spawn(async move {
                let mut tx = Some(tx);
                let mut reader = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = reader.next_line().await {
                    if let Some(addr) = serving_addr(&line)
                        && let Some(tx) = tx.take()
                    {
                        let _ = tx.send(addr);
                    }
                    tracing::debug!(node = %name, "{line}");
                    let mut kept = lines.lock().unwrap_or_else(PoisonError::into_inner);
                    if kept.len() == KEPT_LINES {
                        kept.pop_front();
                    }
                    kept.push_back(line);
                }
            });
        }
        self.child = Some(child);
        Ok(rx)
    }

    /// Why it did not start, with what it last said.
    fn failed(&mut self, what: &str) -> io::Error {
        self.stop();
        let said: Vec<String> = self.lines.lock().unwrap_or_else(PoisonError::into_inner).iter().cloned().collect();
        io::Error::other(format!("gateway node {} ({}) {what}: {}", self.name, self.exe.display(), said.join(" | ")))
    }
}

/// The address in the process's "serving MCP at http://ADDR/mcp" line.
fn serving_addr(line: &str) -> Option<SocketAddr> {
    let (_, rest) = line.split_once(SERVING)?;
    rest.split_once("/mcp")?.0.parse().ok()
}

fn write_config(path: &Path, file: &GatewayFile) -> io::Result<()> {
    let text = toml::to_string(file).map_err(io::Error::other)?;
    std::fs::write(path, text)
}

impl Service for NodeProcess {
    /// A restart: a new process on the same port, not awaited (its callers' connections are refused until it
    /// serves, as with any process that restarts).
    fn start(&mut self) -> io::Result<SocketAddr> {
        self.spawn()?;
        Ok(self.addr)
    }

    /// A crash: the process is killed (SIGKILL), with whatever it had in flight.
    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Its CPU time is the run's own, not another process's (see `host_load`); a measured node's goes there
            // from its `usage`.
            match (&self.usage, child.id()) {
                (Some(usage), Some(_)) => usage.sample(),
                (None, Some(pid)) => super::host_load::record_child(pid),
                _ => {}
            }
            let _ = child.start_kill();
        }
    }

    fn is_up(&self) -> bool {
        self.child.is_some()
    }

    fn died(&mut self) -> Option<String> {
        let status = self.child.as_mut()?.try_wait().ok()??;
        self.child = None;
        let said: Vec<String> = self.lines.lock().unwrap_or_else(PoisonError::into_inner).iter().cloned().collect();
        Some(format!("gateway node {} exited ({status}): {}", self.name, said.join(" | ")))
    }
}

impl Drop for NodeProcess {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_file(&self.config);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_serving_line_gives_the_address() {
        let line = "mcpstorm gateway: serving MCP at http://127.0.0.1:40123/mcp (2 servers)";
        assert_eq!(serving_addr(line), Some("127.0.0.1:40123".parse().unwrap()));
        assert_eq!(serving_addr("mcpstorm gateway: admin API at http://127.0.0.1:1/admin/breakers"), None);
    }

    #[test]
    fn the_session_key_is_long_enough_and_the_seeds() {
        let key = session_key(7);
        assert_eq!(key, session_key(7));
        assert_ne!(key, session_key(8));
        assert!(mcpstorm_core::serve::SessionKey::parse(&key).is_ok());
    }
}
