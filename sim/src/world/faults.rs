//! The fault timeline: each fault's start and end become transitions that the step loop applies between steps.
//!
//! Faults that shape a server's behaviour (latency spike, error burst, hang) are recomputed from the set of active
//! faults at every transition, so overlapping faults on one target compose (extra latencies add, multipliers
//! multiply, the highest error rate wins, any hang hangs) and ending one never cancels another.
//!
//! The others change state for good, as in life: a schema drift, a session purge and an auth rotation happen at
//! an instant (they have no end transition), and a clock skew stays when its window ends unless it asks for a
//! reset (a real clock does not jump back by itself).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::run::FaultWindow;
use crate::scenario::{CrashMode, DriftKind, Fault, FaultKind, GATEWAY, IDP_HOST, RedisHost, Scenario, resolve_target};
use mcpstorm_fake::idp::{IdpControl, Outage, TokenAuthority};
use mcpstorm_fake::{Drift, FakeControl, RedisControl, StatusBurst};

use super::clock::SimClock;
use crate::scenario::{load_host, node_host, server_host};

#[derive(Debug, Clone, Copy)]
pub struct Transition {
    pub at: Duration,
    pub fault: usize,
    pub start: bool,
}

/// What the step loop must do for a transition: network changes, and events to log (behaviour faults are applied
/// here directly).
#[derive(Debug, PartialEq, Eq)]
pub enum NetAction {
    /// A host goes down as the crash's mode says.
    Crash(String, CrashMode),
    Restart(String),
    /// Cut a host off from every load host, or from the one named.
    Partition(String, Option<String>),
    Repair(String, Option<String>),
    /// An event for the log: `(host, kind, detail)`.
    Log(String, &'static str, String),
}

/// What a fault can steer: each server replica's control and wall clock, each load host's wall clock, by host; and
/// the Redis double's control, by its host.
#[derive(Debug, Default)]
pub struct Handles {
    pub controls: BTreeMap<String, FakeControl>,
    pub clocks: BTreeMap<String, SimClock>,
    pub redis: Option<(String, RedisControl)>,
    /// The identity provider's, with `[identity_provider]`.
    pub idp: Option<IdpHandle>,
}

/// What the identity provider's faults steer: its outage, and the tokens it has issued.
#[derive(Debug, Clone)]
pub struct IdpHandle {
    pub control: IdpControl,
    pub authority: Arc<TokenAuthority>,
    /// The authority's clock.
    pub clock: SimClock,
}

#[derive(Debug)]
pub struct Timeline {
    faults: Vec<Fault>,
    /// Replica hosts each fault targets.
    targets: Vec<Vec<String>>,
    /// What each `crash` takes down (a replica's default differs from a node's or Redis's).
    modes: Vec<CrashMode>,
    transitions: Vec<Transition>,
    next: usize,
    active: Vec<bool>,
    /// The run's duration: a clock skew that is never reset is shaded to the end.
    run: Duration,
}

/// The hosts a (validated) fault targets: every replica of `name`, or just `name#i`; every load host for a clock
/// skew on the gateway.
fn target_hosts(scenario: &Scenario, fault: &Fault) -> Vec<String> {
    if fault.kind == FaultKind::ClockSkew && fault.target == GATEWAY {
        // The gateways' clocks: the nodes', or the load hosts' when each runs its gateway in-process.
        return match scenario.nodes.count {
            0 => (0..scenario.load.hosts).map(load_host).collect(),
            n => (0..n).map(node_host).collect(),
        };
    }
    // A gateway node is a host of its own (validation allowed it only with `[nodes] count`).
    if fault.target.starts_with("gateway-") {
        return vec![fault.target.clone()];
    }
    if fault.kind.of_idp() {
        return vec![IDP_HOST.to_owned()];
    }
    if let Some(redis) = RedisHost::of(&scenario.gateway).filter(|r| r.name == fault.target) {
        return vec![redis.name];
    }
    match resolve_target(&fault.target, &scenario.servers) {
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
        let targets = faults.iter().map(|f| target_hosts(scenario, f)).collect();
        let modes = faults.iter().map(|f| f.crash_mode(resolve_target(&f.target, &scenario.servers).is_ok())).collect();
        let mut transitions: Vec<Transition> = faults
            .iter()
            .enumerate()
            .flat_map(|(i, f)| {
                let start = Transition { at: f.start.0, fault: i, start: true };
                // A fault with nothing to undo has no end (a zero-length clock skew is a one-off change).
                let one_off = f.kind.instant() || (f.kind == FaultKind::ClockSkew && f.duration.0.is_zero());
                let ends = !one_off;
                let end =
                    ends.then_some(Transition { at: f.start.0.saturating_add(f.duration.0), fault: i, start: false });
                std::iter::once(start).chain(end)
            })
            .collect();
        // Ends before starts at the same instant, then file order: a deterministic, intuitive order.
        transitions.sort_by_key(|t| (t.at, t.start, t.fault));
        let active = vec![false; faults.len()];
        Timeline { faults, targets, modes, transitions, next: 0, active, run: scenario.duration.0 }
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

    /// Applies one transition at simulated time `now`: behaviour faults through the replicas' controls and clocks,
    /// network faults (and events to log) as actions.
    pub fn apply(&mut self, t: Transition, handles: &Handles, now: Duration) -> Vec<NetAction> {
        self.active[t.fault] = t.start;
        let fault = &self.faults[t.fault];
        let kind = fault.kind;
        let hosts = self.targets[t.fault].clone();
        let controls = &handles.controls;
        match kind {
            FaultKind::SchemaDrift => {
                let Some(drift) = drift_of(fault) else { return Vec::new() };
                let mut out = Vec::new();
                for host in hosts {
                    let Some(control) = controls.get(&host) else { continue };
                    let detail = match control.drift(&drift, fault.notify) {
                        Ok(n) if fault.notify => format!("applied; list_changed sent on {n} connections"),
                        Ok(_) => "applied".to_owned(),
                        // A drift that cannot apply (renamed away by an earlier one) changes nothing: say so.
                        Err(e) => format!("not applied: {e}"),
                    };
                    out.push(NetAction::Log(host, "schema_drift", detail));
                }
                out
            }
            FaultKind::SessionExpiry => {
                for control in hosts.iter().filter_map(|h| controls.get(h)) {
                    control.expire_sessions();
                    // An HTTP server's Mcp-Session-Id sessions go too (none on an NDJSON server).
                    control.forget_http_sessions();
                }
                Vec::new()
            }
            FaultKind::AuthRotation => {
                for control in hosts.iter().filter_map(|h| controls.get(h)) {
                    control.set_auth_schemes(fault.schemes.clone());
                }
                Vec::new()
            }
            FaultKind::TokenExpiry | FaultKind::KeyRotation => {
                if let Some(idp) = &handles.idp {
                    if kind == FaultKind::TokenExpiry {
                        idp.authority.expire_issued(idp.clock.wall_ms_at(now));
                    } else {
                        idp.authority.rotate();
                    }
                }
                Vec::new()
            }
            FaultKind::IdpOutage => {
                if let Some(idp) = &handles.idp {
                    self.recompute_idp(&idp.control);
                }
                Vec::new()
            }
            FaultKind::ClockSkew => {
                let mut out = Vec::new();
                for host in hosts {
                    let Some(clock) = handles.clocks.get(&host) else { continue };
                    if t.start {
                        if let Some(offset) = fault.offset {
                            clock.set_offset_ms(now, offset.as_millis());
                        }
                        if let Some(rate) = fault.drift {
                            clock.set_drift(now, rate);
                        }
                        if let Some(jump) = fault.jump {
                            clock.jump_ms(now, jump.as_millis());
                        }
                    } else if fault.reset {
                        clock.reset(now);
                    }
                    out.push(NetAction::Log(host, "clock", format!("skew {} ms", clock.skew_ms(now))));
                }
                out
            }
            FaultKind::Crash => {
                let mode = self.modes[t.fault];
                hosts
                    .into_iter()
                    .map(|h| if t.start { NetAction::Crash(h, mode) } else { NetAction::Restart(h) })
                    .collect()
            }
            FaultKind::Partition => hosts
                .into_iter()
                .map(|h| {
                    let from = fault.from.clone();
                    if t.start { NetAction::Partition(h, from) } else { NetAction::Repair(h, from) }
                })
                .collect(),
            FaultKind::LatencySpike
            | FaultKind::ErrorBurst
            | FaultKind::Hang
            | FaultKind::HttpStatus
            | FaultKind::StreamReset
            | FaultKind::SlowHeaders => {
                for host in &hosts {
                    if let Some(control) = controls.get(host) {
                        self.recompute(host, control);
                    }
                    if let Some((_, redis)) = handles.redis.as_ref().filter(|(name, _)| name == host) {
                        self.recompute_redis(host, redis);
                    }
                }
                Vec::new()
            }
        }
    }

    fn recompute(&self, host: &str, control: &FakeControl) {
        let (mut extra, mut multiplier, mut rate, mut hung) = (Duration::ZERO, 1.0, None::<f64>, false);
        let (mut status, mut reset, mut slow) = (None::<StatusBurst>, 0.0_f64, Duration::ZERO);
        for (i, f) in self.faults.iter().enumerate() {
            if !self.active[i] || !self.targets[i].iter().any(|h| h == host) {
                continue;
            }
            match f.kind {
                FaultKind::LatencySpike => {
                    // Overlapping spikes compose; saturating, and the fake server clamps the result to a day.
                    extra = extra.saturating_add(f.extra.map(|d| d.0).unwrap_or_default());
                    multiplier *= f.multiplier.unwrap_or(1.0);
                }
                FaultKind::ErrorBurst => rate = Some(rate.unwrap_or(0.0).max(f.rate.unwrap_or(0.0))),
                FaultKind::Hang => hung = true,
                // Overlapping status bursts: the later one in the file wins (one status per request).
                FaultKind::HttpStatus => {
                    status = Some(StatusBurst {
                        share: f.rate.unwrap_or(1.0),
                        status: f.status.unwrap_or(503),
                        retry_after: f.retry_after.map(|d| d.0),
                    });
                }
                FaultKind::StreamReset => reset = reset.max(f.rate.unwrap_or(0.0)),
                FaultKind::SlowHeaders => slow = slow.saturating_add(f.extra.map(|d| d.0).unwrap_or_default()),
                FaultKind::Crash
                | FaultKind::Partition
                | FaultKind::SchemaDrift
                | FaultKind::ClockSkew
                | FaultKind::SessionExpiry
                | FaultKind::AuthRotation
                | FaultKind::TokenExpiry
                | FaultKind::KeyRotation
                | FaultKind::IdpOutage => {}
            }
        }
        control.set_extra_latency(extra);
        control.set_latency_multiplier(multiplier);
        control.set_error_rate(rate);
        control.set_hung(hung);
        control.set_http_status(status);
        control.set_stream_reset(reset);
        control.set_slow_headers(slow);
    }

    /// Redis's latency and hang from the faults active on its host: extras add, any hang hangs.
    fn recompute_redis(&self, host: &str, control: &RedisControl) {
        let (mut extra, mut hung) = (Duration::ZERO, false);
        for (i, f) in self.faults.iter().enumerate() {
            if self.active[i] && self.targets[i].iter().any(|h| h == host) {
                match f.kind {
                    FaultKind::LatencySpike => extra = extra.saturating_add(f.extra.map(|d| d.0).unwrap_or_default()),
                    FaultKind::Hang => hung = true,
                    _ => {}
                }
            }
        }
        control.set_latency(extra);
        control.set_hung(hung);
    }

    /// The identity provider's outage from the `idp_outage`s active: extras add, the later erroring one in the file
    /// wins, any outage that is neither slow nor erroring takes it down.
    fn recompute_idp(&self, control: &IdpControl) {
        let mut outage = Outage::default();
        for (i, f) in self.faults.iter().enumerate() {
            if self.active[i] && f.kind == FaultKind::IdpOutage {
                let one = outage_of(f);
                outage.extra = outage.extra.saturating_add(one.extra);
                if one.status.is_some() {
                    (outage.status, outage.rate) = (one.status, one.rate);
                }
                outage.down |= one.down;
            }
        }
        control.set_outage(outage);
    }

    /// Windows for shading plots, labelled `kind target`. An offset or drift that is never reset lasts to the end of
    /// the run and is shaded so; instant faults (and a lone clock step) are drawn as lines.
    pub fn windows(&self) -> Vec<FaultWindow> {
        self.faults
            .iter()
            .map(|f| {
                let lasting = f.kind == FaultKind::ClockSkew && !f.reset && (f.offset.is_some() || f.drift.is_some());
                let end = if lasting { self.run } else { f.start.0.saturating_add(f.duration.0) };
                FaultWindow {
                    label: format!("{} {}", f.kind, f.target),
                    start_s: f.start.0.as_secs_f64(),
                    end_s: end.as_secs_f64(),
                }
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
            FaultKind::ErrorBurst | FaultKind::StreamReset => format!("rate={}", f.rate.unwrap_or(0.0)),
            FaultKind::HttpStatus => {
                let after = f.retry_after.map(|d| format!(" retry_after={}", humantime::format_duration(d.0)));
                format!(
                    "status={} rate={}{}",
                    f.status.unwrap_or(503),
                    f.rate.unwrap_or(1.0),
                    after.unwrap_or_default()
                )
            }
            FaultKind::SlowHeaders => {
                format!("extra={}", humantime::format_duration(f.extra.map(|d| d.0).unwrap_or_default()))
            }
            FaultKind::SchemaDrift => {
                let what: &str = f.what.as_ref().map_or("", AsRef::as_ref);
                let change = match f.what {
                    Some(DriftKind::AddRequired) => format!(" param={}", f.param.as_deref().unwrap_or_default()),
                    Some(DriftKind::Rename) => format!(" to={}", f.to.as_deref().unwrap_or_default()),
                    Some(DriftKind::Version) => format!(" version={}", f.version.as_deref().unwrap_or_default()),
                    Some(DriftKind::Replace) | None => String::new(),
                };
                let tool = f.tool.as_deref().map(|t| format!(" tool={t}")).unwrap_or_default();
                format!("what={what}{tool}{change} notify={}", f.notify)
            }
            FaultKind::ClockSkew => {
                let mut parts = Vec::new();
                if let Some(o) = f.offset {
                    parts.push(format!("offset={o}"));
                }
                if let Some(d) = f.drift {
                    parts.push(format!("drift={d}"));
                }
                if let Some(j) = f.jump {
                    parts.push(format!("jump={j}"));
                }
                if f.reset {
                    parts.push("reset".to_owned());
                }
                parts.join(" ")
            }
            FaultKind::AuthRotation => {
                let schemes: Vec<&str> = f.schemes.iter().flatten().map(<&str>::from).collect();
                format!("schemes={}", schemes.join(","))
            }
            FaultKind::Crash => format!("mode={}", self.modes[i]),
            FaultKind::IdpOutage => outage_of(f).describe(),
            FaultKind::Hang
            | FaultKind::Partition
            | FaultKind::SessionExpiry
            | FaultKind::TokenExpiry
            | FaultKind::KeyRotation => String::new(),
        }
    }
}

/// The outage one (validated) `idp_outage` describes.
fn outage_of(f: &Fault) -> Outage {
    let extra = f.extra.map(|d| d.0).unwrap_or_default();
    Outage { extra, status: f.status, rate: f.rate.unwrap_or(1.0), down: extra.is_zero() && f.status.is_none() }
}

/// The fake server's drift for a (validated) `schema_drift` fault.
fn drift_of(f: &Fault) -> Option<Drift> {
    let tool = || f.tool.clone();
    Some(match f.what? {
        DriftKind::AddRequired => {
            Drift::AddRequired { tool: tool()?, param: f.param.clone()?, schema: f.schema.clone()? }
        }
        DriftKind::Replace => Drift::Replace { tool: tool()?, input_schema: f.schema.clone()? },
        DriftKind::Rename => Drift::Rename { tool: tool()?, to: f.to.clone()? },
        DriftKind::Version => Drift::Version { version: f.version.clone()? },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load_str;
    use mcpstorm_fake::FakeServer;
    use std::sync::Arc;

    const SCENARIO: &str = r#"name = "t"
duration = "10s"

[[servers]]
name = "a"
replicas = 2

[[servers.tools]]
name = "echo"

[load]
mode = "closed"
sessions = 1
hosts = 2

[[load.mix]]
server = "a"
tool = "echo"

[[faults]]
kind = "schema_drift"
target = "a#1"
start = "1s"
what = "add_required"
tool = "echo"
param = "region"
schema = { type = "string", default = "eu" }

[[faults]]
kind = "clock_skew"
target = "gateway"
start = "2s"
offset = "-3m"

[[faults]]
kind = "clock_skew"
target = "a"
start = "3s"
duration = "2s"
jump = "+30s"
reset = true
"#;

    fn handles(s: &Scenario) -> Handles {
        let mut h = Handles::default();
        for r in 0..2 {
            let host = server_host("a", r);
            let server = FakeServer::new(s.servers[0].fake_config(r, 1)).expect("valid");
            h.controls.insert(host.clone(), server.control());
            h.clocks.insert(host, SimClock::default());
        }
        for l in 0..2 {
            h.clocks.insert(load_host(l), SimClock::default());
        }
        h
    }

    #[test]
    fn instant_faults_have_no_end_and_skews_stay_unless_reset() {
        let s = load_str(SCENARIO, "t.toml", &[]).expect("valid scenario");
        let h = handles(&s);
        let mut timeline = Timeline::new(&s);
        let secs = Duration::from_secs;
        let mut log = Vec::new();
        for t in timeline.due(secs(10)) {
            log.extend(timeline.apply(t, &h, t.at));
        }
        // The drift reached replica 1 only; its new parameter is listed with the default agents fill in.
        let listed = |r| h.controls[&server_host("a", r)].listed_tools()[0].input_schema.clone();
        assert_eq!(listed(1)["required"], serde_json::json!(["region"]));
        assert!(listed(0).get("required").is_none());
        assert!(log.contains(&NetAction::Log("a-1".into(), "schema_drift", "applied".into())), "{log:?}");
        // The gateway's clocks keep their skew (no reset); the servers' jump was undone at the end.
        for l in 0..2 {
            assert_eq!(h.clocks[&load_host(l)].skew_ms(secs(9)), -180_000);
        }
        assert_eq!(h.clocks[&server_host("a", 0)].skew_ms(secs(9)), 0);
        let windows = timeline.windows();
        let spans: Vec<(f64, f64)> = windows.iter().map(|w| (w.start_s, w.end_s)).collect();
        assert_eq!(spans, [(1.0, 1.0), (2.0, 10.0), (3.0, 5.0)], "drift: a line; lasting skew: to the end");
    }

    #[test]
    fn faults_on_redis_steer_the_double_and_a_partition_may_cut_one_link() {
        let synced = SCENARIO.replace("[[faults]]", "[gateway.sync]\nredis = \"redis://redis:6379\"\n\n[[faults]]");
        let faults = r#"
[[faults]]
kind = "latency_spike"
target = "redis"
start = "1s"
duration = "4s"
extra = "30ms"

[[faults]]
kind = "latency_spike"
target = "redis"
start = "2s"
duration = "1s"
extra = "20ms"

[[faults]]
kind = "hang"
target = "redis"
start = "2s"
duration = "2s"

[[faults]]
kind = "partition"
target = "a#1"
from = "load-1"
start = "1s"
duration = "1s"
"#;
        let (head, _) = synced.split_once("[[faults]]").expect("faults");
        let s = load_str(&format!("{head}{faults}"), "t.toml", &[]).unwrap_or_else(|e| panic!("{e}"));
        let double = mcpstorm_fake::RedisDouble::with_clock(Default::default(), Arc::new(SimClock::default()));
        let h = Handles { redis: Some(("redis".into(), double.control())), ..handles(&s) };
        let mut timeline = Timeline::new(&s);
        let mut net = Vec::new();
        let mut at = |secs: f64, net: &mut Vec<NetAction>| {
            for t in timeline.due(Duration::from_secs_f64(secs)) {
                net.extend(timeline.apply(t, &h, t.at));
            }
            h.redis.as_ref().map(|(_, c)| (c.latency(), c.is_hung()))
        };
        let ms = Duration::from_millis;
        assert_eq!(at(1.5, &mut net), Some((ms(30), false)));
        assert_eq!(at(2.5, &mut net), Some((ms(50), true)), "overlapping spikes add; a hang hangs");
        assert_eq!(at(3.5, &mut net), Some((ms(30), true)));
        assert_eq!(at(4.5, &mut net), Some((ms(30), false)));
        assert_eq!(at(5.5, &mut net), Some((Duration::ZERO, false)));
        let cut = Some("load-1".to_owned());
        assert_eq!(net, [NetAction::Partition("a-1".into(), cut.clone()), NetAction::Repair("a-1".into(), cut)]);
    }
}
