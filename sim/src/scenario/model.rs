//! The scenario file's top table ([`Scenario`]) and the small tables without a module of their own (`[network]`,
//! `[report]`, `[sweep]`). Each larger table has its own module (`units`, `gateway`, `servers`, `workload`,
//! `client`, `faults`, `checks`), all re-exported from [`scenario`](super).
//!
//! Every table rejects unknown keys. Durations are strings with a unit (`"250ms"`, `"2s"`, `"1m30s"`: see `units`).

use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use mcpstorm_core::session::GatewayProfile;

use super::checks::Checks;
use super::client::ClientSpec;
use super::faults::Fault;
use super::gateway::GatewaySpec;
use super::ranges;
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
/// | `tick`        | `"1ms"`  | turmoil's step, 1 µs to 1 s                                     |
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
    /// turmoil's step, 1 µs to 1 s (and at most `duration`): every tick is executed, so a finer tick costs wall time.
    #[serde(default = "default_tick")]
    pub tick: Dur,
    #[serde(default)]
    pub network: Network,
    /// The fake MCP servers (`[[servers]]`), each with its `[[servers.tools]]`.
    pub servers: Vec<ServerSpec>,
    pub load: Load,
    #[serde(default)]
    pub agent: Agent,
    #[serde(default)]
    pub client: ClientSpec,
    /// The fault timeline (`[[faults]]`).
    #[serde(default)]
    pub faults: Vec<Fault>,
    #[serde(default)]
    pub checks: Checks,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<Sweep>,
    #[serde(default)]
    pub gateway: GatewaySpec,
    #[serde(default)]
    pub report: ReportSpec,
    /// How `mcpstorm swarm` draws this scenario's faults and judges its runs (see [`SwarmSpec`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swarm: Option<SwarmSpec>,
}

/// What the report adds to the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct ReportSpec {
    /// Run the same scenario and seed again with this gateway profile (the other one, if it is the primary's),
    /// into `contrast-<profile>/`, and draw `contrast.png` with both side by side. The exit code follows the
    /// primary run. `"none"` runs no contrast, and the contrast checks (`contrast_p99_ratio`,
    /// `contrast_extra_errors`) are then not judged: `--set report.contrast=none` switches a file's contrast off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "optional_profile_schema")]
    pub contrast: Option<Contrast>,
    /// Which attempts go to `calls.csv`, streamed to disk as they finish: `"all"` (the default), `"sample"` (every
    /// attempt of one logical call in 100) or `"off"` (no file, and no hashing of results).
    #[serde(default, skip_serializing_if = "CallsMode::is_default")]
    pub calls: CallsMode,
}

/// Which attempts a run writes to `calls.csv`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum CallsMode {
    /// Every attempt.
    #[default]
    All,
    /// Every attempt of one logical call in 100 (`CALLS_SAMPLE_EVERY`), counted in the order calls are offered.
    Sample,
    /// No `calls.csv`.
    Off,
}

impl CallsMode {
    fn is_default(&self) -> bool {
        *self == CallsMode::default()
    }
}

/// With `calls = "sample"`, one logical call in this many is written. A constant rather than a key: a sample is for
/// reading the shape of a run's calls (statuses, codes, retry chains) when all of them would be too many to keep,
/// and 1% does that for every shipped scenario (a full `retry_storm` keeps about 1,500 of 155,000 rows); a reader
/// who needs another rate can write `"all"` and thin it.
pub const CALLS_SAMPLE_EVERY: u64 = 100;

fn optional_profile_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "enum": ["default", "naive", "none"] })
}

/// `[report] contrast` when given: a gateway profile to run beside the primary, or `"none"` (switched off, e.g. by
/// `--set report.contrast=none`), which also lets the file's contrast checks go unjudged rather than be refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contrast {
    Off,
    Profile(GatewayProfile),
}

impl ReportSpec {
    /// The profile of the contrast run, if there is one.
    pub fn contrast_profile(&self) -> Option<GatewayProfile> {
        match self.contrast {
            Some(Contrast::Profile(p)) => Some(p),
            Some(Contrast::Off) | None => None,
        }
    }
}

impl Serialize for Contrast {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Contrast::Off => s.serialize_str("none"),
            Contrast::Profile(p) => p.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Contrast {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{Error, Unexpected, value::StrDeserializer};
        let name = String::deserialize(d)?;
        if name == "none" {
            return Ok(Contrast::Off);
        }
        GatewayProfile::deserialize(StrDeserializer::<D::Error>::new(&name))
            .map(Contrast::Profile)
            .map_err(|_| D::Error::invalid_value(Unexpected::Str(&name), &"\"default\", \"naive\" or \"none\""))
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
        Network { latency: default_latency(), max_latency: None, fail_rate: 0.0, hosts: HostsMode::Shared }
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

// Defaults and schemas that more than one table's keys use.

pub(super) fn one() -> usize {
    1
}

pub(super) fn object_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "object" })
}

pub(super) fn empty_args() -> Value {
    Value::Object(Default::default())
}
