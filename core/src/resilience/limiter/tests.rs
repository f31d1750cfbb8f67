//! Limiters on synthetic latency curves, and the pool's permit accounting on every exit path.

use std::time::Duration;

use tokio::time::Instant;

use super::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A server with `workers` workers and a `base` service time: RTT grows with the queue beyond its workers.
fn rtt(in_flight: usize, workers: usize, base: Duration) -> Duration {
    base.mul_f64((in_flight as f64 / workers as f64).max(1.0))
}

/// Drives a limiter with a saturating client (always `limit` calls in flight) for `n` samples.
fn drive(l: &mut dyn Limiter, n: usize, latency: impl Fn(usize) -> (Duration, bool)) -> Vec<usize> {
    (0..n)
        .map(|_| {
            let in_flight = l.limit();
            let (rtt, dropped) = latency(in_flight);
            l.on_sample(Sample { rtt, in_flight, dropped })
        })
        .collect()
}

#[test]
fn aimd_grows_while_flat_and_backs_off_on_drops() {
    let mut l = Aimd::new(AimdConfig { initial: 10, max: 50, ..AimdConfig::default() });
    let up = drive(&mut l, 100, |_| (ms(10), false));
    assert_eq!(&up[..3], &[11, 12, 13], "+1 per sample while the pool is used");
    assert_eq!(l.limit(), 50, "capped at max");
    let down = drive(&mut l, 3, |_| (ms(10), true));
    assert_eq!(down, vec![45, 40, 36], "×0.9, floored, per drop");
    // An RTT over the timeout is a drop too.
    l.on_sample(Sample { rtt: Duration::from_secs(6), in_flight: 36, dropped: false });
    assert_eq!(l.limit(), 32);
    // App-limited (few in flight): no growth.
    assert_eq!(l.on_sample(Sample { rtt: ms(10), in_flight: 3, dropped: false }), 32);
    assert_eq!(drive(&mut l, 100, |_| (ms(10), true)).last(), Some(&1), "never below min 1");
}

#[test]
fn aimd_finds_the_knee_of_a_timeout_curve() {
    // 20 workers, 10 ms each, 100 ms timeout: calls time out beyond about 200 in flight.
    let mut l = Aimd::new(AimdConfig { timeout: ms(100), max: 1000, ..AimdConfig::default() });
    let limits = drive(&mut l, 5000, |n| (rtt(n, 20, ms(10)), false));
    let tail = &limits[4000..];
    assert!(tail.iter().all(|&x| (170..=202).contains(&x)), "sawtooth just under the knee: {:?}", &tail[..20]);
}

#[test]
fn gradient2_grows_while_rtt_is_flat_and_shrinks_when_it_rises() {
    let mut l = Gradient2::new(Gradient2Config { initial: 10, max: 500, ..Gradient2Config::default() });
    let flat = drive(&mut l, 200, |_| (ms(10), false));
    assert!(flat.windows(2).all(|w| w[1] >= w[0]), "monotone growth on flat RTT");
    let grown = l.limit();
    assert!(grown > 100, "grew by about queue_size × smoothing per sample: {grown}");
    // The server slows down threefold (a DB lock): short RTT ≫ 1.5 × long RTT, the gradient falls to 0.5.
    drive(&mut l, 30, |_| (ms(30), false));
    let shrunk = l.limit();
    assert!(shrunk < grown / 2, "{grown} → {shrunk}");
    // Drops (our extension) shrink it too, without touching the RTT average.
    let long = l.long_rtt();
    drive(&mut l, 5, |_| (Duration::from_secs(5), true));
    assert!(l.limit() < shrunk && l.long_rtt() == long);
}

#[test]
fn gradient2_holds_queueing_early_and_drops_bound_its_drift() {
    // 20 workers at 10 ms; beyond 20 in flight requests queue and RTT grows proportionally; calls over 100 ms time
    // out (drops), which happens beyond 200 in flight.
    let curve = |n| {
        let r = rtt(n, 20, ms(10));
        (r, r > ms(100))
    };
    let mut g2 = Gradient2::new(Gradient2Config { max: 1000, ..Gradient2Config::default() });
    let limits = drive(&mut g2, 6000, curve);
    // Delay-based: once queueing pushes the short RTT past 1.5 × the long one, growth stops at about twice the
    // capacity, long before anything times out.
    let early = &limits[30..100];
    assert!(early.iter().all(|&x| (35..=45).contains(&x)), "{early:?}");
    // The long-term average then adapts to the queueing (Gradient2's known drift); the drop rule bounds it at the
    // timeout's knee instead of letting it run to max.
    let tail = &limits[5000..];
    let (min, max) = (*tail.iter().min().unwrap_or(&0), *tail.iter().max().unwrap_or(&0));
    assert!(min >= 100 && max <= 205, "tail in [{min}, {max}]");
}

