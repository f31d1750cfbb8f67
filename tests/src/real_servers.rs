//! Finding the real MCP servers used as interop peers, and the real `redis-server` the Redis double is compared with.
//! `.ci/run` installs them; on a developer machine without them the tests say so loudly and skip, unless
//! `MCPSTORM_REQUIRE_PEERS=1`, where a missing peer fails the test.

use std::path::PathBuf;
use std::process::Command;

use mcpstorm_core::StdioDialer;

/// The repository root (the tests crate lives one level below it).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn require_peers() -> bool {
    std::env::var("MCPSTORM_REQUIRE_PEERS").is_ok_and(|v| v == "1")
}

/// Skips (returns `None`) or fails, depending on `MCPSTORM_REQUIRE_PEERS`.
fn missing<T>(what: &str, how: &str) -> Option<T> {
    if require_peers() {
        panic!("interop peer missing: {what}. Install it with: {how}");
    }
    eprintln!("\n*** SKIPPING: interop peer missing: {what}. Install it with: {how} ***\n");
    None
}

fn python() -> String {
    std::env::var("MCPSTORM_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// The Python `mcp` SDK 2.x server in `tests/peers/py_server.py`.
pub fn python_server() -> Option<StdioDialer> {
    python_peer("py_server.py")
}

/// The Python `mcp` SDK 2.x server in `tests/peers/py_blocking_server.py`, whose tool blocks the whole server.
pub fn python_blocking_server() -> Option<StdioDialer> {
    python_peer("py_blocking_server.py")
}

/// A Python `mcp` SDK 2.x server script of `tests/peers/`, over stdio.
fn python_peer(script: &str) -> Option<StdioDialer> {
    let ok =
        Command::new(python()).args(["-c", "import mcp.server.mcpserver"]).output().is_ok_and(|o| o.status.success());
    if !ok {
        return missing("Python package mcp 2.x", "pip install 'mcp==2.3.0'");
    }
    let script = repo_root().join("tests/peers").join(script);
    Some(StdioDialer::new(python(), [script.to_string_lossy().into_owned()]))
}

/// The Python `mcp` SDK 2.x client of `tests/peers/py_http_client.py`, to run against a Streamable HTTP `url` in
/// `mode` (`auto` or `legacy`): a command printing one JSON object of what it saw.
pub fn python_http_client(url: &str, mode: &str) -> Option<Command> {
    let ok = Command::new(python())
        .args(["-c", "import mcp.client.streamable_http"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        return missing("Python package mcp 2.x", "pip install 'mcp==2.3.0'");
    }
    let mut command = Command::new(python());
    command.arg(repo_root().join("tests/peers/py_http_client.py")).args([url, mode]);
    Some(command)
}

/// The Python interpreter of the `mcp` 1.x venv: `MCPSTORM_PYTHON_MCP1`, else `target/peers/mcp1/bin/python` (where
/// `.ci/run` installs `tests/peers/requirements-mcp1.txt`).
fn python_mcp1() -> PathBuf {
    std::env::var_os("MCPSTORM_PYTHON_MCP1")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/peers/mcp1/bin/python"))
}

/// The Python `mcp` SDK 1.x serving `tests/peers/py_server.py` (the same tools): legacy (handshake) era only.
pub fn python_mcp1_server() -> Option<StdioDialer> {
    let python = python_mcp1();
    let check = "import importlib.metadata as m, mcp.server.fastmcp; assert m.version('mcp').startswith('1.')";
    let ok = Command::new(&python).args(["-c", check]).output().is_ok_and(|o| o.status.success());
    if !ok {
        return missing(
            &format!("Python package mcp 1.x at {}", python.display()),
            "python3 -m venv target/peers/mcp1 && target/peers/mcp1/bin/pip install -r tests/peers/requirements-mcp1.txt \
             (or point MCPSTORM_PYTHON_MCP1 at a Python with mcp 1.x)",
        );
    }
    let script = repo_root().join("tests/peers/py_server.py");
    Some(StdioDialer::new(python.to_string_lossy().into_owned(), [script.to_string_lossy().into_owned()]))
}

/// `@modelcontextprotocol/server-everything`, installed by npm under `tests/peers/node_modules`.
pub fn everything_server() -> Option<StdioDialer> {
    let index = repo_root().join("tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !index.exists() {
        return missing("@modelcontextprotocol/server-everything", "npm ci --prefix tests/peers");
    }
    Some(StdioDialer::new("node", [index.to_string_lossy().into_owned(), "stdio".to_owned()]))
}

/// The `redis-server` executable the Redis double is compared with (`tests/tests/interop/redis.rs`):
/// `MCPSTORM_REDIS_SERVER`, else `redis-server` on the `PATH`. The tests start their own processes on free ports.
pub fn redis_server() -> Option<PathBuf> {
    let program =
        std::env::var_os("MCPSTORM_REDIS_SERVER").map_or_else(|| PathBuf::from("redis-server"), PathBuf::from);
    let ok = Command::new(&program).arg("--version").output().is_ok_and(|o| o.status.success());
    if !ok {
        return missing(
            &format!("{} (Redis 7.0)", program.display()),
            "apt-get install redis-server (or point MCPSTORM_REDIS_SERVER at one)",
        );
    }
    Some(program)
}

/// The Python interpreter with the `mcp` SDK 2.x client and server and `uvicorn` (which the SDK brings), for the
/// baseline's scripts `tests/peers/py_baseline_server.py` and `py_baseline_client.py`.
pub fn python_baseline() -> Option<String> {
    let check = "import mcp.server.mcpserver, mcp.client.streamable_http, uvicorn";
    let ok = Command::new(python()).args(["-c", check]).output().is_ok_and(|o| o.status.success());
    if !ok {
        return missing("Python package mcp 2.x (with uvicorn)", "pip install 'mcp==2.3.0'");
    }
    Some(python())
}

/// server-everything's entry point (`node INDEX streamableHttp` serves Streamable HTTP on `$PORT`).
pub fn everything_index() -> Option<PathBuf> {
    everything_server()?;
    Some(repo_root().join("tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
}

/// The `nginx` executable the baseline runs as a plain reverse proxy (`tests/tests/interop/baseline.rs` writes its
/// config and starts it on free ports): `MCPSTORM_NGINX`, else `nginx` on the `PATH`, else Debian's `/usr/sbin/nginx`
/// (`/usr/sbin` is not on an ordinary user's `PATH`).
pub fn nginx() -> Option<PathBuf> {
    let candidates = match std::env::var_os("MCPSTORM_NGINX") {
        Some(path) => vec![PathBuf::from(path)],
        None => vec![PathBuf::from("nginx"), PathBuf::from("/usr/sbin/nginx")],
    };
    let found = candidates.into_iter().find(|p| Command::new(p).arg("-v").output().is_ok_and(|o| o.status.success()));
    if found.is_none() {
        return missing("nginx", "apt-get install nginx (or point MCPSTORM_NGINX at one)");
    }
    found
}

/// The identity provider of the OAuth tests: panva's `oidc-provider` run by `tests/peers/idp/idp.mjs` (its options
/// and clients are documented at its top), installed by `npm ci --prefix tests/peers/idp`.
pub fn identity_provider() -> Option<Command> {
    let dir = repo_root().join("tests/peers/idp");
    if !dir.join("node_modules/oidc-provider").exists() {
        return missing("oidc-provider", "npm ci --prefix tests/peers/idp");
    }
    let mut command = Command::new("node");
    command.arg(dir.join("idp.mjs"));
    Some(command)
}

/// An agent on the Python `mcp` SDK that sends a bearer token (`tests/peers/py_token_client.py`): one JSON line of
/// what it saw, exit 3 with the status and challenge when the server answered 401 or 403.
pub fn python_token_client(url: &str) -> Option<Command> {
    python_http_client(url, "auto")?;
    let mut command = Command::new(python());
    command.arg(repo_root().join("tests/peers/py_token_client.py")).arg(url);
    Some(command)
}
