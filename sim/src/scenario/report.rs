//! The `[report]` table: what the report adds to the run (a contrast run, which attempts go to `calls.csv`).

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use mcpstorm_core::session::GatewayProfile;

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
    /// Which attempts go to `calls.csv`, streamed to disk as they finish: `"auto"` (the default: `"all"` for a run of
    /// up to 20,000 logical calls, `"sample"` beyond), `"all"`, `"sample"` (every attempt of one logical call in
    /// 100) or `"off"` (no file, and no hashing of results).
    #[serde(default, skip_serializing_if = "CallsMode::is_default")]
    pub calls: CallsMode,
    /// Which calls go to `traces.otlp.json` as OpenTelemetry spans (the OTLP JSON encoding, the MCP semantic
    /// conventions, ids drawn from the seed; see docs/traces.md): `"off"` (the default: no file), `"sampled"` (one
    /// logical call in 100, the calls `calls.csv`'s sample holds), `"all"` (the calls `calls.csv` holds: every call
    /// when it writes every attempt, else its sample) or `"failed"` (those of `"all"`'s that did not end ok).
    #[serde(default, skip_serializing_if = "TracesMode::is_default")]
    pub traces: TracesMode,
}

/// Which calls a run writes to `traces.otlp.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum TracesMode {
    /// No file: the default, so a run writes only what it wrote before traces existed (a file of spans is for a
    /// reader who asks for it, and a run's directory stays the same for every other reader).
    #[default]
    Off,
    /// One logical call in 100 (`CALLS_SAMPLE_EVERY`): the calls `calls.csv`'s sample holds.
    Sampled,
    /// The calls `calls.csv` holds (as `[report] calls` resolves for the run; a sample with `calls = "off"`).
    All,
    /// Those of `"all"`'s that did not end ok (degraded answers included).
    Failed,
}

impl TracesMode {
    fn is_default(&self) -> bool {
        *self == TracesMode::default()
    }

    /// One logical call in how many is a candidate, under `calls` (resolved for the run); `None` when off.
    pub fn every(self, calls: CallsMode) -> Option<u64> {
        match (self, calls) {
            (TracesMode::Off, _) => None,
            (TracesMode::All | TracesMode::Failed, CallsMode::All | CallsMode::Auto) => Some(1),
            _ => Some(CALLS_SAMPLE_EVERY),
        }
    }
}

/// Which attempts a run writes to `calls.csv`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum CallsMode {
    /// `All` for a run of up to [`FULL_HISTORY_CALLS`] logical calls (estimated), `Sample` beyond: the default
    /// bounds the disk a long run takes (retry_storm's full history is 39 MB), while every figure, plot and check is
    /// computed from all the calls either way.
    #[default]
    Auto,
    /// Every attempt.
    All,
    /// Every attempt of one logical call in 100 (`CALLS_SAMPLE_EVERY`), counted in the order calls are offered.
    Sample,
    /// No `calls.csv`.
    Off,
}

/// Above this many logical calls (estimated), `"auto"` writes a sample.
pub const FULL_HISTORY_CALLS: f64 = 20_000.0;

impl CallsMode {
    fn is_default(&self) -> bool {
        *self == CallsMode::default()
    }

    /// The mode a run of about `estimated_calls` logical calls writes: `Auto` decided, the others as they are.
    pub fn resolve(self, estimated_calls: f64) -> CallsMode {
        match self {
            CallsMode::Auto if estimated_calls <= FULL_HISTORY_CALLS => CallsMode::All,
            CallsMode::Auto => CallsMode::Sample,
            mode => mode,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traces_follow_the_call_historys_sampling() {
        use CallsMode as C;
        use TracesMode as T;
        let sample = Some(CALLS_SAMPLE_EVERY);
        assert_eq!(T::Off.every(C::All), None);
        assert_eq!(T::Sampled.every(C::All), sample);
        for mode in [T::All, T::Failed] {
            assert_eq!(mode.every(C::All), Some(1));
            assert_eq!(mode.every(C::Auto), Some(1), "unresolved, as the call history reads it");
            assert_eq!(mode.every(C::Sample), sample);
            assert_eq!(mode.every(C::Off), sample);
        }
    }
}
