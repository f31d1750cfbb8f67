//! Load-generator hosts: many agent sessions multiplexed on one turmoil host, calling through the real core.
//!
//! Closed loop: each session calls, waits for the outcome, thinks, and calls again. Open loop: Poisson arrivals,
//! each call's latency measured from its *intended* send time, so a stalled system cannot hide its stall by
//! slowing the arrivals down (coordinated omission, as wrk2 avoids it).
//!
//! Every attempt goes into the recorder's call history (`calls.csv`): wall time from the host's `SimClock`, the
//! start offset from turmoil's global simulated time (tokio instants of different hosts' runtimes are not
//! comparable), and the arguments hashed once per mix entry rather than once per attempt (the hash is of the mix
//! entry's arguments, before an agent fills in parameters a drift added).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use mcpstorm_core::client::{ClientConfig, McpClient};
use mcpstorm_core::conn::CallOptions;
use mcpstorm_core::history::{CallKey, CallStart, ContentHash};
use mcpstorm_core::limit::InFlightLimit;
use mcpstorm_core::rt::{Clock, SeededRng};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};
use serde_json::{Value, json};
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep, sleep_until};

use super::agent::{self, Next};
use super::clock::SimClock;
use super::hosts::server_host;
use super::net::{SERVER_PORT, TurmoilDialer};
use super::recorder::{AttemptVerdict, Outcome, Recorder, SimObserver};
use crate::scenario::{CredentialSpec, LoadMode, Scenario};

/// Everything a load host needs, shared by every incarnation of it.
#[derive(Debug)]
pub struct LoadPlan {
    pub scenario: Scenario,
    pub recorder: Recorder,
    /// Logical calls claimed so far across all load hosts (for `load.calls`).
    pub claimed: AtomicU64,
    /// Each load host's wall clock (the gateway's), by host index: `clock_skew` faults on `gateway` move them.
    pub clocks: Vec<SimClock>,
}

impl LoadPlan {
    fn now() -> Duration {
        turmoil::sim_elapsed().unwrap_or_default()
    }

    /// Claims the right to start one more logical call, or says the load is over.
    fn claim(&self) -> bool {
        if Self::now() >= self.scenario.duration.0 {
            return false;
        }
        match self.scenario.load.calls {
            Some(max) => self.claimed.fetch_add(1, Ordering::Relaxed) < max,
            None => true,
        }
    }
}

/// One load host's clients: one `McpClient` (one connection) per server replica, all sharing the host's global
/// in-flight limit, as one gateway process would.
struct Clients {
    /// `by_server[s][r]`: server `s`, replica `r`.
    by_server: Vec<Vec<Arc<McpClient>>>,
    /// Round-robin cursor per server: no router yet, so replicas take turns.
    cursors: Vec<AtomicUsize>,
    /// This host's wall clock (the call history's timestamps, and the gateway's wall time).
    clock: SimClock,
    host: String,
}

impl Clients {
    fn new(plan: &LoadPlan, host_index: usize, host: &str, seed: u64) -> Clients {
        let spec = &plan.scenario.client;
        let limit = InFlightLimit::new(spec.max_in_flight);
        let clock = plan.clocks.get(host_index).cloned().unwrap_or_default();
        let gateway = &plan.scenario.gateway;
        let mut config = ClientConfig {
            connect_timeout: spec.connect_timeout.0,
            profile: gateway.profile,
            credentials: gateway.credentials.iter().map(CredentialSpec::to_core).collect(),
            ..ClientConfig::default()
        };
        config.connection.max_in_flight = spec.per_connection;
        config.connection.queue_wait = spec.queue_wait.0;
        config.connection.first_response = spec.first_response.0;
        config.connection.call_deadline = spec.deadline.0;
        let root = SeededRng::new(seed);
        let mut stream = 0;
        let by_server = plan
            .scenario
            .servers
            .iter()
            .map(|s| {
                (0..s.replicas)
                    .map(|r| {
                        stream += 1;
                        let name = server_host(&s.name, r);
                        let dialer = Arc::new(TurmoilDialer { host: name.clone(), port: SERVER_PORT });
                        let observer = Arc::new(SimObserver {
                            recorder: plan.recorder.clone(),
                            host: host.to_owned(),
                            replica: name.clone(),
                        });
                        Arc::new(
                            McpClient::new(name, dialer, config.clone())
                                .with_observer(observer)
                                .with_rng(root.fork(stream))
                                .with_clock(Arc::new(clock.clone()))
                                .with_global_limit(limit.clone()),
                        )
                    })
                    .collect()
            })
            .collect();
        let cursors = plan.scenario.servers.iter().map(|_| AtomicUsize::new(0)).collect();
        Clients { by_server, cursors, clock, host: host.to_owned() }
    }

