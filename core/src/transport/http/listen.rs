//! The optional `GET` stream of a 2025-11-25 session ("Listening for Messages from the Server"): server requests
//! and notifications unrelated to any request of ours. Opened once the session is initialized; a 405 means the
//! server offers none, and ends it quietly. A stream the server closes, or that reaches its lifetime, is opened
//! again (with `Last-Event-ID` when it set one), after its `retry:` wait; `max_resumes` failures in a row end it.
//! `opened` is told once the first `GET` is answered (or failed), so the sink can hold later requests until then.

use std::sync::Arc;

use tokio::sync::oneshot;
use tokio::time::{sleep, timeout};

use super::Http;
use super::sse::SseParser;
use super::stream::{DEFAULT_RETRY, Pumped, StreamCtx, open_get, pump};

pub(super) async fn run(http: Arc<Http>, opened: oneshot::Sender<()>) {
    let mut opened = Some(opened);
    let limits = http.limits().clone();
    let ctx = StreamCtx { request: None, initialize: false, resumable: true };
    let mut parser = SseParser::new(limits.max_event);
    let mut failures = 0;
    loop {
        let last = parser.last_id().map(str::to_owned);
        let answer = open_get(&http, last.as_deref(), true).await;
        if let Some(opened) = opened.take() {
            let _ = opened.send(());
        }
        match answer {
            Ok(None) => {
                tracing::debug!("the server offers no GET stream (405)");
                return;
            }
            Ok(Some((mut body, _lease))) => {
                parser.restart();
                let read =
                    timeout(limits.max_stream_lifetime, pump(&http, &mut body, &mut parser, ctx, &mut true)).await;
                match read {
                    Ok((Pumped::Failed(e), _)) => {
                        tracing::debug!(error = %e, "GET stream refused");
                        failures += 1;
                    }
                    Ok((_, true)) | Err(_) => failures = 0,
                    Ok((_, false)) => failures += 1,
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, "GET stream failed");
                failures += 1;
            }
        }
        if failures > limits.max_resumes {
            tracing::debug!(failures, "GET stream given up");
            return;
        }
        sleep(parser.retry().unwrap_or(DEFAULT_RETRY).min(limits.max_retry_wait)).await;
    }
}
