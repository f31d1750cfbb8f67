/// Standard JSON-RPC error codes and the MCP-specific ones we act on.
///
/// Kept as an open newtype rather than an enum: servers send codes we have never heard of, and those must survive a
/// round trip unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ErrorCode(pub i64);

impl ErrorCode {
    pub const PARSE_ERROR: ErrorCode = ErrorCode(-32700);
    pub const INVALID_REQUEST: ErrorCode = ErrorCode(-32600);
    pub const METHOD_NOT_FOUND: ErrorCode = ErrorCode(-32601);
    pub const INVALID_PARAMS: ErrorCode = ErrorCode(-32602);
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(-32603);
    /// MCP: the request was cancelled (some servers answer a cancelled request with this).
    pub const REQUEST_CANCELLED: ErrorCode = ErrorCode(-32800);
    /// MCP: a resource or session was not found.
    pub const RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(-32002);
    /// MCP 2026-07-28: HTTP headers disagree with the request body (or are missing). Never seen on stdio.
    pub const HEADER_MISMATCH: ErrorCode = ErrorCode(-32020);
    /// MCP 2026-07-28: the request needs a client capability its `_meta` did not declare; `data.requiredCapabilities`
    /// names it.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: ErrorCode = ErrorCode(-32021);
    /// MCP 2026-07-28: the request's protocol version is not one the server serves; `data.supported` lists those it
    /// does, `data.requested` echoes ours.
    pub const UNSUPPORTED_PROTOCOL_VERSION: ErrorCode = ErrorCode(-32022);
    /// The request named a session the server no longer has (expired, dropped, never granted). The TypeScript SDK's
    /// streamable-HTTP server answers "Session not found" with this code; our session extension uses it on every
    /// transport (see [`crate::session`]). The server rejects such a request before running it.
    pub const SESSION_NOT_FOUND: ErrorCode = ErrorCode(-32001);
    /// The credential's scheme is not one the server accepts (`MCP_AUTH_MISMATCH`);
    /// `data.accepted` lists the schemes it does. Rejected before running the request.
    pub const AUTH_MISMATCH: ErrorCode = ErrorCode(-32003);

    /// Human name for logs and reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::PARSE_ERROR => "parse error",
            Self::INVALID_REQUEST => "invalid request",
            Self::METHOD_NOT_FOUND => "method not found",
            Self::INVALID_PARAMS => "invalid params",
            Self::INTERNAL_ERROR => "internal error",
            Self::REQUEST_CANCELLED => "request cancelled",
            Self::RESOURCE_NOT_FOUND => "resource not found",
            Self::HEADER_MISMATCH => "header mismatch",
            Self::MISSING_REQUIRED_CLIENT_CAPABILITY => "missing required client capability",
            Self::UNSUPPORTED_PROTOCOL_VERSION => "unsupported protocol version",
            Self::SESSION_NOT_FOUND => "session not found",
            Self::AUTH_MISMATCH => "auth mismatch",
            ErrorCode(-32099..=-32000) => "server error",
            _ => "application error",
        }
    }
}
