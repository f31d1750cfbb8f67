use std::sync::Arc;
use std::time::Duration;

use super::{Admission, Refused, Ticket};

fn key(name: &str) -> Arc<str> {
    Arc::from(name)
}

/// Admits `n` requests of `k` that must not wait.
async fn now(admission: &Arc<Admission>, k: &Arc<str>, n: usize) -> Vec<Ticket> {
    let mut tickets = Vec::new();
    for _ in 0..n {
        let ticket = tokio::time::timeout(Duration::ZERO, admission.enter(k, Duration::from_secs(30))).await;
        tickets.push(ticket.expect("admitted at once").expect("not refused"));
    }
    tickets
}

/// Starts `n` requests of `k` that will wait, each on its own task, and lets them queue.
async fn queue(
    admission: &Arc<Admission>,
    k: &Arc<str>,
    n: usize,
    wait: Duration,
) -> Vec<tokio::task::JoinHandle<Result<Ticket, Refused>>> {
    let mut handles = Vec::new();
    for _ in 0..n {
        let (admission, k) = (admission.clone(), k.clone());
        handles.push(tokio::spawn(async move { admission.enter(&k, wait).await }));
        // One at a time, so arrival order is spawn order.
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(Duration::from_millis(1)).await;
    handles
}

#[tokio::test(start_paused = true)]
async fn one_session_may_use_every_slot_while_there_is_room() {
    let admission = Admission::new(1_000, 1_000);
    let burst = now(&admission, &key("orchestrator"), 1_000).await;
    assert_eq!(admission.load(), (1_000, 0));
    drop(burst);
    assert_eq!(admission.load(), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_freed_slot_goes_to_the_waiting_session_with_the_fewest_running() {
    let admission = Admission::new(2, 100);
    let (big, small) = (key("big"), key("small"));
    let mut running = now(&admission, &big, 2).await;
    let big_waiting = queue(&admission, &big, 5, Duration::from_secs(30)).await;
    let small_waiting = queue(&admission, &small, 1, Duration::from_secs(30)).await;
    assert_eq!(admission.load(), (2, 6));
    // `big` queued first, but `small` has none running: it gets the slot.
    running.pop();
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert!(small_waiting[0].is_finished(), "small admitted");
    assert!(big_waiting.iter().all(|h| !h.is_finished()), "big still waits");
    // The next slot goes to `big` (1 running) over nobody else: its oldest waiter first.
    running.pop();
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert!(big_waiting[0].is_finished() && !big_waiting[1].is_finished());
    assert_eq!(admission.load(), (2, 4));
}

#[tokio::test(start_paused = true)]
async fn a_hostile_session_sheds_its_own_requests_never_another_sessions() {
    let admission = Admission::new(4, 8);
    let (hostile, agent) = (key("hostile"), key("agent"));
    let running = now(&admission, &hostile, 4).await;
    let hostile_waiting = queue(&admission, &hostile, 8, Duration::from_secs(30)).await;
    assert_eq!(admission.load(), (4, 8));
    // The queues are full: the agent's request is queued, the hostile session's newest shed for it.
    let agent_waiting = queue(&admission, &agent, 1, Duration::from_secs(30)).await;
    assert!(!agent_waiting[0].is_finished(), "the agent waits, not refused");
    let shed = hostile_waiting.last().expect("eight").is_finished();
    assert!(shed, "the hostile session's newest request was shed");
    // The hostile session, queueing the most, is refused at once now.
    let refused = admission.enter(&hostile, Duration::from_secs(30)).await.expect_err("refused");
    assert!(matches!(refused, Refused::Shed { .. }) && refused.retry_after() >= Duration::from_secs(1));
    drop(running);
    tokio::time::sleep(Duration::from_millis(1)).await;
    let admitted = agent_waiting.into_iter().next().expect("one").await.expect("task").expect("admitted");
    drop(admitted);
    let mut admitted = 0;
    for h in hostile_waiting {
        admitted += usize::from(h.await.expect("task").is_ok());
    }
    assert_eq!(admitted, 7, "the hostile session's other requests ran in turn");
}

#[tokio::test(start_paused = true)]
async fn a_request_that_waited_its_whole_wait_is_refused_with_a_retry_after() {
    let admission = Admission::new(1, 10);
    let k = key("a");
    let running = now(&admission, &k, 1).await;
    let started = tokio::time::Instant::now();
    let refused = admission.enter(&k, Duration::from_secs(5)).await.expect_err("no slot in 5 s");
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    assert!(matches!(refused, Refused::Waited { retry_after } if retry_after >= Duration::from_secs(1)));
    assert_eq!(admission.load(), (1, 0), "it left the queue");
    drop(running);
    assert_eq!(admission.load(), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_waiter_dropped_mid_wait_leaves_the_queue_and_takes_no_slot() {
    let admission = Admission::new(1, 10);
    let (a, b) = (key("a"), key("b"));
    let running = now(&admission, &a, 1).await;
    let gone = queue(&admission, &a, 1, Duration::from_secs(30)).await;
    let next = queue(&admission, &b, 1, Duration::from_secs(30)).await;
    gone[0].abort();
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(admission.load(), (1, 1));
    drop(running);
    tokio::time::sleep(Duration::from_millis(1)).await;
    let ticket = next.into_iter().next().expect("one").await.expect("task").expect("admitted");
    assert_eq!(admission.load(), (1, 0));
    drop(ticket);
    assert_eq!(admission.load(), (0, 0));
}

/// Holds a slot for one "service time" and gives it back.
async fn serve(admission: Arc<Admission>, k: Arc<str>, wait: Duration) -> Result<Duration, Refused> {
    let started = tokio::time::Instant::now();
    let ticket = admission.enter(&k, wait).await?;
    let waited = started.elapsed();
    tokio::time::sleep(Duration::from_millis(10)).await;
    drop(ticket);
    Ok(waited)
}

#[tokio::test(start_paused = true)]
async fn a_burst_of_1000_and_50_small_sessions_are_all_served_and_100000_hostile_calls_starve_none() {
    // The gateway's defaults: one orchestrator's burst of 1,000 and 50 small agents fit, nothing waits or is refused.
    let admission = Admission::new(4_096, 4_096);
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..1_000 {
        calls.spawn(serve(admission.clone(), key("orchestrator"), Duration::from_secs(30)));
    }
    for i in 0..50 {
        calls.spawn(serve(admission.clone(), key(&format!("agent-{i}")), Duration::from_secs(30)));
    }
    let waited: Vec<Duration> = calls.join_all().await.into_iter().map(|r| r.expect("served")).collect();
    assert!(waited.iter().all(Duration::is_zero), "nobody waited: there was room");

    // A hostile session opens 100,000 calls against the same defaults while 50 agents make 5 calls each, one
    // after another. The hostile calls beyond the slots and the queue are shed; every agent call is served, and
    // none waits longer than the hostile calls already running take to finish plus its own turn.
    let admission = Admission::new(4_096, 4_096);
    let mut hostile = tokio::task::JoinSet::new();
    for _ in 0..100_000 {
        hostile.spawn(serve(admission.clone(), key("hostile"), Duration::from_secs(30)));
    }
    tokio::task::yield_now().await;
    let mut agents = tokio::task::JoinSet::new();
    for i in 0..50 {
        let (admission, k) = (admission.clone(), key(&format!("agent-{i}")));
        agents.spawn(async move {
            let mut worst = Duration::ZERO;
            for _ in 0..5 {
                worst = worst.max(serve(admission.clone(), k.clone(), Duration::from_secs(30)).await?);
            }
            Ok::<_, Refused>(worst)
        });
    }
    let worst = agents.join_all().await.into_iter().map(|r| r.expect("every agent call served")).max();
    assert!(worst.expect("50 agents") <= Duration::from_millis(10), "waited {worst:?}: one service time at most");
    let outcomes = hostile.join_all().await;
    let shed = outcomes.iter().filter(|r| r.is_err()).count();
    assert!(shed > 0 && shed < 100_000, "{shed} hostile calls shed: the excess, not all");
    assert_eq!(admission.load(), (0, 0));
}
