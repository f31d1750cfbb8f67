//! Breaker tests in resilience4j's style (explicit times and durations, state and counts after each step), plus a
//! model-based test: a deliberately naive reference model (outcomes kept in a plain list, the window recomputed by
//! filtering) driven side by side with the real breaker by proptest-generated operation sequences.

use std::time::Duration;

use proptest::prelude::*;
use tokio::time::Instant;

use super::*;
use crate::rt::SeededRng;

pub(super) fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

pub(super) fn count_config(size: u32, minimum: u32) -> BreakerConfig {
    BreakerConfig {
        window: WindowConfig::Count { size },
        minimum_calls: minimum,
        open: ms(1000),
        open_max: ms(8000),
        open_jitter: 0.0,
        half_open_probes: 2,
        half_open_max_wait: ms(5000),
        slow_call: ms(500),
        probe_interval: None,
        ..BreakerConfig::default()
    }
}

pub(super) fn breaker(config: BreakerConfig, t0: Instant) -> Breaker {
    Breaker::new(config, t0, SeededRng::new(1)).unwrap()
}

/// Admits one call at `now` and reports it at once.
pub(super) fn call(
    b: &mut Breaker,
    now: Instant,
    verdict: HealthVerdict,
    elapsed: Duration,
) -> Option<BreakerTransition> {
    let ticket = b.try_acquire(now).decision.expect("admitted");
    b.on_outcome(now, ticket, verdict, elapsed)
}

pub(super) fn to(t: &Option<BreakerTransition>) -> Option<(BreakerState, BreakerState, TransitionReason)> {
    t.as_ref().map(|t| (t.from, t.to, t.reason))
}

#[test]
fn opens_at_the_failure_threshold_inclusive_only_after_minimum_calls() {
    let t0 = Instant::now();
    let mut b = breaker(count_config(10, 4), t0);
    assert_eq!(call(&mut b, t0, HealthVerdict::Failure, ms(1)), None);
    assert_eq!(call(&mut b, t0, HealthVerdict::Failure, ms(1)), None);
    assert_eq!(
        call(&mut b, t0, HealthVerdict::Success, ms(1)),
        None,
        "3 calls < minimum 4, 67% failures: no verdict yet"
    );
    assert_eq!(b.counts(t0), BreakerCounts { calls: 3, failures: 2, slow: 0 });
    let t = call(&mut b, t0, HealthVerdict::Success, ms(1));
    assert_eq!(
        to(&t),
        Some((BreakerState::Closed, BreakerState::Open, TransitionReason::FailureRate)),
        "2/4 = 50% ≥ 50% trips"
    );
    assert_eq!(t.unwrap().open_for, Some(ms(1000)));
    let r = b.try_acquire(t0 + ms(400)).decision.unwrap_err();
    let rejected = Rejected { reason: RejectReason::Open, retry_after: Some(ms(600)), hold: None, slow_only: false };
    assert_eq!(r, rejected);
}

#[test]
fn slow_calls_trip_on_their_own_rate() {
    let t0 = Instant::now();
    let config = BreakerConfig { slow_call_rate: 0.6, ..count_config(5, 5) };
    let mut b = breaker(config, t0);
    for elapsed in [ms(499), ms(500), ms(900), ms(10)] {
        assert_eq!(call(&mut b, t0, HealthVerdict::Success, elapsed), None);
    }
    assert_eq!(b.counts(t0), BreakerCounts { calls: 4, failures: 0, slow: 2 });
    let t = call(&mut b, t0, HealthVerdict::Success, ms(600));
    assert_eq!(
        to(&t),
        Some((BreakerState::Closed, BreakerState::Open, TransitionReason::SlowCallRate)),
        "3/5 = 60% slow ≥ 60%"
    );
}

