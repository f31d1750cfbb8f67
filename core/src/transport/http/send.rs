//! Sending one HTTP request through the pool, and reading its answer's body: what every exchange of the transport
//! shares, the `POST` of a message (`exchange.rs`), the `GET` of a stream (`stream.rs`) and the error body of a
//! status (`status.rs`). Kept apart from all three so that each depends on it, and none on another for it.

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap};
use hyper::{Method, Request, Response, StatusCode};

use super::pool::Lease;
use super::{Http, HttpLimits};
use crate::error::{CallError, HttpError, TransportError};

/// A hyper failure as a transport error: a cut connection is [`TransportError::Closed`] (whether hyper noticed it
/// itself or its IO reported it), a refused head [`HttpError::Head`].
pub(super) fn hyper_error(e: &hyper::Error) -> CallError {
    if let Some(io) = std::error::Error::source(e).and_then(|s| s.downcast_ref::<std::io::Error>()) {
        return TransportError::io("read", io).into();
    }
    if e.is_parse() {
        return TransportError::Http(HttpError::Head(e.to_string())).into();
    }
    if e.is_incomplete_message() || e.is_closed() || e.is_canceled() {
        return TransportError::Closed.into();
    }
    TransportError::Http(HttpError::Exchange(e.to_string())).into()
}

/// Sends one request through the pool, following same-origin 307/308 redirects (they keep the method and body)
/// up to `max_redirects`. A reused connection that turns out closed before the request was written is replaced
/// once by a fresh one. `dedicated` takes a connection outside the pool's bounds (the `GET` stream).
pub(super) async fn send(
    http: &Http,
    method: Method,
    headers: &HeaderMap,
    body: Bytes,
    dedicated: bool,
) -> Result<(Response<Incoming>, Lease), CallError> {
    let url = http.endpoint.parts();
    let limits = http.limits();
    let mut target = url.target.clone();
    let (mut redirects, mut fresh) = (0, false);
    loop {
        let mut lease = if dedicated || fresh { http.pool.dedicated().await? } else { http.pool.acquire().await? };
        let mut builder = Request::builder().method(method.clone()).uri(target.as_str());
        if let Some(h) = builder.headers_mut() {
            h.clone_from(headers);
            h.insert(header::HOST, url.authority.clone());
        }
        let request = builder
            .body(Full::new(body.clone()))
            .map_err(|e| TransportError::Http(HttpError::Exchange(e.to_string())))?;
        let Some(sender) = lease.sender() else { return Err(TransportError::NotWritten.into()) };
        let response = match sender.try_send_request(request).await {
            Ok(r) => r,
            Err(e) if lease.reused && !fresh && e.message().is_some() => {
                fresh = true;
                continue;
            }
            // hyper handed the request back: it was never written, whatever the connection's error says.
            Err(e) if e.message().is_some() => return Err(TransportError::NotWritten.into()),
            Err(e) => return Err(hyper_error(e.error())),
        };
        check_head(response.headers(), limits)?;
        let status = response.status();
        if !status.is_redirection() {
            return Ok((response, lease));
        }
        if !matches!(status, StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT) {
            return Err(TransportError::Http(HttpError::Redirect(format!("HTTP {status}"))).into());
        }
        redirects += 1;
        if redirects > limits.max_redirects {
            return Err(TransportError::Http(HttpError::TooManyRedirects { max: limits.max_redirects }).into());
        }
        let location = response.headers().get(header::LOCATION).and_then(|l| l.to_str().ok()).unwrap_or("");
        target = same_origin_target(location, url)
            .ok_or_else(|| TransportError::Http(HttpError::Redirect(format!("to {location:?}"))))?;
    }
}

/// The origin-form target of a redirect that stays on our origin (a path, or an absolute URL with our scheme and
/// authority): the dialer reaches one host only.
fn same_origin_target(location: &str, url: &super::endpoint::Url) -> Option<String> {
    if location.starts_with('/') && !location.starts_with("//") {
        return Some(location.to_owned());
    }
    let uri: hyper::Uri = location.parse().ok()?;
    let scheme = if url.tls { "https" } else { "http" };
    let same = uri.scheme_str() == Some(scheme) && uri.authority().map(|a| a.as_str()) == url.authority.to_str().ok();
    same.then(|| uri.path_and_query().map_or("/", |p| p.as_str()).to_owned())
}

/// Bounds every header value (the count and the head's size are hyper's, configured on the pool's connections).
fn check_head(headers: &HeaderMap, limits: &HttpLimits) -> Result<(), CallError> {
    match headers.iter().find(|(_, v)| v.len() > limits.max_header_value) {
        Some((name, v)) => Err(TransportError::Http(HttpError::Head(format!(
            "header {name} has {} bytes, over the {}-byte limit",
            v.len(),
            limits.max_header_value
        )))
        .into()),
        None => Ok(()),
    }
}

/// Reads a whole body of at most `max` bytes.
pub(super) async fn read_body(body: Incoming, max: usize) -> Result<Bytes, CallError> {
    match Limited::new(body, max).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) => match e.downcast::<hyper::Error>() {
            Ok(e) => Err(hyper_error(&e)),
            Err(_) => Err(TransportError::FrameTooLarge { max }.into()),
        },
    }
}
