//! Collects what happens during a run into per-second buckets, keyed by simulated time.
//!
//! Shared by every host through an `Arc<Mutex<_>>`: turmoil runs hosts one after another on one thread, so the lock
//! is never contended and the order of updates is the simulation's own deterministic order.
//!
//! It also passes the call history (one `ServerCallRecord` per attempt, `calls.csv`) to the run's sink as attempts
//! finish ([`CallLog`]), so memory does not grow with it: `retry_storm`'s naive contrast run writes all its 154,240
//! attempts.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use hdrhistogram::Histogram;
use mcpstorm_core::history::ServerCallRecord;
use mcpstorm_core::jsonrpc::ErrorCode;
use mcpstorm_core::mcp::CallToolResult;
use mcpstorm_core::resilience::{BreakerState, BreakerTransition, DegradedReason, TransitionReason};
use mcpstorm_core::session::is_session_not_found;
use mcpstorm_core::{CallError, observe::SessionEvent};

use super::audit::{AuditLog, Settled};
use super::call_log::CallLog;
use super::phases::Phases;
use crate::run::memory::{Seconds, latency_histogram, ms};
use crate::run::traces::Traces;
use crate::run::{CallSink, CallSinkError, Convergence, EventRow, FailureClass, RetryBy, SecondRow, Totals};
use crate::scenario::{CallsMode, TracesMode};
use duplicates::Duplicates;
use traces::TraceLog;

/// How a logical call (all its attempts) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    /// A tool result with `isError: true`. The recorder files it as [`Outcome::Degraded`] when it was the gateway's
    /// degraded result (see [`Recorder::logical_done`]).
    Tool,
    /// The gateway's degraded result: it declined to call (or to retry) and answered "do not retry".
    Degraded,
    /// A `CallError`, by its class label.
    Error(&'static str),
}

impl Outcome {
    /// The class a failed call is counted under; `None` for an ok call.
    pub fn failure(self) -> Option<FailureClass> {
        match self {
            Outcome::Ok => None,
            Outcome::Tool => Some(FailureClass::Tool),
            Outcome::Degraded => Some(FailureClass::Degraded),
            Outcome::Error(label) => Some(FailureClass::of_error(label)),
        }
    }
}

/// What one finished attempt says about sessions, auth and schemas (the agent's view of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptVerdict {
    /// Nothing of interest here (success, or another failure).
    Plain,
    /// The server refused the arguments against its current schema.
    StaleSchema,
    SessionNotFound,
    Auth,
}

impl AttemptVerdict {
    /// Reads a finished attempt as the agent sees it. A stale-schema refusal is recognised here only in the Python
    /// SDK's form, an `isError` result starting `Input validation error:`; the -32602 form is counted per request on
    /// the wire by [`SimObserver`] instead (see [`is_stale_refusal`]), which also sees the refusals the gateway hid
    /// by a transparent resend.
    pub fn of(result: Result<&CallToolResult, &CallError>) -> AttemptVerdict {
        match result {
            Ok(r) if r.is_error && r.joined_text().starts_with("Input validation error:") => Self::StaleSchema,
            Ok(_) => Self::Plain,
            Err(CallError::Auth(_)) => Self::Auth,
            Err(CallError::Protocol(e)) if e.code() == ErrorCode::AUTH_MISMATCH => Self::Auth,
            Err(CallError::Protocol(e)) if is_session_not_found(e) => Self::SessionNotFound,
            Err(_) => Self::Plain,
        }
    }
}

