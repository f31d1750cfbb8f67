//! `just bench-sync`: how fast a breaker state reaches the other gateway nodes through Redis, live. Three
//! `mcpstorm gateway` processes share breakers through a real `redis-server` (`[gateway.sync]`), all on loopback;
//! an operator's force-open is made on one node (round robin) and the other two are polled (`GET /admin/breakers`,
//! back to back) until they hold it; then a reset, the same way. The convergence of one switch is the time from the
//! admin API's answer on the first node to the last other node seen holding it; the polling makes it an upper bound
//! (one admin round trip, about 0.3 ms here). Prints P50, P99 and the maximum; nothing is asserted.
//!
//! Environment: `MCPSTORM_BENCH_SWITCHES=N` switches of each kind (default 100; 5 without `--bench`).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use hdrhistogram::Histogram;
use serde_json::{Value, json};
use tokio::time::Instant;

#[path = "common/runtime.rs"]
mod runtime;
#[path = "common/spawn.rs"]
mod spawn;

const TOKEN_ENV: &str = "MCPSTORM_BENCH_ADMIN_TOKEN";
const TOKEN: &str = "bench-admin-token";

fn main() {
    runtime::run_or_exit("bench-sync", run());
}

/// A `redis-server` child on a free loopback port, without persistence.
struct Redis(Child);

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}

async fn run() -> Result<(), String> {
    let full = std::env::args().any(|a| a == "--bench");
    let switches: usize = match std::env::var("MCPSTORM_BENCH_SWITCHES") {
        Ok(v) => v.parse().map_err(|e| format!("MCPSTORM_BENCH_SWITCHES={v:?}: {e}"))?,
        Err(_) if full => 100,
        Err(_) => 5,
    };
    let port = free_port()?;
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start redis-server (apt-get install redis-server): {e}"))?;
    let _redis = Redis(child);
    let (_fake, fake_addr) = spawn::spawn_server_with(&[]).await?;
    let dir = std::env::temp_dir().join(format!("mcpstorm-bench-sync-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut nodes = Vec::new();
    for i in 1..=3 {
        let config = dir.join(format!("gw-{i}.toml"));
        std::fs::write(&config, gateway_config(&fake_addr, port, i))
            .map_err(|e| format!("{}: {e}", config.display()))?;
        nodes.push(spawn::spawn_gateway_with_admin(&config, &[(TOKEN_ENV, TOKEN)]).await?);
    }
    let admins: Vec<String> = nodes.iter().map(|n| n.admin.clone()).collect();
    for admin in &admins {
        wait_for(|| Ok(metric(admin, "mcpstorm_gateway_sync_connected")? == Some(1.0)))?;
    }
    let mut forced = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).map_err(|e| e.to_string())?;
    let mut reset = forced.clone();
    for k in 0..switches {
        let from = k % admins.len();
        for (action, want, hist) in [("force_open", "forced_open", &mut forced), ("reset", "closed", &mut reset)] {
            switch(&admins[from], action)?;
            let started = Instant::now();
            for (i, admin) in admins.iter().enumerate() {
                if i != from {
                    wait_for(|| Ok(state(admin)? == want))?;
                }
            }
            hist.saturating_record(started.elapsed().as_micros().max(1) as u64);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("## mcpstorm bench-sync: three gateway nodes sharing breakers through redis-server\n");
    println!(
        "Loopback, {cores} cores; {switches} switches of each kind, made on the nodes in turn. Convergence: from the \
         admin API's answer on one node to the last other node holding the state (an upper bound, by polling).\n"
    );
    println!("| Switch | Count | P50 (ms) | P99 (ms) | Max (ms) |");
    println!("|---|---:|---:|---:|---:|");
    for (label, h) in [("force_open", &forced), ("reset", &reset)] {
        let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        println!("| {label} | {} | {:.2} | {:.2} | {:.2} |", h.len(), ms(0.5), ms(0.99), h.max() as f64 / 1000.0);
    }
    let p99 = forced.value_at_quantile(0.99).max(reset.value_at_quantile(0.99)) as f64 / 1000.0;
    println!(
        "\nThe issue's target (printed, not asserted): convergence P99 ≤ 50 ms: {p99:.2} ms, {}",
        if p99 <= 50.0 { "PASS" } else { "MISS" }
    );
    Ok(())
}

fn gateway_config(fake: &str, redis: u16, i: usize) -> String {
    format!(
        "[listen]\nhttp = \"127.0.0.1:0\"\n\n[[servers]]\nname = \"alpha\"\n[[servers.replicas]]\ntcp = \"{fake}\"\n\n\
         [gateway.sync]\nredis = \"redis://127.0.0.1:{redis}\"\nnode = \"gw-{i}\"\n\n\
         [admin]\nlisten = \"127.0.0.1:0\"\ntoken_env = \"{TOKEN_ENV}\"\n"
    )
}

/// Polls `done` back to back for up to 10 s.
fn wait_for(mut done: impl FnMut() -> Result<bool, String>) -> Result<(), String> {
    for _ in 0..100_000 {
        if done()? {
            return Ok(());
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    Err("a state did not arrive within about 10 s".to_owned())
}

/// One admin request on a fresh connection: the body of a 200 answer.
fn admin(addr: &str, method: &str, path: &str, body: Option<&Value>) -> Result<String, String> {
    let mut stream = TcpStream::connect(addr).map_err(|e| format!("{addr}: {e}"))?;
    let body = body.map(Value::to_string).unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).map_err(|e| e.to_string())?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).map_err(|e| e.to_string())?;
    match answer.split_once("\r\n\r\n") {
        Some((head, body)) if head.starts_with("HTTP/1.1 200") => Ok(body.to_owned()),
        _ => Err(format!("{method} {path} at {addr}: {}", answer.lines().next().unwrap_or_default())),
    }
}

fn switch(addr: &str, action: &str) -> Result<(), String> {
    admin(addr, "POST", "/admin/breakers", Some(&json!({"server": "alpha", "tool": "echo", "action": action})))
        .map(drop)
}

fn state(addr: &str) -> Result<String, String> {
    let listed: Value =
        serde_json::from_str(&admin(addr, "GET", "/admin/breakers", None)?).map_err(|e| e.to_string())?;
    let row =
        listed["breakers"].as_array().into_iter().flatten().find(|b| b["replica"] == "alpha#0" && b["tool"] == "echo");
    Ok(row.and_then(|b| b["state"].as_str()).unwrap_or("none").to_owned())
}

fn metric(addr: &str, sample: &str) -> Result<Option<f64>, String> {
    let body = admin(addr, "GET", "/metrics", None)?;
    Ok(body.lines().find_map(|l| l.strip_prefix(sample)?.strip_prefix(' ')?.trim().parse().ok()))
}