#[test]
fn half_open_admits_only_its_probes_and_closes_on_consecutive_successes() {
    let t0 = Instant::now();
    let mut b = breaker(count_config(2, 2), t0);
    call(&mut b, t0, HealthVerdict::Failure, ms(1));
    assert!(call(&mut b, t0, HealthVerdict::Failure, ms(1)).is_some());
    let t1 = t0 + ms(1000);
    let a = b.try_acquire(t1);
    assert_eq!(to(&a.transition), Some((BreakerState::Open, BreakerState::HalfOpen, TransitionReason::OpenElapsed)));
    let p1 = a.decision.unwrap();
    let p2 = b.try_acquire(t1).decision.unwrap();
    assert!(p1.is_probe() && p2.is_probe());
    for _ in 0..100 {
        let r = b.try_acquire(t1).decision.unwrap_err();
        assert_eq!(
            r.reason,
            RejectReason::HalfOpenFull,
            "an unbounded half-open state would let everything through here"
        );
    }
    assert_eq!(b.probes_in_flight(), 2);
    assert_eq!(b.on_outcome(t1, p1, HealthVerdict::Success, ms(10)), None);
    let p3 = b.try_acquire(t1).decision.unwrap();
    assert_eq!(b.on_outcome(t1, p2, HealthVerdict::Ignore, ms(10)), None, "ignored: frees the slot, decides nothing");
    let t = b.on_outcome(t1, p3, HealthVerdict::Success, ms(10));
    assert_eq!(to(&t), Some((BreakerState::HalfOpen, BreakerState::Closed, TransitionReason::ProbesSucceeded)));
    assert_eq!(b.counts(t1), BreakerCounts::default(), "a fresh window after closing");
}

#[test]
fn open_period_grows_on_each_reopen_and_resets_after_a_close() {
    let t0 = Instant::now();
    let mut b = breaker(count_config(1, 1), t0);
    let mut now = t0;
    let mut periods = vec![];
    for round in 0..2 {
        let opened = call(&mut b, now, HealthVerdict::Failure, ms(1)).expect("opens");
        periods.push(opened.open_for.unwrap().as_millis());
        now += opened.open_for.unwrap();
        // The half-open probe fails: outright in round 0, by being slow in round 1 (the other re-open path).
        let probe = b.try_acquire(now).decision.unwrap();
        let (verdict, elapsed) =
            if round == 0 { (HealthVerdict::Failure, ms(1)) } else { (HealthVerdict::Success, ms(600)) };
        let reopened = b.on_outcome(now, probe, verdict, elapsed).expect("re-opens");
        periods.push(reopened.open_for.unwrap().as_millis());
        now += reopened.open_for.unwrap();
        // Two probe successes close it, which resets the growth.
        for _ in 0..2 {
            let p = b.try_acquire(now).decision.unwrap();
            b.on_outcome(now, p, HealthVerdict::Success, ms(1));
        }
        assert_eq!(b.state(), BreakerState::Closed);
    }
    assert_eq!(periods, vec![1000, 2000, 1000, 2000], "each close resets the growth");

    let mut b = breaker(count_config(1, 1), t0);
    let mut now = t0;
    let mut t = call(&mut b, now, HealthVerdict::Failure, ms(1)).unwrap();
    let mut grown = vec![t.open_for.unwrap().as_millis()];
    for _ in 0..5 {
        now += t.open_for.unwrap();
        let probe = b.try_acquire(now).decision.unwrap();
        t = b.on_outcome(now, probe, HealthVerdict::Failure, ms(1)).unwrap();
        assert_eq!(t.reason, TransitionReason::ProbeFailed);
        grown.push(t.open_for.unwrap().as_millis());
    }
    assert_eq!(grown, vec![1000, 2000, 4000, 8000, 8000, 8000], "doubling, capped at open_max");
}

#[test]
fn open_period_jitter_stays_in_band_and_is_seeded() {
    let t0 = Instant::now();
    let config = BreakerConfig { open_jitter: 0.2, ..count_config(1, 1) };
    let period = |seed| {
        let mut b = Breaker::new(config.clone(), t0, SeededRng::new(seed)).unwrap();
        call(&mut b, t0, HealthVerdict::Failure, ms(1)).unwrap().open_for.unwrap()
    };
    let all: Vec<Duration> = (0..50).map(period).collect();
    assert!(all.iter().all(|d| *d >= ms(800) && *d <= ms(1200)), "{all:?}");
    assert!(all.iter().any(|d| *d != all[0]), "jitter varies with the seed");
    assert_eq!(period(7), period(7));
}

