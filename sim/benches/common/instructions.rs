//! The gateway's instructions per proxied call, counted by callgrind (valgrind's instruction counter) when valgrind
//! is installed: a gateway process started under callgrind with the bench's config, warmed by a first run of the
//! load child (common/alloc_count.rs), its counters zeroed, driven by a second run, and its counters dumped.
//!
//! A count does not move with the host's load: four counts of the same build agree within 0.4%, where a CPU time per
//! call moves by a third between runs on this shared 2-core host. So it tells a change to the gateway's own work
//! from the host's weather, which the CPU rows cannot for a change of a few percent. It counts user-space
//! instructions only: not the kernel's TCP work, and not the cache misses and stalls that make most of a call's
//! cost with one call in flight (the count is about the same there as at 64 in flight).

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::process::Command;

use super::{alloc_count, spawn};

/// valgrind: `MCPSTORM_VALGRIND`, else `valgrind` on the `PATH`.
pub fn find_valgrind() -> Option<PathBuf> {
    let program: PathBuf = std::env::var_os("MCPSTORM_VALGRIND").map_or_else(|| "valgrind".into(), Into::into);
    let runs = std::process::Command::new(&program).arg("--version").output().is_ok_and(|o| o.status.success());
    runs.then_some(program)
}

/// Instructions per proxied call of a gateway with the config at `config` (its `[listen] http` on port 0), over
/// `calls` echo calls with `in_flight` at a time, and the calls that failed. Callgrind's files go in `dir`.
pub async fn per_call(
    valgrind: &Path,
    config: &Path,
    dir: &Path,
    calls: usize,
    in_flight: usize,
) -> Result<(f64, usize), String> {
    let out = dir.join("callgrind.out");
    let mut child = Command::new(valgrind)
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(env!("CARGO_BIN_EXE_mcpstorm"))
        .arg("gateway")
        .arg("--config")
        .arg(config)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start the gateway under {}: {e}", valgrind.display()))?;
    let pid = child.id().ok_or("the gateway under callgrind has no pid")?.to_string();
    let url = spawn::serving_url(&mut child).await?;
    alloc_count::run_load_child(&url, 10 * in_flight, in_flight).await?;
    control(valgrind, "--zero", &pid).await?;
    let errors = alloc_count::run_load_child(&url, calls, in_flight).await?;
    control(valgrind, "--dump", &pid).await?;
    let total = dumped_total(&dir.join("callgrind.out.1")).await?;
    drop(child);
    Ok((total as f64 / calls as f64, errors))
}

/// `callgrind_control ACTION PID` (the script installed beside valgrind).
async fn control(valgrind: &Path, action: &str, pid: &str) -> Result<(), String> {
    let program = valgrind.with_file_name("callgrind_control");
    let program = if program.is_file() { program } else { PathBuf::from("callgrind_control") };
    let status = Command::new(&program)
        .arg(action)
        .arg(pid)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .await
        .map_err(|e| format!("{}: {e}", program.display()))?;
    status.success().then_some(()).ok_or(format!("{} {action} {pid}: {status}", program.display()))
}

/// The instruction total of a callgrind dump (its `summary:` or `totals:` line), once the file is written.
async fn dumped_total(path: &Path) -> Result<u64, String> {
    for _ in 0..100 {
        if let Ok(text) = tokio::fs::read_to_string(path).await {
            let total = text.lines().find_map(|l| l.strip_prefix("summary:").or_else(|| l.strip_prefix("totals:")));
            if let Some(n) = total.and_then(|t| t.split_whitespace().next()).and_then(|n| n.parse().ok()) {
                return Ok(n);
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(format!("{}: no callgrind totals within 10 s", path.display()))
}
