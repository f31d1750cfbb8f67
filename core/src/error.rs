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
//!
//! Across that table runs one more question, for a gateway with another replica to try: could the server have
//! received the request ([`CallError::delivery`])? A request that never left this process (the connection was
//! refused or timed out, the session could not be established, the pool had no connection, a proxy in front answered
//! 503 with nothing behind it) can go to another replica whatever the tool does, as nginx's `proxy_next_upstream
//! error` and gRPC's transparent retry do. Anything after the request was written may have been delivered, and only
//! an idempotent tool may then be sent again.

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
    /// The connection closed before the request was written (a pooled connection the server had closed, with no
    /// fresh one to take its place): the server cannot have seen the request.
    #[error("the connection closed before the request was written")]
    NotWritten,
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
    /// 503 with an empty body: what a proxy or load balancer in front answers when it has no server to send the
    /// request to (an MCP server that is overloaded says so with `Retry-After` or a JSON-RPC body).
    #[error("HTTP 503 with no body: no server behind the address took the request")]
    NoServer,
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
    /// The arguments fail the tool's `inputSchema` (with the `schema` feature), or are not an object (always); the
    /// error names the JSON pointer of each failing value.
    #[error("invalid arguments for {0}")]
    InvalidArguments(ArgumentError),
    #[error("unknown tool {0:?}")]
    UnknownTool(String),
    /// The tool's schema cannot be compiled, so its calls cannot be checked and are not sent. Only a build with the
    /// `schema` feature compiles schemas, so only it returns this.
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
    /// No access token for the server could be had (its authorization server is down, slow or refusing us):
    /// nothing was sent. Every replica shares the authorization server, so this is no replica's fault.
    #[error("no access token for the server: {0}")]
    TokenUnavailable(String),
    /// The server refused a fresh token too (HTTP 401 twice): our client's grant or scopes are wrong for it.
    #[error("the server refused our access token (HTTP 401), a fresh one as well: {0}")]
    TokenRefused(String),
}

fn schemes(list: &[AuthScheme]) -> String {
    list.iter().map(<&str>::from).collect::<Vec<_>>().join(", ")
}

/// Whether the server could have received a failed request (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum Delivery {
    /// The request never left this process, or was refused before any server read it: sending it to another
    /// replica cannot run the tool twice.
    NeverSent,
    /// The request was written, or may have been: the tool may have run.
    MaybeDelivered,
    /// The server answered (an error, or something malformed), or the call was refused here for its own sake
    /// (its arguments, its deadline, its cancellation): another replica would not change that.
    Answered,
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

    /// Whether the server could have received the request (see [`Delivery`]).
    pub fn delivery(&self) -> Delivery {
        match self {
            CallError::Protocol(_) | CallError::MalformedResponse(_) => Delivery::Answered,
            // The session was never established (refused, timed out, no version in common) or no credential fits:
            // the tools/call itself was not sent.
            CallError::Lifecycle(_) | CallError::Auth(_) => Delivery::NeverSent,
            CallError::Transport(e) => match e {
                TransportError::ConnectFailed(_)
                | TransportError::ConnectTimeout(_)
                | TransportError::SpawnFailed(_)
                | TransportError::Config(_)
                | TransportError::HandshakeTimeout(_)
                | TransportError::NotWritten
                | TransportError::Http(HttpError::NoServer | HttpError::Tls(_)) => Delivery::NeverSent,
                _ => Delivery::MaybeDelivered,
            },
            CallError::Local(e) => match e {
                // Waiting for a slot or a queue place: nothing was written.
                LocalError::QueueTimeout(_) | LocalError::QueueFull | LocalError::UnknownTool(_) => Delivery::NeverSent,
                LocalError::FirstResponseTimeout(_) | LocalError::IdleTimeout(_) => Delivery::MaybeDelivered,
                LocalError::DeadlineExceeded
                | LocalError::Cancelled(_)
                | LocalError::InvalidArguments(_)
                | LocalError::UnusableSchema(_) => Delivery::Answered,
            },
        }
    }

    /// Whether this failure says the replica is not there at all (its address refuses or swallows connections, or
    /// a proxy in front has nothing behind it), so that a gateway stops routing to it at once and probes it back,
    /// rather than counting failures first (Finagle's `FailFast`, Envoy's `connect-failure`).
    pub fn unreachable(&self) -> bool {
        matches!(
            self,
            CallError::Transport(
                TransportError::ConnectFailed(_)
                    | TransportError::ConnectTimeout(_)
                    | TransportError::Http(HttpError::NoServer)
            )
        )
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

        assert_eq!(transport.delivery(), Delivery::MaybeDelivered, "closed mid-call: maybe delivered");
        let refused = CallError::Transport(TransportError::ConnectFailed("127.0.0.1:9: refused".into()));
        assert_eq!(refused.delivery(), Delivery::NeverSent);
        assert!(refused.unreachable() && !refused.retry_allowed(false), "failover is the gateway's call, not a retry");
        let no_server = CallError::Transport(TransportError::Http(HttpError::NoServer));
        assert!(no_server.unreachable() && no_server.delivery() == Delivery::NeverSent);
        assert_eq!(exchange.delivery(), Delivery::MaybeDelivered, "a 502 may come after the upstream read it");
        assert!(!exchange.unreachable());
        assert_eq!(CallError::Transport(TransportError::NotWritten).delivery(), Delivery::NeverSent);
        assert_eq!(protocol.delivery(), Delivery::Answered);
        let first = CallError::Local(LocalError::FirstResponseTimeout(Duration::from_secs(5)));
        assert_eq!(first.delivery(), Delivery::MaybeDelivered);
        assert_eq!(CallError::Local(LocalError::QueueFull).delivery(), Delivery::NeverSent);
        assert_eq!(CallError::Local(LocalError::DeadlineExceeded).delivery(), Delivery::Answered);

        let auth = CallError::Auth(AuthError::Mismatch { accepted: vec![AuthScheme::Jwt], offered: vec![] });
        assert_eq!((auth.class(), auth.label()), (ErrorClass::Auth, "auth"));
        assert!(!auth.retry_allowed(true) && !auth.closes_connection());
        assert_eq!(
            auth.to_string(),
            "no configured credential for the server's auth schemes: it accepts [mcp-jwt], we have []"
        );
    }
}