#[test]
fn a_probe_that_never_reports_cannot_wedge_half_open() {
    let t0 = Instant::now();
    let mut b = breaker(count_config(1, 1), t0);
    call(&mut b, t0, HealthVerdict::Failure, ms(1));
    let t1 = t0 + ms(1000);
    let _lost = b.try_acquire(t1).decision.unwrap();
    let _lost2 = b.try_acquire(t1).decision.unwrap();
    assert_eq!(b.try_acquire(t1 + ms(4999)).decision.unwrap_err().reason, RejectReason::HalfOpenFull);
    let a = b.try_acquire(t1 + ms(5000));
    assert_eq!(
        to(&a.transition),
        Some((BreakerState::HalfOpen, BreakerState::Open, TransitionReason::HalfOpenTimeout))
    );
    assert_eq!(a.transition.unwrap().open_for, Some(ms(2000)), "counts as a re-open: the period grows");
    assert_eq!(a.decision.unwrap_err().reason, RejectReason::Open);
}

#[test]
fn server_retry_after_opens_for_that_long_capped() {
    let t0 = Instant::now();
    let config = BreakerConfig { retry_after_cap: ms(3000), ..count_config(10, 10) };
    let mut b = breaker(config, t0);
    let t = call(&mut b, t0, HealthVerdict::RetryAfter(ms(1234)), ms(1)).unwrap();
    assert_eq!((t.reason, t.open_for), (TransitionReason::ServerRetryAfter, Some(ms(1234))), "no minimum, no growth");
    let probe = b.try_acquire(t0 + ms(1234)).decision.unwrap();
    let t = b.on_outcome(t0 + ms(1234), probe, HealthVerdict::RetryAfter(ms(60_000)), ms(1)).unwrap();
    assert_eq!(t.open_for, Some(ms(3000)));
}

#[test]
fn late_outcomes_from_an_earlier_period_do_not_count() {
    let t0 = Instant::now();
    let mut b = breaker(count_config(2, 2), t0);
    let early = b.try_acquire(t0).decision.unwrap();
    call(&mut b, t0, HealthVerdict::Failure, ms(1));
    call(&mut b, t0, HealthVerdict::Failure, ms(1));
    assert_eq!(b.state(), BreakerState::Open);
    assert_eq!(b.on_outcome(t0 + ms(10), early, HealthVerdict::Failure, ms(10)), None);
    let t1 = t0 + ms(1000);
    let probe = b.try_acquire(t1).decision.unwrap();
    assert_eq!(b.on_outcome(t1, early, HealthVerdict::Success, ms(1000)), None, "not a probe of this half-open");
    assert_eq!(b.probes_in_flight(), 1);
    b.release(probe);
    assert_eq!(b.probes_in_flight(), 0);
}

#[test]
fn open_state_probes_one_call_per_interval_and_a_timely_success_moves_to_half_open() {
    let t0 = Instant::now();
    let config = BreakerConfig { probe_interval: Some(ms(200)), ..count_config(4, 2) };
    let mut b = breaker(config, t0);
    call(&mut b, t0, HealthVerdict::Failure, ms(1));
    let opened = call(&mut b, t0, HealthVerdict::Failure, ms(1));
    assert_eq!(to(&opened), Some((BreakerState::Closed, BreakerState::Open, TransitionReason::FailureRate)));
    // The first call after opening is a probe; the next 200 ms reject, naming the interval as the retry-after.
    let probe = b.try_acquire(t0).decision.expect("the period's first probe");
    assert!(probe.is_probe());
    let rejected = b.try_acquire(t0 + ms(199)).decision.unwrap_err();
    assert_eq!((rejected.reason, rejected.retry_after), (RejectReason::Open, Some(ms(200))));
    // A failed or slow probe changes nothing: the breaker stays open, the period keeps its end.
    assert_eq!(b.on_outcome(t0 + ms(150), probe, HealthVerdict::Failure, ms(150)), None);
    let slow = b.try_acquire(t0 + ms(200)).decision.expect("the next interval's probe");
    assert_eq!(b.on_outcome(t0 + ms(900), slow, HealthVerdict::Success, ms(700)), None, "slow: not recovered");
    assert_eq!(b.state(), BreakerState::Open);
    // A timely success: half-open at once, counting as its first success; one more success closes (2 probes).
    let good = b.try_acquire(t0 + ms(900)).decision.expect("probe");
    let recovered = b.on_outcome(t0 + ms(910), good, HealthVerdict::Success, ms(10));
    assert_eq!(to(&recovered), Some((BreakerState::Open, BreakerState::HalfOpen, TransitionReason::ProbeRecovered)));
    let closed = call(&mut b, t0 + ms(920), HealthVerdict::Success, ms(10));
    assert_eq!(to(&closed), Some((BreakerState::HalfOpen, BreakerState::Closed, TransitionReason::ProbesSucceeded)));
}

