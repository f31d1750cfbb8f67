//! Each logical call's story, gathered while it runs, for `traces.otlp.json` and the report's waterfall (see
//! `run::traces`).
//!
//! A call's events arrive from the task that runs it (its offer, its gateway's decline, its attempts, its end), so
//! the call under way is found by the current task's id, as [`super::Inner::declined`] does. A gateway node's own
//! attempts run in the node's tasks and are not joined to the agent's call: through `[nodes]` a trace holds the
//! agent's span alone.
//!
//! Memory: one entry per call in flight, the kept calls (bounded by `[report] traces`'s sampling), and the three
//! calls the waterfall shows.

use std::collections::BTreeMap;
use std::time::Duration;

use mcpstorm_core::history::{CallCode, CallStatus};
use tokio::task::Id;

use super::AttemptEnd;
use crate::run::RetryBy;
use crate::run::traces::{AttemptTrace, CallTrace, GatewayCall, Pick, Traces};

#[derive(Debug, Default)]
pub(super) struct TraceLog {
    /// One logical call in this many is kept; `None`: none is (`traces = "off"`).
    every: Option<u64>,
    /// Keep only the calls that did not end ok.
    failed_only: bool,
    pending: BTreeMap<Id, Pending>,
    kept: Vec<CallTrace>,
    /// The calls the waterfall shows, as chosen so far: the slowest, and the two best failed and degraded calls (the
    /// best may be the slowest, which is not shown twice).
    slowest: Option<CallTrace>,
    failed: Vec<CallTrace>,
    degraded: Vec<CallTrace>,
}

/// A call under way.
#[derive(Debug)]
struct Pending {
    logical: u64,
    start: Duration,
    load_host: String,
    tool: String,
    /// Each attempt, with when its gateway call returned.
    attempts: Vec<(AttemptTrace, Duration)>,
    /// The gateway's declines: when, and why.
    declines: Vec<(Duration, &'static str)>,
}

impl TraceLog {
    pub(super) fn new(every: Option<u64>, failed_only: bool) -> TraceLog {
        TraceLog { every, failed_only, ..TraceLog::default() }
    }

    /// The current task offers logical call `logical` at `at` (and has no other call under way).
    pub(super) fn offered(&mut self, logical: u64, at: Duration) {
        if let Some(task) = tokio::task::try_id() {
            let call = Pending {
                logical,
                start: at,
                load_host: String::new(),
                tool: String::new(),
                attempts: Vec::new(),
                declines: Vec::new(),
            };
            self.pending.insert(task, call);
        }
    }

    /// An attempt of the current task's call ended.
    pub(super) fn attempt(&mut self, end: &AttemptEnd<'_>) {
        let Some(call) = tokio::task::try_id().and_then(|task| self.pending.get_mut(&task)) else {
            return;
        };
        if call.load_host.is_empty() {
            call.load_host = end.load_host.to_owned();
            call.tool = end.tool.to_owned();
        }
        // An answer is a result, or an error the server sent (a JSON-RPC error); a timeout or a broken connection
        // tells nothing of what the server did.
        let answered = matches!(end.outcome, Ok(_) | Err(mcpstorm_core::CallError::Protocol(_)));
        let attempt = AttemptTrace {
            replica: end.replica.to_owned(),
            retry: call.attempts.len() as u32,
            by: end.by,
            sent: end.sent,
            end: end.now,
            status: CallStatus::of_outcome(end.outcome).into(),
            code: CallCode::of_outcome(end.outcome).map(|c| c.to_string()),
            answered,
        };
        call.attempts.push((attempt, end.now));
    }

    /// The current task's gateway declined its call at `at` (`host`'s gateway, calling `tool`).
    pub(super) fn declined(&mut self, at: Duration, host: &str, tool: &str, reason: &'static str) {
        let Some(call) = tokio::task::try_id().and_then(|task| self.pending.get_mut(&task)) else {
            return;
        };
        if call.load_host.is_empty() {
            call.load_host = host.to_owned();
            call.tool = tool.to_owned();
        }
        call.declines.push((at, reason));
    }

