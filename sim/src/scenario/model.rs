//! The scenario file's top table ([`Scenario`]) and the small tables without a module of their own (`[network]`,
//! `[report]`, `[sweep]`). Each larger table has its own module (`units`, `gateway`, `servers`, `workload`,
//! `client`, `faults`, `checks`, `fidelity`), all re-exported from [`scenario`](super).
//!
//! Every table rejects unknown keys. Durations are strings with a unit (`"250ms"`, `"2s"`, `"1m30s"`: see `units`).

use std::collections::BTreeSet;
use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use super::checks::Checks;
use super::client::ClientSpec;
use super::faults::Fault;
use super::fidelity::FidelitySpec;
use super::gateway::GatewaySpec;
use super::idp::IdentityProviderSpec;
use super::nodes::NodesSpec;
use super::path::KeyPath;
use super::ranges::{self, MAX_SWEEP_VALUES, MIN_TICK, Ranges, Upper};
use super::report::ReportSpec;
use super::rules::{Rules, fmt};
use super::servers::ServerSpec;
use super::swarm::SwarmSpec;
use super::units::Dur;
use super::workload::{Agent, Load};

/// A whole scenario file.
///
/// | key           | default  | meaning                                                         |
/// |---------------|----------|-----------------------------------------------------------------|
/// | `name`        | required | names the report directory                                      |
/// | `description` | `""`     | shown in the summary                                            |
/// | `seed`        | 1        | the run's seed; `--seed` overrides                              |
/// | `duration`    | required | simulated time to run (a closed loop with `calls` may end early), at most 7 days |
/// | `tick`        | `"1ms"`  | turmoil's step, 1 ms to 1 s                                     |
/// | `gateway_config` | none  | a gateway config file whose `[gateway]` and `[client]` the scenario runs |
///
/// Every duration is at most 7 days and every count has a maximum (see [`ranges`](super::ranges)); a run whose
/// estimated cost exceeds the limits of [`cost`](super::cost) is refused unless `--allow-large` is given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Names the report directory: letters, digits, `_`, `-` and `.`.
    pub name: String,
    /// Shown in the summary.
    #[serde(default)]
    pub description: String,
    /// The run's seed; `--seed` overrides it.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Simulated time to run (a closed loop with `calls` may end early); at most 7 days.
    pub duration: Dur,
    /// turmoil's step, 1 ms to 1 s (and at most `duration`): every tick is executed; the hosts' timers count whole ms.
    #[serde(default = "default_tick")]
    pub tick: Dur,
    /// A gateway config file (the one `mcpstorm gateway --config` reads), relative to this scenario's directory:
    /// the scenario runs its `[gateway]` and `[client]`, and the router declarations of each of its servers that
    /// the scenario models under the same name. The scenario then sets none of those itself, and `--set` cannot
    /// change them (edit the file). Cleared when loaded: the scenario then holds the file's tables as its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_config: Option<String>,
    #[serde(default)]
    pub network: Network,
    /// The fake MCP servers (`[[servers]]`), each with its `[[servers.tools]]`.
    pub servers: Vec<ServerSpec>,
    pub load: Load,
    #[serde(default)]
    pub agent: Agent,
    /// The gateway crate's `[client]` table (each replica's client), as in the gateway's own file.
    #[serde(default)]
    pub client: ClientSpec,
    /// The fault timeline (`[[faults]]`).
    #[serde(default)]
    pub faults: Vec<Fault>,
    #[serde(default)]
    pub checks: Checks,
    /// How far `mcpstorm fidelity` lets the simulator differ from the live run (see [`FidelitySpec`]).
    #[serde(default, skip_serializing_if = "FidelitySpec::is_default")]
    pub fidelity: FidelitySpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<Sweep>,
    /// The gateway crate's `[gateway]` table, the same keys, defaults and checks as the gateway's own file.
    #[serde(default)]
    pub gateway: GatewaySpec,
    /// Gateway nodes as hosts of their own (see [`NodesSpec`]); absent: a gateway in each load host.
    #[serde(default, skip_serializing_if = "NodesSpec::is_default")]
    pub nodes: NodesSpec,
    /// An OAuth identity provider on a host of its own (`idp`), issuing the tokens of the servers with
    /// `require_token` (see [`IdentityProviderSpec`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_provider: Option<IdentityProviderSpec>,
    #[serde(default)]
    pub report: ReportSpec,
    /// How `mcpstorm swarm` draws this scenario's faults and judges its runs (see [`SwarmSpec`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swarm: Option<SwarmSpec>,
    /// The core's planted defect (a bulkhead permit leaked per replica failure), for proving that the swarm finds
    /// and shrinks a real leak. Never read from or written to a file: only code can set it.
    #[doc(hidden)]
    #[cfg(feature = "testing")]
    #[serde(skip)]
    #[schemars(skip)]
    pub planted_leak: bool,
}