#[test]
fn a_caller_with_other_replicas_is_never_taken_as_a_probe() {
    let t0 = Instant::now();
    let config = BreakerConfig { probe_interval: Some(ms(200)), ..count_config(4, 2) };
    let mut b = breaker(config, t0);
    call(&mut b, t0, HealthVerdict::Failure, ms(1));
    call(&mut b, t0, HealthVerdict::Failure, ms(1));
    assert_eq!(b.try_acquire_no_probe(t0).decision.unwrap_err().reason, RejectReason::Open);
    assert!(b.try_acquire(t0).decision.expect("the probe is still there for a caller with nothing else").is_probe());
}

#[test]
fn without_a_probe_interval_open_rejects_until_its_period_ends() {
    let t0 = Instant::now();
    let mut b = breaker(count_config(4, 2), t0);
    call(&mut b, t0, HealthVerdict::Failure, ms(1));
    call(&mut b, t0, HealthVerdict::Failure, ms(1));
    let rejected = b.try_acquire(t0 + ms(10)).decision.unwrap_err();
    assert_eq!((rejected.reason, rejected.retry_after), (RejectReason::Open, Some(ms(990))));
}

#[test]
fn manual_switch_positions_and_reset() {
    let t0 = Instant::now();
    let mut b = breaker(count_config(1, 1), t0);
    let t = b.set_manual(t0, ManualSwitch::ForcedOpen);
    assert_eq!(to(&t), Some((BreakerState::Closed, BreakerState::ForcedOpen, TransitionReason::Manual)));
    assert_eq!(b.set_manual(t0, ManualSwitch::ForcedOpen), None);
    assert_eq!(b.try_acquire(t0 + ms(100_000)).decision.unwrap_err().reason, RejectReason::ForcedOpen);

    b.set_manual(t0, ManualSwitch::Disabled);
    for _ in 0..5 {
        assert_eq!(call(&mut b, t0, HealthVerdict::Failure, ms(1)), None);
    }
    assert_eq!(b.counts(t0).calls, 0, "disabled records nothing");

    b.set_manual(t0, ManualSwitch::MetricsOnly);
    for _ in 0..5 {
        assert_eq!(call(&mut b, t0, HealthVerdict::Failure, ms(1)), None);
    }
    assert_eq!(
        (b.state(), b.counts(t0).failures),
        (BreakerState::MetricsOnly, 1),
        "counted (window of 1), never trips"
    );

    assert_eq!(to(&b.reset(t0)), Some((BreakerState::MetricsOnly, BreakerState::Closed, TransitionReason::Manual)));
    assert_eq!(b.reset(t0), None);
    let t = b.follow_remote_open(t0, ms(700), false).unwrap();
    assert_eq!((t.reason, t.open_for), (TransitionReason::Remote, Some(ms(700))));
}

#[test]
fn time_window_failures_expire_with_their_buckets() {
    let t0 = Instant::now();
    let config =
        BreakerConfig { window: WindowConfig::Time { buckets: 4, bucket_width: ms(250) }, ..count_config(1, 3) };
    let mut b = breaker(config, t0);
    call(&mut b, t0, HealthVerdict::Failure, ms(1));
    call(&mut b, t0 + ms(100), HealthVerdict::Failure, ms(1));
    // One second later both failures have left the window: two more do not reach the minimum of three.
    assert_eq!(call(&mut b, t0 + ms(1000), HealthVerdict::Failure, ms(1)), None);
    assert_eq!(call(&mut b, t0 + ms(1100), HealthVerdict::Success, ms(1)), None);
    assert_eq!(b.counts(t0 + ms(1100)), BreakerCounts { calls: 2, failures: 1, slow: 0 });
    let t = call(&mut b, t0 + ms(1200), HealthVerdict::Failure, ms(1));
    assert_eq!(to(&t).map(|t| t.2), Some(TransitionReason::FailureRate), "2/3 within the window");
}

