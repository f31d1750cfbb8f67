//! One seed's fault timeline: which kinds, on which servers or replicas, when, for how long and how strong, inside
//! the scenario's `[swarm]` bounds. Every draw comes from the seed's own `swarm` stream, so a seed always draws the
//! same timeline for the same scenario.

use std::time::Duration;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::scenario::{CrashMode, Dur, Fault, FaultKind, Scenario, SwarmSpec};
use crate::seed::Seed;
use crate::world::RECOVERED_SECONDS;
use mcpstorm_fake::Transport;

/// Why a scenario cannot be swarmed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DrawError {
    #[error(
        "the run is too short to swarm: faults start after swarm.warmup ({warmup:?}) and leave swarm.recovery_within \
         plus {RECOVERED_SECONDS} s after the last one heals, so duration must be at least {need:?}: give a longer \
         duration or a shorter swarm.recovery_within"
    )]
    TooShort { warmup: Duration, need: Duration },
    #[error("no fault kind of swarm.kinds applies to this scenario's servers (HTTP kinds need an HTTP server)")]
    NoKinds,
}

/// The time a run must leave after its last fault for liveness to be judged.
pub fn tail(spec: &SwarmSpec) -> Duration {
    spec.recovery_within.0 + Duration::from_secs(RECOVERED_SECONDS as u64)
}

/// The latest a fault may end in `scenario` under `spec`, or why there is no room.
pub fn last_end(scenario: &Scenario, spec: &SwarmSpec) -> Result<Duration, DrawError> {
    let need = spec.warmup.0 + spec.min_fault.0 + tail(spec);
    if scenario.duration.0 < need {
        return Err(DrawError::TooShort { warmup: spec.warmup.0, need });
    }
    Ok(scenario.duration.0 - tail(spec))
}

/// A fault with only its kind, target and window set.
pub fn bare(kind: FaultKind, target: String, start: Duration, duration: Duration) -> Fault {
    Fault {
        kind,
        target,
        from: None,
        start: Dur(start),
        duration: Dur(duration),
        extra: None,
        multiplier: None,
        rate: None,
        status: None,
        retry_after: None,
        tool: None,
        what: None,
        param: None,
        schema: None,
        to: None,
        version: None,
        notify: false,
        offset: None,
        drift: None,
        jump: None,
        reset: false,
        schemes: None,
        mode: None,
    }
}

/// Seed `seed`'s faults for `scenario` (whose own faults are ignored), in start order.
pub fn fault_timeline(scenario: &Scenario, seed: u64) -> Result<Vec<Fault>, DrawError> {
    let spec = scenario.swarm.clone().unwrap_or_default();
    let end = last_end(scenario, &spec)?;
    let mut rng = Seed::new(seed).fork("swarm").rng();
    let kinds: Vec<FaultKind> = spec.kinds().into_iter().filter(|k| !targets(scenario, *k).is_empty()).collect();
    if kinds.is_empty() {
        return Err(DrawError::NoKinds);
    }
    let count = rng.random_range(1..=spec.max_faults.max(1));
    let mut faults: Vec<Fault> = Vec::new();
    for _ in 0..count {
        let kind = kinds[rng.random_range(0..kinds.len())];
        let targets = targets(scenario, kind);
        let target = targets[rng.random_range(0..targets.len())].clone();
        let length =
            if kind.instant() { Duration::ZERO } else { between(&mut rng, spec.min_fault.0, spec.max_fault.0) };
        let latest_start = end.saturating_sub(length).max(spec.warmup.0);
        let start = whole_ms(between(&mut rng, spec.warmup.0, latest_start));
        let length = whole_ms(length.min(end.saturating_sub(start)));
        let mut fault = bare(kind, target, start, length);
        magnitude(&mut fault, &spec, &mut rng);
        if overlapping(&faults, &fault) < spec.max_at_once as usize {
            faults.push(fault);
        }
    }
    faults.sort_by_key(|f| f.start.0);
    Ok(faults)
}

/// How strong a fault is, drawn within the bounds (the keys its kind takes, and no others).
fn magnitude(fault: &mut Fault, spec: &SwarmSpec, rng: &mut ChaCha8Rng) {
    let rate = |rng: &mut ChaCha8Rng| round(rng.random_range(spec.min_rate..=spec.max_rate));
    match fault.kind {
        FaultKind::LatencySpike => {
            fault.extra = Some(Dur(whole_ms(between(rng, Duration::ZERO, spec.max_extra.0))));
            fault.multiplier = Some(round(rng.random_range(1.0..=spec.max_multiplier)));
        }
        FaultKind::SlowHeaders => fault.extra = Some(Dur(whole_ms(between(rng, Duration::ZERO, spec.max_extra.0)))),
        FaultKind::ErrorBurst | FaultKind::StreamReset => fault.rate = Some(rate(rng)),
        FaultKind::HttpStatus => {
            fault.status = Some([429, 500, 502, 503][rng.random_range(0..4)]);
            fault.rate = Some(rate(rng));
        }
        // Every mode: what a dead replica does to its callers decides what the gateway can do about it.
        FaultKind::Crash => fault.mode = Some(CrashMode::ALL[rng.random_range(0..CrashMode::ALL.len())]),
        _ => {}
    }
}

