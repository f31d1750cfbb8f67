//! One request's life, in phases: queue wait for permits ([`acquire`]), registration ([`register`]), the hand-off
//! to the writer's lane ([`enqueue`]), then the first-response and streaming (idle) phase ([`await_answer`]), all
//! under the call's one deadline, with cancellation at every step. Each phase computes its end from the remaining
//! deadline when it starts, so no phase outlives the call.
//!
//! Every exit path releases the permits (RAII) and removes the pending entry ([`PendingGuard`]); a call whose request
//! already reached the server also sends `notifications/cancelled` on the priority lane.

use std::ops::ControlFlow;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::oneshot::error::TryRecvError;
use tokio::sync::{OwnedSemaphorePermit, TryAcquireError, mpsc, oneshot};
use tokio::time::{Instant, Sleep, sleep_until};

use super::options::{Bounded, CallOptions, Lane};
use super::pending::{Answer, Entry, ProgressSignal, Reply};
use super::stats::Counters;
use super::{Connection, Outbound, Outgoing, Shared};
use crate::cancel::CancelToken;
use crate::error::{CallError, LocalError, TransportError};
use crate::jsonrpc::{DecodeError, ErrorCode, Message, MetaRequest, Payload, Request};
use crate::mcp::logging::{LogLevel, META_LOG_LEVEL};
use crate::mcp::{CallToolResult, CancelledParams, method};
use crate::observe::Event;

/// One request as a caller hands it to the connection.
struct Ask<'a> {
    method: &'a str,
    params: Option<Value>,
    form: Form,
}

/// How the caller takes the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// Raw, for the caller to parse into the shape it expects.
    Raw,
    /// A `tools/call` result as a [`CallToolResult`]: the reader may parse it as it reads the frame.
    ToolResult,
}

impl Connection {
    /// Sends a request and waits for its result under the phased timeouts.
    ///
    /// `tools/call` requests get a progress token (the request id) so progress can keep a long call alive.
    pub async fn request(&self, method: &str, params: Option<Value>, opts: CallOptions) -> Result<Value, CallError> {
        let started = Instant::now();
        let opts = opts.bounded(|| started, self.shared().config.call_deadline);
        self.request_bounded(method, params, opts, started).await
    }

    /// [`Connection::request`] of a call whose deadline is resolved already. `started` is when it was made.
    pub(crate) async fn request_bounded(
        &self,
        method: &str,
        params: Option<Value>,
        opts: Bounded,
        started: Instant,
    ) -> Result<Value, CallError> {
        let ask = Ask { method, params, form: Form::Raw };
        let result = self.exchange(ask, opts, started).await?.into_payload()?;
        result.to_value().map_err(|e| CallError::MalformedResponse(DecodeError::NotJson(e.to_string()).to_string()))
    }

    /// [`Connection::request`], with the result left raw for the caller to parse into the shape it expects (one parse
    /// instead of text → `Value` → typed).
    pub async fn request_payload(
        &self,
        method: &str,
        params: Option<Value>,
        opts: CallOptions,
    ) -> Result<Payload, CallError> {
        let started = Instant::now();
        let opts = opts.bounded(|| started, self.shared().config.call_deadline);
        self.exchange(Ask { method, params, form: Form::Raw }, opts, started).await?.into_payload()
    }

    /// A `tools/call` with these params, its result parsed as a [`CallToolResult`]: on a newline-delimited stream,
    /// usually as the reader reads the frame (`mcp/call_frame.rs`), so the result is read once rather than scanned
    /// for its end and then parsed.
    pub async fn call_tool_result(&self, params: Value, opts: CallOptions) -> Result<CallToolResult, CallError> {
        let started = Instant::now();
        let opts = opts.bounded(|| started, self.shared().config.call_deadline);
        self.call_tool_result_bounded(params, opts, started).await
    }

    /// [`Connection::call_tool_result`] of a call whose deadline is resolved already (a client's tool call).
    pub(crate) async fn call_tool_result_bounded(
        &self,
        params: Value,
        opts: Bounded,
        started: Instant,
    ) -> Result<CallToolResult, CallError> {
        let ask = Ask { method: method::TOOLS_CALL, params: Some(params), form: Form::ToolResult };
        match self.exchange(ask, opts, started).await? {
            Answer::Call(result) => Ok(result),
            Answer::Raw(payload) => {
                payload.parse().map_err(|e| CallError::MalformedResponse(format!("tools/call result: {e}")))
            }
        }
    }