#[test]
fn limiter_kinds_respect_the_pool_cap() {
    assert_eq!(LimiterKind::Fixed.build(7).limit(), 7);
    assert_eq!(LimiterKind::Fixed.build(0).limit(), 1);
    let mut aimd = LimiterKind::Aimd(AimdConfig::default()).build(8);
    assert_eq!(aimd.limit(), 8, "initial 20 clamped to the cap");
    drive(aimd.as_mut(), 50, |_| (ms(1), false));
    assert_eq!(aimd.limit(), 8);
    let mut g2 = LimiterKind::Gradient2(Gradient2Config::default()).build(30);
    drive(g2.as_mut(), 500, |_| (ms(1), false));
    assert_eq!(g2.limit(), 30);
}

// ---- the pool ----

#[tokio::test(start_paused = true)]
async fn every_exit_path_returns_the_permit() {
    let pool = LimitedPool::new(Box::new(Fixed(2)));
    // Success and error (dropped) both finish.
    let a = pool.acquire(ms(10)).await.unwrap();
    let b = pool.acquire(ms(10)).await.unwrap();
    assert_eq!(pool.in_flight(), 2);
    a.finish(Instant::now(), SampleOutcome::Ok);
    b.finish(Instant::now(), SampleOutcome::Dropped);
    assert_eq!(pool.in_flight(), 0);

    // A call that times out: the permit is dropped with its future.
    let p = pool.acquire(ms(10)).await.unwrap();
    let call = async move {
        let _p = p;
        tokio::time::sleep(Duration::from_secs(60)).await;
    };
    assert!(tokio::time::timeout(ms(50), call).await.is_err());
    assert_eq!(pool.in_flight(), 0);

    // A task that panics while holding one.
    let p2 = pool.clone();
    let handle = tokio::spawn(async move {
        let _p = p2.acquire(ms(10)).await.unwrap();
        panic!("tool handler bug");
    });
    assert!(handle.await.is_err());
    assert_eq!(pool.in_flight(), 0);

    // Cancelled while waiting in the queue: takes nothing.
    let x = pool.acquire(ms(10)).await.unwrap();
    let y = pool.acquire(ms(10)).await.unwrap();
    let waiting = pool.acquire(Duration::from_secs(10));
    assert!(tokio::time::timeout(ms(5), waiting).await.is_err());
    drop((x, y));
    assert_eq!(pool.in_flight(), 0);
    let ignored = pool.try_acquire().unwrap();
    ignored.finish(Instant::now(), SampleOutcome::Ignored);
    assert_eq!((pool.in_flight(), pool.limit()), (0, 2));
}

#[tokio::test(start_paused = true)]
async fn a_full_pool_times_out_in_the_queue_and_a_release_wakes_the_next_waiter() {
    let pool = LimitedPool::new(Box::new(Fixed(1)));
    let held = pool.acquire(ms(10)).await.unwrap();
    let start = Instant::now();
    let err = pool.acquire(ms(200)).await.unwrap_err();
    assert_eq!((err, start.elapsed()), (PoolTimeout { waited: ms(200), limit: 1 }, ms(200)));
    assert_eq!(err.to_string(), "no permit within the 200ms queue wait (limit 1, all in flight)");

    let p = pool.clone();
    let waiter = tokio::spawn(async move { p.acquire(Duration::from_secs(5)).await.map(|p| p.started()) });
    tokio::time::sleep(ms(30)).await;
    held.finish(Instant::now(), SampleOutcome::Ok);
    let started = waiter.await.unwrap().unwrap();
    assert_eq!(started - start, ms(230), "granted the moment the slot freed");
    assert_eq!(pool.in_flight(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_shrinking_limit_never_revokes_and_admits_again_once_under_it() {
    let pool = LimitedPool::new(Box::new(Aimd::new(AimdConfig { initial: 4, ..AimdConfig::default() })));
    let permits: Vec<_> = (0..4).map(|_| pool.try_acquire().unwrap()).collect();
    let mut it = permits.into_iter();
    for _ in 0..2 {
        it.next().unwrap().finish(Instant::now(), SampleOutcome::Dropped);
    }
    // 4 → 3 → 2 after two drops; two still in flight: full.
    assert_eq!((pool.limit(), pool.in_flight()), (2, 2));
    assert!(pool.try_acquire().is_none());
    drop(it);
    assert_eq!(pool.in_flight(), 0);
    assert!(pool.try_acquire().is_some());
}
