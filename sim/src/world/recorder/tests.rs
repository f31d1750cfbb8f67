//! The recorder's own rules: how an outcome is filed.

use super::*;

/// A tool error ends a call as `degraded` only in the task the gateway answered with a degraded result, and only
/// if that task sent no attempt since: another task's tool error at the same moment stays `tool`.
#[test]
fn a_degraded_result_is_filed_under_its_own_class_not_tool() {
    let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let recorder = Recorder::default();
    let at = Duration::from_millis(500);
    let done = move |r: &Recorder| r.logical_done(at, Duration::from_millis(1), Outcome::Tool, None, None, None);
    rt.block_on(async {
        let (a, b) = (recorder.clone(), recorder.clone());
        // Declined: the degraded result is the call's end.
        let declined = tokio::spawn(async move {
            a.offered(at);
            a.degraded(at, DegradedReason::BreakerOpen, true);
            done(&a);
        });
        // A real isError result, after an earlier degraded answer that the agent retried.
        let retried = tokio::spawn(async move {
            b.offered(at);
            b.degraded(at, DegradedReason::BreakerOpen, true);
            b.attempt_started(at, true);
            done(&b);
        });
        let _ = (declined.await, retried.await);
    });
    // Outside any task: a plain tool error.
    done(&recorder);
    let (rows, _, totals) = recorder.finish(Duration::from_secs(1));
    assert_eq!((rows[0].err_degraded, rows[0].err_tool, rows[0].errors()), (1, 2, 3));
    let by_class: Vec<(&str, u64)> = totals.errors_by_class.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(by_class, [("degraded", 1), ("tool", 2)]);
}

/// The outcomes split the errors as agents lived them: a degraded answer apart from a failure they waited on, each
/// with the time the agents spent on it.
#[test]
fn outcomes_split_degraded_answers_from_failures_and_sum_the_waits() {
    let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let recorder = Recorder::default();
    let at = Duration::from_secs(3);
    let ms = Duration::from_millis;
    rt.block_on(async {
        let r = recorder.clone();
        tokio::spawn(async move {
            r.offered(at);
            r.degraded(at, DegradedReason::BulkheadFull, true);
            r.logical_done(at, ms(2), Outcome::Tool, None, None, None);
        })
        .await
        .expect("task");
    });
    recorder.logical_done(at, ms(1000), Outcome::Error("transport"), None, None, None);
    recorder.logical_done(at, ms(3000), Outcome::Error("local"), None, None, None);
    recorder.logical_done(at, ms(500), Outcome::Tool, None, None, None);
    recorder.logical_done(at, ms(7), Outcome::Ok, None, None, None);
    let (_, _, totals) = recorder.finish(Duration::from_secs(4));
    let o = &totals.outcomes;
    assert_eq!((o.ok, o.degraded, o.failed), (1, 1, 3));
    assert_eq!(o.ok + o.degraded + o.failed, totals.completed);
    assert_eq!(o.degraded + o.failed, totals.errors);
    assert_eq!((o.degraded_wait_s, o.degraded_mean_wait_ms), (0.002, 2.0));
    assert_eq!((o.failed_wait_s, o.failed_mean_wait_ms), (4.5, 1500.0));
}

/// A retry counts as a possible duplicate only for a tool not safe to repeat, only after an attempt that may have
/// run unseen, and only once the retry itself reached a server; it is filed under whoever sent it.
#[test]
fn possible_duplicates_are_retries_that_reached_a_server_after_an_attempt_that_may_have_run() {
    use mcpstorm_core::TransportError;
    use mcpstorm_core::jsonrpc::{ErrorCode, ErrorObject};

    let text = "name = \"t\"\nduration = \"10s\"\n[[servers]]\nname = \"db\"\nreplicas = 2\n[[servers.tools]]\n\
                name = \"create\"\n[[servers.tools]]\nname = \"get\"\nannotations = { idempotentHint = true }\n\
                [load]\nmode = \"open\"\nrate = 10.0\n[[load.mix]]\ntool = \"get\"\n";
    let scenario = crate::scenario::load_str(text, "t.toml", &[]).expect("valid");
    let recorder = Recorder::default();
    recorder.set_tools(&scenario);
    let ok = CallToolResult::text("done", false);
    let deadline = CallError::Local(mcpstorm_core::LocalError::DeadlineExceeded);
    let closed = CallError::Transport(TransportError::Closed);
    let refused = CallError::Transport(TransportError::ConnectFailed("refused".into()));
    let answered = CallError::Protocol(ErrorObject::new(ErrorCode(-32000), "failed"));
    let at = Duration::from_secs(1);
    let attempt = |host: &str, logical: u64, tool: &str, by: RetryBy, outcome: Result<&CallToolResult, &CallError>| {
        let end = AttemptEnd {
            load_host: host,
            replica: "db-0",
            tool,
            by,
            outcome,
            sent: at,
            now: at,
            misroute: false,
            verdict: AttemptVerdict::Plain,
        };
        recorder.attempt_ended(logical, end, || unreachable!("no call history in this test"));
    };
    use RetryBy::{Agent, First, Gateway};
    // The gateway's retry after a deadline: counted.
    attempt("load-0", 0, "create", First, Err(&deadline));
    attempt("load-0", 0, "create", Gateway, Ok(&ok));
    // Refused before sending, then retried: the first cannot have run.
    attempt("load-0", 1, "create", First, Err(&refused));
    attempt("load-0", 1, "create", Agent, Ok(&ok));
    // Closed after sending; the agent's first retry is refused (it ran nothing), its second is answered: counted once.
    attempt("load-0", 2, "create", First, Err(&closed));
    attempt("load-0", 2, "create", Agent, Err(&refused));
    attempt("load-0", 2, "create", Agent, Err(&answered));
    attempt("load-0", 2, "create", Agent, Ok(&ok));
    // An idempotent tool: never.
    attempt("load-0", 3, "get", First, Err(&deadline));
    attempt("load-0", 3, "get", Gateway, Ok(&ok));
    // No retry: nothing repeated. Another host's call with the same number is another call.
    attempt("load-0", 4, "create", First, Err(&closed));
    attempt("load-1", 4, "create", Agent, Ok(&ok));
    // Two ambiguous attempts in a row, each retried: each retry may repeat the tool.
    attempt("load-1", 5, "create", First, Err(&closed));
    attempt("load-1", 5, "create", Gateway, Err(&deadline));
    attempt("load-1", 5, "create", Agent, Ok(&ok));
    let (_, _, totals) = recorder.finish(at);
    assert_eq!(totals.possible_duplicates, 4);
    let by: Vec<(&str, u64)> = totals.possible_duplicates_by.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(by, [("agent", 2), ("gateway", 2)]);
}