    /// One request's exchange, then what every request's end tells the connection and its observer. `started` is
    /// the clock read in the same poll that made the request (nothing is awaited before it is run).
    async fn exchange(&self, ask: Ask<'_>, opts: Bounded, started: Instant) -> Result<Answer, CallError> {
        let shared = self.shared().clone();
        let method = ask.method;
        let stateless = leaves_session(&ask, &opts);
        let result = run(&shared, ask, opts, started).await;
        if let Err(CallError::Protocol(e)) = &result
            && matches!(e.code(), ErrorCode::UNSUPPORTED_PROTOCOL_VERSION | ErrorCode::HEADER_MISMATCH)
        {
            if shared.meta.has_envelope() {
                shared.meta_rejected.store(true, Ordering::Release);
            } else if stateless && shared.meta.set_stateless(None) {
                // The server no longer takes 2026-07-28 requests: later calls stay on the session.
                let code = e.code;
                tracing::info!(server = %shared.server, code, message = %e.message, "a call outside the session was refused; calls stay on it");
            }
        }
        shared.emit(&Event::RequestFinished {
            conn: shared.id,
            method,
            latency: started.elapsed(),
            error: result.as_ref().err(),
        });
        result
    }

    /// Keys merged into the `params._meta` of every request sent from now on, lifecycle and stall probes included
    /// (a key the caller set itself wins); `None` stops it. The 2026-07-28 era's per-request envelope (protocol
    /// version, client capabilities) rides here: see [`crate::session`].
    pub fn set_request_meta(&self, meta: Option<Map<String, Value>>) {
        let shared = self.shared();
        shared.meta.set_envelope(meta);
        shared.meta_rejected.store(false, Ordering::Release);
    }

    /// On a 2025-11-25 connection to a server that speaks 2026-07-28 too: that era's envelope, which a tool call sends
    /// outside the session when nothing can be asked of its caller (its [`CallOptions::asks`](super::CallOptions)
    /// relay says so, or it has none); `None` keeps every call on the session. Over Streamable HTTP, where each
    /// request is its own exchange (see `session::stateless_envelope`).
    pub fn set_stateless_meta(&self, envelope: Option<Map<String, Value>>) {
        self.shared().meta.set_stateless(envelope);
    }

    /// A second layer of per-request `_meta` keys, merged after the era's envelope: the session extension's session
    /// id and authorization ([`crate::session`]). Kept apart from [`Connection::set_request_meta`] because it
    /// changes on every renewal while the envelope stays, and because replacing it must not reset the envelope's
    /// rejection flag. `None` (the default, and always for servers that grant nothing) adds nothing.
    pub fn set_session_meta(&self, meta: Option<Map<String, Value>>) {
        self.shared().meta.set_session(meta);
    }

    /// Whether the server refused that envelope on some request since it was set: -32022 (unsupported protocol
    /// version) or -32020 (header mismatch). The session layer then re-detects the server's era.
    pub fn request_meta_rejected(&self) -> bool {
        self.shared().meta_rejected.load(Ordering::Acquire)
    }
}

/// Whether a request is made outside the connection's session, if the connection has a way out (see
/// [`Connection::set_stateless_meta`]): a tool call whose server could not ask its caller anything.
fn leaves_session(ask: &Ask<'_>, opts: &Bounded) -> bool {
    ask.method == method::TOOLS_CALL && opts.asks.as_ref().is_none_or(|asks| !asks.may_ask())
}

/// A request's phases, in order. `start` is when the request was made; `opts.deadline` bounds every phase.
async fn run(shared: &Arc<Shared>, ask: Ask<'_>, opts: Bounded, start: Instant) -> Result<Answer, CallError> {
    if let Some(e) = shared.pending.closed() {
        return Err(e.into());
    }
    let _permits = acquire(shared, &opts, start).await?;
    let lane = match opts.lane {
        Lane::Priority => &shared.priority,
        Lane::Normal => &shared.normal,
    };
    let deadline = opts.deadline;
    let (mut call, out) = register(shared, ask, opts)?;
    // Nothing awaited since `start` unless a permit was waited for: the clock still reads `start`.
    let sent_at = if _permits.waited { Instant::now() } else { start };
    // One timer for the whole call, moved from phase to phase.
    let mut timer = pin!(sleep_until(deadline));
    if let ControlFlow::Break(end) = enqueue(&mut call, lane, out, sent_at, timer.as_mut()).await {
        return end;
    }
    await_answer(call, sent_at, timer).await
}