/// One finished attempt, as the load host that sent it saw it (see [`Recorder::attempt_ended`]).
#[derive(Debug, Clone, Copy)]
pub struct AttemptEnd<'a> {
    pub load_host: &'a str,
    pub replica: &'a str,
    /// The tool called: whether it is safe to repeat decides whether a retry after this attempt may run it twice.
    pub tool: &'a str,
    /// Who sent it: the agent's first try, or a retry by the agent or by the gateway.
    pub by: RetryBy,
    /// How it ended: whether it may have run on the server unseen (see [`duplicates::may_have_run`]).
    pub outcome: Result<&'a CallToolResult, &'a CallError>,
    /// When it was sent and when it finished, simulated time.
    pub sent: Duration,
    pub now: Duration,
    /// Its replica's server does not meet the call's needs.
    pub misroute: bool,
    pub verdict: AttemptVerdict,
}

/// Whether a request's error is a server's refusal of its arguments against the tool's current schema, the
/// TypeScript SDK's way (as the fake servers with `validation_error = "invalid_params"` phrase it).
pub fn is_stale_refusal(error: &CallError) -> bool {
    matches!(error, CallError::Protocol(e)
        if e.code() == ErrorCode::INVALID_PARAMS && e.message.starts_with("Invalid arguments for tool"))
}

#[derive(Debug)]
struct Inner {
    seconds: Seconds,
    /// Drifts applied so far per server replica host.
    drift_epoch: BTreeMap<String, u32>,
    /// When each (load host, replica, drift epoch) first received a stale-schema refusal.
    first_refusal: BTreeMap<(String, String, u32), Duration>,
    total: Histogram<u64>,
    totals: Totals,
    in_flight: u64,
    events: Vec<EventRow>,
    calls: CallLog,
    /// The fault windows and targeted servers, for the healthy-server latency split.
    phases: Phases,
    /// Logical-call latency to servers no fault targets: before the first fault, and during the faults.
    healthy_before: Histogram<u64>,
    healthy_during: Histogram<u64>,
    /// Logical calls completed inside a fault window: their latency, and how many were ok and how many failed.
    during_fault: Histogram<u64>,
    ok_during_fault: u64,
    failed_during_fault: u64,
    /// Microseconds agents waited on calls that ended degraded, and on calls that failed otherwise (whole numbers, so
    /// the totals do not depend on the order floats were added in).
    degraded_wait_us: u64,
    failed_wait_us: u64,
    /// The tasks (each runs one logical call at a time) whose last answer from their gateway was a degraded result.
    /// The gateway tells its observer ([`Recorder::degraded`]) from inside the calling task, and that task then
    /// reports the call's end ([`Recorder::logical_done`]) as a tool result with `isError: true`: the task says
    /// which of those were degraded. A task leaves the set when it sends an attempt or its call ends.
    declined: BTreeSet<tokio::task::Id>,
    /// Retries that may have run a tool twice.
    duplicates: Duplicates,
    /// Breakers open now, by (load host, replica, tool): each load host's gateway has its own.
    open_breakers: BTreeSet<(String, String, String)>,
    /// Breakers made half-open by another node's report (breaker sync's suspects), keyed as `open_breakers`.
    suspects: BTreeSet<(String, String, String)>,
    /// Load hosts (gateways) in the run, and the breaker incident under way per (replica, tool).
    gateways: usize,
    incidents: BTreeMap<(String, String), usize>,
    audit: AuditLog,
    /// Calls kept as traces, and the waterfall's picks.
    traces: TraceLog,
}

#[derive(Debug, Clone)]
pub struct Recorder {
    inner: Arc<Mutex<Inner>>,
}

/// Significant digits of the whole run's latency histograms.
const RUN_SIGFIG: u8 = 3;

