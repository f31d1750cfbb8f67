//! Error classes. Every error says whether its connection closes and whether a retry is safe,
//! so retry logic never has to parse text.
//!
//! | class     | closes the connection          | retry                                 |
//! |-----------|--------------------------------|---------------------------------------|
//! | protocol  | never                          | no                                    |
//! | lifecycle | yes                            | up to 3 times with backoff            |
//! | transport | yes; every pending call fails  | only idempotent calls                 |
//! | local     | only a stalled stream          | idempotent calls, unless cancelled or out of deadline |
//! | auth      | never                          | never: a credential does not start matching by itself |

use std::fmt;
use std::time::Duration;

use crate::credential::AuthScheme;
use crate::jsonrpc::ErrorObject;
use crate::schema::{ArgumentError, SchemaError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum ErrorClass {
    Protocol,
    Lifecycle,
    Transport,
    Local,
    /// No configured credential is accepted by the server ([`AuthError`]).
    Auth,
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.into())
    }
}

/// The byte stream failed or can no longer be trusted. Cloneable: one failure is delivered to every pending call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    #[error("{op} failed: {message}")]
    Io { op: &'static str, kind: std::io::ErrorKind, message: String },
    #[error("peer closed the connection")]
    Closed,
    #[error("connect timed out after {0:?}")]
    ConnectTimeout(Duration),
    #[error("could not connect: {0}")]
    ConnectFailed(String),
    /// The server process could not be started at all (not found, not executable): retrying cannot help.
    #[error("could not start the server: {0}")]
    SpawnFailed(String),
    /// The transport cannot be built from its configuration (a Streamable HTTP endpoint's TLS roots or server
    /// name): nothing was sent, and retrying the same configuration cannot help.
    #[error("transport misconfigured: {0}")]
    Config(String),
    #[error("handshake timed out after {0:?}")]
    HandshakeTimeout(Duration),
    #[error("peer sent a frame larger than the {max}-byte limit")]
    FrameTooLarge { max: usize },
    #[error("stream stalled: nothing received for {0:?} after a request was written")]
    Stalled(Duration),
    #[error("connection shut down locally")]
    Shutdown,
    /// One Streamable HTTP exchange failed at the HTTP level (see [`HttpError`]).
    #[error("HTTP: {0}")]
    Http(HttpError),
}

/// What went wrong in one Streamable HTTP exchange, below JSON-RPC. The transport turns HTTP answers that carry a
/// JSON-RPC meaning (session gone, retry-after, a JSON-RPC error body, a 4xx) into JSON-RPC errors instead; these
/// are the rest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    /// A status with no JSON-RPC meaning: 5xx without `Retry-After`, an unexpected 1xx or 3xx.
    #[error("server answered HTTP {status}")]
    Status { status: u16 },
    #[error("unexpected content type {0:?}: expected application/json or text/event-stream")]
    ContentType(String),
    #[error("more than {max} redirects (a redirect loop?)")]
    TooManyRedirects { max: u32 },
    /// A redirect this transport does not follow: another origin (the dialer reaches one host), or not 307/308.
    #[error("redirect not followed: {0}")]
    Redirect(String),
    /// The response head broke a bound: too many headers, too large a head, one value over its limit.
    #[error("response head refused: {0}")]
    Head(String),
    #[error("the response stream outlived its {0:?} lifetime")]
    StreamLifetime(std::time::Duration),
    #[error("the SSE stream was cut and could not be resumed ({0})")]
    Resume(String),
    #[error("TLS: {0}")]
    Tls(String),
    /// Any other failure of the HTTP exchange (hyper's error text).
    #[error("{0}")]
    Exchange(String),
}

impl TransportError {
    pub fn io(op: &'static str, e: &std::io::Error) -> Self {
        if matches!(
            e.kind(),
            std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::UnexpectedEof
        ) {
            return TransportError::Closed;
        }
        TransportError::Io { op, kind: e.kind(), message: e.to_string() }
    }
}

/// The session could not be established.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LifecycleError {
    #[error("initialize was refused: {} ({})", .0.message, .0.code)]
    InitializeRefused(ErrorObject),
    #[error("no common protocol version: we speak {ours:?}, the server answered {theirs:?}")]
    VersionMismatch { ours: Vec<String>, theirs: String },
    #[error("malformed initialize result: {0}")]
    MalformedInitialize(String),
    #[error("the connection is not initialized")]
    NotInitialized,
}

/// Decided on this side without the server's word.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocalError {
    #[error("no in-flight permit within the {0:?} queue wait")]
    QueueTimeout(Duration),
    #[error("the send queue is full")]
    QueueFull,
    #[error("no response within the {0:?} first-response timeout")]
    FirstResponseTimeout(Duration),
    #[error("no progress for {0:?} (stream idle timeout)")]
    IdleTimeout(Duration),
    #[error("the call's deadline passed")]
    DeadlineExceeded,
    #[error("cancelled: {0}")]
    Cancelled(String),
    /// The arguments fail the tool's `inputSchema`; the error names the JSON pointer of each failing value.
    #[error("invalid arguments for {0}")]
    InvalidArguments(ArgumentError),
    #[error("unknown tool {0:?}")]
    UnknownTool(String),
    /// The tool's schema cannot be compiled, so its calls cannot be checked and are not sent.
    #[error("{0}")]
    UnusableSchema(SchemaError),
}