/// The in-flight permits a call holds until it ends, and whether it had to wait for one. Fields drop in order: the
/// connection's permit is given back before the client-wide one, as the reverse of taking them.
struct Permits {
    _local: Option<OwnedSemaphorePermit>,
    _global: Option<OwnedSemaphorePermit>,
    waited: bool,
}

/// Phase: queue wait for the global permit, then this connection's (always in that order: no deadlock). Why it
/// exists: a server is sent at most its `max_in_flight` (and the client at most its shared limit), and a caller waits
/// for room at most `queue_wait`.
///
/// Priority-lane requests (lifecycle, ping) skip the permits: they are bounded by their lane's capacity, and a ping
/// must get through exactly when tool calls have used every permit. A free permit is taken at once, as the phase
/// would on its first poll, without setting up the phase's timer.
async fn acquire(shared: &Shared, opts: &Bounded, start: Instant) -> Result<Permits, CallError> {
    let mut permits = Permits { _local: None, _global: None, waited: false };
    if opts.lane != Lane::Normal {
        return Ok(permits);
    }
    let config = &shared.config;
    // No token: nothing can cancel the call, and nothing is allocated or locked to watch for it.
    let cancel = opts.cancel.as_ref();
    let queue_end = start + config.queue_wait;
    let queue_timeout = || CallError::Local(LocalError::QueueTimeout(config.queue_wait));
    if let Some(limit) = &shared.global {
        permits._global = Some(match limit.try_acquire() {
            Some(permit) => permit,
            None => {
                permits.waited = true;
                Box::pin(phase(cancel, opts.deadline, queue_end, queue_timeout(), limit.acquire())).await?
            }
        });
    }
    let local = match shared.permits.clone().try_acquire_owned() {
        Err(TryAcquireError::NoPermits) => {
            permits.waited = true;
            let acquire = shared.permits.clone().acquire_owned();
            Box::pin(phase(cancel, opts.deadline, queue_end, queue_timeout(), acquire)).await?.map_err(|_| ())
        }
        taken => taken.map_err(|_| ()),
    };
    permits._local = Some(local.map_err(|_| CallError::Transport(TransportError::Shutdown))?);
    Ok(permits)
}

/// A registered call: what its later phases watch, and the guard that takes it out of the pending table on every
/// exit but a delivered reply.
struct Registered<'a> {
    shared: &'a Arc<Shared>,
    guard: PendingGuard<'a>,
    rx: oneshot::Receiver<Reply>,
    signal: Arc<ProgressSignal>,
    opts: Bounded,
}