impl Default for Recorder {
    fn default() -> Self {
        Recorder {
            inner: Arc::new(Mutex::new(Inner {
                // Until the run says its tick: latencies a second out of order still land in their own second.
                seconds: Seconds::new(Duration::from_secs(1)),
                total: latency_histogram(RUN_SIGFIG),
                totals: Totals::default(),
                in_flight: 0,
                events: Vec::new(),
                calls: CallLog::default(),
                drift_epoch: BTreeMap::new(),
                first_refusal: BTreeMap::new(),
                phases: Phases::default(),
                healthy_before: latency_histogram(RUN_SIGFIG),
                healthy_during: latency_histogram(RUN_SIGFIG),
                during_fault: latency_histogram(RUN_SIGFIG),
                ok_during_fault: 0,
                failed_during_fault: 0,
                degraded_wait_us: 0,
                failed_wait_us: 0,
                declined: BTreeSet::new(),
                duplicates: Duplicates::default(),
                open_breakers: BTreeSet::new(),
                suspects: BTreeSet::new(),
                gateways: 1,
                incidents: BTreeMap::new(),
                audit: AuditLog::default(),
                traces: TraceLog::default(),
            })),
        }
    }
}

impl Inner {
    /// Breakers of `(replica, tool)` open on how many gateways now.
    fn open_on(&self, replica: &str, tool: &str) -> usize {
        self.open_breakers.iter().filter(|(_, r, t)| r == replica && t == tool).count()
    }

    /// A breaker of `(replica, tool)` just opened on some gateway: the first opening while none was open starts an
    /// incident; the one that makes all gateways open (or suspect it, on another's report) ends its convergence.
    /// Only with several gateways.
    fn track_incident(&mut self, at: Duration, replica: &str, tool: &str) {
        if self.gateways < 2 {
            return;
        }
        let pair = (replica.to_owned(), tool.to_owned());
        let open = self.open_on(replica, tool);
        let index = match self.incidents.get(&pair) {
            Some(&i) if open > 1 => i,
            _ => {
                let incident = Convergence {
                    replica: replica.to_owned(),
                    tool: tool.to_owned(),
                    first_open_ms: at.as_millis() as u64,
                    converged_ms: None,
                };
                self.totals.convergence.push(incident);
                let i = self.totals.convergence.len() - 1;
                self.incidents.insert(pair, i);
                i
            }
        };
        self.converge(index, at, replica, tool);
    }

    /// Incident `index` has converged at `at` if every gateway has `(replica, tool)` open or suspect now.
    fn converge(&mut self, index: usize, at: Duration, replica: &str, tool: &str) {
        let suspect = self.suspects.iter().filter(|(_, r, t)| r == replica && t == tool).count();
        let reached = self.open_on(replica, tool) + suspect;
        let gateways = self.gateways;
        if let Some(c) = self.totals.convergence.get_mut(index)
            && c.converged_ms.is_none()
            && reached >= gateways
        {
            c.converged_ms = Some((at.as_millis() as u64).saturating_sub(c.first_open_ms));
        }
    }

    fn bucket(&mut self, at: Duration) -> &mut SecondRow {
        self.seconds.row(at)
    }

    /// The current task sends an attempt (or starts a call): its next answer is not a degraded one, unless the
    /// gateway declines again.
    fn answered_by_call(&mut self) {
        if let Some(task) = tokio::task::try_id() {
            self.declined.remove(&task);
        }
    }

    /// The current task's call ended as `outcome`: a tool error is the gateway's degraded result when the task's
    /// last answer was one (see `declined`).
    fn resolve(&mut self, outcome: Outcome) -> Outcome {
        let declined = tokio::task::try_id().is_some_and(|task| self.declined.remove(&task));
        match outcome {
            Outcome::Tool if declined => Outcome::Degraded,
            other => other,
        }
    }
}

impl Inner {
    /// Replica `replica` served an attempt finished at `now`; `misroute` when its server does not meet the call's
    /// needs.
    fn served(&mut self, now: Duration, replica: &str, misroute: bool) {
        match self.totals.replica_calls.get_mut(replica) {
            Some(n) => *n += 1,
            None => {
                self.totals.replica_calls.insert(replica.to_owned(), 1);
            }
        }
        if misroute {
            self.bucket(now).misroutes += 1;
            self.totals.misroutes += 1;
        }
    }

