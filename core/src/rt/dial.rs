use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::process::Stdio;

use tokio::io::{AsyncRead, AsyncWrite};

use crate::error::TransportError;

/// An open byte stream to a server. `guard` keeps whatever owns the stream alive (a child process is killed when it
/// drops).
pub struct ByteStream {
    pub reader: Box<dyn AsyncRead + Send + Unpin>,
    pub writer: Box<dyn AsyncWrite + Send + Unpin>,
    pub guard: Option<Box<dyn Send + Sync>>,
}

impl Debug for ByteStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ByteStream").field("guarded", &self.guard.is_some()).finish()
    }
}

pub type DialFuture<'a> = Pin<Box<dyn Future<Output = Result<ByteStream, TransportError>> + Send + 'a>>;

/// Opens byte streams to one server: tokio TCP and child-process stdio here, turmoil TCP in the simulator.
///
/// Boxed future rather than `async fn` so `Arc<dyn Dialer>` works: the client holds dialers of mixed kinds.
pub trait Dialer: Send + Sync + Debug + 'static {
    fn dial(&self) -> DialFuture<'_>;
    /// A short description for errors and logs (never containing secrets).
    fn describe(&self) -> String;
}

/// Dials `host:port` over tokio TCP.
#[derive(Debug, Clone)]
pub struct TcpDialer {
    pub addr: String,
}

impl Dialer for TcpDialer {
    fn dial(&self) -> DialFuture<'_> {
        Box::pin(async move {
            let stream = tokio::net::TcpStream::connect(&self.addr)
                .await
                .map_err(|e| TransportError::ConnectFailed(format!("{}: {e}", self.addr)))?;
            let _ = stream.set_nodelay(true);
            let (reader, writer) = stream.into_split();
            Ok(ByteStream { reader: Box::new(reader), writer: Box::new(writer), guard: None })
        })
    }

    fn describe(&self) -> String {
        format!("tcp {}", self.addr)
    }
}

/// Spawns a server as a child process and talks to it over its stdin and stdout (MCP's stdio transport).
/// The child's stderr is inherited: servers log there, and it is never protocol.
#[derive(Clone)]
pub struct StdioDialer {
    pub program: String,
    pub args: Vec<String>,
    /// Variables added to the child's environment (it inherits the rest). Values may be secrets: `Debug` shows
    /// only the names.
    pub env: Vec<(String, String)>,
    /// The child's working directory; `None`: this process's.
    pub cwd: Option<std::path::PathBuf>,
}

impl StdioDialer {
    pub fn new(program: impl Into<String>, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let args = args.into_iter().map(Into::into).collect();
        StdioDialer { program: program.into(), args, env: Vec::new(), cwd: None }
    }
}

impl Debug for StdioDialer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let env: Vec<&str> = self.env.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("StdioDialer")
            .field("program", &self.program)
            .field("args", &self.args.len())
            .field("env", &env)
            .field("cwd", &self.cwd)
            .finish()
    }
}

impl Dialer for StdioDialer {
    fn dial(&self) -> DialFuture<'_> {
        Box::pin(async move {
            let mut command = tokio::process::Command::new(&self.program);
            if let Some(cwd) = &self.cwd {
                command.current_dir(cwd);
            }
            let mut child = command
                .args(&self.args)
                .envs(self.env.iter().map(|(k, v)| (k, v)))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| TransportError::SpawnFailed(format!("{:?}: {e}", self.program)))?;
            let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                return Err(TransportError::ConnectFailed("child has no stdio pipes".into()));
            };
            Ok(ByteStream {
                reader: Box::new(stdout),
                writer: Box::new(stdin),
                guard: Some(Box::new(ChildGuard(child))),
            })
        })
    }

    fn describe(&self) -> String {
        // Arguments may carry tokens; name only the program.
        format!("stdio {}", self.program)
    }
}

/// Kills the child when the connection is dropped (`kill_on_drop`), and reaps it where a runtime is available.
struct ChildGuard(tokio::process::Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.start_kill();
    }
}
