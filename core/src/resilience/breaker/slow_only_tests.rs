//! The breaker's refusals "for slowness alone" (`Rejected::slow_only`): which opens are, and what ends one.

use tokio::time::Instant;

use super::tests::{breaker, call, count_config, ms, to};
use super::*;

/// A breaker opened by slow answers refuses "for slowness alone" (the gateway may pass it when no replica is
/// faster) through its open and half-open periods, until something fails: a failure trip never does, and a failed
/// open-state probe ends it.
#[test]
fn a_slowness_trip_refuses_for_slowness_alone_until_a_probe_fails() {
    let t0 = Instant::now();
    let config = BreakerConfig { probe_interval: Some(ms(50)), hold: Some(ms(1000)), ..count_config(2, 2) };
    let mut b = breaker(config.clone(), t0);
    call(&mut b, t0, HealthVerdict::Success, ms(600));
    let t = call(&mut b, t0, HealthVerdict::Success, ms(700));
    assert_eq!(to(&t).map(|t| t.2), Some(TransitionReason::SlowCallRate));
    let r = b.try_acquire_no_probe(t0 + ms(10)).decision.unwrap_err();
    assert!(r.slow_only && r.reason == RejectReason::Open, "{r:?}");
    // A slow answer to an open-state probe keeps it open, still for slowness alone.
    let probe = b.try_acquire(t0 + ms(60)).decision.expect("an open-state probe");
    assert_eq!(b.on_outcome(t0 + ms(60), probe, HealthVerdict::Success, ms(800)), None);
    assert!(b.try_acquire_no_probe(t0 + ms(70)).decision.unwrap_err().slow_only);
    // Half-open after it, its probe slots full: still for slowness alone.
    let t1 = t0 + ms(1000);
    // The second probe never reports: the re-open below starts a new period, and its ticket belongs to the old one.
    let (p1, _p2) = (b.try_acquire(t1).decision.unwrap(), b.try_acquire(t1).decision.unwrap());
    let r = b.try_acquire(t1).decision.unwrap_err();
    assert!(r.slow_only && r.reason == RejectReason::HalfOpenFull, "{r:?}");
    // A probe answered slowly re-opens it, for slowness alone; then a failed open-state probe ends that.
    let t = b.on_outcome(t1, p1, HealthVerdict::Success, ms(900));
    assert_eq!(to(&t).map(|t| t.2), Some(TransitionReason::ProbeSlow));
    assert!(b.try_acquire_no_probe(t1 + ms(10)).decision.unwrap_err().slow_only);
    let probe = b.try_acquire(t1 + ms(60)).decision.expect("an open-state probe");
    assert_eq!(b.on_outcome(t1 + ms(60), probe, HealthVerdict::Failure, ms(5)), None);
    assert!(!b.try_acquire_no_probe(t1 + ms(70)).decision.unwrap_err().slow_only, "a failure ends slowness alone");

    // A failure trip is never for slowness alone, even when its failures were slow.
    let mut b = breaker(config, t0);
    call(&mut b, t0, HealthVerdict::Failure, ms(600));
    let t = call(&mut b, t0, HealthVerdict::Failure, ms(700));
    assert_eq!(to(&t).map(|t| t.2), Some(TransitionReason::FailureRate));
    let r = b.try_acquire_no_probe(t0 + ms(10)).decision.unwrap_err();
    assert!(!r.slow_only && r.hold.is_some(), "a slow fault that fails still holds, but is not passed: {r:?}");

    // Another node's open says which it was (breaker sync's `Report::slow`), and the follower refuses the same way.
    for slow_only in [true, false] {
        let mut b = breaker(count_config(2, 2), t0);
        assert!(b.follow_remote_open(t0, ms(700), slow_only).is_some());
        assert_eq!(b.try_acquire_no_probe(t0 + ms(10)).decision.unwrap_err().slow_only, slow_only);
    }
}
