//! Shards back into one comparison: exactly the data an unsharded run of the same plan produces, so the report
//! written from it is the same to the byte.

use std::collections::BTreeMap;

use super::partial::{Partial, PlanId};
use super::{CompareData, RunSummary};
use crate::shard::Shard;

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("no shard results given")]
    Nothing,
    #[error("{a} and {b} are shards of different comparisons (their {what} differ)")]
    OtherPlan { a: String, b: String, what: &'static str },
    #[error("shard {shard} is given twice: {a} and {b}")]
    Twice { shard: String, a: String, b: String },
    #[error("shard {shard} is missing (have {have})")]
    Missing { shard: String, have: String },
    #[error("{path}: shard {shard} does not hold the runs its plan gives it")]
    Malformed { path: String, shard: String },
}

/// What differs between two plans, first in the order a reader would check.
fn difference(a: &PlanId, b: &PlanId) -> Option<&'static str> {
    [
        (a.scenario != b.scenario, "scenarios"),
        (a.variants != b.variants, "variants"),
        (a.seeds != b.seeds, "seeds"),
        (a.shards != b.shards, "shard counts"),
        (a.reproduce != b.reproduce, "commands"),
        (a.fingerprint != b.fingerprint, "resolved scenarios"),
    ]
    .into_iter()
    .find_map(|(differs, what)| differs.then_some(what))
}

/// Merges shard results (each with the path it came from, for messages) into the whole comparison.
pub fn merge(parts: Vec<(String, Partial)>) -> Result<CompareData, MergeError> {
    let Some((first_path, first)) = parts.first() else { return Err(MergeError::Nothing) };
    let (first_path, plan) = (first_path.clone(), first.plan.clone());
    let mut by_shard: BTreeMap<u32, (String, Partial)> = BTreeMap::new();
    for (path, part) in parts {
        if let Some(what) = difference(&plan, &part.plan) {
            return Err(MergeError::OtherPlan { a: first_path, b: path, what });
        }
        let shown = format!("{}/{}", part.shard, plan.shards);
        if let Some((a, _)) = by_shard.get(&part.shard) {
            return Err(MergeError::Twice { shard: shown, a: a.clone(), b: path });
        }
        by_shard.insert(part.shard, (path, part));
    }
    if let Some(k) = (1..=plan.shards).find(|k| !by_shard.contains_key(k)) {
        let have: Vec<String> = by_shard.keys().map(|k| format!("{k}/{}", plan.shards)).collect();
        return Err(MergeError::Missing { shard: format!("{k}/{}", plan.shards), have: have.join(", ") });
    }
    let mut runs: Vec<Vec<Option<RunSummary>>> = plan.variants.iter().map(|_| vec![None; plan.seeds.len()]).collect();
    let mut faults = Vec::new();
    for (path, part) in by_shard.into_values() {
        let malformed =
            || MergeError::Malformed { path: path.clone(), shard: format!("{}/{}", part.shard, plan.shards) };
        let shard = Shard::new(part.shard, plan.shards).map_err(|_| malformed())?;
        let indices = Partial::seed_indices(plan.seeds.len(), shard);
        if part.runs.len() != runs.len() || (shard.takes(0) && !indices.is_empty()) != part.faults.is_some() {
            return Err(malformed());
        }
        for (row, got) in runs.iter_mut().zip(&part.runs) {
            if got.len() != indices.len() {
                return Err(malformed());
            }
            for (i, run) in indices.iter().zip(got) {
                if run.seed != plan.seeds[*i] {
                    return Err(malformed());
                }
                row[*i] = Some(run.clone());
            }
        }
        if let Some(f) = &part.faults {
            faults = f.clone();
        }
    }
    // Every slot is filled: each shard held exactly its seeds, and the shards cover every seed.
    let runs = runs.into_iter().map(|row| row.into_iter().flatten().collect()).collect();
    Ok(CompareData {
        scenario: plan.scenario,
        labels: plan.variants.into_iter().map(|(label, _)| label).collect(),
        seeds: plan.seeds,
        runs,
        faults,
        reproduce: plan.reproduce,
    })
}