    /// Counts what a finished attempt says about sessions, auth and schemas.
    fn attempt_verdict(&mut self, end: &AttemptEnd<'_>) {
        match end.verdict {
            AttemptVerdict::Plain => {}
            AttemptVerdict::SessionNotFound => {
                self.bucket(end.now).session_errors += 1;
                self.totals.session_errors += 1;
            }
            AttemptVerdict::Auth => {
                self.bucket(end.now).auth_errors += 1;
                self.totals.auth_errors += 1;
            }
            AttemptVerdict::StaleSchema => self.stale_refusal(end.load_host, end.replica, end.sent, end.now),
        }
    }

    /// Counts a stale send when the pair had already received a refusal (since the replica's last drift) before
    /// this one was sent; otherwise remembers the first refusal's arrival.
    fn stale_refusal(&mut self, load_host: &str, replica: &str, sent: Duration, now: Duration) {
        let epoch = self.drift_epoch.get(replica).copied().unwrap_or_default();
        let key = (load_host.to_owned(), replica.to_owned(), epoch);
        match self.first_refusal.get(&key) {
            Some(first) if sent > *first => {
                self.bucket(now).stale_sends += 1;
                self.totals.stale_sends += 1;
            }
            Some(_) => {}
            None => {
                self.first_refusal.insert(key, now);
            }
        }
    }
}

impl Recorder {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many gateways (load hosts) the run has: an incident converges when all of them have the breaker open.
    pub fn set_gateways(&self, n: usize) {
        let mut inner = self.lock();
        inner.gateways = n.max(1);
        inner.audit.set_hosts(n);
    }

    /// Load host `host`'s gateway after its drain: what it still holds.
    pub fn gateway_ended(&self, host: usize, snapshot: mcpstorm_core::gateway::InFlightSnapshot) {
        self.lock().audit.ended(host, snapshot);
    }

    /// The run's audit (after [`Recorder::finish`]).
    pub fn audit(&self, rows: &[SecondRow]) -> crate::run::RunAudit {
        self.lock().audit.finish(rows.iter().map(|r| r.in_flight).max().unwrap_or(0))
    }

    /// The run's tick: how far out of order hosts record a call's end (before the run starts).
    pub fn set_tick(&self, tick: Duration) {
        self.lock().seconds.set_lateness(tick);
    }

    /// Sets the fault windows the healthy-server latency is split by (before the run starts).
    pub fn set_phases(&self, phases: Phases) {
        self.lock().phases = phases;
    }

    /// Sends the call history to `sink` (`mode` says which attempts); without one it is not written.
    pub fn set_calls(&self, sink: Option<Box<dyn CallSink>>, mode: CallsMode) {
        self.lock().calls = CallLog::new(sink, mode);
    }

    /// Keeps calls as traces as `mode` says (`calls`: how `[report] calls` resolved for the run).
    pub fn set_traces(&self, mode: TracesMode, calls: CallsMode) {
        self.lock().traces = TraceLog::new(mode.every(calls), mode == TracesMode::Failed);
    }

    /// The scenario's tools: those not marked safe to repeat count towards `possible_duplicates`.
    pub fn set_tools(&self, scenario: &crate::scenario::Scenario) {
        self.lock().duplicates = Duplicates::of(scenario);
    }

    /// A logical call was offered at `at`; returns its number, counting from 0 in the order calls are offered.
    pub fn offered(&self, at: Duration) -> u64 {
        let mut inner = self.lock();
        inner.answered_by_call();
        inner.bucket(at).offered += 1;
        let n = inner.totals.offered;
        inner.totals.offered += 1;
        inner.traces.offered(n, at);
        n
    }

    pub fn attempt_started(&self, at: Duration, retry: bool) {
        let mut inner = self.lock();
        inner.answered_by_call();
        let row = inner.bucket(at);
        row.attempts += 1;
        row.retries += u64::from(retry);
        inner.totals.attempts += 1;
        inner.totals.retries += u64::from(retry);
        inner.in_flight += 1;
    }

