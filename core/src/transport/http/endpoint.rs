//! Where a Streamable HTTP server is and how far we trust it: the MCP endpoint's URL, extra headers (secrets), the
//! connection pool's size and queue, the limits on what the server may send, and extra TLS roots.

use std::sync::Arc;
use std::time::Duration;

use hyper::Uri;
use hyper::header::{HeaderName, HeaderValue};

use super::authorize::Authorizer;
use crate::credential::Secret;
use crate::rt::TcpDialer;
use crate::transport::DEFAULT_MAX_FRAME;

/// Why an [`HttpEndpoint`] could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpConfigError {
    #[error("not a usable MCP endpoint URL: {0}")]
    Url(String),
    #[error("header {0:?}: not a valid HTTP header name and value")]
    Header(String),
    #[error("no certificate in the PEM given")]
    NoCertificate,
    #[error("root certificate refused: {0}")]
    Root(String),
}

/// Bounds on what one server may make this client hold or wait for, each with its default.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpLimits {
    /// Largest JSON response body (default 16 MiB, as the NDJSON frame).
    pub max_body: usize,
    /// Largest SSE line or event data (default 16 MiB).
    pub max_event: usize,
    /// Most response headers (default 64).
    pub max_headers: usize,
    /// Largest response head, status line and headers together (default 64 KiB).
    pub max_head: usize,
    /// Largest value of a header we keep (`Mcp-Session-Id`) (default 1 KiB).
    pub max_header_value: usize,
    /// Longest one response stream may stay open, a `GET` listening stream before it is reopened (default 10 min).
    pub max_stream_lifetime: Duration,
    /// Same-origin 307/308 redirects followed per request (default 3).
    pub max_redirects: u32,
    /// Attempts to resume a cut SSE stream with `Last-Event-ID` (default 3).
    pub max_resumes: u32,
    /// Cap on a stream's `retry:` wait before resuming (default 30 s).
    pub max_retry_wait: Duration,
    /// Cap on a `Retry-After` turned into `retryAfterMs` (default 10 min).
    pub max_retry_after: Duration,
    /// Largest error body read to find a JSON-RPC error in it (default 64 KiB).
    pub max_error_body: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_body: DEFAULT_MAX_FRAME,
            max_event: DEFAULT_MAX_FRAME,
            max_headers: 64,
            max_head: 64 * 1024,
            max_header_value: 1024,
            max_stream_lifetime: Duration::from_secs(600),
            max_redirects: 3,
            max_resumes: 3,
            max_retry_wait: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(600),
            max_error_body: 64 * 1024,
        }
    }
}

/// The keep-alive pool of one upstream: at most `max_connections` open, at most `max_waiting` requests queued for
/// one, each for at most `max_wait`. A full queue fails the request at once with
/// [`LocalError::QueueFull`](crate::LocalError::QueueFull), a wait that runs out with
/// [`LocalError::QueueTimeout`](crate::LocalError::QueueTimeout): the in-flight limit's own overload errors.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolConfig {
    pub max_connections: usize,
    pub max_waiting: usize,
    pub max_wait: Duration,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig { max_connections: 16, max_waiting: 256, max_wait: Duration::from_secs(30) }
    }
}

/// A Streamable HTTP MCP endpoint (both eras: 2025-11-25 with sessions, 2026-07-28 stateless).
///
/// `https` verifies the server against the Mozilla roots (webpki-roots) and any added with
/// [`HttpEndpoint::with_root_pem`], at the wall time of the client's [`Clock`](crate::Clock): give the client a clock
/// anchored to real time ([`McpClient::with_clock`](crate::McpClient::with_clock)).
#[derive(Debug, Clone)]
pub struct HttpEndpoint {
    url: Url,
    /// Sent on every request (e.g. `Authorization`); never printed.
    headers: Vec<(HeaderName, Secret)>,
    pub pool: PoolConfig,
    pub limits: HttpLimits,
    /// Trust the Mozilla roots (default `true`); turn off to trust only the added roots.
    pub webpki_roots: bool,
    /// DER certificates trusted besides (or instead of) the Mozilla roots.
    roots: Vec<Vec<u8>>,
    /// Gets the `Authorization` value of each request (an OAuth client), and hears of the server's 401s.
    authorizer: Option<Arc<dyn Authorizer>>,
}

/// The parts of the endpoint URL a request needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Url {
    pub tls: bool,
    pub host: String,
    pub port: u16,
    /// The `Host` header: host, and port when not the scheme's default.
    pub authority: HeaderValue,
    /// Origin-form request target (`/mcp?x=y`).
    pub target: String,
    /// For messages: never credentials (user info is refused).
    pub display: String,
}

