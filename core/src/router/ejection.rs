//! Ejection: a replica whose address refuses connections leaves the rotation at once and is probed back.
//!
//! Passive statistics and health checks need several failures before they act, and each of those failures is an
//! agent's call. A refused connection needs no second opinion: the process is not there (Finagle's `FailFast`,
//! Envoy's ejection on `connect-failure`). So the first refusal ejects the replica, and a background probe (a
//! `ping` through the gateway's own client: connect, session, answer) readmits it on its first success. Probes back
//! off from [`FIRST_PROBE`] to [`MAX_PROBE_GAP`], so a replica that comes back is in rotation again within about
//! that gap, and one that stays down costs a probe a second.
//!
//! An ejected replica is not a candidate while some sibling is; when every candidate is ejected they are all
//! candidates again (Envoy's panic routing): the calls then fail fast where they would otherwise be declined, and a
//! replica that came back early is found by the calls themselves.

use std::time::Duration;

/// The first probe after an ejection.
pub const FIRST_PROBE: Duration = Duration::from_millis(100);
/// The longest gap between two probes of an ejected replica.
pub const MAX_PROBE_GAP: Duration = Duration::from_secs(1);

/// One ejected replica's state, in router time (since the router's start).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ejection {
    /// When it was ejected.
    pub since: Duration,
    /// Probes that failed since.
    pub failed_probes: u32,
    next_probe: Duration,
    gap: Duration,
    probing: bool,
}

impl Ejection {
    pub fn new(now: Duration) -> Self {
        Ejection { since: now, failed_probes: 0, next_probe: now + FIRST_PROBE, gap: FIRST_PROBE, probing: false }
    }

    /// Whether a probe should start at `now`: due, and none in flight. Starting one marks it in flight.
    pub fn take_probe(&mut self, now: Duration) -> bool {
        if self.probing || now < self.next_probe {
            return false;
        }
        self.probing = true;
        true
    }

    /// A probe failed at `now`: the next one waits twice as long, up to [`MAX_PROBE_GAP`].
    pub fn probe_failed(&mut self, now: Duration) {
        self.probing = false;
        self.failed_probes = self.failed_probes.saturating_add(1);
        self.gap = (self.gap * 2).min(MAX_PROBE_GAP);
        self.next_probe = now + self.gap;
    }

    /// When the next probe is due, unless one is in flight.
    pub fn next_due(&self) -> Option<Duration> {
        (!self.probing).then_some(self.next_probe)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_back_off_to_the_cap_one_at_a_time() {
        let ms = Duration::from_millis;
        let mut e = Ejection::new(ms(1_000));
        assert!(!e.take_probe(ms(1_050)), "the first probe waits {FIRST_PROBE:?}");
        assert!(e.take_probe(ms(1_100)));
        assert!(!e.take_probe(ms(5_000)), "one probe in flight at a time");
        assert_eq!(e.next_due(), None);
        e.probe_failed(ms(1_150));
        assert_eq!(e.next_due(), Some(ms(1_350)), "200 ms after the failure");
        let mut at = ms(1_350);
        for _ in 0..6 {
            assert!(e.take_probe(at));
            e.probe_failed(at);
            at = e.next_due().unwrap();
        }
        assert!(e.take_probe(at));
        e.probe_failed(at);
        assert_eq!(e.next_due(), Some(at + MAX_PROBE_GAP), "capped");
        assert_eq!(e.failed_probes, 8);
    }
}