    /// One attempt of logical call number `logical` finished: the in-flight gauge, the replica's count, what the
    /// attempt says about sessions, auth and schemas, and its row of the call history (`record` builds it, hashing
    /// its result, and is called only when the row is written). One lock for all of it: this runs for every attempt.
    pub fn attempt_ended(&self, logical: u64, end: AttemptEnd<'_>, record: impl FnOnce() -> ServerCallRecord) {
        let mut inner = self.lock();
        inner.in_flight = inner.in_flight.saturating_sub(1);
        inner.served(end.now, end.replica, end.misroute);
        inner.attempt_verdict(&end);
        let Inner { duplicates, totals, .. } = &mut *inner;
        duplicates.attempt(logical, &end, totals);
        inner.traces.attempt(&end);
        inner.calls.attempt(logical, end.by, record);
    }

    /// A schema drift was applied to replica `host`: refusals from it start a new episode.
    pub fn drifted(&self, host: &str) {
        *self.lock().drift_epoch.entry(host.to_owned()).or_default() += 1;
    }

    /// A request from `load_host` to `replica`, sent at `sent`, came back at `now` refused for a stale schema.
    pub fn stale_refusal(&self, load_host: &str, replica: &str, sent: Duration, now: Duration) {
        self.lock().stale_refusal(load_host, replica, sent, now);
    }

    /// A session event from a load host's gateway core.
    pub fn session_event(&self, now: Duration, what: SessionEvent) {
        let mut inner = self.lock();
        match what {
            SessionEvent::Rehandshake => {
                inner.bucket(now).rehandshakes += 1;
                inner.totals.rehandshakes += 1;
            }
            SessionEvent::Renewed => {
                inner.bucket(now).renewals += 1;
                inner.totals.renewals += 1;
            }
            _ => {}
        }
    }

    /// A logical call reached its outcome at `at`; `server` is where its last attempt went (none: no attempt),
    /// `audited` the server the run's audit files it under (see [`RunAudit::servers`](crate::run::RunAudit)), and
    /// `answered_by` the replica host of its last attempt and when that attempt was sent (for an ok call, to tell
    /// whether it was waited out: [`Phases::waited_out`]).
    pub fn logical_done(
        &self,
        at: Duration,
        latency: Duration,
        outcome: Outcome,
        server: Option<&str>,
        audited: Option<&str>,
        answered_by: Option<(&str, Duration)>,
    ) {
        let mut inner = self.lock();
        let outcome = inner.resolve(outcome);
        inner.traces.done(at, outcome.failure().map_or("ok", FailureClass::label));
        // Waited out by its ok attempt, or by the logical call: started inside the window, and still being retried by
        // its agent when the fault ended (a storm's own retries, which a degraded result tells the agent not to make).
        let started = at.saturating_sub(latency);
        let settled = match (outcome, answered_by) {
            (Outcome::Ok, Some((replica, sent)))
                if inner.phases.waited_out(replica, sent, at) || inner.phases.waited_out(replica, started, at) =>
            {
                Settled::WaitedOut
            }
            (Outcome::Ok, _) => Settled::Ok,
            _ => Settled::Failed,
        };
        inner.audit.call(audited, latency, settled);
        let micros = (latency.as_micros() as u64).clamp(1, 3_600_000_000);
        if server.is_some_and(|s| inner.phases.healthy(s)) {
            if inner.phases.before(at) {
                let _ = inner.healthy_before.record(micros);
            } else if inner.phases.during(at) {
                let _ = inner.healthy_during.record(micros);
            }
        }
        let failure = outcome.failure();
        if inner.phases.during(at) {
            let _ = inner.during_fault.record(micros);
            match failure {
                None => inner.ok_during_fault += 1,
                Some(_) => inner.failed_during_fault += 1,
            }
        }
        let row = inner.bucket(at);
        row.completed += 1;
        match failure {
            None => row.ok += 1,
            Some(class) => *row.failed_mut(class) += 1,
        }
        inner.seconds.latency(at, micros);
        let _ = inner.total.record(micros);
        inner.totals.completed += 1;
        match failure {
            None => inner.totals.ok += 1,
            Some(class) => {
                inner.totals.errors += 1;
                *inner.totals.errors_by_class.entry(class.label().to_owned()).or_default() += 1;
            }
        }
        let waited = latency.as_micros().min(u128::from(u64::MAX)) as u64;
        match failure {
            None => {}
            Some(FailureClass::Degraded) => {
                inner.totals.outcomes.degraded += 1;
                inner.degraded_wait_us = inner.degraded_wait_us.saturating_add(waited);
            }
            Some(_) => {
                inner.totals.outcomes.failed += 1;
                inner.failed_wait_us = inner.failed_wait_us.saturating_add(waited);
            }
        }
    }