    /// The current task's call ended at `end` as `outcome`: kept if sampled, and weighed for the waterfall.
    pub(super) fn done(&mut self, end: Duration, outcome: &'static str) {
        let Some(call) = tokio::task::try_id().and_then(|task| self.pending.remove(&task)) else {
            return;
        };
        let trace = call.finish(end, outcome);
        self.show(&trace);
        let sampled = self.every.is_some_and(|every| trace.logical % every == 0);
        if sampled && !(self.failed_only && trace.ok()) {
            self.kept.push(trace);
        }
    }

    /// Weighs `trace` for the waterfall's picks (ties keep the earlier call).
    fn show(&mut self, trace: &CallTrace) {
        let latency = |t: &CallTrace| t.end.saturating_sub(t.start);
        let attempts = |t: &CallTrace| t.attempts().count();
        if self.slowest.as_ref().is_none_or(|s| latency(trace) > latency(s)) {
            self.slowest = Some(trace.clone());
        }
        match trace.outcome {
            "ok" => {}
            // A breaker's decline first, then the call that tried the most before it.
            "degraded" => keep_best(&mut self.degraded, trace, |t| {
                (t.gateway_calls.iter().any(|g| g.declined == Some("breaker_open")), attempts(t), Duration::ZERO)
            }),
            _ => keep_best(&mut self.failed, trace, |t| (true, attempts(t), latency(t))),
        }
    }

