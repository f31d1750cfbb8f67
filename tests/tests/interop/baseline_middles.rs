//! The processes of the baseline (`baseline.rs`): the Python SDK's server as replicas that can be killed, restarted,
//! made slow or made to answer 503; server-everything over Streamable HTTP; and the two middles in front of them,
//! nginx (a plain reverse proxy) and `mcpstorm gateway` with its default config. Every child is killed on drop.
//! `just bench-gateway` (sim/benches/gateway.rs) includes this file too, for the same processes in its baseline rows:
//! so it names nothing of the tests crate.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use mcpstorm_core::TokioClock;
use mcpstorm_sim::gateway::Process;
use mcpstorm_sim::scenario::tables::GatewayFile;
use mcpstorm_sim::seed::Seed;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

/// `tests/peers/` (the tests crate and the sim crate are both one level below the repository root).
fn peers() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/peers")
}

/// A free loopback port (there is a small race until the server binds it).
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    l.local_addr().expect("bound address").port()
}

/// Waits (up to 15 s: a Python server imports its SDK first) until `port` accepts connections.
async fn wait_listening(port: u16, what: &str, child: &mut Child) {
    for _ in 0..300 {
        if TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{what} exited ({status}) before listening on port {port}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what} never listened on port {port}");
}

/// One replica of the Python SDK's server (`tests/peers/py_baseline_server.py`) on a fixed port, so that a restart
/// comes back where the middles expect it.
pub struct Replica {
    python: String,
    pub port: u16,
    /// The script's flags (`--delay-ms MS`, `--json`).
    flags: Vec<String>,
    child: Option<Child>,
}

impl Replica {
    pub async fn start(python: &str, flags: &[&str]) -> Replica {
        let flags = flags.iter().map(|f| (*f).to_owned()).collect();
        let mut replica = Replica { python: python.to_owned(), port: free_port(), flags, child: None };
        replica.restart().await;
        replica
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// `kill -9`: the process dies with its calls in flight, and its port refuses connections at once.
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.start_kill().expect("SIGKILL the replica");
            let _ = child.wait().await;
        }
    }

    /// Starts the process (again) on the same port, and waits until it listens.
    pub async fn restart(&mut self) {
        let script = peers().join("py_baseline_server.py");
        let mut command = Command::new(&self.python);
        command.arg(script).arg(self.port.to_string()).args(&self.flags);
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("start py_baseline_server.py");
        wait_listening(self.port, "py_baseline_server.py", &mut child).await;
        self.child = Some(child);
    }

    /// Makes `/mcp` answer 503 with no body for `seconds` (the server's control endpoint).
    pub async fn unavailable_for(&self, seconds: u64) {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).await.expect("connect to the control endpoint");
        let request = format!(
            "POST /control/unavailable?seconds={seconds} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\n\
             Connection: close\r\n\r\n",
            self.port
        );
        stream.write_all(request.as_bytes()).await.expect("send the control request");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.expect("read the control answer");
        assert!(answer.starts_with("HTTP/1.1 204"), "control endpoint: {answer}");
    }
}

/// `@modelcontextprotocol/server-everything` in its `streamableHttp` mode (sessions, legacy era) on a free port.
pub struct Everything {
    _child: Child,
    pub port: u16,
}