impl HttpEndpoint {
    /// An endpoint at `url` (`http://` or `https://`; user info in the URL is refused, headers carry secrets).
    pub fn new(url: &str) -> Result<Self, HttpConfigError> {
        Ok(HttpEndpoint {
            url: Url::parse(url)?,
            headers: Vec::new(),
            pool: PoolConfig::default(),
            limits: HttpLimits::default(),
            webpki_roots: true,
            roots: Vec::new(),
            authorizer: None,
        })
    }

    /// Every request's `Authorization` comes from `authorizer`; a 401 is told to it, and the request sent once more
    /// with the value it gives then.
    pub fn with_authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.authorizer = Some(authorizer);
        self
    }

    pub(crate) fn authorizer(&self) -> Option<&Arc<dyn Authorizer>> {
        self.authorizer.as_ref()
    }

    /// Adds a header sent on every request, such as `Authorization: Bearer ...`.
    pub fn with_header(mut self, name: &str, value: Secret) -> Result<Self, HttpConfigError> {
        let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| HttpConfigError::Header(name.to_owned()))?;
        HeaderValue::from_str(value.expose()).map_err(|_| HttpConfigError::Header(name.to_owned()))?;
        self.headers.push((header, value));
        Ok(self)
    }

    /// Trusts every certificate in `pem` as a root (e.g. a private CA, or a test's own).
    pub fn with_root_pem(mut self, pem: &[u8]) -> Result<Self, HttpConfigError> {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;
        let mut found = 0;
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| HttpConfigError::Root(e.to_string()))?;
            self.roots.push(cert.to_vec());
            found += 1;
        }
        if found == 0 {
            return Err(HttpConfigError::NoCertificate);
        }
        Ok(self)
    }

    /// Dials the URL's host and port over tokio TCP: the production dialer for this endpoint.
    pub fn tcp_dialer(&self) -> TcpDialer {
        TcpDialer { addr: format!("{}:{}", self.url.host, self.url.port) }
    }

    /// The URL, as given.
    pub fn url(&self) -> &str {
        &self.url.display
    }

    pub(crate) fn parts(&self) -> &Url {
        &self.url
    }

    pub(crate) fn extra_headers(&self) -> &[(HeaderName, Secret)] {
        &self.headers
    }

    pub(crate) fn roots(&self) -> &[Vec<u8>] {
        &self.roots
    }
}

impl Url {
    fn parse(url: &str) -> Result<Url, HttpConfigError> {
        let bad = |why: &str| HttpConfigError::Url(format!("{url:?}: {why}"));
        let uri: Uri = url.parse().map_err(|e: hyper::http::uri::InvalidUri| bad(&e.to_string()))?;
        let tls = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err(bad("the scheme must be http or https")),
        };
        let authority = uri.authority().ok_or_else(|| bad("no host"))?;
        if authority.as_str().contains('@') {
            return Err(bad("credentials in the URL are refused; give them as a header"));
        }
        let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_owned();
        // URL syntax allows hosts (`a!b`) that TLS cannot verify: refused here, before anything is dialed.
        if tls && rustls::pki_types::ServerName::try_from(host.as_str()).is_err() {
            return Err(bad("the host is not a DNS name or IP address that TLS can verify"));
        }
        let port = authority.port_u16().unwrap_or(if tls { 443 } else { 80 });
        let target = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
        let authority = HeaderValue::from_str(authority.as_str()).map_err(|_| bad("host"))?;
        Ok(Url {
            tls,
            host,
            port,
            authority,
            target: if target.is_empty() { "/".into() } else { target },
            display: url.into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls_and_refuses_the_rest() {
        let e = HttpEndpoint::new("https://example.com/mcp?x=1").unwrap();
        let u = e.parts();
        assert_eq!((u.tls, u.host.as_str(), u.port, u.target.as_str()), (true, "example.com", 443, "/mcp?x=1"));
        assert_eq!(e.tcp_dialer().addr, "example.com:443");
        let u = HttpEndpoint::new("http://[::1]:8080").unwrap().url.clone();
        assert_eq!((u.host.as_str(), u.port, u.target.as_str()), ("::1", 8080, "/"));
        assert_eq!(u.authority, "[::1]:8080");
        for bad in ["ftp://x/", "/mcp", "http://user:pw@host/", "not a url", "https://no!such-name/"] {
            assert!(matches!(HttpEndpoint::new(bad), Err(HttpConfigError::Url(_))), "{bad}");
        }
    }

    #[test]
    fn headers_are_checked_and_never_printed() {
        let e = HttpEndpoint::new("http://h/").unwrap().with_header("Authorization", Secret::new("Bearer s3cret"));
        assert!(!format!("{:?}", e.unwrap()).contains("s3cret"));
        let bad = HttpEndpoint::new("http://h/").unwrap().with_header("X-A", Secret::new("a\nb"));
        assert!(matches!(bad, Err(HttpConfigError::Header(_))));
        assert_eq!(
            HttpEndpoint::new("http://h/").unwrap().with_root_pem(b"nope").err(),
            Some(HttpConfigError::NoCertificate)
        );
    }
}
