use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

use super::Failure;
use super::out::{self, outln};
use mcpstorm_fake::{FakeServerConfig, Transport, live_server};

#[derive(Debug, Args)]
#[command(after_help = "Runs until killed. Exit codes: 1 when a valid address cannot be bound; 2 for bad input (the \
config file, an address that does not parse or resolve).")]
pub struct ServeFakeArgs {
    /// Fake server configuration (TOML). Without it, the built-in server (`sleep_ms`, `echo`, `slow_progress`).
    pub config: Option<PathBuf>,
    /// Address to listen on; port 0 picks a free port, printed as `listening on <addr>`. Loopback by default; any
    /// other address (e.g. 0.0.0.0:8080) serves everyone who can reach it, with a warning on stderr.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: String,
    /// The wire, overriding the config's `transport`: `ndjson` (newline-delimited JSON-RPC) or `http` (MCP
    /// Streamable HTTP, both revisions; every path is the MCP endpoint, e.g. `http://<addr>/mcp`).
    #[arg(long, value_parser = ["ndjson", "http"])]
    pub transport: Option<String>,
}

/// Serves until killed. Exit 2 for a bad config or an address that does not parse or resolve; exit 1 only when a
/// valid address cannot be bound (in use, not ours, no permission). Once bound, prints exactly one line,
/// `listening on <addr>`, and flushes it, so a script can read the port chosen for `127.0.0.1:0`.
pub async fn run(args: ServeFakeArgs) -> Result<(), Failure> {
    let config = match &args.config {
        None => FakeServerConfig::builtin(),
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Failure::BadInput(format!("cannot read {}: {e}", path.display())))?;
            FakeServerConfig::from_toml_str(&text).map_err(|e| Failure::BadInput(format!("{}: {e}", path.display())))?
        }
    };
    let config = match args.transport.as_deref() {
        Some("http") => FakeServerConfig { transport: Transport::Http, ..config },
        Some(_) => FakeServerConfig { transport: Transport::Ndjson, ..config },
        None => config,
    };
    let origin = args.config.as_ref().map_or_else(|| "the built-in config".to_owned(), |p| p.display().to_string());
    let server = live_server(config).map_err(|e| Failure::BadInput(format!("{origin}: {e}")))?;
    let addrs = resolve(&args.listen).await?;
    // A deep accept queue: a benchmark's first wave opens a connection per call in flight at once.
    let listener = mcpstorm_core::serve::bind_listener(&addrs[..])
        .await
        .map_err(|e| Failure::Failed(format!("serve-fake cannot listen on {}: {e}", args.listen)))?;
    let addr = listener.local_addr().map_err(|e| Failure::Failed(format!("serve-fake on {}: {e}", args.listen)))?;
    // Before the address line, so that whoever reads that line has the warning already.
    if !addr.ip().is_loopback() {
        out::errln!(
            "mcpstorm: warning: serve-fake listens on {addr}, which is not loopback: anyone who can reach it can call \
             the fake's tools"
        );
    }
    outln!("listening on {addr}")?;
    out::flush()?;
    server.serve(listener).await;
    Ok(())
}

/// `--listen` as socket addresses. Resolving first tells bad input (`not-an-addr`, `999.1.1.1:0`) from a failure to
/// bind a good address, which binding a string cannot: both come back as I/O errors.
async fn resolve(listen: &str) -> Result<Vec<SocketAddr>, Failure> {
    let bad = |why: String| Failure::BadInput(format!("--listen {listen:?} is not an address to listen on: {why}"));
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host(listen).await.map_err(|e| bad(e.to_string()))?.collect();
    if addrs.is_empty() {
        return Err(bad("it resolves to no address".into()));
    }
    Ok(addrs)
}