/// Phase: the call gets its id and its place in the pending table, where the reader finds it, and its request is
/// built for the writer. Why before the hand-off: a reply can only be matched to a call the table already holds.
fn register<'a>(
    shared: &'a Arc<Shared>,
    ask: Ask<'_>,
    mut opts: Bounded,
) -> Result<(Registered<'a>, Outgoing), CallError> {
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    let stateless = leaves_session(&ask, &opts);
    let (tx, rx) = oneshot::channel();
    let signal = Arc::new(ProgressSignal::default());
    let call = ask.form == Form::ToolResult;
    // The progress sender lives in the entry, which the reader feeds.
    let logs = opts.logs.take();
    let level = logs.as_ref().map(|l| l.level);
    let entry = Entry {
        tx,
        call,
        written: false,
        progress: opts.progress.take(),
        logs: logs.map(|l| l.tx),
        asks: opts.asks.take(),
        signal: signal.clone(),
    };
    shared.pending.register(id, entry)?;
    let guard = PendingGuard { shared, id, armed: true };
    let token = (ask.method == method::TOOLS_CALL).then_some(id);
    // The sink merges the connection's `_meta` layers into the params as it encodes them (`MetaRequest`).
    let mut params = ask.params;
    if let Some(level) = level {
        ask_for_logs(&mut params, level);
    }
    if let Some(extra) = &opts.params
        && let Some(Value::Object(params)) = params.as_mut()
    {
        for (k, v) in extra.iter() {
            params.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    if let Some(meta) = opts.meta.as_ref().and_then(|keys| Some((keys, request_meta(&mut params)?))) {
        meta.0.merge_into(meta.1);
    }
    let request = Request { id: id.into(), method: ask.method.to_owned(), params };
    let meta = shared.meta.of_request(stateless);
    let on_behalf_of = opts.on_behalf_of.clone();
    let out = Outgoing {
        msg: Outbound::Request(MetaRequest { request, progress_token: token, meta, on_behalf_of }),
        call: Some(id),
    };
    Ok((Registered { shared, guard, rx, signal, opts }, out))
}

/// Puts the level a call asks its log messages at in its `params._meta`: how a 2026-07-28 server learns it (one of
/// 2025-11-25 ignores the key and keeps its session's level).
fn ask_for_logs(params: &mut Option<Value>, level: LogLevel) {
    if let Some(meta) = request_meta(params) {
        meta.insert(META_LOG_LEVEL.to_owned(), Value::from(level.as_str()));
    }
}

/// The request's `params._meta`, made when absent; `None` when `params` or `_meta` is there but not an object (left
/// as the caller sent it, for the server to refuse).
fn request_meta(params: &mut Option<Value>) -> Option<&mut Map<String, Value>> {
    let params = params.get_or_insert_with(|| Value::Object(Map::new())).as_object_mut()?;
    params.entry("_meta").or_insert_with(|| Value::Object(Map::new())).as_object_mut()
}

/// How the hand-off of a request to its lane ended.
enum LaneWait {
    Reply(Option<Reply>),
    Cancelled,
    Deadline,
    /// The request went into the lane (`false`: the lane is closed).
    Sent(bool),
}

/// Phase: the request goes into its lane for the writer. Why a phase: the writer may be blocked on a stalled stream
/// and the lane full, and that wait must still end with the call (a reply, a cancellation, the deadline).
///
/// The usual case is decided without waiting: nothing has answered, cancelled or timed the call out, and the lane has
/// room. That is what [`wait_for_lane`]'s select would decide on its first poll, without its timer and its boxed
/// future; every other case is left to the select itself.
async fn enqueue(
    call: &mut Registered<'_>,
    lane: &mpsc::Sender<Outgoing>,
    out: Outgoing,
    sent_at: Instant,
    timer: Pin<&mut Sleep>,
) -> ControlFlow<Result<Answer, CallError>> {
    let undecided = !call.opts.cancel.as_ref().is_some_and(CancelToken::is_cancelled) && sent_at < call.opts.deadline;
    let handed = match call.rx.try_recv() {
        Ok(reply) => LaneWait::Reply(Some(reply)),
        Err(TryRecvError::Closed) => LaneWait::Reply(None),
        Err(TryRecvError::Empty) if undecided && sent_directly(call.shared, &out) => LaneWait::Sent(true),
        Err(TryRecvError::Empty) if undecided => match lane.try_send(out) {
            Ok(()) => LaneWait::Sent(true),
            Err(TrySendError::Closed(_)) => LaneWait::Sent(false),
            Err(TrySendError::Full(out)) => wait_for_lane(call, lane, out, timer).await,
        },
        Err(TryRecvError::Empty) => wait_for_lane(call, lane, out, timer).await,
    };
    let shared = call.shared;
    let cancel = call.opts.cancel.as_ref();
    ControlFlow::Break(match handed {
        LaneWait::Sent(true) => return ControlFlow::Continue(()),
        LaneWait::Reply(reply) => call.guard.delivered(reply),
        LaneWait::Cancelled => Err(call.guard.cancelled(cancel)),
        LaneWait::Deadline => Err(call.guard.abandoned(LocalError::DeadlineExceeded.into())),
        LaneWait::Sent(false) => Err(call.guard.abandoned(closed_reason(shared).into())),
    })
}

/// Sends a request the transport takes without the writer (see `MessageSink::direct_requests`), recorded as
/// written first as the writer records what it writes: a failure from here on may have reached the server.
fn sent_directly(shared: &Shared, out: &Outgoing) -> bool {
    let (Some(direct), Outbound::Request(request), Some(id)) = (&shared.direct, &out.msg, out.call) else {
        return false;
    };
    if !direct.takes(request) || !shared.pending.mark_written(id) {
        return false;
    }
    direct.send(request);
    Counters::bump(&shared.counters.sent);
    true
}

/// The wait for room in a full lane (or the select's first poll when the call was decided before the hand-off). It
/// still watches the reply channel, so a connection failure reaches this call at once, with the connection's own
/// reason. Boxed: this wait is rare, and its send future would otherwise enlarge every call's future.
async fn wait_for_lane(
    call: &mut Registered<'_>,
    lane: &mpsc::Sender<Outgoing>,
    out: Outgoing,
    mut timer: Pin<&mut Sleep>,
) -> LaneWait {
    let cancel = call.opts.cancel.as_ref();
    let rx = &mut call.rx;
    Box::pin(async {
        tokio::select! {
            biased;
            reply = rx => LaneWait::Reply(reply.ok()),
            _ = cancelled(cancel) => LaneWait::Cancelled,
            _ = &mut timer => LaneWait::Deadline,
            sent = lane.send(out) => LaneWait::Sent(sent.is_ok()),
        }
    })
    .await
}

/// Phase: first response (the response itself, or a first progress event), then stream idle: once progress has
/// arrived, the call may stay silent for `stream_idle` after the latest progress event. Why the phases differ: a
/// server that has shown progress is working, and may take long; one that has said nothing may be dead.
async fn await_answer(
    mut call: Registered<'_>,
    sent_at: Instant,
    mut timer: Pin<&mut Sleep>,
) -> Result<Answer, CallError> {
    let shared = call.shared;
    let config = &shared.config;
    let (deadline, cancel) = (call.opts.deadline, call.opts.cancel.as_ref());
    let first = call.opts.first_response.unwrap_or(config.first_response);
    // A tool call also looks at the stream `probe_after` into its wait (see `look_at_stream`). Lifecycle requests do
    // not: the probe is one of them, and a handshake talks to a peer that may not have spoken yet.
    let mut look_at = config.probe_after.filter(|_| call.opts.lane == Lane::Normal).map(|after| sent_at + after);
    loop {
        let progress_at = match call.signal.last.load(Ordering::Relaxed) {
            0 => None,
            n => Some(shared.epoch + Duration::from_nanos(n)),
        };
        let phase_end = match progress_at {
            Some(at) => at + config.stream_idle,
            None => sent_at + first,
        };
        let wake = look_at.filter(|_| progress_at.is_none()).map_or(phase_end, |at| at.min(phase_end));
        timer.as_mut().reset(wake.min(deadline));
        tokio::select! {
            biased;
            reply = &mut call.rx => return call.guard.delivered(reply.ok()),
            _ = cancelled(cancel) => return Err(call.guard.cancelled(cancel)),
            // Progress moves the phase end: recompute it.
            _ = call.signal.notify.notified() => continue,
            _ = &mut timer => {}
        }
        let now = Instant::now();
        // Nothing at all arrived on this connection since we sent: the stream may be dead (turmoil never
        // retransmits a dropped segment; a middlebox that lost its state black-holes a real one). Probe it without
        // making this caller wait for the verdict.
        let last_rx = shared.last_rx.load(Ordering::Relaxed);
        let heard_at = shared.epoch + Duration::from_nanos(last_rx);
        let silent = progress_at.is_none() && (last_rx == 0 || heard_at < sent_at);
        if now >= deadline {
            // Also when the caller's deadline ended the wait: with deadlines no longer than `first_response`, no
            // call would ever reach the phase's end, a dead stream would never be probed, and every later call on
            // it would time out for as long as the connection lived. The connection itself must have been silent
            // for a whole `first_response` of its configuration (not the call's own, which a handshake's short
            // probe sets), so a young connection is left alone.
            if silent && now.saturating_duration_since(heard_at) >= config.first_response {
                spawn_stall_probe(shared.clone(), now.saturating_duration_since(heard_at));
            }
            return Err(call.guard.abandoned(LocalError::DeadlineExceeded.into()));
        }
        if look_at.is_some_and(|at| now >= at) {
            look_at = None;
            look_at_stream(shared, silent && last_rx != 0, now.saturating_duration_since(heard_at));
        }
        if now < phase_end {
            continue;
        }
        if progress_at.is_some() {
            return Err(call.guard.abandoned(LocalError::IdleTimeout(config.stream_idle).into()));
        }
        if silent {
            spawn_stall_probe(shared.clone(), first);
        }
        return Err(call.guard.abandoned(LocalError::FirstResponseTimeout(first).into()));
    }
}

/// A stream that answered before and has said nothing since this request was written (`suspect`) is probed now,
/// `probe_after` into the call's wait, not at the end of its first-response phase: a stream that lost a request (a
/// partition, a black hole) loses every later one too, and until it is found dead, every call sent on it waits out
/// its whole timeout and holds its in-flight slots. A live server answers the ping at once, however slow its tools;
/// a stream that never spoke is left to the phase's end (a child process may be slow to start).
fn look_at_stream(shared: &Arc<Shared>, suspect: bool, silent_for: Duration) {
    if suspect {
        spawn_stall_probe(shared.clone(), silent_for);
    }
}

/// Resolves when `cancel` is cancelled; never without a token.
async fn cancelled(cancel: Option<&CancelToken>) {
    match cancel {
        Some(cancel) => cancel.cancelled().await,
        None => std::future::pending().await,
    }
}

/// Why the connection is gone, for a caller who found out from a closed channel.
fn closed_reason(shared: &Shared) -> TransportError {
    shared.pending.closed().unwrap_or(TransportError::Shutdown)
}

/// Runs `fut` until it completes, the caller cancels, or the phase (capped by the deadline) ends.
async fn phase<F: Future>(
    cancel: Option<&CancelToken>,
    deadline: Instant,
    phase_end: Instant,
    on_timeout: CallError,
    fut: F,
) -> Result<F::Output, CallError> {
    let end = phase_end.min(deadline);
    tokio::select! {
        biased;
        out = fut => Ok(out),
        _ = cancelled(cancel) => Err(LocalError::Cancelled(reason(cancel)).into()),
        _ = sleep_until(end) => Err(if end >= deadline { LocalError::DeadlineExceeded.into() } else { on_timeout }),
    }
}

/// Why a call was cancelled (only ever asked once `cancelled` resolved, so there is a token).
fn reason(cancel: Option<&CancelToken>) -> String {
    cancel.map_or_else(|| "cancelled".to_owned(), CancelToken::reason)
}

/// One `ping` on the priority lane, at most one at a time per connection. If it is not answered within
/// `stall_probe`, the stream is declared dead and every pending call fails at once.
fn spawn_stall_probe(shared: Arc<Shared>, silent_for: Duration) {
    if shared.probing.swap(true, Ordering::AcqRel) {
        return;
    }
    tokio::spawn(async move {
        let now = Instant::now();
        let probe = shared.config.stall_probe;
        let opts = CallOptions { lane: Lane::Priority, first_response: Some(probe), ..CallOptions::default() };
        let ask = Ask { method: method::PING, params: None, form: Form::Raw };
        // Go through `run` directly: a probe must not spawn probes of its own, which the `probing` flag ensures.
        let outcome = run(&shared, ask, opts.until(now + probe), now).await;
        if matches!(outcome, Err(CallError::Local(_))) {
            shared.fail(TransportError::Stalled(silent_for + shared.config.stall_probe));
        }
        shared.probing.store(false, Ordering::Release);
    });
}

/// Removes the pending entry on every exit that is not a delivered reply, including the caller dropping the future.
struct PendingGuard<'a> {
    shared: &'a Shared,
    id: i64,
    armed: bool,
}

impl PendingGuard<'_> {
    /// The reply arrived (the entry is already gone). `fail_all` always sends before dropping a sender, so a closed
    /// channel is a shutdown race: report the connection's reason.
    /// `None`: the channel closed without a reply.
    fn delivered(&mut self, reply: Option<Reply>) -> Result<Answer, CallError> {
        self.armed = false;
        reply.unwrap_or_else(|| Err(closed_reason(self.shared).into()))
    }

    fn cancelled(&mut self, cancel: Option<&CancelToken>) -> CallError {
        self.abandoned(LocalError::Cancelled(reason(cancel)).into())
    }

    /// Abandons the call and returns `err` for the caller.
    fn abandoned(&mut self, err: CallError) -> CallError {
        let reason = match &err {
            CallError::Local(LocalError::Cancelled(r)) => r.clone(),
            other => other.to_string(),
        };
        self.abandon(&reason);
        err
    }

    fn abandon(&mut self, reason: &str) {
        if !std::mem::replace(&mut self.armed, false) {
            return;
        }
        let shared = self.shared;
        // Only a request the server has seen needs a cancellation; an unwritten one is skipped by the writer.
        if shared.pending.remove(self.id) == Some(true) && shared.pending.closed().is_none() {
            let params = CancelledParams { request_id: self.id.into(), reason: Some(reason.to_owned()) };
            let msg = Message::notification(method::CANCELLED, serde_json::to_value(params).ok());
            if shared.try_send_priority(msg) {
                shared.emit(&Event::CancelSent { conn: shared.id });
            } else {
                Counters::bump(&shared.counters.cancels_dropped);
            }
        }
    }
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.abandon("request abandoned by the caller");
    }
}
