//! A stand-in OTLP/HTTP collector on a loopback port: reads each request (its headers, then `Content-Length` bytes),
//! keeps the body when asked, and answers 200, on every connection and one request after another on each (the
//! gateway's exporter keeps its connection). A plain HTTP/1.1 reader, so what it keeps is what crossed the wire.
//! Shared by tests/tests/interop/traces.rs and `just bench-gateway`'s traced row.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// The bodies POSTed to the sink, in arrival order.
pub type Received = Arc<Mutex<Vec<Vec<u8>>>>;

/// Starts the sink; its `host:port` and what it received (always empty unless `keep`).
pub async fn otlp_sink(keep: bool) -> Result<(String, Received), String> {
    let listener = TcpListener::bind("127.0.0.1:0").await.map_err(|e| format!("the OTLP sink: {e}"))?;
    let addr = listener.local_addr().map_err(|e| format!("the OTLP sink: {e}"))?.to_string();
    let received = Received::default();
    let kept = received.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let kept = kept.clone();
            tokio::spawn(async move {
                let mut stream = BufReader::new(stream);
                let mut line = String::new();
                loop {
                    let mut length = 0;
                    loop {
                        line.clear();
                        if stream.read_line(&mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some((name, value)) = line.split_once(':') {
                            if name.eq_ignore_ascii_case("content-length") {
                                length = value.trim().parse().unwrap_or(0);
                            }
                        }
                    }
                    let mut body = vec![0; length];
                    if stream.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    if keep {
                        kept.lock().unwrap_or_else(PoisonError::into_inner).push(body);
                    }
                    let ok = b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if stream.get_mut().write_all(ok).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    Ok((addr, received))
}