    pub fn event(&self, at: Duration, kind: &str, target: &str, detail: impl Into<String>) {
        let row = EventRow {
            t_ms: at.as_millis() as u64,
            kind: kind.to_owned(),
            target: target.to_owned(),
            detail: detail.into(),
        };
        self.lock().events.push(row);
    }

    /// The breaker of (`replica`, `tool`) in `host`'s gateway changed state: an event (its target the replica),
    /// and the open-breaker gauge.
    pub fn breaker(&self, at: Duration, host: &str, replica: &str, tool: &str, t: &BreakerTransition) {
        let mut inner = self.lock();
        let key = (host.to_owned(), replica.to_owned(), tool.to_owned());
        if matches!(t.to, BreakerState::Open | BreakerState::ForcedOpen) {
            inner.suspects.remove(&key);
            inner.open_breakers.insert(key);
            inner.totals.breaker_opens += 1;
            inner.track_incident(at, replica, tool);
        } else if t.reason == TransitionReason::Remote {
            // Suspect on another gateway's report: this gateway has heard of the incident.
            inner.open_breakers.remove(&key);
            inner.suspects.insert(key);
            let incident = inner.incidents.get(&(replica.to_owned(), tool.to_owned())).copied();
            if let Some(index) = incident.filter(|_| inner.gateways > 1) {
                inner.converge(index, at, replica, tool);
            }
        } else {
            inner.suspects.remove(&key);
            inner.open_breakers.remove(&key);
        }
        let open_for = t.open_for.map(|d| format!(" for {} ms", d.as_millis())).unwrap_or_default();
        let detail = format!(
            "{tool} {} -> {} ({}){open_for} on {host}",
            <&str>::from(t.from),
            <&str>::from(t.to),
            <&str>::from(t.reason)
        );
        inner.events.push(EventRow {
            t_ms: at.as_millis() as u64,
            kind: "breaker".to_owned(),
            target: replica.to_owned(),
            detail,
        });
    }

    /// The gateway answered a call with a degraded result instead of making it (or instead of retrying it).
    /// With `in_task`, called from inside the task that made the call, which the call's end then names (see
    /// `declined`).
    pub fn degraded(&self, at: Duration, reason: DegradedReason, in_task: bool) {
        let mut inner = self.lock();
        if let Some(task) = tokio::task::try_id().filter(|_| in_task) {
            inner.declined.insert(task);
        }
        inner.bucket(at).degraded += 1;
        *inner.totals.degraded.entry(<&str>::from(reason).to_owned()).or_default() += 1;
    }

    /// `host`'s gateway declined the current task's call to `tool` at `at` (for its trace; counted by
    /// [`Recorder::degraded`]).
    pub fn trace_declined(&self, at: Duration, host: &str, tool: &str, reason: DegradedReason) {
        self.lock().traces.declined(at, host, tool, reason.into());
    }