/// Auth-scheme negotiation failed (see `session::ext`). Names schemes only, never a credential.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// None of our credentials is for a scheme the server accepts (declared at connect, or named by its
    /// `MCP_AUTH_MISMATCH` answer after it rotated schemes). Nothing was sent with a wrong credential.
    #[error("no configured credential for the server's auth schemes: it accepts [{}], we have [{}]", schemes(.accepted), schemes(.offered))]
    Mismatch { accepted: Vec<AuthScheme>, offered: Vec<AuthScheme> },
}

fn schemes(list: &[AuthScheme]) -> String {
    list.iter().map(<&str>::from).collect::<Vec<_>>().join(", ")
}

/// How one call ended when it did not succeed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CallError {
    /// The server answered with a JSON-RPC error.
    #[error("server error {}: {}", .0.code, .0.message)]
    Protocol(ErrorObject),
    /// The server answered, but not in a shape we can use.
    #[error("malformed response: {0}")]
    MalformedResponse(String),
    #[error(transparent)]
    Lifecycle(#[from] LifecycleError),
    #[error(transparent)]
    Transport(#[from] TransportError),
    #[error(transparent)]
    Local(#[from] LocalError),
    #[error(transparent)]
    Auth(#[from] AuthError),
}

impl CallError {
    pub fn class(&self) -> ErrorClass {
        match self {
            CallError::Protocol(_) | CallError::MalformedResponse(_) => ErrorClass::Protocol,
            CallError::Lifecycle(_) => ErrorClass::Lifecycle,
            CallError::Transport(_) => ErrorClass::Transport,
            CallError::Local(_) => ErrorClass::Local,
            CallError::Auth(_) => ErrorClass::Auth,
        }
    }

    /// Whether the connection this happened on is closed because of it.
    pub fn closes_connection(&self) -> bool {
        match self {
            CallError::Protocol(_) | CallError::MalformedResponse(_) => false,
            // An HTTP exchange that failed (a status, a cut stream, a broken bound) fails its call only: the
            // transport's other exchanges and its session go on.
            CallError::Transport(TransportError::Http(_)) => false,
            CallError::Lifecycle(_) | CallError::Transport(_) => true,
            CallError::Local(_) | CallError::Auth(_) => false,
        }
    }

    /// Whether repeating the call could help, given whether the operation is idempotent.
    pub fn retry_allowed(&self, idempotent: bool) -> bool {
        match self {
            CallError::Protocol(_) | CallError::MalformedResponse(_) | CallError::Auth(_) => false,
            CallError::Lifecycle(e) => !matches!(e, LifecycleError::VersionMismatch { .. }),
            CallError::Transport(TransportError::SpawnFailed(_) | TransportError::Config(_)) => false,
            CallError::Transport(_) => idempotent,
            CallError::Local(e) => match e {
                LocalError::QueueTimeout(_)
                | LocalError::QueueFull
                | LocalError::FirstResponseTimeout(_)
                | LocalError::IdleTimeout(_) => idempotent,
                LocalError::DeadlineExceeded
                | LocalError::Cancelled(_)
                | LocalError::InvalidArguments(_)
                | LocalError::UnknownTool(_)
                | LocalError::UnusableSchema(_) => false,
            },
        }
    }

    /// A short stable label for metrics (`protocol`, `transport`, ...).
    pub fn label(&self) -> &'static str {
        self.class().into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::ErrorCode;

    #[test]
    fn class_table_holds() {
        let protocol = CallError::Protocol(ErrorObject::new(ErrorCode::INVALID_PARAMS, "bad"));
        assert_eq!(protocol.class(), ErrorClass::Protocol);
        assert!(!protocol.closes_connection());
        assert!(!protocol.retry_allowed(true));

        let transport = CallError::Transport(TransportError::Closed);
        assert!(transport.closes_connection());
        let exchange = CallError::Transport(TransportError::Http(HttpError::Status { status: 502 }));
        assert!(!exchange.closes_connection() && exchange.retry_allowed(true));
        assert!(transport.retry_allowed(true));
        assert!(!transport.retry_allowed(false));

        let config = CallError::Transport(TransportError::Config("bad root".into()));
        assert!(!config.retry_allowed(true), "a configuration does not fix itself");

        let lifecycle = CallError::Lifecycle(LifecycleError::NotInitialized);
        assert!(lifecycle.closes_connection());
        assert!(lifecycle.retry_allowed(false));

        let cancelled = CallError::Local(LocalError::Cancelled("user".into()));
        assert!(!cancelled.retry_allowed(true));
        let queue = CallError::Local(LocalError::QueueTimeout(Duration::from_secs(1)));
        assert!(queue.retry_allowed(true) && !queue.closes_connection());

        let auth = CallError::Auth(AuthError::Mismatch { accepted: vec![AuthScheme::Jwt], offered: vec![] });
        assert_eq!((auth.class(), auth.label()), (ErrorClass::Auth, "auth"));
        assert!(!auth.retry_allowed(true) && !auth.closes_connection());
        assert_eq!(
            auth.to_string(),
            "no configured credential for the server's auth schemes: it accepts [mcp-jwt], we have []"
        );
    }
}
