//! The fault timeline: each fault's start and end become transitions that the step loop applies between steps.
//!
//! Faults that shape a server's behaviour (latency spike, error burst, hang) are recomputed from the set of active
//! faults at every transition, so overlapping faults on one target compose (extra latencies add, multipliers
//! multiply, the highest error rate wins, any hang hangs) and ending one never cancels another.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::fake::FakeControl;
use crate::report::FaultWindow;
use crate::scenario::{Fault, FaultKind, Scenario, resolve_target};

use super::hosts::server_host;

#[derive(Debug, Clone, Copy)]
pub struct Transition {
    pub at: Duration,
    pub fault: usize,
    pub start: bool,
}

/// What the step loop must do to the network for a transition (behaviour faults are applied here directly).
#[derive(Debug, PartialEq, Eq)]
pub enum NetAction {
    Crash(String),
    Restart(String),
    Partition(String),
    Repair(String),
}

#[derive(Debug)]
pub struct Timeline {
    faults: Vec<Fault>,
    /// Replica hosts each fault targets.
    targets: Vec<Vec<String>>,
    transitions: Vec<Transition>,
    next: usize,
    active: Vec<bool>,
}

/// The replica hosts a (validated) fault target names: every replica of `name`, or just `name#i`.
fn target_hosts(scenario: &Scenario, target: &str) -> Vec<String> {
    match resolve_target(target, &scenario.servers) {
        Ok((s, Some(r))) => vec![server_host(&scenario.servers[s].name, r)],
        Ok((s, None)) => {
            let spec = &scenario.servers[s];
            (0..spec.replicas).map(|r| server_host(&spec.name, r)).collect()
        }
        Err(_) => Vec::new(),
    }
}

impl Timeline {
    pub fn new(scenario: &Scenario) -> Timeline {
        let faults = scenario.faults.clone();
        let targets = faults.iter().map(|f| target_hosts(scenario, &f.target)).collect();
        let mut transitions: Vec<Transition> = faults
            .iter()
            .enumerate()
            .flat_map(|(i, f)| {
                [
                    Transition { at: f.start.0, fault: i, start: true },
                    Transition { at: f.start.0 + f.duration.0, fault: i, start: false },
                ]
            })
            .collect();
        // Ends before starts at the same instant, then file order: a deterministic, intuitive order.
        transitions.sort_by_key(|t| (t.at, t.start, t.fault));
        let active = vec![false; faults.len()];
        Timeline { faults, targets, transitions, next: 0, active }
    }

    /// Transitions due at `now`, in order.
    pub fn due(&mut self, now: Duration) -> Vec<Transition> {
        let mut out = Vec::new();
        while let Some(t) = self.transitions.get(self.next).filter(|t| t.at <= now) {
            out.push(*t);
            self.next += 1;
        }
        out
    }

    pub fn fault(&self, i: usize) -> &Fault {
        &self.faults[i]
    }

    pub fn targets(&self, i: usize) -> &[String] {
        &self.targets[i]
    }

    /// Applies one transition: behaviour faults through the replicas' controls, network faults as actions.
    pub fn apply(&mut self, t: Transition, controls: &BTreeMap<String, FakeControl>) -> Vec<NetAction> {
        self.active[t.fault] = t.start;
        let kind = self.faults[t.fault].kind;
        let hosts = self.targets[t.fault].clone();
        match kind {
            FaultKind::Crash => {
                hosts.into_iter().map(|h| if t.start { NetAction::Crash(h) } else { NetAction::Restart(h) }).collect()
            }
            FaultKind::Partition => hosts
                .into_iter()
                .map(|h| if t.start { NetAction::Partition(h) } else { NetAction::Repair(h) })
                .collect(),
            FaultKind::LatencySpike | FaultKind::ErrorBurst | FaultKind::Hang => {
                for host in &hosts {
                    if let Some(control) = controls.get(host) {
                        self.recompute(host, control);
                    }
                }
                Vec::new()
            }
        }
    }

    fn recompute(&self, host: &str, control: &FakeControl) {
        let (mut extra, mut multiplier, mut rate, mut hung) = (Duration::ZERO, 1.0, None::<f64>, false);
        for (i, f) in self.faults.iter().enumerate() {
            if !self.active[i] || !self.targets[i].iter().any(|h| h == host) {
                continue;
            }
            match f.kind {
                FaultKind::LatencySpike => {
                    extra += f.extra.map(|d| d.0).unwrap_or_default();
                    multiplier *= f.multiplier.unwrap_or(1.0);
                }
                FaultKind::ErrorBurst => rate = Some(rate.unwrap_or(0.0).max(f.rate.unwrap_or(0.0))),
                FaultKind::Hang => hung = true,
                FaultKind::Crash | FaultKind::Partition => {}
            }
        }
        control.set_extra_latency(extra);
        control.set_latency_multiplier(multiplier);
        control.set_error_rate(rate);
        control.set_hung(hung);
    }

    /// Windows for shading plots, labelled `kind target`.
    pub fn windows(&self) -> Vec<FaultWindow> {
        self.faults
            .iter()
            .map(|f| FaultWindow {
                label: format!("{} {}", f.kind.as_str(), f.target),
                start_s: f.start.0.as_secs_f64(),
                end_s: (f.start.0 + f.duration.0).as_secs_f64(),
            })
            .collect()
    }

    /// A short description of a fault's parameters for the event log.
    pub fn detail(&self, i: usize) -> String {
        let f = &self.faults[i];
        match f.kind {
            FaultKind::LatencySpike => format!(
                "extra={} multiplier={}",
                humantime::format_duration(f.extra.map(|d| d.0).unwrap_or_default()),
                f.multiplier.unwrap_or(1.0)
            ),
            FaultKind::ErrorBurst => format!("rate={}", f.rate.unwrap_or(0.0)),
            FaultKind::Hang | FaultKind::Crash | FaultKind::Partition => String::new(),
        }
    }
}
