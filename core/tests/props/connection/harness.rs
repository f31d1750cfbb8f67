//! Runs a script against a real `Connection` and a scripted peer, and checks every call's ending as it goes.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use mcpstorm_core::jsonrpc::{ErrorObject, Message, RequestId, Response};
use mcpstorm_core::mcp::{ProgressParams, method};
use mcpstorm_core::transport::FrameError;
use mcpstorm_core::{CallError, CancelToken, LocalError};
use mcpstorm_core::{CallOptions, Connection, conn::Lane};
use mcpstorm_fake::doubles::peer::{self, Peer};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::ops::{GARBAGE, Op, ProgressTo, Setup, UnknownId};
use crate::HANG;

#[derive(Debug)]
struct Outcome {
    result: Result<Value, CallError>,
    at: Instant,
    /// Progress notifications the call's channel received.
    progress: Vec<ProgressParams>,
}

#[derive(Debug)]
struct CallRec {
    handle: JoinHandle<Outcome>,
    started: Instant,
    deadline: Instant,
    priority: bool,
    token: Option<CancelToken>,
    /// When the test cancelled the token while the call was still running.
    cancelled_at: Option<Instant>,
    /// The request id, once the peer has read the request.
    id: Option<i64>,
    /// Set when the connection failed (peer hang-up, oversize frame, shutdown) while this call was unresolved: when,
    /// and whether the peer's end of the pipe is gone (so a blocked writer is released too).
    outstanding_at_failure: Option<(Instant, bool)>,
    /// Its task was aborted while unresolved.
    aborted: bool,
}

/// What the peer sent for one request id.
#[derive(Debug, Clone, PartialEq)]
enum Answer {
    Result(Instant),
    Error(Instant, i64),
    Malformed(Instant),
    Progress,
}

/// One request the peer read.
#[derive(Debug, Default)]
struct Seen {
    call: Option<usize>,
    answered: bool,
    answers: Vec<Answer>,
}

pub(crate) struct Harness {
    setup: Setup,
    conn: Connection,
    peer: Option<Peer>,
    /// The client closed its side (the peer read end of stream).
    peer_eof: bool,
    /// Whether the peer drains what the client writes.
    reading: bool,
    calls: Vec<CallRec>,
    seen: BTreeMap<i64, Seen>,
    /// Requests the peer sent the client and has not seen answered yet; `server_pings_sent` names the next one.
    server_pings: BTreeSet<String>,
    server_pings_sent: u64,
    cancels_seen: Vec<i64>,
    unknown_sent: u64,
    rejected_sent: u64,
    /// A violation noticed while the script runs (reported after it).
    violation: Option<String>,
}

impl Harness {
    fn fail(&mut self, msg: String) {
        self.violation.get_or_insert(msg);
    }

    /// Lets every task run to quiescence at the current instant (yields never move paused time), reading whatever
    /// the client wrote so its writer is never stuck on a full pipe for long.
    async fn settle(&mut self) {
        for _ in 0..1000 {
            for _ in 0..32 {
                tokio::task::yield_now().await;
            }
            if !self.read_available().await {
                return;
            }
        }
        self.fail("settle: the client never stopped writing".into());
    }

    /// Reads every message already in the pipe without waiting; true if anything was read.
    async fn read_available(&mut self) -> bool {
        let mut any = false;
        loop {
            let Some(peer) = self.peer.as_mut().filter(|_| self.reading && !self.peer_eof) else { return any };
            let next = tokio::select! {
                biased;
                m = peer.recv() => Some(m),
                _ = std::future::ready(()) => None,
            };
            match next {
                None => return any,
                Some(None) => {
                    self.peer_eof = true;
                    return any;
                }
                Some(Some(m)) => {
                    any = true;
                    self.on_client_message(m);
                }
            }
        }
    }