impl Scenario {
    /// The top table's rules (`name`, `duration`, `tick`) and `[network]`'s.
    pub(super) fn own_problems(&self, c: &mut Rules) {
        let s = self;
        if s.name.is_empty() {
            c.fail("name", "must not be empty");
        } else if s.name.starts_with('.') || !s.name.chars().all(|ch| ch.is_ascii_alphanumeric() || "_-.".contains(ch))
        {
            c.fail(
                "name",
                format!(
                    "{:?} names the report directory: use only letters, digits, `_`, `-` and `.` (not first)",
                    s.name
                ),
            );
        }
        c.positive("duration", s.duration.0);
        c.positive("tick", s.tick.0);
        if !s.tick.0.is_zero() && s.tick.0 < MIN_TICK {
            c.fail(
                "tick",
                format!(
                    "must be at least {}: the hosts' timers count whole milliseconds, and a finer tick would run \
                     their clocks ahead of the simulation's; got {}",
                    fmt(MIN_TICK),
                    fmt(s.tick.0)
                ),
            );
        }
        c.probability("network.fail_rate", s.network.fail_rate);
        if let Some(max) = s.network.max_latency
            && max < s.network.latency
        {
            c.fail(
                "network.max_latency",
                format!("must be at least network.latency ({}), got {}", fmt(s.network.latency.0), fmt(max.0)),
            );
        }
    }

    /// The top table's and `[network]`'s durations with their bounds.
    pub(super) fn own_ranges(&self, out: &mut Ranges) {
        out.duration("duration", self.duration.0, Upper::Week);
        out.duration("tick", self.tick.0, Upper::Tick);
        out.duration("network.latency", self.network.latency.0, Upper::Run);
        if let Some(max) = self.network.max_latency {
            out.duration("network.max_latency", max.0, Upper::Run);
        }
    }
}

fn default_seed() -> u64 {
    1
}

fn default_tick() -> Dur {
    Dur(Duration::from_millis(1))
}

/// The simulated network between every pair of hosts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Network {
    /// One-way message latency (turmoil's minimum); at most the run's `duration`.
    #[serde(default = "default_latency")]
    pub latency: Dur,
    /// Upper bound for latency jitter; defaults to `latency` (no jitter); at most the run's `duration`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_latency: Option<Dur>,
    /// Probability a message is dropped. turmoil never retransmits: a drop stalls that TCP stream for good.
    #[serde(default)]
    pub fail_rate: f64,
    /// Where server replicas run: `"shared"` (the default) puts the replicas of a server on one host, each its own
    /// listener, and gives a host of its own only to a replica that a `crash` or `partition` fault names;
    /// `"per_replica"` gives every replica a host (each link its own queue, as separate machines have), at a cost
    /// that grows steeply with the number of hosts.
    #[serde(default, skip_serializing_if = "HostsMode::is_default")]
    pub hosts: HostsMode,
    /// What a partition does to bytes sent across it: `"drop"` (the default) discards them, as turmoil does (the
    /// simulator always drops); `"hold"` holds them and delivers them after the heal, as TCP's retransmissions do.
    /// Only `mcpstorm live` honours `"hold"` (its relays): the difference is inherent to the simulated network.
    #[serde(default, skip_serializing_if = "PartitionMode::is_default")]
    pub partition: PartitionMode,
}

