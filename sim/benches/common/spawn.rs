//! Child processes the live benches measure against, each started on a free loopback port and read for the
//! address it printed. Shared by the benches.

// Each bench includes this module and uses its own subset of it.
#![allow(dead_code)]

use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// `mcpstorm serve-fake --listen 127.0.0.1:0 EXTRA...`, and the address it listens on.
pub async fn spawn_server_with(extra: &[&str]) -> Result<(Child, String), String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcpstorm"))
        .args(["serve-fake", "--listen", "127.0.0.1:0"])
        .args(extra)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start mcpstorm serve-fake: {e}"))?;
    let stdout = child.stdout.take().ok_or("serve-fake has no stdout pipe")?;
    let addr = line_after(BufReader::new(stdout), "listening on ", "serve-fake").await?;
    Ok((child, addr))
}

/// A gateway process and where it listens.
pub struct Node {
    pub child: Child,
    pub mcp: String,
    /// `host:port` of the admin listener.
    pub admin: String,
}

/// `mcpstorm gateway --config CONFIG` with an `[admin]` listener and the environment `env`.
pub async fn spawn_gateway_with_admin(config: &std::path::Path, env: &[(&str, &str)]) -> Result<Node, String> {
    let mut child = gateway_command(config)
        .envs(env.iter().copied())
        .spawn()
        .map_err(|e| format!("cannot start mcpstorm gateway: {e}"))?;
    let stderr = child.stderr.take().ok_or("the gateway has no stderr pipe")?;
    let mut lines = BufReader::new(stderr);
    let mcp = line_after(&mut lines, "mcpstorm gateway: serving MCP at ", "the gateway").await?;
    let admin = line_after(&mut lines, "mcpstorm gateway: admin API at http://", "the gateway").await?;
    drain(lines);
    let mcp = mcp.split_whitespace().next().unwrap_or_default().to_owned();
    let admin = admin.split('/').next().unwrap_or_default().to_owned();
    Ok(Node { child, mcp, admin })
}

/// `MCPSTORM_BENCH_GATEWAY_WORKERS=N` starts every gateway process with `--workers N`, to compare runtime layouts.
fn gateway_command(config: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mcpstorm"));
    command.arg("gateway");
    if let Ok(workers) = std::env::var("MCPSTORM_BENCH_GATEWAY_WORKERS") {
        command.arg("--workers").arg(workers);
    }
    command
        .arg("--config")
        .arg(config)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Keeps draining a child's stderr so that it never blocks on a full pipe.
fn drain(mut lines: impl AsyncBufRead + Unpin + Send + 'static) {
    tokio::spawn(async move {
        let mut line = String::new();
        while lines.read_line(&mut line).await.is_ok_and(|n| n > 0) {
            line.clear();
        }
    });
}

/// `mcpstorm gateway --config CONFIG` (its `[listen] http` on port 0), and the `/mcp` URL it serves.
pub async fn spawn_gateway(config: &std::path::Path) -> Result<(Child, String), String> {
    let mut child = gateway_command(config).spawn().map_err(|e| format!("cannot start mcpstorm gateway: {e}"))?;
    let url = serving_url(&mut child).await?;
    Ok((child, url))
}

/// The `/mcp` URL a starting gateway process prints on its stderr (piped), which is drained from then on.
pub async fn serving_url(child: &mut Child) -> Result<String, String> {
    let stderr = child.stderr.take().ok_or("the gateway has no stderr pipe")?;
    let mut lines = BufReader::new(stderr);
    let rest = line_after(&mut lines, "mcpstorm gateway: serving MCP at ", "the gateway").await?;
    drain(lines);
    Ok(rest.split_whitespace().next().unwrap_or_default().to_owned())
}

/// The rest of the first line that starts with `prefix` (within 30 s), skipping others.
async fn line_after(mut reader: impl AsyncBufRead + Unpin, prefix: &str, who: &str) -> Result<String, String> {
    let read = async {
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line).await {
                Ok(0) => return Err(format!("{who} exited before printing its address")),
                Ok(_) => {
                    if let Some(rest) = line.trim().strip_prefix(prefix) {
                        return Ok(rest.to_owned());
                    }
                }
                Err(e) => return Err(format!("reading {who}'s output: {e}")),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), read)
        .await
        .map_err(|_| format!("{who} printed no address within 30 s"))?
}