/// What a fault of `kind` may target: every server and every replica of one with several (HTTP kinds: of HTTP
/// servers only).
fn targets(scenario: &Scenario, kind: FaultKind) -> Vec<String> {
    let http_only = matches!(kind, FaultKind::HttpStatus | FaultKind::StreamReset | FaultKind::SlowHeaders);
    let mut out = Vec::new();
    for server in scenario.servers.iter().filter(|s| !http_only || s.transport == Transport::Http) {
        out.push(server.name.clone());
        if server.replicas > 1 {
            out.extend((0..server.replicas).map(|i| format!("{}#{i}", server.name)));
        }
    }
    out
}

/// How many of `faults` overlap `fault`'s window at its busiest instant (instant faults overlap nothing).
fn overlapping(faults: &[Fault], fault: &Fault) -> usize {
    let window = |f: &Fault| (f.start.0, f.start.0 + f.duration.0);
    let (start, end) = window(fault);
    if start == end {
        return 0;
    }
    // The busiest instant inside the window is one of the windows' starts.
    let mut instants: Vec<Duration> = faults.iter().map(|f| f.start.0).filter(|t| (start..end).contains(t)).collect();
    instants.push(start);
    instants
        .into_iter()
        .map(|t| faults.iter().filter(|f| f.duration.0 > Duration::ZERO && window(f).0 <= t && t < window(f).1).count())
        .max()
        .unwrap_or(0)
}

fn between(rng: &mut ChaCha8Rng, low: Duration, high: Duration) -> Duration {
    if high <= low {
        low
    } else {
        Duration::from_nanos(rng.random_range(low.as_nanos() as u64..=high.as_nanos() as u64))
    }
}

/// Whole milliseconds: the scenario file writes what was drawn exactly.
fn whole_ms(d: Duration) -> Duration {
    Duration::from_millis(d.as_millis() as u64)
}

/// Two decimals, for the same reason.
fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(duration: &str) -> Scenario {
        let text = format!(
            "name = \"t\"\nduration = \"{duration}\"\n[[servers]]\nname = \"a\"\nreplicas = 2\n[[servers.tools]]\n\
             name = \"x\"\n[load]\nmode = \"open\"\nrate = 10.0\n[[load.mix]]\nserver = \"a\"\ntool = \"x\"\n\
             [swarm]\nrecovery_within = \"5s\"\nmax_faults = 4\n"
        );
        crate::scenario::load_str(&text, "t.toml", &[]).expect("valid")
    }

    #[test]
    fn draws_are_fixed_by_the_seed_and_stay_inside_the_bounds() {
        let s = scenario("30s");
        let spec = s.swarm.clone().unwrap();
        for seed in 0..50 {
            let faults = fault_timeline(&s, seed).unwrap();
            assert_eq!(faults, fault_timeline(&s, seed).unwrap(), "seed {seed}");
            assert!((1..=4).contains(&faults.len()));
            for f in &faults {
                assert!(f.start.0 >= spec.warmup.0, "{f:?}");
                assert!(f.start.0 + f.duration.0 <= s.duration.0 - tail(&spec), "{f:?}");
                assert!(crate::scenario::swarm::HEALING.contains(&f.kind));
            }
            let mut checked = s.clone();
            checked.faults = faults;
            crate::scenario::validate(&checked, "t").unwrap();
        }
        assert_ne!(fault_timeline(&s, 1).unwrap(), fault_timeline(&s, 2).unwrap());
    }

    #[test]
    fn crashes_are_drawn_in_every_mode() {
        let mut s = scenario("60s");
        s.swarm.as_mut().unwrap().kinds = vec![FaultKind::Crash];
        let modes: std::collections::BTreeSet<CrashMode> =
            (0..60).flat_map(|seed| fault_timeline(&s, seed).unwrap()).filter_map(|f| f.mode).collect();
        assert_eq!(
            modes.into_iter().collect::<Vec<_>>(),
            CrashMode::ALL,
            "each mode is drawn, and only crashes get one"
        );
    }

    #[test]
    fn a_run_with_no_room_after_its_faults_is_refused() {
        let err = fault_timeline(&scenario("10s"), 1).unwrap_err();
        assert!(matches!(err, DrawError::TooShort { .. }), "{err}");
        assert!(err.to_string().contains("at least 12s"), "{err}");
    }
}
