//! Plain HTTP requests that are not MCP: an authorization server's metadata, its signing keys, token
//! introspection and the token endpoint. They go through the same pool, `Dialer` seam and TLS as the MCP transport,
//! so a simulator can place an identity provider on its network, and certificate validity follows the injected
//! clock. No redirects are followed: a key set or a token answered from somewhere else is not trusted.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request};

use super::endpoint::{HttpConfigError, HttpEndpoint, HttpLimits, PoolConfig};
use super::pool::Pool;
use super::send::{hyper_error, read_body};
use super::tls;
use crate::credential::Secret;
use crate::error::{CallError, HttpError, TransportError};
use crate::rt::{Clock, Dialer};

/// What one fetch got back: any status, its headers, and the body read whole (bounded).
#[derive(Debug, Clone)]
pub struct Fetched {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Fetched {
    /// The body as JSON, when it is.
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

/// Requests to one URL, over a small keep-alive pool of their own.
pub struct Fetcher {
    endpoint: HttpEndpoint,
    pool: Arc<Pool>,
    timeout: Duration,
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetcher").field("url", &self.endpoint.url()).field("timeout", &self.timeout).finish()
    }
}

/// The largest body a fetch reads: a key set or a token answer is a few KiB; a provider that sends more is refused.
const MAX_BODY: usize = 1024 * 1024;
/// Connections kept per URL: a refresh is single-flight by its callers, so a handful covers concurrent kinds.
const CONNECTIONS: usize = 4;

impl Fetcher {
    /// Requests to `url`, each bounded by `timeout` end to end, dialed by `dialer` (`None`: TCP to the URL's host).
    pub fn new(
        url: &str,
        dialer: Option<Arc<dyn Dialer>>,
        clock: Arc<dyn Clock>,
        timeout: Duration,
    ) -> Result<Fetcher, HttpConfigError> {
        let mut endpoint = HttpEndpoint::new(url)?;
        endpoint.pool = PoolConfig { max_connections: CONNECTIONS, max_waiting: 1024, max_wait: timeout };
        endpoint.limits = HttpLimits { max_body: MAX_BODY, max_redirects: 0, ..HttpLimits::default() };
        let dialer = dialer.unwrap_or_else(|| Arc::new(endpoint.tcp_dialer()));
        let tls = tls::for_endpoint(&endpoint, clock)?;
        let pool = Pool::new(dialer, tls, timeout, endpoint.pool.clone(), endpoint.limits.clone(), None);
        Ok(Fetcher { endpoint, pool: Arc::new(pool), timeout })
    }

    /// The URL, as given.
    pub fn url(&self) -> &str {
        self.endpoint.url()
    }

    /// `GET` with `Accept: application/json`.
    pub async fn get_json(&self) -> Result<Fetched, CallError> {
        self.send(Method::GET, None, None).await
    }

    /// `POST` of an `application/x-www-form-urlencoded` body, with an `Authorization` header when given.
    pub async fn post_form(&self, form: &[(&str, &str)], authorization: Option<&Secret>) -> Result<Fetched, CallError> {
        let body = form_urlencoded::Serializer::new(String::new()).extend_pairs(form).finish();
        self.send(Method::POST, Some(Bytes::from(body)), authorization).await
    }

    /// `POST` of a JSON body (dynamic client registration, RFC 7591).
    pub async fn post_json(&self, body: &serde_json::Value) -> Result<Fetched, CallError> {
        let body = (Bytes::from(body.to_string()), "application/json");
        match tokio::time::timeout(self.timeout, self.exchange(Method::POST, Some(body), None)).await {
            Ok(fetched) => fetched,
            Err(_) => {
                Err(TransportError::Http(HttpError::Exchange(format!("no answer within {:?}", self.timeout))).into())
            }
        }
    }

    async fn send(
        &self,
        method: Method,
        body: Option<Bytes>,
        authorization: Option<&Secret>,
    ) -> Result<Fetched, CallError> {
        let body = body.map(|b| (b, "application/x-www-form-urlencoded"));
        match tokio::time::timeout(self.timeout, self.exchange(method, body, authorization)).await {
            Ok(fetched) => fetched,
            Err(_) => {
                Err(TransportError::Http(HttpError::Exchange(format!("no answer within {:?}", self.timeout))).into())
            }
        }
    }

    async fn exchange(
        &self,
        method: Method,
        body: Option<(Bytes, &'static str)>,
        authorization: Option<&Secret>,
    ) -> Result<Fetched, CallError> {
        let url = self.endpoint.parts();
        let bad = |e: hyper::http::Error| CallError::from(TransportError::Http(HttpError::Exchange(e.to_string())));
        let mut builder = Request::builder()
            .method(method)
            .uri(url.target.as_str())
            .header(header::HOST, url.authority.clone())
            .header(header::ACCEPT, "application/json");
        if let Some((_, content_type)) = &body {
            builder = builder.header(header::CONTENT_TYPE, *content_type);
        }
        if let Some(secret) = authorization {
            let value = HeaderValue::from_str(secret.expose())
                .map_err(|_| TransportError::Http(HttpError::Exchange("an unsendable Authorization value".into())))?;
            builder = builder.header(header::AUTHORIZATION, value);
        }
        let request = builder.body(http_body_util::Full::new(body.map(|(b, _)| b).unwrap_or_default())).map_err(bad)?;
        let mut lease = self.pool.acquire().await?;
        let Some(sender) = lease.sender() else { return Err(TransportError::NotWritten.into()) };
        let response = sender.send_request(request).await.map_err(|e| hyper_error(&e))?;
        let (parts, incoming) = response.into_parts();
        let body = read_body(incoming, MAX_BODY).await?;
        lease.release();
        Ok(Fetched { status: parts.status.as_u16(), headers: parts.headers, body })
    }
}
