//! Getting a session: dialing (connect timeout), the handshake, lifecycle retries with backoff, one dial shared by
//! every caller that queued behind it, and the session's renewal and close.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use tokio::time::{Instant, sleep, timeout};

use super::ready::Unusable;
use super::{ListChanged, McpClient, Session, WatchSlot};
use crate::capabilities::ToolCache;
use crate::conn::{Connection, ConnectionConfig, ConnectionParts, NotificationHandler};
use crate::error::{CallError, TransportError};
use crate::mcp::method;
use crate::observe::{ConnId, Event, SessionEvent};
use crate::session::{self, Era, EraMode, SessionGrant, SessionLease};
use crate::transport::{HttpContext, PoolGauge, ResponseHook, http_transport, line_transport};

impl McpClient {
    /// The current session, connecting (with lifecycle retries and backoff) if there is none, it has failed, or its
    /// lease is inside the re-handshake margin (or the server said it is gone). A session merely due for renewal is
    /// returned at once, the renewal running in the background.
    ///
    /// While the last connect failed and another caller is dialing again, fails at once with that failure.
    pub async fn session(&self) -> Result<Session, CallError> {
        self.live_session().await.map(|s| Session::clone(&s))
    }

    /// [`McpClient::session`], shared.
    pub(super) async fn live_session(&self) -> Result<Arc<Session>, CallError> {
        if let Some(s) = self.ready_session(Instant::now) {
            return Ok(s);
        }
        let mut live = match self.live.try_lock() {
            Some(live) => live,
            None => {
                let (failures, last) = self.connect_failures();
                if let Some(e) = last {
                    return Err(e);
                }
                let live = self.live.lock().await;
                // The dial we queued behind failed: its failure is ours too (one dial per wave of callers).
                if let (now, Some(e)) = self.connect_failures()
                    && now != failures
                {
                    return Err(e);
                }
                live
            }
        };
        if let Some(s) = live.get().cloned() {
            match self.usable(s, Instant::now) {
                Ok(s) => return Ok(s),
                Err(Unusable::Expiring) => {
                    // Dropping our handle closes the old connection once its in-flight calls let go of it.
                    self.events.emit(SessionEvent::Rehandshake);
                    live.take();
                }
                Err(Unusable::Closed) => {}
            }
        }
        if live.take().is_some_and(|s| s.conn.request_meta_rejected()) {
            // The server refused our modern envelope (-32022/-32020): the cached era is stale. Detect it again on a
            // new connection; the old one closes when its last in-flight call lets go of it.
            tracing::info!(server = %self.server, "protocol version refused; detecting the era again");
            self.eras.invalidate(&self.server);
        }
        let mut attempt = 0;
        loop {
            let connected = self.connect_once().await;
            {
                let mut unreachable = self.unreachable.lock().unwrap_or_else(PoisonError::into_inner);
                unreachable.0 += u64::from(connected.is_err());
                unreachable.1 = connected.as_ref().err().cloned();
            }
            match connected {
                Ok(s) => {
                    let s = Arc::new(s);
                    live.set(s.clone());
                    return Ok(s);
                }
                Err(e) if attempt < self.config.lifecycle_retries && e.retry_allowed(true) => {
                    let wait = self.config.backoff.delay(attempt, &self.rng);
                    tracing::debug!(server = %self.server, attempt, ?wait, error = %e, "connect failed; backing off");
                    attempt += 1;
                    sleep(wait).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// (failed connects so far, the last connect's failure if it failed).
    fn connect_failures(&self) -> (u64, Option<CallError>) {
        self.unreachable.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    async fn connect_once(&self) -> Result<Session, CallError> {
        let connect = self.config.connect_timeout;
        let tools = Arc::new(ToolCache::default());
        let id = ConnId(self.conn_seq.fetch_add(1, Ordering::Relaxed));
        let parts = |guard, config| ConnectionParts {
            id,
            server: self.server.clone(),
            config,
            observer: self.observer.clone(),
            global: self.global.clone(),
            on_notification: Some(notification_handler(
                tools.clone(),
                self.list_changed.clone(),
                self.resource_updated.clone(),
            )),
            guard,
        };
        let conn = match &self.http {
            None => {
                let stream = timeout(connect, self.dialer.dial())
                    .await
                    .map_err(|_| TransportError::ConnectTimeout(connect))??;
                let (sink, source) = line_transport(stream.reader, stream.writer, self.config.max_frame);
                let mut config = self.config.connection.clone();
                if stream.guard.is_some() {
                    // A child process over pipes (the guard owns it): pipes never lose bytes, so a silent child is
                    // busy or hung, which its calls' own timeouts cover. An early probe would only queue behind a
                    // server that runs one request at a time and kill the connection under its slow call.
                    config.probe_after = None;
                }
                Connection::start(sink, source, parts(stream.guard, config))
            }
            Some(endpoint) => {
                // Nothing is dialed yet: the transport's pool dials per connection, on the first request.
                let (observer, server) = (self.observer.clone(), self.server.clone());
                let gauge: PoolGauge =
                    Arc::new(move |pool| observer.event(&Event::HttpPool { conn: id, server: &server, pool }));
                let (observer, server) = (self.observer.clone(), self.server.clone());
                let on_response: ResponseHook =
                    Arc::new(move |head| observer.event(&Event::HttpResponse { conn: id, server: &server, head }));
                let cx = HttpContext {
                    dialer: self.dialer.clone(),
                    connect_timeout: connect,
                    clock: self.clock.clone(),
                    gauge: Some(gauge),
                    on_response: Some(on_response),
                };
                // Not ConnectFailed: a configuration that cannot be built is refused as it is, never retried.
                let (sink, source) = http_transport(endpoint.clone(), cx)
                    .map_err(|e| TransportError::Config(format!("{}: {e}", endpoint.url())))?;
                // No early probe: each request is its own exchange on a pooled connection, so one lost exchange
                // says nothing of the next, and a ping waits for a pool slot like any request: a slow server's full
                // pool would look like a dead stream.
                let config = ConnectionConfig { probe_after: None, ..self.config.connection.clone() };
                Connection::start(sink, source, parts(None, config))
            }
        };
        match session::establish(&conn, &self.lifecycle, &self.eras, &self.server).await {
            Ok(est) => {
                let meta = est.init.extra.get("_meta");
                let lease = Arc::new(SessionLease::from_result_meta(meta, Instant::now(), &self.lifecycle.credentials));
                if lease.grant().is_some() {
                    self.events.emit(SessionEvent::Granted);
                }
                match self.take_resumed_lease() {
                    Some(saved) => lease.install(saved, &conn),
                    None => lease.apply(&conn),
                }
                if lease.auth().check().is_err() {
                    self.events.emit(SessionEvent::AuthMismatch);
                }
                // Only where a call can leave the session: over HTTP each request is its own exchange, while over a
                // stream a dual-era server would take the whole connection for a session's.
                let dual =
                    self.http.is_some() && self.lifecycle.era_mode == EraMode::HandshakeFirst && est.era == Era::Legacy;
                if dual {
                    conn.set_stateless_meta(session::stateless_envelope(&conn, &self.lifecycle).await);
                }
                Ok(Session { conn, init: Arc::new(est.init), era: est.era, tools, lease })
            }
            Err(e) => {
                self.observer.event(&Event::HandshakeFailed { server: &self.server, error: &e });
                conn.shutdown();
                Err(e)
            }
        }
    }

    /// Renews the current session now (connecting first if needed), as `mcpstorm diagnose` forces it: the fresh
    /// grant, or `None` for a server that grants no sessions. A refusal marks the session for replacement, as a
    /// background renewal's would.
    pub async fn renew_session(&self) -> Result<Option<SessionGrant>, CallError> {
        let session = self.live_session().await?;
        if session.lease.grant().is_none() {
            return Ok(None);
        }
        session.lease.renew(&session.conn, &self.events).await.map(Some)
    }

    /// Starts the session's renewal in the background unless one is already running.
    pub(super) fn spawn_renewal(&self, session: &Session) {
        if !session.lease.start_renewal() {
            return;
        }
        let (lease, conn, events) = (session.lease.clone(), session.conn.clone(), self.events.clone());
        tokio::spawn(async move { lease.renew_in_background(&conn, &events).await });
    }

    /// Closes the current connection (pending calls fail with `Shutdown`); the next call reconnects.
    pub async fn close(&self) {
        if let Some(s) = self.live.lock().await.take() {
            s.conn.shutdown();
        }
    }
}

fn notification_handler(tools: Arc<ToolCache>, hook: Option<ListChanged>, watch: WatchSlot) -> NotificationHandler {
    Arc::new(move |n| {
        if n.method == method::TOOLS_LIST_CHANGED {
            tools.mark_stale();
            if let Some(hook) = &hook {
                (hook.0)();
            }
        } else if n.method == method::RESOURCES_UPDATED
            && let Some(uri) = n.params.as_ref().and_then(|p| p.get("uri")).and_then(serde_json::Value::as_str)
        {
            let hook = watch.read().unwrap_or_else(PoisonError::into_inner).clone();
            if let Some(hook) = hook {
                (hook.0)(uri);
            }
        } else {
            tracing::trace!(method = %n.method, "server notification");
        }
        Box::pin(async {})
    })
}