#[test]
fn gate_permits_record_once_and_release_probes_on_drop() {
    let t0 = Instant::now();
    let gate = Gate::new(breaker(count_config(1, 1), t0));
    let p = gate.try_acquire(t0).decision.unwrap();
    assert_eq!(to(&p.record(t0 + ms(5), HealthVerdict::Failure)).map(|t| t.1), Some(BreakerState::Open));
    let t1 = t0 + ms(1005);
    let a = gate.try_acquire(t1);
    assert_eq!(to(&a.transition).map(|t| t.1), Some(BreakerState::HalfOpen));
    let p1 = a.decision.unwrap();
    let p2 = gate.try_acquire(t1).decision.unwrap();
    assert_eq!(gate.probes_in_flight(), 2);
    drop(p1); // cancelled: the call's future was dropped
    assert_eq!(gate.probes_in_flight(), 1);
    let p3 = gate.try_acquire(t1).decision.unwrap();
    assert_eq!(p3.admitted_at(), t1);
    // Slow by the permit's own clock: admitted at t1, reported 600 ms later.
    let t = p3.record(t1 + ms(600), HealthVerdict::Success);
    assert_eq!(to(&t).map(|t| t.2), Some(TransitionReason::ProbeSlow));
    drop(p2);
    assert_eq!(gate.probes_in_flight(), 0);
    assert_eq!(gate.state(), BreakerState::Open);
}

// ---- model-based test ----

#[derive(Debug, Clone)]
enum Op {
    Wait(u64),
    Acquire,
    Report { which: usize, verdict: u8, elapsed: u64 },
    Drop(usize),
    Manual(u8),
    Reset,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u64..1500).prop_map(Op::Wait),
        6 => Just(Op::Acquire),
        6 => (0usize..8, 0u8..10, 0u64..900).prop_map(|(which, verdict, elapsed)| Op::Report { which, verdict, elapsed }),
        1 => (0usize..8).prop_map(Op::Drop),
        1 => (0u8..3).prop_map(Op::Manual),
        1 => Just(Op::Reset),
    ]
}

fn verdict(v: u8) -> HealthVerdict {
    match v {
        0..=3 => HealthVerdict::Success,
        4..=6 => HealthVerdict::Failure,
        7..=8 => HealthVerdict::Ignore,
        _ => HealthVerdict::RetryAfter(ms(700)),
    }
}

/// The reference: the spec in the most direct form, with no rings, running totals or phases-with-payloads.
#[derive(Debug)]
struct Model {
    c: BreakerConfig,
    origin: Instant,
    state: BreakerState,
    period: u64,
    /// Outcomes since the last close: (time, failed, slow).
    log: Vec<(Instant, bool, bool)>,
    reopens: u32,
    open_until: Instant,
    half_since: Instant,
    probes: u32,
    successes: u32,
    /// When the last open-state probe was admitted this open period.
    probed: Option<Instant>,
}

/// A model ticket: (period, half-open probe, open-state probe).
type MTicket = (u64, bool, bool);

type Step = Option<(BreakerState, BreakerState, TransitionReason, Option<Duration>)>;

impl Model {
    fn window(&self, now: Instant) -> (u32, u32, u32) {
        let in_window: Vec<_> = match self.c.window {
            WindowConfig::Count { size } => self.log.iter().rev().take(size as usize).collect(),
            WindowConfig::Time { buckets, bucket_width } => {
                let idx = |t: Instant| (t - self.origin).as_nanos() / bucket_width.as_nanos();
                self.log.iter().filter(|(t, ..)| idx(*t) + u128::from(buckets) > idx(now)).collect()
            }
        };
        let failures = in_window.iter().filter(|e| e.1).count() as u32;
        let slow = in_window.iter().filter(|e| e.2).count() as u32;
        (in_window.len() as u32, failures, slow)
    }

    fn go(&mut self, now: Instant, to: BreakerState, reason: TransitionReason, open_for: Option<Duration>) -> Step {
        let from = self.state;
        self.state = to;
        self.period += 1;
        match to {
            BreakerState::Open => (self.open_until, self.probed) = (now + open_for.unwrap(), None),
            BreakerState::HalfOpen => (self.half_since, self.probes, self.successes) = (now, 0, 0),
            _ => {}
        }
        Some((from, to, reason, open_for))
    }

    fn open(&mut self, now: Instant, reason: TransitionReason, dictated: Option<Duration>) -> Step {
        let d = match dictated {
            Some(d) => d.min(self.c.retry_after_cap),
            None => {
                self.reopens += 1;
                let mut d = self.c.open;
                for _ in 1..self.reopens {
                    d = (d * 2).min(self.c.open_max);
                }
                d
            }
        };
        self.go(now, BreakerState::Open, reason, Some(d))
    }