impl Everything {
    pub async fn start(index: &Path) -> Everything {
        let port = free_port();
        let mut child = Command::new("node")
            .arg(index)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start server-everything");
        wait_listening(port, "server-everything", &mut child).await;
        Everything { _child: child, port }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

/// nginx as a plain reverse proxy: one `upstream` with the replicas (round robin, the default
/// `proxy_next_upstream error timeout`), keep-alive connections to them, no retries of its own beyond that default.
/// Its config, pid file, logs and temp paths live in a temp dir, so it runs as any user.
pub struct Nginx {
    child: Child,
    program: PathBuf,
    dir: PathBuf,
    pub port: u16,
}

impl Nginx {
    pub async fn start(program: &Path, upstream_ports: &[u16]) -> Nginx {
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("mcpstorm-baseline-nginx-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("nginx temp dir");
        let servers: String = upstream_ports.iter().map(|p| format!("        server 127.0.0.1:{p};\n")).collect();
        let d = dir.display();
        // `Host $http_host`: the Python SDK's DNS-rebinding guard accepts 127.0.0.1:*, not the upstream's name.
        // `proxy_buffering off`: SSE answers pass as they come. `keepalive_timeout 4s`: below the servers' own 5 s
        // idle timeout, so nginx never reuses a connection the server is closing. `backlog=4096`: the gateway's
        // listeners ask for the same accept queue. `proxy_read_timeout 60s` is nginx's default, written out: the
        // 20 s tool depends on it.
        let conf = format!(
            "worker_processes auto;\npid {d}/nginx.pid;\nerror_log {d}/error.log warn;\n\
             events {{\n    worker_connections 8192;\n}}\n\
             http {{\n    access_log off;\n    client_body_temp_path {d}/body;\n    proxy_temp_path {d}/proxy;\n\
             \x20   fastcgi_temp_path {d}/fastcgi;\n    uwsgi_temp_path {d}/uwsgi;\n    scgi_temp_path {d}/scgi;\n\
             \x20   upstream mcp {{\n{servers}        keepalive 1024;\n        keepalive_timeout 4s;\n    }}\n\
             \x20   server {{\n        listen 127.0.0.1:{port} backlog=4096;\n        location / {{\n\
             \x20           proxy_pass http://mcp;\n            proxy_http_version 1.1;\n\
             \x20           proxy_set_header Connection \"\";\n            proxy_set_header Host $http_host;\n\
             \x20           proxy_buffering off;\n            proxy_read_timeout 60s;\n        }}\n    }}\n}}\n"
        );
        let path = dir.join("nginx.conf");
        std::fs::write(&path, conf).expect("write nginx.conf");
        let mut child = Command::new(program)
            .args(Nginx::paths(&dir))
            .args(["-g", "daemon off;"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("start nginx");
        wait_listening(port, "nginx", &mut child).await;
        Nginx { child, program: program.to_owned(), dir, port }
    }

    /// Its prefix, error log and config, all in `dir`.
    fn paths(dir: &Path) -> [std::ffi::OsString; 6] {
        let arg = |p: &Path| p.as_os_str().to_owned();
        ["-p".into(), arg(dir), "-e".into(), arg(&dir.join("error.log")), "-c".into(), arg(&dir.join("nginx.conf"))]
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// The master's pid (`daemon off`: the child itself); its workers are its children. `just bench-gateway` reads
    /// their CPU time; the baseline test does not.
    #[allow(dead_code)]
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // A SIGKILL reaches the master only, and its workers live on (holding their port) after it: `nginx -s stop`
        // has the master stop them, and it exits once they have. SIGKILL only if it has not within 2 s.
        let _ = std::process::Command::new(&self.program)
            .args(Nginx::paths(&self.dir))
            .args(["-s", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        for _ in 0..200 {
            if !matches!(self.child.try_wait(), Ok(None)) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.start_kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `mcpstorm gateway` with the default config: one `[[servers]]` named `name` with an `http` replica per URL, and
/// nothing else but the listener on a free port. It runs the same `Process` the binary runs, on a runtime of its
/// own built as the binary builds it (`mcpstorm_sim::gateway::runtime`), so that the clients' tasks do not share its
/// threads.
pub struct Gateway {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    pub url: String,
}

impl Gateway {
    pub async fn start(name: &str, upstreams: &[String]) -> Gateway {
        let replicas: String = upstreams.iter().map(|u| format!("[[servers.replicas]]\nhttp = {u:?}\n")).collect();
        // `drain` only bounds the stop at the end of the test.
        let text =
            format!("[listen]\nhttp = \"127.0.0.1:0\"\ndrain = \"1s\"\n\n[[servers]]\nname = {name:?}\n{replicas}");
        Gateway::start_with(&text).await
    }

    /// The same with the config `text` (its `[listen] http` on port 0): `just bench-gateway` counts the allocations
    /// of a gateway with its own config in its process.
    pub async fn start_with(text: &str) -> Gateway {
        let file = GatewayFile::load_str(text, "gateway.toml").unwrap_or_else(|e| panic!("{e}"));
        let (url_tx, url_rx) = tokio::sync::oneshot::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = mcpstorm_sim::gateway::runtime::build(None).expect("the gateway's runtime");
            runtime.block_on(async move {
                let mut process = Process::start(PathBuf::from("gateway.toml"), file, Seed::new(7), TokioClock::new(0))
                    .await
                    .unwrap_or_else(|e| panic!("{e:?}"));
                let bound = process.open(false).await.unwrap_or_else(|e| panic!("{e:?}"));
                let _ = url_tx.send(format!("http://{}/mcp", bound.http.expect("an HTTP listener")));
                let _ = stop_rx.await;
                process.stop().await;
            });
        });
        let url = url_rx.await.expect("the gateway started");
        Gateway { stop: Some(stop_tx), thread: Some(thread), url }
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