    fn pick(&self, server: usize) -> &Arc<McpClient> {
        let replicas = &self.by_server[server];
        let i = self.cursors[server].fetch_add(1, Ordering::Relaxed) % replicas.len();
        &replicas[i]
    }
}

/// What one logical call targets, resolved from the mix once.
#[derive(Debug, Clone)]
struct Target {
    server: usize,
    tool: String,
    args: serde_json::Value,
    /// SHA-256 of `args`' canonical JSON.
    input: ContentHash,
}

fn targets(scenario: &Scenario) -> (Vec<Target>, Vec<f64>) {
    let mut out = Vec::new();
    let mut weights = Vec::new();
    for m in &scenario.load.mix {
        let server = scenario.servers.iter().position(|s| s.name == m.server).unwrap_or(0);
        let input = ContentHash::of(&m.args);
        out.push(Target { server, tool: m.tool.clone(), args: m.args.clone(), input });
        weights.push(m.weight);
    }
    (out, weights)
}

fn pick_weighted(rng: &mut ChaCha8Rng, weights: &[f64]) -> usize {
    let total: f64 = weights.iter().sum();
    let mut x = rng.random::<f64>() * total;
    for (i, w) in weights.iter().enumerate() {
        if x < *w {
            return i;
        }
        x -= w;
    }
    weights.len().saturating_sub(1)
}

/// Runs one load host to completion: the load ends at the scenario's duration (or call budget) and every started
/// call is then allowed to reach its outcome.
pub async fn run_host(plan: Arc<LoadPlan>, host_index: usize, host: String) -> turmoil::Result {
    let seed = plan.scenario.seed ^ (0x9e37_79b9_7f4a_7c15_u64.wrapping_mul(host_index as u64 + 1));
    let clients = Arc::new(Clients::new(&plan, host_index, &host, seed));
    let (targets, weights) = targets(&plan.scenario);
    let targets = Arc::new(targets);
    let hosts = plan.scenario.load.hosts;
    let mut tasks = JoinSet::new();
    match plan.scenario.load.mode {
        LoadMode::Closed => {
            let sessions = plan.scenario.load.sessions.unwrap_or(1);
            // Sessions are dealt to hosts round-robin: host h runs sessions h, h + hosts, ...
            for session in (host_index..sessions).step_by(hosts) {
                let rng = ChaCha8Rng::seed_from_u64(seed ^ (session as u64).wrapping_mul(0xd1b5_4a32_d192_ed03));
                let ctx = (plan.clone(), clients.clone(), targets.clone(), weights.clone());
                tasks.spawn(closed_session(ctx, rng));
            }
        }
        LoadMode::Open => {
            // One task per arrival, as real agents are independent of each other. The number alive at once is bounded
            // by rate × the longest a logical call can take (every attempt's deadline plus queueing): about 16,000 at
            // retry_storm's peak, a few MB, since a stalled system must not slow the arrivals down.
            let rate = plan.scenario.load.rate.unwrap_or(1.0) / hosts as f64;
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let gap = Exp::new(rate).map_err(|e| format!("open-loop rate {rate}: {e}"))?;
            let start = Instant::now();
            let mut next = start;
            while plan.claim() {
                next += Duration::from_secs_f64(gap.sample(&mut rng));
                sleep_until(next).await;
                if LoadPlan::now() >= plan.scenario.duration.0 {
                    break;
                }
                let index = pick_weighted(&mut rng, &weights);
                let (plan, clients, target) = (plan.clone(), clients.clone(), targets[index].clone());
                // The intended send time is `next`, whether or not this host got to it on time.
                let intended = LoadPlan::now() - Instant::now().saturating_duration_since(next);
                tasks.spawn(async move { logical_call(&plan, &clients, &target, intended).await });
            }
        }
    }
    while tasks.join_next().await.is_some() {}
    for server in &clients.by_server {
        for client in server {
            client.close().await;
        }
    }
    Ok(())
}

type SessionCtx = (Arc<LoadPlan>, Arc<Clients>, Arc<Vec<Target>>, Vec<f64>);

async fn closed_session((plan, clients, targets, weights): SessionCtx, mut rng: ChaCha8Rng) {
    let think = plan.scenario.load.think_time.0;
    while plan.claim() {
        let target = &targets[pick_weighted(&mut rng, &weights)];
        logical_call(&plan, &clients, target, LoadPlan::now()).await;
        if !think.is_zero() {
            sleep(think).await;
        }
    }
}

/// The arguments an agent sends: the mix entry's, plus every *required* property they lack, filled from the schema
/// the gateway shows now (as an LLM agent builds its call from the tool schema it is given): the property's
/// `default`, else its first `examples` entry, else a zero value of its `type`.
///
/// So agents follow a drift exactly as far as the gateway lets them see it: after a re-fetch (default profile) they
/// adapt; with schemas cached forever (naive profile) they never do. A renamed tool is not chased: the gateway
/// reports the old name as unknown, as it would to an agent holding a stale plan.
async fn agent_arguments(client: &McpClient, tool: &str, args: &Value) -> Value {
    let Ok(caps) = client.capabilities().await else { return args.clone() };
    let Some(entry) = caps.tool(tool) else { return args.clone() };
    fill_required(&entry.tool().input_schema, args)
}