    fn close(&mut self, now: Instant, reason: TransitionReason) -> Step {
        self.log.clear();
        self.reopens = 0;
        self.go(now, BreakerState::Closed, reason, None)
    }

    fn tick(&mut self, now: Instant) -> Step {
        if self.state == BreakerState::Open && now >= self.open_until {
            return self.go(now, BreakerState::HalfOpen, TransitionReason::OpenElapsed, None);
        }
        if self.state == BreakerState::HalfOpen && now - self.half_since >= self.c.half_open_max_wait {
            return self.open(now, TransitionReason::HalfOpenTimeout, None);
        }
        None
    }

    fn acquire(&mut self, now: Instant) -> (Step, Result<MTicket, RejectReason>) {
        let step = self.tick(now);
        let r = match self.state {
            BreakerState::Open => match self.c.probe_interval {
                Some(every) if self.probed.is_none_or(|at| now - at >= every) => {
                    self.probed = Some(now);
                    Ok((self.period, false, true))
                }
                _ => Err(RejectReason::Open),
            },
            BreakerState::ForcedOpen => Err(RejectReason::ForcedOpen),
            BreakerState::HalfOpen if self.probes >= self.c.half_open_probes => Err(RejectReason::HalfOpenFull),
            BreakerState::HalfOpen => {
                self.probes += 1;
                Ok((self.period, true, false))
            }
            _ => Ok((self.period, false, false)),
        };
        (step, r)
    }

    fn report(
        &mut self,
        now: Instant,
        (period, probe, open_probe): MTicket,
        v: HealthVerdict,
        elapsed: Duration,
    ) -> Step {
        if let Some(s) = self.tick(now) {
            return Some(s);
        }
        if period != self.period {
            return None;
        }
        if probe {
            self.probes -= 1;
        }
        let slow = elapsed >= self.c.slow_call;
        if v == HealthVerdict::Ignore {
            return None;
        }
        match self.state {
            BreakerState::Open if open_probe && v == HealthVerdict::Success && !slow => {
                if self.c.half_open_probes <= 1 {
                    return self.close(now, TransitionReason::ProbesSucceeded);
                }
                let step = self.go(now, BreakerState::HalfOpen, TransitionReason::ProbeRecovered, None);
                self.successes = 1;
                step
            }
            BreakerState::Closed | BreakerState::MetricsOnly => {
                self.log.push((now, v != HealthVerdict::Success, slow));
                if self.state == BreakerState::MetricsOnly {
                    return None;
                }
                if let HealthVerdict::RetryAfter(d) = v {
                    return self.open(now, TransitionReason::ServerRetryAfter, Some(d));
                }
                let (calls, failures, slows) = self.window(now);
                let minimum = match self.c.window {
                    WindowConfig::Count { size } => self.c.minimum_calls.min(size),
                    WindowConfig::Time { .. } => self.c.minimum_calls,
                };
                let rate = |n: u32| f64::from(n) / f64::from(calls);
                if calls >= minimum && rate(failures) >= self.c.failure_rate {
                    self.open(now, TransitionReason::FailureRate, None)
                } else if calls >= minimum && rate(slows) >= self.c.slow_call_rate {
                    self.open(now, TransitionReason::SlowCallRate, None)
                } else {
                    None
                }
            }
            BreakerState::HalfOpen => match v {
                HealthVerdict::RetryAfter(d) => self.open(now, TransitionReason::ServerRetryAfter, Some(d)),
                HealthVerdict::Failure => self.open(now, TransitionReason::ProbeFailed, None),
                _ if slow => self.open(now, TransitionReason::ProbeSlow, None),
                _ => {
                    self.successes += 1;
                    if self.successes >= self.c.half_open_probes {
                        self.close(now, TransitionReason::ProbesSucceeded)
                    } else {
                        None
                    }
                }
            },
            _ => None,
        }
    }

    fn release(&mut self, (period, probe, open_probe): MTicket) {
        if open_probe && period == self.period && self.state == BreakerState::Open {
            self.probed = None;
        }
        if probe && period == self.period && self.state == BreakerState::HalfOpen {
            self.probes -= 1;
        }
    }
}

fn step_of(t: Option<BreakerTransition>) -> Step {
    t.map(|t| (t.from, t.to, t.reason, t.open_for))
}

