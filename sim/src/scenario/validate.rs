//! Semantic checks: everything serde cannot see. Each table holds its own rules (`problems`) and lists its bounded
//! keys (`ranges`); this module walks the tables in file order and checks every bound. Every rule that fails adds an
//! [`Issue`] naming the key path; the loader turns paths into `file:line:column`. All issues are collected, never
//! only the first.

use super::faults::Hosts;
use super::model::Scenario;
use super::ranges::{self, Ranges};
use super::redis::{self, RedisHost};
use super::rules::{Issue, Rules};
use super::servers::ServerSpec;
use super::{Location, Problem, ScenarioError};

/// The most retries an agent may make per call: beyond it a run is all retries.
pub const MAX_RETRIES: u32 = ranges::MAX_ATTEMPTS as u32;

/// Checks a scenario built in code (no file to point into): every problem names its key, located at `origin`.
pub fn validate(scenario: &Scenario, origin: &str) -> Result<(), ScenarioError> {
    let issues = check(scenario);
    if issues.is_empty() {
        return Ok(());
    }
    Err(ScenarioError::Invalid(
        issues
            .into_iter()
            .map(|i| Problem {
                location: Location::Origin { origin: origin.to_owned() },
                key: Some(i.path),
                message: i.message,
            })
            .collect(),
    ))
}

/// Every rule, in file order. An empty result means the scenario is valid (sweep values aside: the loader expands
/// and checks each one, since that needs the file).
pub(crate) fn check(s: &Scenario) -> Vec<Issue> {
    let mut rules = Rules::default();
    let run = s.duration.0;
    s.own_problems(&mut rules);
    ServerSpec::problems_of(&s.servers, run, &mut rules);
    s.load.problems(&s.servers, &mut rules);
    s.agent.problems(&mut rules);
    s.client.problems(&mut rules);
    s.gateway.problems(&mut rules);
    let counted = s.checks.token_requests.is_some();
    super::idp::problems(s.identity_provider.as_ref(), &s.servers, counted, &mut rules);
    // A node lists its servers when it starts, as the process does: no scheduled membership to follow.
    if s.nodes.count > 0 {
        for (i, server) in s.servers.iter().enumerate() {
            for (key, set) in [("join_at", server.join_at.is_some()), ("leave_at", server.leave_at.is_some())] {
                if set {
                    rules.fail(
                        format!("servers[{i}].{key}"),
                        "gateway nodes list every server when they start: membership changes need `[nodes] count = 0`",
                    );
                }
            }
        }
    }
    if let Some(sync) = &s.gateway.sync {
        redis::problems(sync, &s.gateway, &s.servers, &mut rules);
    }
    let redis = RedisHost::of(&s.gateway);
    let hosts = Hosts {
        load_hosts: s.load.hosts,
        nodes: s.nodes.count,
        redis: redis.as_ref(),
        idp: s.identity_provider.is_some(),
    };
    for (k, fault) in s.faults.iter().enumerate() {
        fault.problems(k, run, &s.servers, &hosts, &mut rules);
    }
    s.checks.problems(run, &s.faults, &s.report, s.sweep.is_some(), &mut rules);
    s.fidelity.problems(&mut rules);
    if let Some(sweep) = &s.sweep {
        sweep.problems(&mut rules);
    }
    ranges(s).check(s.duration.0, &mut rules);
    for (path, message) in s.swarm.as_ref().map(|swarm| swarm.problems()).unwrap_or_default() {
        rules.fail(path, message);
    }
    rules.issues
}

/// Every duration and count of the scenario with its bound, as its tables list them.
pub(crate) fn ranges(s: &Scenario) -> Ranges {
    let mut out = Ranges::default();
    s.own_ranges(&mut out);
    for (i, server) in s.servers.iter().enumerate() {
        server.ranges(i, &mut out);
    }
    s.load.ranges(&mut out);
    s.agent.ranges(&mut out);
    s.client.ranges(&mut out);
    for (k, fault) in s.faults.iter().enumerate() {
        fault.ranges(k, &mut out);
    }
    s.gateway.ranges(&mut out);
    s.nodes.ranges(&mut out);
    if let Some(idp) = &s.identity_provider {
        idp.ranges(&mut out);
    }
    s.fidelity.ranges(&mut out);
    if let Some(sweep) = &s.sweep {
        sweep.ranges(&mut out);
    }
    if let Some(swarm) = &s.swarm {
        swarm.ranges(&mut out);
    }
    out
}
