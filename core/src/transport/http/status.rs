//! What an HTTP error status means to the call that got it.
//!
//! | answer                                         | becomes                                                       |
//! |------------------------------------------------|---------------------------------------------------------------|
//! | 404 to a request carrying our `Mcp-Session-Id` | JSON-RPC -32001 session not found: the client starts a new session and resends once (2025-11-25 "Session Management") |
//! | 429, or 503 with `Retry-After`                 | JSON-RPC -32000 with `data.retryAfterMs` (capped), which the breaker honours |
//! | a body holding a JSON-RPC error                | that error, answering this request (2026-07-28: 400 with -32020/-32022, 404 with -32601) |
//! | any other 4xx                                  | JSON-RPC -32600 naming the status: the request was refused (and, for `server/discover`, the era fallback of "Backward Compatibility") |
//! | 503 with an empty body                         | [`HttpError::NoServer`]: a proxy in front had no server for it (never delivered) |
//! | any other 5xx, 1xx, 3xx                        | [`HttpError::Status`], a transport failure of this call       |

use std::time::Duration;

use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use serde_json::json;

use super::Http;
use super::send::read_body;
use crate::error::{CallError, HttpError, TransportError};
use crate::jsonrpc::{ErrorCode, ErrorObject, Message, RequestId, ResponseBody};

/// JSON-RPC -32001 "session not found" to request `id`: the server answered 404 for our `Mcp-Session-Id` (to it, or
/// to an earlier request of the same connection).
pub(super) fn session_not_found(id: i64) -> Message {
    let mut obj = ErrorObject::new(ErrorCode::SESSION_NOT_FOUND, "Session not found (HTTP 404 for our Mcp-Session-Id)");
    obj.data = Some(json!({"httpStatus": 404}));
    Message::error(Some(RequestId::Number(id)), obj)
}

/// The JSON-RPC answer to request `id` that the error `response` stands for, or the transport failure it is.
pub(super) async fn reply(
    http: &Http,
    response: Response<Incoming>,
    id: i64,
    sent_session: Option<&HeaderValue>,
) -> Result<Message, CallError> {
    let status = response.status();
    let error = |code: ErrorCode, message: String, data| {
        let mut obj = ErrorObject::new(code, message);
        obj.data = Some(data);
        Ok(Message::error(Some(RequestId::Number(id)), obj))
    };
    if status == StatusCode::NOT_FOUND
        && let Some(session) = sent_session
    {
        http.drop_session(session);
        return Ok(session_not_found(id));
    }
    let retry = retry_after(response.headers().get(header::RETRY_AFTER), http);
    let retry = retry.map(|d| d.min(http.limits().max_retry_after));
    if status == StatusCode::TOO_MANY_REQUESTS || (status == StatusCode::SERVICE_UNAVAILABLE && retry.is_some()) {
        let mut data = json!({"httpStatus": status.as_u16()});
        if let Some(wait) = retry {
            data["retryAfterMs"] = json!(wait.as_millis() as u64);
        }
        return error(ErrorCode(-32000), format!("server overloaded: HTTP {status}"), data);
    }
    let body = read_body(response.into_body(), http.limits().max_error_body).await.unwrap_or_default();
    if let Some(obj) = rpc_error(&body) {
        return Ok(Message::error(Some(RequestId::Number(id)), obj));
    }
    if status.is_client_error() {
        return error(
            ErrorCode::INVALID_REQUEST,
            format!("request refused: HTTP {status}"),
            json!({"httpStatus": status.as_u16()}),
        );
    }
    if status == StatusCode::SERVICE_UNAVAILABLE && body.iter().all(u8::is_ascii_whitespace) {
        return Err(TransportError::Http(HttpError::NoServer).into());
    }
    Err(TransportError::Http(HttpError::Status { status: status.as_u16() }).into())
}

/// The JSON-RPC error a body carries, whatever id it names (servers answer errors they raise before reading the
/// request with no id).
fn rpc_error(body: &[u8]) -> Option<ErrorObject> {
    match Message::decode(body).ok()? {
        Message::Response(r) => match r.body {
            ResponseBody::Error(e) => Some(e),
            ResponseBody::Result(_) => None,
        },
        _ => None,
    }
}

/// `Retry-After` as delay-seconds or an HTTP-date, measured against the injected clock.
fn retry_after(value: Option<&HeaderValue>, http: &Http) -> Option<Duration> {
    let value = value?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    let at_ms = at.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis() as u64;
    Some(Duration::from_millis(at_ms.saturating_sub(http.clock.wall_ms())))
}