    /// `n` attempts sent by a gateway node that crashed will never end: the in-flight gauge lets them go.
    pub fn attempts_lost(&self, n: u64) {
        let mut inner = self.lock();
        inner.in_flight = inner.in_flight.saturating_sub(n);
    }

    /// Samples the in-flight and open-breaker gauges into the second that just ended (called by the step loop).
    pub fn sample_in_flight(&self, second: Duration) {
        let mut inner = self.lock();
        let in_flight = inner.in_flight;
        let open = inner.open_breakers.len() as u64;
        let row = inner.bucket(second);
        row.in_flight = in_flight;
        row.open_breakers = open;
    }

    pub fn outstanding(&self) -> u64 {
        let inner = self.lock();
        inner.totals.offered.saturating_sub(inner.totals.completed)
    }

    /// The finished time series, events and totals. `sim` is the simulated time the run covered.
    pub fn finish(&self, sim: Duration) -> (Vec<SecondRow>, Vec<EventRow>, Totals) {
        let mut inner = self.lock();
        // Make sure every simulated second has a row, even a silent one.
        if sim > Duration::ZERO {
            inner.bucket(sim - Duration::from_nanos(1));
        }
        let rows = inner.seconds.finish();
        let mut totals = inner.totals.clone();
        let h = &inner.total;
        totals.lost = totals.offered.saturating_sub(totals.completed);
        totals.amplification = ratio(totals.attempts, totals.offered);
        totals.error_rate = ratio(totals.errors, totals.completed);
        totals.p50_ms = ms(h, 0.5);
        totals.p95_ms = ms(h, 0.95);
        totals.p99_ms = ms(h, 0.99);
        totals.p999_ms = ms(h, 0.999);
        totals.max_ms = if h.is_empty() { 0.0 } else { h.max() as f64 / 1000.0 };
        totals.ok_per_s = if sim.is_zero() { 0.0 } else { totals.ok as f64 / sim.as_secs_f64() };
        let o = &mut totals.outcomes;
        o.ok = totals.ok;
        o.degraded_wait_s = inner.degraded_wait_us as f64 / 1e6;
        o.degraded_mean_wait_ms = ratio(inner.degraded_wait_us, o.degraded) / 1e3;
        o.failed_wait_s = inner.failed_wait_us as f64 / 1e6;
        o.failed_mean_wait_ms = ratio(inner.failed_wait_us, o.failed) / 1e3;
        // No healthy call in a phase: nothing to compare (`None`, not a 0 that looks measured).
        let p99 = |h: &Histogram<u64>| (!h.is_empty()).then(|| ms(h, 0.99));
        totals.healthy_p99_before_ms = p99(&inner.healthy_before);
        totals.healthy_p99_during_ms = p99(&inner.healthy_during);
        totals.healthy_p99_ratio = match (totals.healthy_p99_during_ms, totals.healthy_p99_before_ms) {
            (Some(during), Some(before)) if before > 0.0 => Some(during / before),
            _ => None,
        };
        let in_fault = inner.ok_during_fault + inner.failed_during_fault;
        if in_fault > 0 {
            totals.ok_during_fault = Some(inner.ok_during_fault);
            totals.error_rate_during_fault = Some(ratio(inner.failed_during_fault, in_fault));
            totals.p99_during_fault_ms = Some(ms(&inner.during_fault, 0.99));
        } else if inner.phases.has_windows() {
            totals.ok_during_fault = Some(0);
        }
        (rows, std::mem::take(&mut inner.events), totals)
    }

    /// The run is over: the calls kept as traces, and the waterfall's.
    pub fn finish_traces(&self) -> Traces {
        self.lock().traces.finish()
    }

    /// The run is over: flushes the call history's sink, or returns its first failure.
    pub fn finish_calls(&self) -> Result<(), CallSinkError> {
        self.lock().calls.finish()
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

mod duplicates;
mod observers;
mod traces;

pub use observers::{GatewayObserver, SimObserver};

#[cfg(test)]
mod tests;
