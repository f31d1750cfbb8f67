//! The protected call path, [`Gateway::call`]: the resilience layers around single attempts, in three named steps
//! (`admit`, `attempt`, `settle`), all three here. [`Gateway::call_unprotected`] is the `attempt` step alone.
//!
//! ```text
//! call ─▶ admit:  route ─▶ the replica's breaker(replica, tool) ─▶ its bulkhead (no wait) ─▶ its throttle
//!         │       refused ─▶ avoid that replica, route again; when every candidate refused:
//!         │                  some only for room ─▶ wait (queue wait, deadline) for the router's first such choice
//!         │                  else ─▶ degraded (breaker_open, forced_open, throttled, no_candidate)
//!         ├▶ attempt: the replica's client (session, schema check, connection, phased timeouts)
//!         └▶ settle:  classify once ─▶ bulkhead sample, breaker record, throttle count
//!                     ─▶ ok, or not retryable: the answer
//!                     ─▶ retryable (idempotent, one deadline, budget(server), a replica not tried yet) ─▶ backoff ─▶ admit again, avoiding
//!                        the replicas tried
//! ```
//!
//! Every layer is scoped to the smallest unit that can fail (a replica, a (replica, tool) pair): one sick replica
//! sends its calls to its siblings, and a degraded result — `isError: true`, "do not retry", the fallback tool,
//! `retryAfterMs` — means that no candidate replica could take the call.
//!
//! # Every loop that can send a call again
//!
//! | loop | where | sends to | counted as an attempt (`Routed::attempts`, the simulator's amplification) |
//! |---|---|---|---|
//! | the agent's retries | the embedder (the simulator's agent models) | a replica not yet tried, when one is left | yes: each is a new [`Gateway::call`] |
//! | the gateway's retries | [`Gateway::call`], `settle` | another replica, after backoff, under one deadline and the server's budget | yes |
//! | the session resend | the client (`McpClient::call_tool`): session-not-found or an auth mismatch → one shared re-handshake, one resend | the same replica | no: one attempt, as the agent sees it |
//! | the drift resend | the client (`capabilities/drift.rs`): a -32602 refusal → re-fetch the tools, re-check, resend once if the arguments now pass | the same replica | no |
//! | the reconnect | the client (`client/mod.rs`): a failed connect or handshake is retried `lifecycle_retries` times with backoff before the call is sent | the same replica | no: nothing reached the server's tool |
//!
//! Admission refusals (an open breaker, a full bulkhead, a throttle) send nothing, so they are not attempts.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::time::{Instant, timeout_at};

use super::layers::{Admitted, Entry, Refusal};
use super::{Attempt, Gateway, Route, RouterVerdict, ToolCall};
use crate::client::McpClient;
use crate::conn::Bounded;
use crate::error::{CallError, Delivery, LocalError};
use crate::mcp::CallToolResult;
use crate::observe::Event;
use crate::resilience::breaker::{HealthVerdict, RejectReason, Rejected, classify, limiter_sample};
use crate::resilience::bulkhead::ClientLimit;
use crate::resilience::degraded::DegradedReason;
use crate::resilience::retry::{RetryPlan, auto_retry_allowed};
use crate::resilience::shared_slots::SlotShare;
use crate::router::{ReplicaId, Requirement};

/// How a protected call ended: the attempts it made, and its last word.
#[derive(Debug)]
pub struct Routed {
    /// The attempts before the last word, in order. With [`Last::Attempt`], that attempt comes after these.
    pub earlier: Vec<Attempt>,
    pub last: Last,
}

/// A protected call's last word.
#[derive(Debug)]
pub enum Last {
    /// An attempt's outcome is the answer.
    Attempt(Attempt),
    /// The gateway declined (after the `earlier` attempts, if any).
    Declined(Degraded),
}

/// The gateway declined: why, and the result the agent gets instead (`isError: true`, "do not retry").
#[derive(Debug)]
pub struct Degraded {
    pub reason: DegradedReason,
    pub result: CallToolResult,
}

impl Routed {
    /// Every attempt sent, in order.
    pub fn attempts(&self) -> impl Iterator<Item = &Attempt> {
        let last = match &self.last {
            Last::Attempt(a) => Some(a),
            Last::Declined(_) => None,
        };
        self.earlier.iter().chain(last)
    }