fn run_model(config: BreakerConfig, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let t0 = Instant::now();
    let mut real = breaker(config.clone(), t0);
    let mut model = Model {
        c: config.clone(),
        origin: t0,
        state: BreakerState::Closed,
        period: 0,
        log: vec![],
        reopens: 0,
        open_until: t0,
        half_since: t0,
        probes: 0,
        successes: 0,
        probed: None,
    };
    let mut now = t0;
    let mut out: Vec<(Ticket, MTicket)> = vec![];
    for (i, op) in ops.into_iter().enumerate() {
        match op {
            Op::Wait(d) => now += ms(d),
            Op::Acquire => {
                let a = real.try_acquire(now);
                let (step, r) = model.acquire(now);
                prop_assert_eq!(step_of(a.transition), step, "op {}: transition on acquire", i);
                match (a.decision, r) {
                    (Ok(t), Ok(m)) => {
                        prop_assert_eq!(t.is_probe(), m.1 || m.2);
                        out.push((t, m));
                    }
                    (Err(rej), Err(reason)) => {
                        prop_assert_eq!(rej.reason, reason);
                        if reason == RejectReason::Open {
                            let rest = model.open_until - now;
                            let expected = config.probe_interval.map_or(rest, |every| rest.min(every));
                            prop_assert_eq!(rej.retry_after, Some(expected));
                        }
                    }
                    (a, b) => prop_assert!(false, "op {}: real {:?} vs model {:?}", i, a, b),
                }
            }
            Op::Report { which, verdict: v, elapsed } if !out.is_empty() => {
                let (t, m) = out.remove(which % out.len());
                let v = verdict(v);
                let real_step = step_of(real.on_outcome(now, t, v, ms(elapsed)));
                prop_assert_eq!(real_step, model.report(now, m, v, ms(elapsed)), "op {}: report {:?}", i, v);
            }
            Op::Drop(which) if !out.is_empty() => {
                let (t, m) = out.remove(which % out.len());
                real.release(t);
                model.release(m);
            }
            Op::Manual(k) => {
                let (manual, state) = match k {
                    0 => (ManualSwitch::ForcedOpen, BreakerState::ForcedOpen),
                    1 => (ManualSwitch::Disabled, BreakerState::Disabled),
                    _ => (ManualSwitch::MetricsOnly, BreakerState::MetricsOnly),
                };
                let expect = if model.state == state {
                    None
                } else {
                    model.log.clear();
                    model.go(now, state, TransitionReason::Manual, None)
                };
                prop_assert_eq!(step_of(real.set_manual(now, manual)), expect);
            }
            Op::Reset => {
                let expect =
                    if model.state == BreakerState::Closed { None } else { model.close(now, TransitionReason::Manual) };
                prop_assert_eq!(step_of(real.reset(now)), expect);
            }
            Op::Report { .. } | Op::Drop(_) => {}
        }
        prop_assert_eq!(real.state(), model.state, "op {}", i);
        prop_assert!(real.probes_in_flight() <= config.half_open_probes, "op {}: probe limit exceeded", i);
        prop_assert_eq!(real.probes_in_flight(), if model.state == BreakerState::HalfOpen { model.probes } else { 0 });
        let (calls, failures, slow) = model.window(now);
        prop_assert_eq!(real.counts(now), BreakerCounts { calls, failures, slow }, "op {}: window", i);
    }
    Ok(())
}

fn model_config(time_window: bool) -> BreakerConfig {
    BreakerConfig {
        window: if time_window {
            WindowConfig::Time { buckets: 4, bucket_width: ms(500) }
        } else {
            WindowConfig::Count { size: 5 }
        },
        minimum_calls: 3,
        retry_after_cap: ms(500),
        ..count_config(5, 3)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn breaker_matches_the_reference_model_count_window(ops in proptest::collection::vec(op(), 1..200)) {
        run_model(model_config(false), ops)?;
    }

    #[test]
    fn breaker_matches_the_reference_model_time_window(ops in proptest::collection::vec(op(), 1..200)) {
        run_model(model_config(true), ops)?;
    }

    #[test]
    fn breaker_matches_the_reference_model_with_open_state_probes(
        ops in proptest::collection::vec(op(), 1..200),
        every in 1u64..1200,
        probes in 1u32..4,
    ) {
        let config =
            BreakerConfig { probe_interval: Some(ms(every)), half_open_probes: probes, ..model_config(true) };
        run_model(config, ops)?;
    }
}