/// `args` with each property `schema.required` names but `args` lacks filled in (see [`agent_arguments`]).
pub(crate) fn fill_required(schema: &Value, args: &Value) -> Value {
    let mut out = args.clone();
    let (Some(required), Some(obj)) = (schema.get("required").and_then(Value::as_array), out.as_object_mut()) else {
        return out;
    };
    for name in required.iter().filter_map(Value::as_str) {
        if obj.contains_key(name) {
            continue;
        }
        let prop = schema.get("properties").and_then(|p| p.get(name));
        let value = prop
            .and_then(|p| p.get("default").or_else(|| p.get("examples").and_then(|e| e.get(0))))
            .cloned()
            .unwrap_or_else(|| zero_of(prop.and_then(|p| p.get("type"))));
        obj.insert(name.to_owned(), value);
    }
    out
}

/// A zero value of a JSON Schema `type` (the first listed, for a list); `null` when there is none.
fn zero_of(ty: Option<&Value>) -> Value {
    let name = match ty {
        Some(Value::String(s)) => s.as_str(),
        Some(Value::Array(list)) => list.first().and_then(Value::as_str).unwrap_or("null"),
        _ => "null",
    };
    match name {
        "string" => json!(""),
        "integer" | "number" => json!(0),
        "boolean" => json!(false),
        "array" => json!([]),
        "object" => json!({}),
        _ => Value::Null,
    }
}

/// One logical call as an agent makes it: the first attempt, then retries as the agent model says
/// ([`agent::next`]).
async fn logical_call(plan: &LoadPlan, clients: &Clients, target: &Target, intended: Duration) {
    let recorder = &plan.recorder;
    recorder.offered(intended);
    // The agent's own stream (the polite backoff's jitter): fixed by the call's intended time and the run's seed.
    let mut rng = ChaCha8Rng::seed_from_u64(plan.scenario.seed ^ (intended.as_nanos() as u64).rotate_left(17));
    let mut args = target.args.clone();
    let mut outcome = Outcome::Error("local");
    for attempt in 0.. {
        recorder.attempt_started(LoadPlan::now(), attempt > 0);
        let client = clients.pick(target.server);
        let sent_args = agent_arguments(client, &target.tool, &args).await;
        let sent = LoadPlan::now();
        let start = CallStart::new(clients.clock.wall_ms(), sent, Instant::now());
        let result = client.call_tool(&target.tool, sent_args, CallOptions::default()).await;
        recorder.attempt_finished();
        let verdict = AttemptVerdict::of(result.as_ref());
        recorder.attempt_verdict(&clients.host, client.server(), sent, LoadPlan::now(), verdict);
        let key = CallKey::with_hash(client.server(), target.tool.as_str(), target.input);
        recorder.call(start, key, result.as_ref(), attempt);
        outcome = match &result {
            Ok(r) if !r.is_error => Outcome::Ok,
            Ok(_) => Outcome::Tool,
            Err(e) => Outcome::Error(e.label()),
        };
        match agent::next(&plan.scenario.agent, attempt, result.as_ref(), &args, &mut rng) {
            Next::Stop => break,
            Next::Retry { after, args: next } => {
                args = next;
                if !after.is_zero() {
                    sleep(after).await;
                }
            }
        }
    }
    let now = LoadPlan::now();
    recorder.logical_done(now, now.saturating_sub(intended), outcome, Some(&plan.scenario.servers[target.server].name));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_fill_missing_required_parameters_from_the_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "q": {"type": "string"},
                "region": {"type": "string", "default": "eu"},
                "limit": {"type": "integer", "examples": [25, 50]},
                "exact": {"type": ["boolean", "null"]},
                "tags": {"type": "array"},
                "anything": {}
            },
            "required": ["q", "region", "limit", "exact", "tags", "anything", "undeclared"]
        });
        let filled = fill_required(&schema, &json!({"q": "mine", "extra": 1}));
        let expected = json!({"q": "mine", "extra": 1, "region": "eu", "limit": 25, "exact": false, "tags": [],
            "anything": null, "undeclared": null});
        assert_eq!(filled, expected, "given values stay, defaults then examples then zeros fill the rest");
        // Optional properties are left alone, and a schema without `required` changes nothing.
        let optional = json!({"type": "object", "properties": {"n": {"type": "integer", "default": 3}}});
        assert_eq!(fill_required(&optional, &json!({})), json!({}));
        assert_eq!(fill_required(&json!({"required": "nope"}), &json!({"a": 1})), json!({"a": 1}));
    }
}
