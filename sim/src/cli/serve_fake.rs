use std::path::PathBuf;

use clap::Args;

use super::Failure;
use crate::fake::{FakeServerConfig, run_serve_fake};

#[derive(Debug, Args)]
pub struct ServeFakeArgs {
    /// Fake server configuration (TOML). Without it, the built-in server (`sleep_ms`, `echo`, `slow_progress`).
    pub config: Option<PathBuf>,
    /// Address to listen on; port 0 picks a free port, printed as `listening on <addr>`.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: String,
}

pub async fn run(args: ServeFakeArgs) -> Result<(), Failure> {
    let config = match &args.config {
        None => FakeServerConfig::builtin(),
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Failure::BadInput(format!("cannot read {}: {e}", path.display())))?;
            FakeServerConfig::from_toml_str(&text).map_err(|e| Failure::BadInput(format!("{}: {e}", path.display())))?
        }
    };
    run_serve_fake(config, &args.listen).await.map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidInput => Failure::BadInput(e.to_string()),
        _ => Failure::Failed(format!("serve-fake on {}: {e}", args.listen)),
    })
}