    fn on_client_message(&mut self, m: Result<Message, FrameError>) {
        match m {
            Ok(Message::Request(r)) => {
                let Some(id) = r.id.as_number() else {
                    return self.fail(format!("client sent a non-integer request id: {r:?}"));
                };
                if self.seen.contains_key(&id) {
                    return self.fail(format!("request id {id} reused: {r:?}"));
                }
                let call = r.params.as_ref().and_then(|p| p.get("call")).and_then(Value::as_u64).map(|c| c as usize);
                match call {
                    Some(c) if c < self.calls.len() => {
                        self.calls[c].id = Some(id);
                        if r.method == method::TOOLS_CALL {
                            let token = r.params.as_ref().and_then(|p| p.pointer("/_meta/progressToken"));
                            if token != Some(&json!(id)) {
                                self.fail(format!("tools/call {id} carries progress token {token:?}"));
                            }
                        }
                    }
                    Some(c) => return self.fail(format!("request names call {c}, never started")),
                    None if r.method == method::PING => {} // the stall probe
                    None => return self.fail(format!("unexpected request {r:?}")),
                }
                self.seen.insert(id, Seen { call, ..Seen::default() });
            }
            Ok(Message::Notification(n)) if n.method == method::CANCELLED => {
                let id = n.params.as_ref().and_then(|p| p.get("requestId")).and_then(Value::as_i64);
                match id {
                    Some(id) if self.seen.contains_key(&id) => self.cancels_seen.push(id),
                    _ => self.fail(format!("cancellation for a request the peer never read: {n:?}")),
                }
            }
            Ok(Message::Response(Response { id: Some(RequestId::String(s)), .. })) if self.server_pings.remove(&s) => {}
            // A connection torn down mid-write (local shutdown, or failure while the writer was blocked) may leave a
            // truncated last frame: the writer stops at once rather than wait on a peer that may never read.
            Err(FrameError::Decode(mcpstorm_core::jsonrpc::DecodeError::NotJson(_)))
                if self.conn.closed().is_some() => {}
            other => self.fail(format!("unexpected frame from the client: {other:?}")),
        }
    }

    /// Peer writes happen only while the connection is open: once it failed, the client's end of the pipe goes away
    /// and the scripted peer's writes (which panic on error, as a test helper should) would fail.
    fn writable(&self) -> bool {
        self.peer.is_some() && self.conn.is_open()
    }

    async fn send(&mut self, msg: Message) {
        let Some(peer) = self.peer.as_mut() else { return };
        if tokio::time::timeout(HANG, peer.send(msg)).await.is_err() {
            self.fail("peer write blocked: the client's reader stopped reading".into());
        }
    }

    async fn send_raw(&mut self, bytes: &[u8]) {
        let Some(peer) = self.peer.as_mut() else { return };
        if tokio::time::timeout(HANG, peer.send_raw(bytes)).await.is_err() {
            self.fail("peer raw write blocked: the client's reader stopped reading".into());
        }
    }

    fn unanswered(&self, pick: usize) -> Option<i64> {
        let ids: Vec<i64> = self.seen.iter().filter(|(_, s)| !s.answered).map(|(id, _)| *id).collect();
        (!ids.is_empty()).then(|| ids[pick % ids.len()])
    }