    /// The run is over: the kept calls and the waterfall's.
    pub(super) fn finish(&mut self) -> Traces {
        let kept = self.every.map(|_| std::mem::take(&mut self.kept));
        let slowest = self.slowest.take();
        let not_slowest = |list: &mut Vec<CallTrace>| {
            let n = slowest.as_ref().map(|s| s.logical);
            std::mem::take(list).into_iter().find(|c| Some(c.logical) != n)
        };
        let failed = not_slowest(&mut self.failed);
        let degraded = not_slowest(&mut self.degraded);
        let shown = [(Pick::Slowest, slowest), (Pick::Failed, failed), (Pick::Degraded, degraded)]
            .into_iter()
            .filter_map(|(pick, call)| call.map(|c| (pick, c)))
            .collect();
        Traces { kept, shown }
    }
}

/// Keeps `list` as the two calls of highest `rank` so far, best first; a tie keeps the earlier call.
fn keep_best<R: PartialOrd>(list: &mut Vec<CallTrace>, trace: &CallTrace, rank: impl Fn(&CallTrace) -> R) {
    let r = rank(trace);
    let at = list.iter().position(|c| r > rank(c)).unwrap_or(list.len());
    if at < 2 {
        list.insert(at, trace.clone());
        list.truncate(2);
    }
}

impl Pending {
    /// Groups the attempts into the agent's gateway calls: a first try or an agent's retry starts one, a gateway's
    /// retry joins it. A decline belongs to the gateway call that returned at that instant, else it was a gateway
    /// call that sent nothing. A gateway call that sent nothing starts where the agent's previous one ended (its
    /// backoff included: the simulator does not see the agent start it), the first one at the call's start.
    fn finish(self, end: Duration, outcome: &'static str) -> CallTrace {
        let mut calls: Vec<GatewayCall> = Vec::new();
        for (attempt, returned) in self.attempts {
            match calls.last_mut() {
                Some(g) if attempt.by == RetryBy::Gateway => {
                    g.end = g.end.max(returned);
                    g.attempts.push(attempt);
                }
                _ => {
                    let start = calls.last().map_or(self.start, |g| g.end).min(attempt.sent);
                    calls.push(GatewayCall { start, end: returned, declined: None, attempts: vec![attempt] });
                }
            }
        }
        for (at, reason) in self.declines {
            match calls.iter_mut().find(|g| g.end == at && g.declined.is_none()) {
                Some(g) => g.declined = Some(reason),
                None => {
                    let i = calls.partition_point(|g| g.end <= at);
                    let start = if i == 0 { self.start } else { calls[i - 1].end };
                    calls.insert(
                        i,
                        GatewayCall { start: start.min(at), end: at, declined: Some(reason), attempts: vec![] },
                    );
                }
            }
        }
        // The simulator sees an attempt's end when its gateway call returns; an earlier attempt of a gateway retry
        // ended before the next one was sent.
        for g in &mut calls {
            let sends: Vec<Duration> = g.attempts.iter().skip(1).map(|a| a.sent).collect();
            for (a, next) in g.attempts.iter_mut().zip(sends) {
                a.end = a.end.min(next).max(a.sent);
            }
        }
        CallTrace {
            logical: self.logical,
            load_host: self.load_host,
            tool: self.tool,
            start: self.start,
            end: end.max(self.start),
            outcome,
            gateway_calls: calls,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn attempt(by: RetryBy, retry: u32, sent: u64) -> AttemptTrace {
        AttemptTrace {
            replica: "db-0".into(),
            retry,
            by,
            sent: ms(sent),
            end: ms(0),
            status: "timeout",
            code: None,
            answered: false,
        }
    }

    /// A first try and a gateway retry returned together at 2,000 ms with a decline, then the agent's retry at
    /// 2,100 ms (returned at 3,000), then a gateway call that sent nothing, declined at 3,500.
    #[test]
    fn attempts_are_grouped_into_the_agents_gateway_calls() {
        let mut a = vec![
            (attempt(RetryBy::First, 0, 1000), ms(2000)),
            (attempt(RetryBy::Gateway, 1, 1500), ms(2000)),
            (attempt(RetryBy::Agent, 2, 2100), ms(3000)),
        ];
        for (at, returned) in &mut a {
            at.end = *returned;
        }
        let pending = Pending {
            logical: 3,
            start: ms(990),
            load_host: "load-0".into(),
            tool: "get".into(),
            attempts: a,
            declines: vec![(ms(2000), "budget"), (ms(3500), "breaker_open")],
        };
        let t = pending.finish(ms(3500), "degraded");
        let shape: Vec<_> = t
            .gateway_calls
            .iter()
            .map(|g| (g.start, g.end, g.declined, g.attempts.iter().map(|a| (a.sent, a.end)).collect::<Vec<_>>()))
            .collect();
        assert_eq!(
            shape,
            [
                (ms(990), ms(2000), Some("budget"), vec![(ms(1000), ms(1500)), (ms(1500), ms(2000))]),
                (ms(2000), ms(3000), None, vec![(ms(2100), ms(3000))]),
                (ms(3000), ms(3500), Some("breaker_open"), vec![]),
            ]
        );
        assert_eq!((t.start, t.end, t.outcome), (ms(990), ms(3500), "degraded"));
    }

    /// Calls 0..6 offered and ended in one task, those with `n % 3 == 0` ok: `every` 2 with `failed_only` keeps 2 and
    /// 4; the waterfall's slowest is call 5, its failed call the one with the most attempts.
    #[test]
    fn failed_keeps_the_sampled_calls_that_did_not_end_ok() {
        let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        let traces = rt.block_on(async {
            let task = tokio::spawn(async {
                let mut log = TraceLog::new(Some(2), true);
                for n in 0..6u64 {
                    log.offered(n, ms(n * 100));
                    if n == 4 {
                        let a = attempt(RetryBy::First, 0, 400);
                        log.pending.values_mut().for_each(|p| p.attempts.push((a.clone(), ms(401))));
                    }
                    log.done(ms(n * 100 + 5 + n), if n % 3 == 0 { "ok" } else { "local" });
                }
                log.finish()
            });
            task.await.expect("task")
        });
        let kept: Vec<u64> = traces.kept.expect("kept").iter().map(|c| c.logical).collect();
        assert_eq!(kept, [2, 4]);
        let shown: Vec<(Pick, u64)> = traces.shown.iter().map(|(p, c)| (*p, c.logical)).collect();
        assert_eq!(shown, [(Pick::Slowest, 5), (Pick::Failed, 4)]);
    }
}
