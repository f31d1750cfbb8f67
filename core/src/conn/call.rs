//! One request's life: queue wait for permits, the write, the first-response phase, the streaming (idle) phase, all
//! under one overall deadline, with cancellation at every step. Each phase computes its end from the remaining
//! deadline when it starts, so no phase outlives the call.
//!
//! Every exit path releases the permits (RAII) and removes the pending entry ([`PendingGuard`]); a call whose request
//! already reached the server also sends `notifications/cancelled` on the priority lane.

use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::oneshot::error::TryRecvError;
use tokio::sync::{TryAcquireError, mpsc, oneshot};
use tokio::time::{Instant, sleep_until};

use super::pending::{Answer, Entry, ProgressSignal, Reply};
use super::stats::Counters;
use super::{Connection, Outbound, Outgoing, Shared};
use crate::cancel::CancelToken;
use crate::error::{CallError, LocalError, TransportError};
use crate::jsonrpc::{DecodeError, ErrorCode, Message, MetaLayers, MetaRequest, Payload, Request};
use crate::mcp::{CallToolResult, CancelledParams, ProgressParams, method};
use crate::observe::Event;

/// Which writer lane a request takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lane {
    /// Lifecycle, ping, list calls: ahead of tool calls.
    Priority,
    #[default]
    Normal,
}

/// Per-call options. All optional; the connection's config supplies the phases.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Overall deadline covering every phase. Default: now + `call_deadline`.
    pub deadline: Option<Instant>,
    pub cancel: Option<CancelToken>,
    pub lane: Lane,
    /// Receives the call's progress notifications (lossy when full). Progress also resets the idle timer whether
    /// or not anyone listens.
    pub progress: Option<mpsc::Sender<ProgressParams>>,
    /// Overrides the connection's first-response timeout for this call.
    pub first_response: Option<Duration>,
}

impl Connection {
    /// Sends a request and waits for its result under the phased timeouts.
    ///
    /// `tools/call` requests get a progress token (the request id) so progress can keep a long call alive.
    pub async fn request(&self, method: &str, params: Option<Value>, opts: CallOptions) -> Result<Value, CallError> {
        let result = self.request_payload(method, params, opts).await?;
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
        self.exchange(method, params, opts, false).await?.into_payload()
    }

    /// A `tools/call` with these params, its result parsed as a [`CallToolResult`]: on a newline-delimited stream,
    /// usually as the reader reads the frame (`mcp/call_frame.rs`), so the result is read once rather than scanned
    /// for its end and then parsed.
    pub async fn call_tool_result(&self, params: Value, opts: CallOptions) -> Result<CallToolResult, CallError> {
        match self.exchange(method::TOOLS_CALL, Some(params), opts, true).await? {
            Answer::Call(result) => Ok(result),
            Answer::Raw(payload) => {
                payload.parse().map_err(|e| CallError::MalformedResponse(format!("tools/call result: {e}")))
            }
        }
    }

