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
