//! A hand-written MCP server's transport loop, for tests that script a server's answers: reads newline-delimited
//! JSON-RPC requests, asks the test's `answer` for each one's result or error, writes the reply, and sends
//! `notifications/tools/list_changed` whenever the test pokes `announce`. Notifications and unparseable lines get no
//! reply, as from a real server.

use std::fmt;
use std::sync::Arc;

use mcpstorm_core::{DialFuture, Dialer};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Notify;

use crate::pipe::{byte_stream, spawn_server};

/// Serves one connection until the client closes it. `answer(request)` gives the `result` (`Ok`) or the `error`
/// object (`Err`) for a request.
pub async fn serve_lines<S, F>(stream: S, announce: Arc<Notify>, mut answer: F)
where
    S: AsyncRead + AsyncWrite + Send + 'static,
    F: FnMut(&Value) -> Result<Value, Value>,
{
    let (read, mut write) = tokio::io::split(stream);
    let mut lines = BufReader::new(read).lines();
    loop {
        let line = tokio::select! {
            biased;
            line = lines.next_line() => match line {
                Ok(Some(line)) => line,
                _ => return,
            },
            () = announce.notified() => {
                let note = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
                if write.write_all(format!("{note}\n").as_bytes()).await.is_err() {
                    return;
                }
                continue;
            }
        };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else { continue };
        let Some(id) = msg.get("id").cloned() else { continue };
        let reply = match answer(&msg) {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
        };
        if write.write_all(format!("{reply}\n").as_bytes()).await.is_err() {
            return;
        }
    }
}

/// A scripted server's answers, shared by every connection a [`LineDialer`] opens.
pub type Answer = Arc<dyn Fn(&Value) -> Result<Value, Value> + Send + Sync>;

/// Dials an in-memory pipe to a scripted server: each dial serves a new connection with [`serve_lines`].
#[derive(Clone)]
pub struct LineDialer {
    pub answer: Answer,
    /// The pipe's buffer: a small one exercises framing across many reads.
    pub pipe: usize,
}

impl fmt::Debug for LineDialer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LineDialer").field("pipe", &self.pipe).finish_non_exhaustive()
    }
}

impl Dialer for LineDialer {
    fn dial(&self) -> DialFuture<'_> {
        Box::pin(async move {
            let answer = self.answer.clone();
            let ours =
                spawn_server(self.pipe, |theirs| serve_lines(theirs, Arc::new(Notify::new()), move |msg| answer(msg)));
            Ok(byte_stream(ours))
        })
    }

    fn describe(&self) -> String {
        "scripted-lines".into()
    }
}
