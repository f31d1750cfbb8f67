//! A hand-written MCP server's transport loop, for tests that script a server's answers: reads newline-delimited
//! JSON-RPC requests, asks the test's `answer` for each one's result or error, writes the reply, and sends
//! `notifications/tools/list_changed` whenever the test pokes `announce`. Notifications and unparseable lines get no
//! reply, as from a real server.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Notify;

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