    fn start(&mut self, cancel: bool, deadline_ms: Option<u64>, progress: bool, priority: bool, tool: bool) {
        let i = self.calls.len();
        let now = Instant::now();
        let token = cancel.then(CancelToken::new);
        let deadline = deadline_ms.map(|ms| now + Duration::from_millis(ms));
        let (tx, rx) = if progress {
            let (tx, rx) = mpsc::channel(4);
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        let opts = CallOptions {
            deadline,
            cancel: token.clone(),
            lane: if priority { Lane::Priority } else { Lane::Normal },
            progress: tx,
            first_response: None,
            on_behalf_of: None,
            logs: None,
            asks: None,
            meta: None,
            params: None,
        };
        let conn = self.conn.clone();
        let method_name = if tool { method::TOOLS_CALL } else { "test/echo" };
        let handle = tokio::spawn(async move {
            let mut rx = rx;
            let result = conn.request(method_name, Some(json!({"call": i})), opts).await;
            let at = Instant::now();
            let mut progress = Vec::new();
            if let Some(rx) = rx.as_mut() {
                while let Ok(p) = rx.try_recv() {
                    progress.push(p);
                }
            }
            Outcome { result, at, progress }
        });
        self.calls.push(CallRec {
            handle,
            started: now,
            deadline: deadline.unwrap_or(now + Duration::from_millis(self.setup.deadline_ms)),
            priority,
            token,
            cancelled_at: None,
            id: None,
            outstanding_at_failure: None,
            aborted: false,
        });
    }

    async fn apply(&mut self, op: &Op) {
        match op {
            Op::Start { cancel, deadline_ms, progress, priority, tool } => {
                if self.calls.len() < self.setup.calls {
                    self.start(*cancel, *deadline_ms, *progress, *priority, *tool);
                }
            }
            Op::Respond(pick) => {
                if let (true, Some(id)) = (self.writable(), self.unanswered(*pick)) {
                    let call = self.seen[&id].call;
                    self.answer(id, Answer::Result(Instant::now()));
                    self.send(Message::result(RequestId::Number(id), json!({"id": id, "call": call}))).await;
                }
            }
            Op::RespondError(pick, code) => {
                if let (true, Some(id)) = (self.writable(), self.unanswered(*pick)) {
                    self.answer(id, Answer::Error(Instant::now(), *code));
                    let err = ErrorObject { code: *code, message: format!("error for {id}"), data: Some(json!(id)) };
                    self.send(Message::error(Some(RequestId::Number(id)), err)).await;
                }
            }
            Op::RespondMalformed(pick) => {
                if let (true, Some(id)) = (self.writable(), self.unanswered(*pick)) {
                    self.answer(id, Answer::Malformed(Instant::now()));
                    self.rejected_sent += 1;
                    let frame = format!(
                        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":1,\"error\":{{\"code\":1,\"message\":\"both\"}}}}\n"
                    );
                    self.send_raw(frame.as_bytes()).await;
                }
            }
            Op::Late(pick) => {
                let done: Vec<i64> = self
                    .seen
                    .iter()
                    .filter(|(_, s)| s.answered || s.call.is_some_and(|c| self.calls[c].handle.is_finished()))
                    .map(|(id, _)| *id)
                    .collect();
                if self.writable() && !done.is_empty() {
                    let id = done[pick % done.len()];
                    let call = self.seen[&id].call;
                    self.send(Message::result(RequestId::Number(id), json!({"id": id, "call": call, "late": true})))
                        .await;
                }
            }
            Op::Unknown(kind) => {
                if self.writable() {
                    let (id, body) = match kind {
                        UnknownId::Large(n) | UnknownId::NonPositive(n) => {
                            (Some(RequestId::Number(*n)), json!({"unknown": n}))
                        }
                        UnknownId::Text(s) => (Some(RequestId::String(s.clone())), json!({"unknown": s})),
                        UnknownId::Null => (None, Value::Null),
                    };
                    self.unknown_sent += 1;
                    let msg = match (id, body) {
                        (Some(id), body) => Message::result(id, body),
                        (None, _) => Message::error(
                            None,
                            ErrorObject { code: -32700, message: "parse error".into(), data: None },
                        ),
                    };
                    self.send(msg).await;
                }
            }
            Op::Progress(pick, to) => {
                let ids: Vec<i64> = match to {
                    ProgressTo::Unanswered => {
                        self.seen.iter().filter(|(_, s)| !s.answered).map(|(id, _)| *id).collect()
                    }
                    ProgressTo::AnySeen => self.seen.keys().copied().collect(),
                    ProgressTo::NeverIssued => Vec::new(),
                };
                if self.writable() && (*to == ProgressTo::NeverIssued || !ids.is_empty()) {
                    let token = if ids.is_empty() {
                        json!(2_000_000 + pick % 1000)
                    } else {
                        let id = ids[pick % ids.len()];
                        if let Some(s) = self.seen.get_mut(&id) {
                            s.answers.push(Answer::Progress);
                        }
                        json!(id)
                    };
                    let params = json!({"progressToken": token, "progress": 1, "total": 2});
                    self.send(Message::notification(method::PROGRESS, Some(params))).await;
                }
            }
            Op::Cancel(pick) => {
                let live: Vec<usize> = (0..self.calls.len())
                    .filter(|&c| self.calls[c].token.as_ref().is_some_and(|t| !t.is_cancelled()))
                    .collect();
                if !live.is_empty() {
                    let c = live[pick % live.len()];
                    let call = &mut self.calls[c];
                    if !call.handle.is_finished() {
                        call.cancelled_at = Some(Instant::now());
                    }
                    if let Some(t) = &call.token {
                        t.cancel(format!("stop {c}"));
                    }
                }
            }
            Op::Advance(ms) => tokio::time::sleep(Duration::from_millis(*ms)).await,
            Op::Garbage(pick) => {
                if self.writable() {
                    let (bytes, rejected) = GARBAGE[pick % GARBAGE.len()];
                    self.rejected_sent += rejected;
                    self.send_raw(bytes).await;
                }
            }
            Op::ServerPing => {
                if self.writable() {
                    self.server_pings_sent += 1;
                    let id = format!("s{}", self.server_pings_sent);
                    self.server_pings.insert(id.clone());
                    self.send(Message::request(RequestId::String(id), method::PING, None)).await;
                }
            }
            Op::ToggleReading => self.reading = !self.reading,
            Op::Abort(pick) => {
                let live: Vec<usize> = (0..self.calls.len()).filter(|&c| !self.calls[c].handle.is_finished()).collect();
                if !live.is_empty() {
                    let call = &mut self.calls[live[pick % live.len()]];
                    call.aborted = true;
                    call.handle.abort();
                }
            }
            Op::Oversize(pick) => {
                if self.writable() && self.setup.pipe >= 2 * MAX_FRAME {
                    self.mark_outstanding(false);
                    self.rejected_sent += 1;
                    let id = self.unanswered(*pick).unwrap_or(1_000_000);
                    self.send(Message::result(RequestId::Number(id), json!("x".repeat(MAX_FRAME)))).await;
                }
            }
            Op::Shutdown => {
                self.mark_outstanding(false);
                self.conn.shutdown();
            }
            Op::Disconnect => {
                if let Some(peer) = self.peer.take() {
                    self.mark_outstanding(true);
                    peer.hang_up();
                }
            }
        }
        self.settle().await;
    }

    /// The connection is about to fail because of the peer: every unresolved call must fail at this instant.
    fn mark_outstanding(&mut self, peer_gone: bool) {
        if !self.conn.is_open() {
            return;
        }
        let now = Instant::now();
        for call in &mut self.calls {
            if !call.handle.is_finished() {
                call.outstanding_at_failure = Some((now, peer_gone));
            }
        }
    }

    fn answer(&mut self, id: i64, answer: Answer) {
        if let Some(s) = self.seen.get_mut(&id) {
            s.answered = true;
            s.answers.push(answer);
        }
    }

    /// Checks one finished call's outcome against what the script did to it.
    fn check_call(&self, i: usize, out: &Outcome) -> Result<(), String> {
        let call = &self.calls[i];
        let seen = call.id.and_then(|id| self.seen.get(&id));
        let answers: &[Answer] = seen.map_or(&[], |s| &s.answers);
        let ms = Duration::from_millis(1);
        let cfg = self.setup.config();
        if out.at < call.started || out.at > call.deadline + ms {
            return Err(format!("resolved at {:?} outside [start, deadline]", out.at - call.started));
        }
        if let Some((t, _peer_gone)) = call.outstanding_at_failure {
            let at_once = matches!(out.result, Err(CallError::Transport(_))) && out.at == t;
            if !at_once {
                return Err(format!("outstanding when the connection failed ({t:?}) but resolved with {out:?}"));
            }
        }
        if let Some(t) = call.cancelled_at {
            // A cancel resolves at once, with the caller's reason.
            let ok =
                matches!(&out.result, Err(CallError::Local(LocalError::Cancelled(r))) if *r == format!("stop {i}"));
            if !ok || out.at != t {
                return Err(format!("cancelled at {t:?} but resolved with {out:?}"));
            }
        }
        for p in &out.progress {
            if call.id.is_none_or(|id| p.progress_token != json!(id)) {
                return Err(format!("progress {p:?} delivered to call {i} (request id {:?})", call.id));
            }
        }
        match &out.result {
            Ok(v) => {
                let Some(id) = call.id else { return Err(format!("succeeded with {v} but its request never arrived")) };
                if *v != json!({"id": id, "call": i}) {
                    return Err(format!("call {i} (request id {id}) got someone else's result {v}"));
                }
                if !answers.contains(&Answer::Result(out.at)) {
                    return Err(format!("result resolved at {:?}, not when the peer answered: {answers:?}", out.at));
                }
            }
            Err(CallError::Protocol(e)) => {
                let Some(id) = call.id else { return Err(format!("protocol error {e:?} without a request")) };
                if e.message != format!("error for {id}") || e.data != Some(json!(id)) {
                    return Err(format!("call {i} (request id {id}) got someone else's error {e:?}"));
                }
                if !answers.contains(&Answer::Error(out.at, e.code)) {
                    return Err(format!("error resolved at {:?}, not when the peer answered: {answers:?}", out.at));
                }
            }
            Err(CallError::MalformedResponse(_)) => {
                if !answers.contains(&Answer::Malformed(out.at)) {
                    return Err(format!("malformed response without a malformed frame for it: {answers:?}"));
                }
            }
            Err(CallError::Local(LocalError::Cancelled(_))) => {
                if call.cancelled_at.is_none() {
                    return Err("cancelled without its token being cancelled while it ran".into());
                }
            }
            Err(CallError::Local(LocalError::DeadlineExceeded)) => {
                if out.at < call.deadline {
                    return Err(format!("deadline exceeded {:?} early", call.deadline - out.at));
                }
            }
            Err(CallError::Local(LocalError::QueueTimeout(d))) => {
                if *d != cfg.queue_wait || call.priority || out.at != call.started + cfg.queue_wait {
                    return Err(format!("queue timeout {d:?} at {:?}", out.at - call.started));
                }
            }
            Err(CallError::Local(LocalError::FirstResponseTimeout(d))) => {
                if *d != cfg.first_response || out.at < call.started + *d {
                    return Err(format!("first-response timeout {d:?} at {:?}", out.at - call.started));
                }
            }
            Err(CallError::Local(LocalError::IdleTimeout(d))) => {
                // Only a call that saw progress is streaming.
                if *d != cfg.stream_idle || !answers.contains(&Answer::Progress) {
                    return Err(format!("idle timeout {d:?} for a call without progress ({answers:?})"));
                }
            }
            Err(CallError::Transport(e)) => {
                if self.conn.closed().as_ref() != Some(e) {
                    return Err(format!(
                        "transport error {e:?} but the connection closed with {:?}",
                        self.conn.closed()
                    ));
                }
            }
            Err(other) => return Err(format!("unexpected error class: {other:?}")),
        }
        Ok(())
    }

    /// After the script: let every phase run out, then check every call and the connection's books.
    async fn finish(mut self) -> Result<(), String> {
        // Every deadline (explicit ones are under 3 s) and every stall probe ends within this.
        let horizon = self.setup.deadline_ms.max(3000) + self.setup.probe_ms + 1000;
        tokio::time::sleep(Duration::from_millis(horizon)).await;
        self.settle().await;
        if let Some(v) = self.violation.take() {
            return Err(v);
        }
        let calls = std::mem::take(&mut self.calls);
        let mut outcomes = Vec::new();
        for (i, call) in calls.iter().enumerate() {
            if !call.handle.is_finished() {
                return Err(format!("call {i} never resolved ({call:?})"));
            }
        }
        let mut records = Vec::new();
        for (i, mut call) in calls.into_iter().enumerate() {
            let handle = &mut call.handle;
            match tokio::time::timeout(HANG, handle).await {
                Ok(Ok(out)) => outcomes.push(Some(out)),
                Ok(Err(e)) if e.is_cancelled() && call.aborted => outcomes.push(None),
                Ok(Err(e)) => return Err(format!("call {i}'s task failed: {e}")),
                Err(_) => return Err(format!("call {i} never resolved")),
            }
            records.push(call);
        }
        self.calls = records;
        for (i, out) in outcomes.iter().enumerate() {
            let Some(out) = out else { continue };
            self.check_call(i, out).map_err(|e| format!("call {i}: {e}"))?;
        }
        let stats = self.conn.stats();
        if self.conn.pending() != 0 || stats.pending != 0 || stats.in_flight != 0 {
            return Err(format!("books not drained: pending {} stats {stats:?}", self.conn.pending()));
        }
        if stats.unknown_responses != self.unknown_sent {
            return Err(format!("sent {} unknown-id responses, client counted {stats:?}", self.unknown_sent));
        }
        if stats.rejected_frames != self.rejected_sent {
            return Err(format!("sent {} bad frames, client rejected {stats:?}", self.rejected_sent));
        }
        Ok(())
    }
}

/// The client's frame limit in the connection scripts: far above any scripted frame but the oversize one.
const MAX_FRAME: usize = 4096;

pub(crate) async fn run_script(setup: Setup, ops: Vec<Op>) -> Result<(), String> {
    let (conn, peer) = peer::connect_with(setup.config(), setup.pipe, None, MAX_FRAME);
    let mut h = Harness {
        setup,
        conn,
        peer: Some(peer),
        peer_eof: false,
        reading: true,
        calls: Vec::new(),
        seen: BTreeMap::new(),
        server_pings: BTreeSet::new(),
        server_pings_sent: 0,
        cancels_seen: Vec::new(),
        unknown_sent: 0,
        rejected_sent: 0,
        violation: None,
    };
    for op in &ops {
        h.apply(op).await;
    }
    h.finish().await
}