    pub fn degraded(&self) -> Option<&Degraded> {
        match &self.last {
            Last::Declined(d) => Some(d),
            Last::Attempt(_) => None,
        }
    }

    /// What the agent gets: the degraded result, or the last attempt's outcome.
    pub fn outcome(&self) -> Result<&CallToolResult, &CallError> {
        match &self.last {
            Last::Declined(d) => Ok(&d.result),
            Last::Attempt(a) => a.outcome.as_ref(),
        }
    }

    pub fn into_outcome(self) -> Result<CallToolResult, CallError> {
        match self.last {
            Last::Declined(d) => Ok(d.result),
            Last::Attempt(a) => a.outcome,
        }
    }
}

/// Why admission found no replica.
struct Declined {
    reason: DegradedReason,
    retry_after: Option<Duration>,
}

impl Declined {
    fn of(refusal: Refusal) -> Declined {
        match refusal {
            Refusal::Breaker(Rejected { reason: RejectReason::ForcedOpen, .. }) => {
                Declined { reason: DegradedReason::ForcedOpen, retry_after: None }
            }
            Refusal::Breaker(Rejected { retry_after, .. }) => {
                Declined { reason: DegradedReason::BreakerOpen, retry_after }
            }
            Refusal::Full => Declined { reason: DegradedReason::BulkheadFull, retry_after: None },
            Refusal::Throttled => Declined { reason: DegradedReason::Throttled, retry_after: None },
        }
    }
}

/// An attempt's arguments as the call gives them, and the embedder's hook that finishes them on the chosen replica's
/// client just before they are sent. Without a hook they are sent as given, and never copied: the client only reads
/// them.
pub(super) struct Arguments<'a, F> {
    pub value: Cow<'a, Value>,
    pub prepare: Option<F>,
}

/// The hook of a call that has none.
pub(super) type Unprepared = fn(Arc<McpClient>, Value) -> std::future::Ready<Value>;

/// When an attempt ended, and what is left for a retry.
struct AttemptEnd {
    /// The call's one deadline.
    deadline: Instant,
    /// The attempt's end.
    now: Instant,
    /// Whether a replica the call has not tried yet serves the tool.
    elsewhere: bool,
}

/// How often a call holding on a half-open breaker walks again, at least: a bound on a lost wake-up.
const HOLD_RECHECK: Duration = Duration::from_millis(50);

/// What one walk over the candidates found.
enum Walk {
    Admitted(Admitted),
    /// No candidate took the call: the answer, and what the call may wait for instead of giving it now.
    Declined(Declined, Option<Wait>),
}

/// What a call refused by every candidate may wait for.
enum Wait {
    /// Room in this replica's bulkhead.
    Room(Route),
    /// This replica's breaker, open on a latency fault, to let calls through: at most `hold` in all, walking again
    /// at least every `recheck`.
    Breaker { route: Route, hold: Duration, recheck: Duration },
}

/// What settling an attempt decided.
enum Settled {
    /// The attempt's outcome is the answer.
    Answer,
    /// Try again after this delay, on another replica.
    Retry(Duration),
    /// No retry, and the gateway says why in a degraded result.
    Declined(DegradedReason),
}

impl Gateway {
    /// The protected path: routing, then the resilience layers (breakers, bulkheads, throttles per replica;
    /// retries under a per-server budget and one deadline) and a degraded result when the gateway declines. See the
    /// module documentation; [`Gateway::call_unprotected`] is one attempt with no layer.
    pub async fn call(&self, call: ToolCall<'_>) -> Routed {
        self.protected(call, None::<&Unprepared>).await
    }