/// What a partition does to bytes in flight across it (see [`Network::partition`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum PartitionMode {
    /// Bytes sent during the partition are lost; new connections are refused.
    #[default]
    Drop,
    /// Bytes sent during the partition are held and delivered after the heal; new connections wait for it.
    Hold,
}

impl PartitionMode {
    fn is_default(&self) -> bool {
        *self == PartitionMode::default()
    }
}

/// How server replicas are placed on turmoil hosts (see [`Network::hosts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum HostsMode {
    /// A server's replicas share a host, except those a crash or partition names.
    #[default]
    Shared,
    /// One host per replica.
    PerReplica,
}

impl HostsMode {
    fn is_default(&self) -> bool {
        *self == HostsMode::default()
    }
}

fn default_latency() -> Dur {
    Dur(Duration::from_millis(1))
}

impl Default for Network {
    fn default() -> Self {
        Network {
            latency: default_latency(),
            max_latency: None,
            fail_rate: 0.0,
            hosts: HostsMode::Shared,
            partition: PartitionMode::Drop,
        }
    }
}

/// Run once per value of one scalar parameter, named by its dotted path (e.g. `load.sessions`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Sweep {
    /// The dotted path of a scalar key, with array indices: `load.sessions`, `servers[0].workers`.
    pub param: String,
    /// One run per value, in this order; each a string, number or boolean that fits the key.
    #[schemars(schema_with = "scalar_values_schema")]
    pub values: Vec<toml::Value>,
    /// The scenario of each value with its label, built from the parsed file when it was loaded (see
    /// [`expand_sweep`](super::expand_sweep)). Not part of the format.
    #[serde(skip)]
    #[schemars(skip)]
    pub(crate) rows: Vec<(String, Scenario)>,
}

impl Sweep {
    /// The sweep's own rules: a parameter that is a key path (not into the sweep), and distinct single values. Each
    /// value's run is checked when the file is read (see [`read`](super::read)).
    pub(super) fn problems(&self, c: &mut Rules) {
        let sweep = self;
        match KeyPath::parse(&sweep.param) {
            Err(e) => c.fail("sweep.param", e),
            Ok(path) if path.first_key() == Some("sweep") => c.fail("sweep.param", "a sweep cannot sweep itself"),
            Ok(_) => {}
        }
        if sweep.values.is_empty() {
            c.fail("sweep.values", "needs at least one value");
        }
        let mut seen = BTreeSet::new();
        for (i, value) in sweep.values.iter().enumerate() {
            let at = format!("sweep.values[{i}]");
            if matches!(value, toml::Value::Array(_) | toml::Value::Table(_)) {
                c.fail(at, format!("must be a single value (string, number or boolean), got {value}"));
            } else if !seen.insert(label(value)) {
                c.fail(at, format!("repeats {value}: each value is one run, labelled by the value"));
            }
        }
    }
}

/// How a sweep value labels its run: strings as they are (`50ms`), everything else as TOML writes it (`10`, `0.5`).
pub fn label(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl Sweep {
    /// The sweep's count with its bound.
    pub(super) fn ranges(&self, out: &mut Ranges) {
        out.count("sweep.values", self.values.len() as f64, MAX_SWEEP_VALUES as f64);
    }
}

/// Two sweeps are the same when they sweep the same key over the same values: the rows follow from those.
impl PartialEq for Sweep {
    fn eq(&self, other: &Self) -> bool {
        self.param == other.param && self.values == other.values
    }
}

fn scalar_values_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "minItems": 1,
        "maxItems": ranges::MAX_SWEEP_VALUES,
        "items": { "type": ["string", "number", "integer", "boolean"] }
    })
}
