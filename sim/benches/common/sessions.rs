//! Idle agent sessions opened in bulk at a Streamable HTTP endpoint (`/mcp`), for what they cost a server in memory.
//! Each session is an `initialize` POST (2025-11-25) and the `notifications/initialized` POST with the
//! `Mcp-Session-Id` it returned, and nothing after. A minimal HTTP/1.1 client on a few keep-alive connections sends
//! them one after the other: a full MCP client per session would cost the bench more than the sessions cost the
//! server. It reads an answer whole, by `Content-Length` or chunked (an SSE answer comes chunked).

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench-idle-session","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// A keep-alive connection to the endpoint.
pub type Connection = BufReader<TcpStream>;

/// Opens `sessions` sessions at `authority` (`host:port`) over `connections` connections, and hands back the
/// connections, still open, for the caller to drop once it has measured.
pub async fn open_idle(authority: &str, sessions: usize, connections: usize) -> Result<Vec<Connection>, String> {
    let connections = connections.max(1);
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..connections {
        let share = sessions / connections + usize::from(c < sessions % connections);
        let authority = authority.to_owned();
        tasks.spawn(async move {
            let stream = TcpStream::connect(&authority).await.map_err(|e| format!("{authority}: {e}"))?;
            let _ = stream.set_nodelay(true);
            let mut conn = BufReader::new(stream);
            for _ in 0..share {
                let (status, session) = post(&mut conn, &authority, INITIALIZE, None).await?;
                let session = match (status, session) {
                    (200, Some(session)) => session,
                    (status, _) => return Err(format!("initialize: HTTP {status}, or no Mcp-Session-Id")),
                };
                let (status, _) = post(&mut conn, &authority, INITIALIZED, Some(&session)).await?;
                if status != 202 {
                    return Err(format!("notifications/initialized: HTTP {status}, not 202"));
                }
            }
            Ok(conn)
        });
    }
    let mut open = Vec::with_capacity(connections);
    while let Some(joined) = tasks.join_next().await {
        open.push(joined.map_err(|e| format!("a session opener: {e}"))??);
    }
    Ok(open)
}

/// One POST of `body` on the connection, its answer read whole: the status and the `Mcp-Session-Id`, if any.
async fn post(
    conn: &mut Connection,
    authority: &str,
    body: &str,
    session: Option<&str>,
) -> Result<(u16, Option<String>), String> {
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {authority}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\ncontent-length: {}\r\n",
        body.len()
    );
    if let Some(session) = session {
        request.push_str(&format!("mcp-session-id: {session}\r\nmcp-protocol-version: 2025-11-25\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    conn.get_mut().write_all(request.as_bytes()).await.map_err(|e| format!("sending a request: {e}"))?;

    let mut line = String::new();
    read_line(conn, &mut line).await?;
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| format!("not an HTTP status line: {line:?}"))?;
    let (mut length, mut chunked, mut session) = (0, false, None);
    loop {
        read_line(conn, &mut line).await?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let Some((name, value)) = header.split_once(':') else { continue };
        let value = value.trim();
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.parse().map_err(|e| format!("content-length {value:?}: {e}"))?,
            "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
            "mcp-session-id" => session = Some(value.to_owned()),
            _ => {}
        }
    }
    if !chunked {
        skip(conn, length).await?;
        return Ok((status, session));
    }
    loop {
        read_line(conn, &mut line).await?;
        let size = line.trim_end().split(';').next().unwrap_or_default();
        let size = usize::from_str_radix(size, 16).map_err(|e| format!("chunk size {size:?}: {e}"))?;
        if size == 0 {
            // Trailers, if any, up to the empty line.
            while read_line(conn, &mut line).await? > 2 {}
            return Ok((status, session));
        }
        skip(conn, size).await?;
        read_line(conn, &mut line).await?;
    }
}

/// Reads one line (CRLF included) into `line`, replacing what was there; its length.
async fn read_line(conn: &mut Connection, line: &mut String) -> Result<usize, String> {
    line.clear();
    match conn.read_line(line).await {
        Ok(0) => Err("the server closed the connection".to_owned()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("reading an answer: {e}")),
    }
}

/// Reads and drops `n` bytes.
async fn skip(conn: &mut Connection, n: usize) -> Result<(), String> {
    let copied = tokio::io::copy(&mut (&mut *conn).take(n as u64), &mut tokio::io::sink())
        .await
        .map_err(|e| format!("reading a body: {e}"))?;
    if copied < n as u64 {
        return Err("the server closed the connection within a body".to_owned());
    }
    Ok(())
}