    /// One request's exchange (`call`: a `tools/call` whose result may come parsed), then what every request's end
    /// tells the connection and its observer.
    async fn exchange(
        &self,
        method: &str,
        params: Option<Value>,
        opts: CallOptions,
        call: bool,
    ) -> Result<Answer, CallError> {
        let shared = self.shared().clone();
        let started = Instant::now();
        let result = run(&shared, (method, params, call), opts, started).await;
        if let Err(CallError::Protocol(e)) = &result
            && matches!(e.code(), ErrorCode::UNSUPPORTED_PROTOCOL_VERSION | ErrorCode::HEADER_MISMATCH)
            && meta_layers(&shared).layers()[ENVELOPE].is_some()
        {
            shared.meta_rejected.store(true, Ordering::Release);
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
        set_layer(shared, ENVELOPE, meta);
        shared.meta_rejected.store(false, Ordering::Release);
    }

    /// A second layer of per-request `_meta` keys, merged after the era's envelope: the session extension's session
    /// id and authorization ([`crate::session`]). Kept apart from [`Connection::set_request_meta`] because it
    /// changes on every renewal while the envelope stays, and because replacing it must not reset the envelope's
    /// rejection flag. `None` (the default, and always for servers that grant nothing) adds nothing.
    pub fn set_session_meta(&self, meta: Option<Map<String, Value>>) {
        set_layer(self.shared(), SESSION, meta);
    }

    /// Whether the server refused that envelope on some request since it was set: -32022 (unsupported protocol
    /// version) or -32020 (header mismatch). The session layer then re-detects the server's era.
    pub fn request_meta_rejected(&self) -> bool {
        self.shared().meta_rejected.load(Ordering::Acquire)
    }
}

/// The indexes of the two `_meta` layers in [`MetaLayers`], in order of precedence.
const ENVELOPE: usize = 0;
const SESSION: usize = 1;

fn meta_layers(shared: &Shared) -> Arc<MetaLayers> {
    shared.meta.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Replaces one layer; the merge is made here, once, rather than per request.
fn set_layer(shared: &Shared, index: usize, meta: Option<Map<String, Value>>) {
    let layer = meta.map(Arc::new);
    let mut layers = shared.meta.lock().unwrap_or_else(|p| p.into_inner());
    *layers = Arc::new(layers.with(index, layer));
}

async fn run(
    shared: &Arc<Shared>,
    (method, params, call): (&str, Option<Value>, bool),
    opts: CallOptions,
    start: Instant,
) -> Result<Answer, CallError> {
    let config = &shared.config;
    let deadline = opts.deadline.unwrap_or(start + config.call_deadline);
    // No token: nothing can cancel the call, and nothing is allocated or locked to watch for it.
    let cancel = opts.cancel.as_ref();
    if let Some(e) = shared.pending.closed() {
        return Err(e.into());
    }

    // Phase: queue wait for the global permit, then this connection's (always in that order: no deadlock).
    // Priority-lane requests (lifecycle, ping) skip the permits: they are bounded by their lane's capacity, and a
    // ping must get through exactly when tool calls have used every permit. A free permit is taken at once, as the
    // phase would on its first poll, without setting up the phase's timer.
    let queue_end = start + config.queue_wait;
    let queue_timeout = || CallError::Local(LocalError::QueueTimeout(config.queue_wait));
    let (mut _global, mut _local) = (None, None);
    let mut waited = false;
    if opts.lane == Lane::Normal {
        if let Some(limit) = &shared.global {
            _global = Some(match limit.try_acquire() {
                Some(permit) => permit,
                None => {
                    waited = true;
                    Box::pin(phase(cancel, deadline, queue_end, queue_timeout(), limit.acquire())).await?
                }
            });
        }
        let local = match shared.permits.clone().try_acquire_owned() {
            Err(TryAcquireError::NoPermits) => {
                waited = true;
                let acquire = shared.permits.clone().acquire_owned();
                Box::pin(phase(cancel, deadline, queue_end, queue_timeout(), acquire)).await?.map_err(|_| ())
            }
            taken => taken.map_err(|_| ()),
        };
        _local = Some(local.map_err(|_| CallError::Transport(TransportError::Shutdown))?);
    }

    // Register, then hand to the writer.
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    let (tx, mut rx) = oneshot::channel();
    let signal = Arc::new(ProgressSignal::default());
    let entry = Entry { tx, call, written: false, progress: opts.progress, signal: signal.clone() };
    shared.pending.register(id, entry)?;
    let mut guard = PendingGuard { shared, id, armed: true };
    let token = (method == method::TOOLS_CALL).then_some(id);
    // The sink merges the connection's `_meta` layers into the params as it encodes them (`MetaRequest`).
    let request = Request { id: id.into(), method: method.to_owned(), params };
    let meta = meta_layers(shared);
    let out = Outgoing { msg: Outbound::Request(MetaRequest { request, progress_token: token, meta }), call: Some(id) };
    let lane = match opts.lane {
        Lane::Priority => &shared.priority,
        Lane::Normal => &shared.normal,
    };
    // Nothing awaited since `start` unless a permit was waited for: the clock still reads `start`.
    let sent_at = if waited { Instant::now() } else { start };
    // One timer for the whole call, moved from phase to phase.
    let mut timer = pin!(sleep_until(deadline));
    // The lane has room (the usual case): the same outcome as the select below on its first poll, which would see
    // no reply, no cancellation and no deadline yet, then a send that completes at once; without its timer.
    let unsent = match rx.try_recv() {
        Ok(reply) => return guard.delivered(Some(reply)),
        Err(TryRecvError::Closed) => return guard.delivered(None),
        Err(TryRecvError::Empty) if cancel.is_some_and(CancelToken::is_cancelled) || sent_at >= deadline => Some(out),
        Err(TryRecvError::Empty) => match lane.try_send(out) {
            Ok(()) => None,
            Err(TrySendError::Closed(_)) => return Err(guard.abandoned(closed_reason(shared).into())),
            Err(TrySendError::Full(out)) => Some(out),
        },
    };
    if let Some(out) = unsent {
        // Waiting for lane space (the writer may be blocked on a stalled stream) still watches the reply channel, so
        // a connection failure reaches this call at once, with the connection's own reason. Boxed: this wait is
        // rare, and its send future would otherwise enlarge every call's future.
        let waited = Box::pin(async {
            tokio::select! {
                biased;
                reply = &mut rx => LaneWait::Reply(reply.ok()),
                _ = cancelled(cancel) => LaneWait::Cancelled,
                _ = &mut timer => LaneWait::Deadline,
                sent = lane.send(out) => LaneWait::Sent(sent.is_ok()),
            }
        });
        match waited.await {
            LaneWait::Reply(reply) => return guard.delivered(reply),
            LaneWait::Cancelled => return Err(guard.cancelled(cancel)),
            LaneWait::Deadline => return Err(guard.abandoned(LocalError::DeadlineExceeded.into())),
            LaneWait::Sent(false) => return Err(guard.abandoned(closed_reason(shared).into())),
            LaneWait::Sent(true) => {}
        }
    }

    // Phase: first response (the response itself, or a first progress event), then stream idle: once progress has
    // arrived, the call may stay silent for `stream_idle` after the latest progress event.
    let first = opts.first_response.unwrap_or(config.first_response);
    // A tool call also looks at the stream `probe_after` into its wait (see below). Lifecycle requests do not: the
    // probe is one of them, and a handshake talks to a peer that may not have spoken yet.
    let mut look_at = config.probe_after.filter(|_| opts.lane == Lane::Normal).map(|after| sent_at + after);
    loop {
        let progress_at = match signal.last.load(Ordering::Relaxed) {
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
            reply = &mut rx => return guard.delivered(reply.ok()),
            _ = cancelled(cancel) => return Err(guard.cancelled(cancel)),
            // Progress moves the phase end: recompute it.
            _ = signal.notify.notified() => continue,
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
            return Err(guard.abandoned(LocalError::DeadlineExceeded.into()));
        }
        if look_at.is_some_and(|at| now >= at) {
            look_at = None;
            // A stream that answered before and has said nothing since this request was written is probed now, not
            // at the end of the call's first-response phase: a stream that lost a request (a partition, a black hole)
            // loses every later one too, and until it is found dead, every call sent on it waits out its whole
            // timeout and holds its in-flight slots. A live server answers the ping at once, however slow its
            // tools; a stream that never spoke is left to the phase's end (a child process may be slow to start).
            if silent && last_rx != 0 {
                spawn_stall_probe(shared.clone(), now.saturating_duration_since(heard_at));
            }
        }
        if now < phase_end {
            continue;
        }
        if progress_at.is_some() {
            return Err(guard.abandoned(LocalError::IdleTimeout(config.stream_idle).into()));
        }
        if silent {
            spawn_stall_probe(shared.clone(), first);
        }
        return Err(guard.abandoned(LocalError::FirstResponseTimeout(first).into()));
    }
}

/// How a wait for room in a full lane ended.
enum LaneWait {
    Reply(Option<Reply>),
    Cancelled,
    Deadline,
    /// The request went into the lane (`false`: the lane is closed).
    Sent(bool),
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
        let opts = CallOptions {
            lane: Lane::Priority,
            first_response: Some(shared.config.stall_probe),
            deadline: Some(now + shared.config.stall_probe),
            ..CallOptions::default()
        };
        // Go through `run` directly: a probe must not spawn probes of its own, which the `probing` flag ensures.
        let outcome = run(&shared, (method::PING, None, false), opts, now).await;
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