    /// [`Gateway::call`], with each attempt's arguments finished by `prepare` on the chosen replica's client (as in
    /// [`Gateway::call_unprotected_prepared`]): called once per attempt, in attempt order, just before it is sent.
    pub async fn call_prepared<F, Fut>(&self, call: ToolCall<'_>, prepare: F) -> Routed
    where
        F: Fn(Arc<McpClient>, Value) -> Fut,
        Fut: Future<Output = Value>,
    {
        self.protected(call, Some(&prepare)).await
    }

    async fn protected<F, Fut>(&self, call: ToolCall<'_>, prepare: Option<&F>) -> Routed
    where
        F: Fn(Arc<McpClient>, Value) -> Fut,
        Fut: Future<Output = Value>,
    {
        // A gateway call enters here: its one deadline is resolved now, and every admission wait, attempt, backoff and
        // retry of the call shares it.
        let opts = call.opts.clone().bounded(|| self.clock.now(), self.config.call_deadline);
        let deadline = opts.deadline;
        let requirements = self.call_requirements(&call);
        let mut tried: Vec<ReplicaId> = call.tried.to_vec();
        let mut earlier: Vec<Attempt> = Vec::new();
        let mut plan: Option<RetryPlan> = None;
        loop {
            // Admission's clock reading: nothing is awaited from it to the attempt's start.
            let (admitted, now) = match self.admit(call.tool, &requirements, &tried, deadline).await {
                Ok(a) => a,
                Err(d) => return self.declined(call.tool, earlier, d),
            };
            if earlier.is_empty() {
                self.layers.with_budget(&admitted.route.server, now, |b| b.deposit(now));
            }
            if let Some(plan) = plan.as_mut() {
                plan.start_attempt();
            }
            let replica = admitted.route.replica;
            let arguments = Arguments { value: Cow::Borrowed(call.arguments.as_ref()), prepare };
            let (attempt, verdict, now) = self.attempt(&admitted.route, call.tool, arguments, opts.clone(), now).await;
            let elsewhere = self.untried_replica(call.tool, &tried, replica);
            let end = AttemptEnd { deadline, now, elsewhere };
            let settled = self.settle(admitted, call.tool, &attempt, verdict, &mut plan, end);
            match settled {
                Settled::Answer => return Routed { earlier, last: Last::Attempt(attempt) },
                Settled::Declined(reason) => {
                    earlier.push(attempt);
                    return self.declined(call.tool, earlier, Declined { reason, retry_after: None });
                }
                Settled::Retry(delay) => {
                    tried.push(replica);
                    earlier.push(attempt);
                    tokio::time::sleep(delay).await;
                }
            }
        }
    }

    /// Finds a replica that takes the call (see [`Gateway::walk`]). When every candidate refused and some only for
    /// want of room, waits for the router's first such choice — at most the bulkhead's queue wait and the deadline.
    /// When an open breaker on a latency fault refused (see `Rejected::hold`), holds for it to let calls through —
    /// at most its hold and the deadline — walking again at each of its transitions. Otherwise the first refusal's
    /// reason is the gateway's answer. Returns the time of admission.
    async fn admit(
        &self,
        tool: &str,
        requirements: &[Requirement],
        tried: &[ReplicaId],
        deadline: Instant,
    ) -> Result<(Admitted, Instant), Declined> {
        let cap = |route: &Route| self.client_limit(route);
        let mut held_until: Option<Instant> = None;
        loop {
            // Nothing is awaited in a walk: one reading serves every decision of it.
            let now = self.clock.now();
            // Open breakers' probes only for a call that no candidate would take otherwise.
            let walk = match self.walk(tool, requirements, tried, (now, deadline), Entry::First) {
                Walk::Declined(..) => {
                    let entry = Entry::LastResort { past_slow: false };
                    self.walk(tool, requirements, tried, (now, deadline), entry)
                }
                admitted => admitted,
            };
            let (declined, wait) = match walk {
                Walk::Admitted(admitted) => return Ok((admitted, now)),
                Walk::Declined(declined, wait) => (declined, wait),
            };
            match wait {
                None => return Err(declined),
                Some(Wait::Room(route)) => {
                    let left = deadline.saturating_duration_since(now);
                    // Boxed: waiting is the rare path, and its future would otherwise enlarge every call's.
                    let Ok(permit) = Box::pin(self.layers.wait_for_room(&route, &cap, left)).await else {
                        return Err(Declined::of(Refusal::Full));
                    };
                    let now = self.clock.now();
                    // Room came too late: the call cannot finish in time, so it is not sent. Sent, it would fail at
                    // once on its deadline, and the pool's limiter would read that as one more timeout and shrink,
                    // making the next callers wait longer still.
                    if now >= deadline {
                        return Err(Declined::of(Refusal::Full));
                    }
                    // Its breaker may have opened meanwhile: passed if for slowness alone that still fits the deadline
                    // (see `walk`).
                    let past_slow = self.answers_within(route.replica, deadline.saturating_duration_since(now));
                    let entry = match permit {
                        Some(permit) => Entry::Room { permit, past_slow },
                        None => Entry::LastResort { past_slow },
                    };
                    return self
                        .layers
                        .admit(route, tool, &cap, entry, now, self.observer.as_ref())
                        .map(|admitted| (admitted, now))
                        .map_err(|(_, refusal)| Declined::of(refusal));
                }
                Some(Wait::Breaker { route, hold, recheck }) => {
                    let until = *held_until.get_or_insert_with(|| deadline.min(now + hold));
                    let Some(gate) = self.layers.breaker(&route.endpoint, tool).filter(|_| now < until) else {
                        return Err(declined);
                    };
                    // A transition wakes the call at once; the re-check bounds a wake-up lost between the walk and
                    // the wait. Boxed, as above.
                    let _ = Box::pin(tokio::time::timeout_at(until.min(now + recheck), gate.changed())).await;
                }
            }
        }
    }

    /// One call on a chosen replica, with the router's in-flight count and statistics kept: the step both entries
    /// share ([`Gateway::call_unprotected_prepared`] makes only this one). The arguments are finished by `prepare` on
    /// the replica's client, within what is left of the call's deadline: a `prepare` that reads the client's
    /// capability record may wait for a fetch, and that wait is the call's (an attempt whose `prepare` runs the
    /// deadline out ends with it, unsent). The outcome is
    /// classified here, once: the breaker's verdict comes back with the attempt for the protected path's layers, and
    /// the time it ended. `started` is the clock read in the same poll that calls this (nothing is awaited before the
    /// call is made, so the clock has not moved).
    pub(super) async fn attempt<F, Fut>(
        &self,
        route: &Route,
        tool: &str,
        arguments: Arguments<'_, F>,
        opts: Bounded,
        started: Instant,
    ) -> (Attempt, HealthVerdict, Instant)
    where
        F: FnOnce(Arc<McpClient>, Value) -> Fut,
        Fut: Future<Output = Value>,
    {
        let replica = route.replica;
        self.router().call_started(replica);
        // From here the in-flight count is held: the guard gives it back even if this future is dropped.
        let mut pending = InFlight { gateway: self, replica, done: false };
        let (endpoint, client) = self.client(&route.server, &route.endpoint);
        let outcome = match arguments.prepare {
            None => client.call_bounded(tool, &arguments.value, opts).await,
            Some(prepare) => {
                match timeout_at(opts.deadline, prepare(client.clone(), arguments.value.into_owned())).await {
                    Ok(prepared) => client.call_bounded(tool, &prepared, opts).await,
                    Err(_) => Err(LocalError::DeadlineExceeded.into()),
                }
            }
        };
        let now = self.clock.now();
        pending.done = true;
        let verdict = classify(&outcome);
        let ejected = {
            let mut router = self.router();
            match RouterVerdict::of(&outcome, verdict) {
                RouterVerdict::NoVerdict => router.call_abandoned(replica),
                v => router.call_finished(replica, v == RouterVerdict::Ok, now.saturating_duration_since(started), now),
            }
            self.layers.config().failover
                && outcome.as_ref().is_err_and(CallError::unreachable)
                && router.eject(replica, now)
        };
        if ejected {
            let replica = &*route.endpoint;
            self.observer.event(&Event::Ejection { server: &route.server, replica, ejected: true });
        }
        (Attempt { replica, endpoint, outcome }, verdict, now)
    }

    /// One pass over the candidates in the router's order, each refusal avoided in the next decision, so it ends
    /// (the router returns an avoided replica only when nothing else is left). Declined: the first refusal's reason
    /// (a breaker's `retry_after` is the soonest any candidate's breaker may admit again), and what the call may
    /// wait for — room first, then a breaker that holds.
    fn walk(
        &self,
        tool: &str,
        requirements: &[Requirement],
        tried: &[ReplicaId],
        (now, deadline): (Instant, Instant),
        entry: Entry,
    ) -> Walk {
        let probe = matches!(entry, Entry::LastResort { .. });
        let mut refused: Vec<ReplicaId> = Vec::new();
        let mut first_full: Option<Route> = None;
        let mut first_hold: Option<Wait> = None;
        let mut first_refusal: Option<Refusal> = None;
        let mut soonest: Option<Duration> = None;
        // The router's first choice among the replicas whose breaker refused for slowness alone.
        let mut first_slow: Option<Route> = None;
        let cap = |route: &Route| self.client_limit(route);
        loop {
            let avoid: Vec<ReplicaId> = tried.iter().chain(&refused).copied().collect();
            let Ok(route) = self.route(tool, requirements, &avoid) else {
                return Walk::Declined(Declined { reason: DegradedReason::NoCandidate, retry_after: None }, None);
            };
            if refused.contains(&route.replica) {
                break;
            }
            let entry = if probe { Entry::LastResort { past_slow: false } } else { Entry::First };
            match self.layers.admit(route, tool, &cap, entry, now, self.observer.as_ref()) {
                Ok(admitted) => return Walk::Admitted(admitted),
                Err((route, refusal)) => {
                    refused.push(route.replica);
                    if matches!(refusal, Refusal::Breaker(Rejected { slow_only: true, .. }))
                        && first_slow.is_none()
                        && self.answers_within(route.replica, deadline.saturating_duration_since(now))
                    {
                        first_slow = Some(route.clone());
                    }
                    if let Refusal::Breaker(Rejected { retry_after, hold, .. }) = refusal {
                        if let Some(after) = retry_after {
                            soonest = Some(soonest.map_or(after, |s| s.min(after)));
                        }
                        if let (Some(hold), None) = (hold, &first_hold) {
                            let recheck = retry_after.unwrap_or(HOLD_RECHECK);
                            first_hold = Some(Wait::Breaker { route: route.clone(), hold, recheck });
                        }
                    }
                    first_refusal.get_or_insert(refusal);
                    if refusal == Refusal::Full && first_full.is_none() {
                        first_full = Some(route);
                    }
                }
            }
        }
        // No candidate took the call, and some refused only because they are slow, not failing, yet answer within
        // the call's deadline: declining would trade a slow answer for none, where a plain proxy would wait for it.
        // So the call passes the first such replica's breaker; its bulkhead and throttle still apply, and a full
        // bulkhead there is waited for, as for any call. (Replicas that answer fast took the call on the first walk,
        // if any had room.) A replica too slow for the deadline is still declined: a timeout would be a failure the
        // agent retries, where the degraded result tells it not to.
        if let (true, Some(route)) = (probe, first_slow) {
            let entry = Entry::LastResort { past_slow: true };
            match self.layers.admit(route, tool, &cap, entry, now, self.observer.as_ref()) {
                Ok(admitted) => return Walk::Admitted(admitted),
                Err((route, Refusal::Full)) => {
                    return Walk::Declined(Declined::of(Refusal::Full), Some(Wait::Room(route)));
                }
                Err(_) => {}
            }
        }
        let mut declined = Declined::of(first_refusal.unwrap_or(Refusal::Full));
        if declined.reason == DegradedReason::BreakerOpen {
            declined.retry_after = soonest;
        }
        Walk::Declined(declined, first_full.map(Wait::Room).or(first_hold))
    }

    /// Whether `replica`'s recent latency (the router's peak EWMA, which follows a rise at once) fits in `left` with
    /// room to spare: twice over, since a slow server's latency varies more, and a call passed to it that times out
    /// is a failure the agent may retry.
    fn answers_within(&self, replica: ReplicaId, left: Duration) -> bool {
        let ewma_ms = self.router().stats(replica).map_or(f64::INFINITY, |s| s.peak_ewma_ms);
        2.0 * ewma_ms < left.as_secs_f64() * 1_000.0
    }

    /// Every layer learns how the attempt ended (classified once, by the caller), and the retry plan decides.
    fn settle(
        &self,
        admitted: Admitted,
        tool: &str,
        attempt: &Attempt,
        verdict: HealthVerdict,
        plan: &mut Option<RetryPlan>,
        AttemptEnd { deadline, now, elsewhere }: AttemptEnd,
    ) -> Settled {
        let sample = limiter_sample(&attempt.outcome, verdict);
        let route = admitted.settle(&self.layers, tool, now, verdict, sample, self.observer.as_ref());
        let Err(error) = &attempt.outcome else { return Settled::Answer };
        // The gateway retries on another replica or not at all: the same replica again, a few milliseconds later, is
        // what the agent would do, and in an error burst it only adds latency to calls that fail anyway.
        if !elsewhere {
            return Settled::Answer;
        }
        // Never sent: no replica ran the tool, so another may take the call whatever the tool does. No backoff (the
        // failed replica is avoided, not waited for) and no budget (no server saw more load); bounded by the
        // replicas not tried yet, and by the deadline.
        if self.layers.config().failover && error.delivery() == Delivery::NeverSent && now < deadline {
            return Settled::Retry(Duration::ZERO);
        }
        let Some(policy) = self.layers.config().retry.clone() else { return Settled::Answer };
        // The plan is made at the first failure: only then has the replica's client listed the tools, so only then
        // are the tool's annotations (is it idempotent?) known.
        let plan = plan.get_or_insert_with(|| {
            let mut plan = RetryPlan::new(policy, deadline, self.idempotent(&route, tool));
            plan.start_attempt();
            plan
        });
        // Retryable: what the error class allows, or — for an idempotent tool — any failure that was the replica's
        // (a server error, an overload): another replica may well serve it.
        let retryable = error.retry_allowed(plan.idempotent()) || (plan.idempotent() && verdict.replica_failed());
        let rng = self.layers.rng();
        let next = self
            .layers
            .with_budget(&route.server, now, |b| plan.next_if(retryable, now, rng, Some(b)))
            .unwrap_or_else(|| plan.next_if(retryable, now, rng, None));
        match next {
            Ok(delay) => Settled::Retry(delay),
            Err(give_up) => DegradedReason::from_give_up(give_up).map_or(Settled::Answer, Settled::Declined),
        }
    }

    /// Whether a replica that serves `tool` is left that neither `tried` nor `this` attempt has called.
    fn untried_replica(&self, tool: &str, tried: &[ReplicaId], this: ReplicaId) -> bool {
        self.with_router(|r| r.replicas_for(tool).iter().any(|id| *id != this && !tried.contains(id)))
    }

    fn declined(&self, tool: &str, earlier: Vec<Attempt>, d: Declined) -> Routed {
        self.observer.event(&Event::Degraded { tool, reason: d.reason });
        let result = self.layers.degraded(tool, d.reason, d.retry_after);
        Routed { earlier, last: Last::Declined(Degraded { reason: d.reason, result }) }
    }

    /// Whether `tool` may be retried automatically: its annotations (read-only or idempotent) as the replica's client
    /// has them cached, or — when it has none (a replica that just died has no session, so nothing cached) — as a
    /// sibling replica of the same server has them. Unknown everywhere counts as not idempotent: never guess towards
    /// retrying.
    fn idempotent(&self, route: &Route, tool: &str) -> bool {
        let siblings: Vec<String> =
            self.with_router(|r| r.server_of(route.replica).map(|s| s.replicas.clone()).unwrap_or_default());
        let endpoints = std::iter::once(&*route.endpoint).chain(siblings.iter().map(String::as_str));
        let annotations = endpoints
            .filter_map(|endpoint| self.existing_client(endpoint)?.cached_capabilities())
            .find_map(|caps| caps.tool(tool).map(|t| t.annotations().clone()));
        auto_retry_allowed(crate::mcp::method::TOOLS_CALL, annotations.as_ref())
    }

    /// The in-flight limit of the client that carries calls to `route`'s replica: a bulkhead's cap when nothing else
    /// sets one. When the clients of several servers share that limit, the slots are shared even though the pools
    /// are not: a server whose calls hang (a partition that swallowed its requests, a hung process) would otherwise
    /// hold every slot, and the other servers' calls would wait behind it. So each server keeps a floor of the slots
    /// and borrows what the others leave idle (see `resilience/shared_slots.rs`): work-conserving, where a fixed split
    /// shed calls a slow server would have answered.
    fn client_limit(&self, route: &Route) -> ClientLimit {
        let client = self.client(&route.server, &route.endpoint).1;
        let (cap, queue_wait) = (client.in_flight_cap(), client.queue_wait());
        let servers = self.with_router(|r| r.server_count());
        if !client.shares_limit() || servers <= 1 {
            return ClientLimit::own(cap, queue_wait);
        }
        ClientLimit { cap, share: Some(SlotShare { slots: cap, servers }), queue_wait }
    }
}

/// Holds one in-flight slot of a replica in the router; a call future dropped mid-way (cancelled by its caller)
/// gives it back as abandoned.
struct InFlight<'a> {
    gateway: &'a Gateway,
    replica: ReplicaId,
    done: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.gateway.router().call_abandoned(self.replica);
        }
    }
}
