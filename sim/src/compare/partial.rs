//! One shard's share of a comparison (`compare --shard K/N`), written as `shard-K-of-N.json` for `mcpstorm merge`:
//! every run the report needs, with the identity of the plan it belongs to, so that shards of different plans are
//! never merged.
//!
//! Floats are stored losslessly, as `{"f64": "<shortest decimal>"}` (Rust's `{:?}` gives the shortest decimal that
//! reads back to the same bits, and `str::parse` rounds correctly). serde_json's own float parser may land one ULP
//! off, and its `float_roundtrip` feature would fix that only by changing the parser for the whole binary, the
//! gateway core's JSON-RPC parsing included: a behaviour change the core should not take for a report file.

use std::path::Path;

use mcpstorm_core::schema::ContentHash;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use super::{Plan, RunSummary, Runs};
use crate::run::FaultWindow;
use crate::shard::Shard;

/// What the file says it is, so that another JSON file is refused by name.
const FORMAT: &str = "mcpstorm compare shard";
/// The key of a stored float.
const F64: &str = "f64";

/// Everything that makes two shards parts of the same comparison.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanId {
    pub scenario: String,
    /// Each variant's label and its `--set` overrides.
    pub variants: Vec<(String, Vec<String>)>,
    pub seeds: Vec<u64>,
    pub shards: u32,
    pub reproduce: String,
    /// SHA-256 of the canonical JSON of every resolved scenario of the plan: same files, same overrides, same build's
    /// defaults.
    pub fingerprint: String,
}

/// One shard's runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Partial {
    pub format: String,
    pub plan: PlanId,
    /// K of K/N.
    pub shard: u32,
    /// `runs[v][j]`: variant `v` on the `j`-th seed this shard takes.
    pub runs: Vec<Vec<RunSummary>>,
    /// The plots' fault windows: only the shard that holds the first seed has them.
    pub faults: Option<Vec<FaultWindow>>,
}

#[derive(Debug, thiserror::Error)]
pub enum PartialError {
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    #[error("{path} is not a compare shard result (shard-K-of-N.json from `mcpstorm compare --shard`): {message}")]
    NotPartial { path: String, message: String },
    #[error("cannot store the shard: {0}")]
    Encode(String),
}

impl PlanId {
    pub fn of(plan: &Plan, shards: u32, reproduce: &str) -> Result<PlanId, PartialError> {
        let resolved = serde_json::to_value(&plan.runs).map_err(|e| PartialError::Encode(e.to_string()))?;
        let fingerprint = ContentHash::of(&resolved).to_hex();
        Ok(PlanId {
            scenario: plan.name.clone(),
            variants: plan.variants.iter().map(|v| (v.label.clone(), v.sets.clone())).collect(),
            seeds: plan.seeds.clone(),
            shards,
            reproduce: reproduce.to_owned(),
            fingerprint,
        })
    }
}

impl Partial {
    /// The seed indices of the plan that `shard` runs.
    pub fn seed_indices(seeds: usize, shard: Shard) -> Vec<usize> {
        (0..seeds).filter(|i| shard.takes(*i)).collect()
    }

    pub fn new(plan: PlanId, shard: Shard, runs: Runs) -> Partial {
        let first = shard.takes(0) && !plan.seeds.is_empty();
        Partial {
            format: FORMAT.to_owned(),
            plan,
            shard: shard.index,
            runs: runs.runs,
            faults: first.then_some(runs.faults),
        }
    }

    pub fn file_name(shard: Shard) -> String {
        format!("shard-{}-of-{}.json", shard.index, shard.count)
    }

    pub fn encode(&self) -> Result<Vec<u8>, PartialError> {
        let value = serde_json::to_value(self).map_err(|e| PartialError::Encode(e.to_string()))?;
        let mut bytes =
            serde_json::to_vec_pretty(&store_floats(value)).map_err(|e| PartialError::Encode(e.to_string()))?;
        bytes.push(b'\n');
        // serde_json turns NaN and infinities into null, which would read back as something else: refuse instead.
        match Partial::decode(&bytes) {
            Ok(back) if back == *self => Ok(bytes),
            _ => Err(PartialError::Encode(
                "a value does not survive the round trip (a float that is not finite?)".into(),
            )),
        }
    }

    fn decode(bytes: &[u8]) -> Result<Partial, String> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        if value.get("format").and_then(Value::as_str) != Some(FORMAT) {
            return Err(format!("no \"format\": {FORMAT:?}"));
        }
        serde_json::from_value(load_floats(value)?).map_err(|e| e.to_string())
    }

    pub fn read(path: &Path) -> Result<Partial, PartialError> {
        let shown = path.display().to_string();
        let bytes =
            std::fs::read(path).map_err(|e| PartialError::Io { path: shown.clone(), message: e.to_string() })?;
        Partial::decode(&bytes).map_err(|message| PartialError::NotPartial { path: shown, message })
    }
}

/// Every float becomes `{"f64": "..."}` (see the module docs); integers stay numbers.
fn store_floats(value: Value) -> Value {
    match value {
        Value::Number(n) => match n.as_f64().filter(|_| n.is_f64()) {
            Some(x) => Value::Object(Map::from_iter([(F64.to_owned(), Value::String(format!("{x:?}")))])),
            None => Value::Number(n),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(store_floats).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, store_floats(v))).collect()),
        other => other,
    }
}

/// The inverse of [`store_floats`]. A float is the only object with the single key `f64` holding a string: none of
/// the stored types has such a field, and a map of counts holds numbers.
fn load_floats(value: Value) -> Result<Value, String> {
    Ok(match value {
        Value::Object(map) if map.len() == 1 && map.get(F64).is_some_and(Value::is_string) => {
            let text = map.get(F64).and_then(Value::as_str).unwrap_or_default();
            let x: f64 = text.parse().map_err(|_| format!("{text:?} is not a float"))?;
            Value::Number(Number::from_f64(x).ok_or_else(|| format!("{text:?} is not finite"))?)
        }
        Value::Array(items) => Value::Array(items.into_iter().map(load_floats).collect::<Result<_, _>>()?),
        Value::Object(map) => {
            Value::Object(map.into_iter().map(|(k, v)| Ok((k, load_floats(v)?))).collect::<Result<_, String>>()?)
        }
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_survive_exactly() {
        // Values serde_json's default parser is known to miss by a ULP, and ordinary ones.
        let xs = [0.1 + 0.2, 1e-300 * 3.3, 2.2250738585072014e-308, 9007199254740993.0, 123.456e-20, 1.0, 0.0];
        let stored = store_floats(serde_json::json!(xs));
        let text = serde_json::to_string(&stored).unwrap();
        let back: Vec<f64> =
            serde_json::from_value(load_floats(serde_json::from_str(&text).unwrap()).unwrap()).unwrap();
        assert_eq!(back.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), xs.map(f64::to_bits));
        assert_eq!(load_floats(serde_json::json!({"f64": 3})).unwrap(), serde_json::json!({"f64": 3}));
    }
}
