//! A tool call on the current session: its one deadline (resolved by [`McpClient::call_tool`] for a direct call, by
//! the gateway for a gateway call), the idempotency cache, the schema checks, the resend on a new session and the
//! schema-drift re-check.

use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::time::Instant;

use super::{McpClient, Session};
use crate::capabilities::{self, Capabilities, Signal};
use crate::conn::{Bounded, CallOptions, Lane};
use crate::error::{CallError, LocalError};
use crate::mcp::{CallToolResult, method};
use crate::observe::SessionEvent;
use crate::schema::ArgumentError;
use crate::session::{self, Era, GatewayProfile};

impl McpClient {
    /// Calls a tool. Arguments must be a JSON object; the tool must be one the server lists. A tool-level failure
    /// comes back as `Ok` with `is_error: true`, as MCP specifies.
    ///
    /// Arguments are checked against the tool's `inputSchema` first: invalid ones fail with
    /// [`LocalError::InvalidArguments`] (naming the JSON pointer) and nothing is sent. A successful result's
    /// `structuredContent` is checked against the `outputSchema`; a mismatch is [`CallError::MalformedResponse`].
    /// Both checks need the crate's `schema` feature (on by default); without it only "arguments are an object" is
    /// checked.
    ///
    /// When the outcome signals schema drift (see the table in `capabilities/drift.rs`), the tool list is fetched again and a call the
    /// server rejected is re-checked against the fresh schema: resent once if it passes, failed locally if not.
    /// One deadline covers every attempt.
    ///
    /// Sessions (default profile): a call answered session-not-found, or `MCP_AUTH_MISMATCH`, is sent once more on a
    /// new session (one re-handshake, shared by concurrent callers). With no credential matching the server's
    /// schemes the call fails with [`CallError::Auth`] and nothing is sent. The naive profile returns both server
    /// errors as they are.
    ///
    /// The call's deadline is `opts.deadline`, else the connection config's `call_deadline` from now: a direct call
    /// enters here, so this is where its one deadline is resolved.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        opts: CallOptions,
    ) -> Result<CallToolResult, CallError> {
        let opts = opts.bounded(Instant::now, self.config.connection.call_deadline);
        self.call_bounded(name, &arguments, opts).await
    }

    /// [`McpClient::call_tool`] of a call whose deadline was resolved where it entered (a gateway call).
    pub(crate) async fn call_bounded(
        &self,
        name: &str,
        arguments: &Value,
        opts: Bounded,
    ) -> Result<CallToolResult, CallError> {
        if !arguments.is_object() {
            return Err(LocalError::InvalidArguments(ArgumentError::not_an_object(name, arguments)).into());
        }
        let mut attempt = 0;
        loop {
            let start = self.begin_record();
            // The call's deadline bounds getting a session too: a replica that died mid-run makes every dial hang
            // until the connect timeout, and the reconnect loop (retries with backoff) could otherwise hold a call
            // many times its deadline.
            // A ready session needs no timer: `timeout_at` polls its future first, so it would return it too.
            let session = match self.ready_session(Instant::now) {
                Some(s) => Ok(s),
                None => tokio::time::timeout_at(opts.deadline, Box::pin(self.live_session()))
                    .await
                    .unwrap_or_else(|_| Err(LocalError::DeadlineExceeded.into())),
            };
            let session = match session {
                Ok(s) => s,
                Err(e) => {
                    self.record(start, name, arguments, Err(&e), attempt);
                    return Err(e);
                }
            };
            if attempt > 0 {
                self.events.emit(SessionEvent::Resent);
            }
            let outcome = self.call_on(&session, name, arguments, opts.clone()).await;
            match &outcome {
                Ok(Answer { cached: true, .. }) => {}
                _ => self.record(start, name, arguments, outcome.as_ref().map(|a| &a.result), attempt),
            }
            match outcome {
                Ok(answer) => return Ok(answer.result),
                Err(e) => self.resend_after(&session, e, attempt)?,
            }
            attempt += 1;
        }
    }

    /// Decides whether a failed call is sent again (`Ok`) on a new session, or fails with the returned error.
    ///
    /// Only two server answers qualify, and only once per call: session-not-found and auth mismatch. Both are raised
    /// before the tool runs (see [`crate::session::ext`]), so resending is safe for any tool, read-only or not. A call
    /// that failed for any other reason after it was written (a transport failure, a timeout) may have run, and is
    /// not resent here.
    fn resend_after(&self, session: &Session, e: CallError, attempt: u32) -> Result<(), CallError> {
        let CallError::Protocol(obj) = &e else {
            return Err(e);
        };
        let naive = self.config.profile == GatewayProfile::Naive;
        if session::is_session_not_found(obj) {
            self.events.emit(SessionEvent::NotFound);
            if naive || attempt > 0 {
                return Err(e);
            }
        } else if let Some(accepted) = session::auth_mismatch_accepted(obj) {
            self.events.emit(SessionEvent::AuthMismatch);
            if naive {
                return Err(e);
            }
            if attempt > 0 {
                return Err(session::mismatch(&accepted, &self.lifecycle.credentials).into());
            }
        } else {
            return Err(e);
        }
        // The next `session()` re-handshakes: a new connection, a new grant, the schemes declared again.
        session.lease.mark_dead();
        Ok(())
    }

    /// One attempt of [`McpClient::call_tool`] on `session`: from the idempotency cache if it holds the answer, else
    /// sent (with the schema-drift re-check).
    async fn call_on(
        &self,
        session: &Session,
        name: &str,
        arguments: &Value,
        opts: Bounded,
    ) -> Result<Answer, CallError> {
        // The tool list this call needs is fetched within what is left of its deadline.
        let caps = match self.ready_capabilities(session, Instant::now)? {
            Some(caps) => caps,
            None => Box::pin(self.capabilities_within(session, opts.deadline)).await?,
        };
        if let Some(result) = caps.tool(name).and_then(|tool| self.cached(tool.tool(), arguments)) {
            return Ok(Answer { result, cached: true });
        }
        let result = self.send_with_drift_check(session, caps, name, arguments, opts).await?;
        Ok(Answer { result, cached: false })
    }

    /// Sends against `caps`; when the outcome signals schema drift, fetches the tool list again and re-checks.
    async fn send_with_drift_check(
        &self,
        session: &Session,
        caps: Arc<Capabilities>,
        name: &str,
        arguments: &Value,
        opts: Bounded,
    ) -> Result<CallToolResult, CallError> {
        let first = self.send_checked(session, &caps, name, arguments, opts.clone()).await;
        if self.config.profile == GatewayProfile::Naive {
            return first;
        }
        let Some(signal) = capabilities::signal(&first, &caps) else {
            return first;
        };
        // Boxed: the drift path is rare, and unboxed it would enlarge every call's future by its re-fetch.
        Box::pin(self.recheck(session, caps, signal, name, arguments, opts)).await.unwrap_or(first)
    }

    /// The drift path of [`McpClient::send_with_drift_check`]: fetches the tool list again and, when the server
    /// rejected the call and the fresh schema differs, checks and sends it once more. `None`: the first outcome
    /// stands.
    async fn recheck(
        &self,
        session: &Session,
        caps: Arc<Capabilities>,
        Signal { reason, server }: Signal,
        name: &str,
        arguments: &Value,
        opts: Bounded,
    ) -> Option<Result<CallToolResult, CallError>> {
        let (fresh, fetched) =
            match session.tools.refetch_after(self.fetch_ctx(session, opts.deadline), &caps, server).await {
                Ok(got) => got,
                Err(e) => return Some(Err(e)),
            };
        if fetched {
            self.refetched(reason);
        }
        if !reason.rejected_call() || fresh.hash() == caps.hash() {
            return None;
        }
        let again = self.send_checked(session, &fresh, name, arguments, opts).await;
        self.drift.after_recheck(&again);
        Some(again)
    }

    /// Checks the arguments against `caps`, sends, and checks the result's structured content.
    async fn send_checked(
        &self,
        session: &Session,
        caps: &Capabilities,
        name: &str,
        arguments: &Value,
        opts: Bounded,
    ) -> Result<CallToolResult, CallError> {
        let tool = caps.tool(name).ok_or_else(|| LocalError::UnknownTool(name.to_owned()))?;
        // The schema checks are the `schema` feature's (jsonschema): these two gated statements are the whole seam.
        // Built without it, the arguments go out as given and any result is accepted, and neither
        // `ToolEntry::schemas` nor `ToolSchemas` exists, so no caller can take a call for a checked one.
        #[cfg(feature = "schema")]
        let schemas = {
            let schemas = tool.schemas().map_err(|e| LocalError::UnusableSchema(e.clone()))?;
            schemas.validate_arguments(arguments).map_err(LocalError::InvalidArguments)?;
            schemas
        };
        // Built by hand: `json!` would copy `arguments` by serializing it into a new tree, not by cloning it.
        let mut params = Map::with_capacity(2);
        params.insert("name".to_owned(), Value::String(name.to_owned()));
        params.insert("arguments".to_owned(), arguments.clone());
        let params = Value::Object(params);
        let result = session.conn.call_tool_result_bounded(params, opts, Instant::now()).await?;
        #[cfg(feature = "schema")]
        schemas.validate_result(&result).map_err(|e| CallError::MalformedResponse(e.to_string()))?;
        self.remember(tool.tool(), arguments, &result);
        Ok(result)
    }

    /// Round-trip time of one `ping` on the priority lane (`server/discover` in the modern era, which has no ping).
    pub async fn ping(&self) -> Result<std::time::Duration, CallError> {
        let session = self.live_session().await?;
        let started = Instant::now();
        // A ping enters here: its deadline is the connection config's `call_deadline` from now.
        let opts = CallOptions { lane: Lane::Priority, ..CallOptions::default() };
        let opts = opts.bounded(|| started, self.config.connection.call_deadline);
        let method = if session.era == Era::Modern { session::DISCOVER } else { method::PING };
        session.conn.request_bounded(method, None, opts, started).await?;
        Ok(started.elapsed())
    }
}

/// A tool result, and whether it came from the idempotency cache instead of the server.
struct Answer {
    result: CallToolResult,
    cached: bool,
}
