//! What every multi-seed command (`compare`, `swarm`) takes besides its own options: the first seed, how many runs
//! at once, and which shard of the seeds to run; and what it does with them, in one place. Also the seed that
//! `MCPSTORM_SEED` gives `sim`, `compare` and `swarm` when no flag names one (madsim's `MADSIM_TEST_SEED` habit: one
//! variable re-runs a whole script of commands on another seed).

use clap::Args;

use super::Failure;
use crate::shard::Shard;

/// The most `--jobs`: one thread and one simulated world each. More than the cores only adds memory.
const MAX_JOBS: u64 = 256;

#[derive(Debug, Args)]
pub struct SeedRuns {
    /// The first seed (then +1, +2, ...). Default: MCPSTORM_SEED, else the scenario's own seed.
    #[arg(long)]
    pub first_seed: Option<u64>,
    /// Runs at once, 1 to 256. Default: the number of cores.
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=MAX_JOBS))]
    pub jobs: Option<usize>,
    /// Run only shard K of N: the seeds whose index i has i % N == K - 1. Default: from JOB_COMPLETION_INDEX (a
    /// Kubernetes Indexed Job's, from 0) when a shard count is given. What a shard writes is each command's own:
    /// see [`COMPARE_SHARD`] and [`SWARM_SHARD`], which replace this text in their `--help`.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<Shard>,
    /// The shard count N for a shard taken from JOB_COMPLETION_INDEX. Default: MCPSTORM_SHARD_COUNT.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub shard_count: Option<u32>,
}

/// `compare --shard`'s help: a shard writes its share of the runs for `mcpstorm merge`.
pub const COMPARE_SHARD: &str = "Run only shard K of N: the seeds whose index i has i % N == K - 1. Default: from \
JOB_COMPLETION_INDEX (a Kubernetes Indexed Job's, from 0) when a shard count is given. A shard writes only \
`shard-K-of-N.json` (no tables, no plots, no verdict); `mcpstorm merge` combines all N into the report an unsharded \
run writes";

/// `swarm --shard`'s help: a shard's report is complete, and shards combine by copying.
pub const SWARM_SHARD: &str = "Run only shard K of N: the seeds whose index i has i % N == K - 1. Default: from \
JOB_COMPLETION_INDEX (a Kubernetes Indexed Job's, from 0) when a shard count is given. Each shard writes its own \
`swarm.md` and failure files named by seed, and exits 1 on its own failures; the shards' report directories combine \
by copying";

impl SeedRuns {
    /// The shard to run, from the flags or the environment (`None`: every seed).
    pub fn shard(&self) -> Result<Option<Shard>, Failure> {
        Shard::resolve(self.shard, self.shard_count, |var| std::env::var(var).ok())
            .map_err(|e| Failure::BadInput(e.to_string()))
    }

    /// The first of `count` seeds (`--first-seed`, else `MCPSTORM_SEED`, else the scenario's own seed); the seeds run
    /// first, first + 1, ..., so they must not pass the largest u64 (clap keeps `count` at 1 or more).
    pub fn first(&self, scenario_seed: u64, count: u64) -> Result<u64, Failure> {
        let first = match self.first_seed {
            Some(seed) => seed,
            None => env_seed()?.unwrap_or(scenario_seed),
        };
        match first.checked_add(count.saturating_sub(1)) {
            Some(_) => Ok(first),
            None => Err(Failure::BadInput(format!(
                "--seeds {count} from seed {first} run past the largest seed, {}: give a smaller --first-seed",
                u64::MAX
            ))),
        }
    }

    /// Runs at once: `--jobs`, or the number of cores.
    pub fn jobs(&self) -> usize {
        self.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    }
}

/// The variable that sets the seed of `sim`, `compare` and `swarm` when no `--seed` or `--first-seed` does. Every
/// reproduce line these commands print names its seed as a flag, so it replays with the variable set or not.
pub const SEED_ENV: &str = "MCPSTORM_SEED";

/// `MCPSTORM_SEED`'s seed, `None` when it is unset or empty; bad input when it is not a seed.
pub fn env_seed() -> Result<Option<u64>, Failure> {
    parse_env_seed(std::env::var_os(SEED_ENV).map(|v| v.to_string_lossy().into_owned()))
}

fn parse_env_seed(value: Option<String>) -> Result<Option<u64>, Failure> {
    let Some(text) = value.filter(|v| !v.trim().is_empty()) else { return Ok(None) };
    text.trim().parse::<u64>().map(Some).map_err(|_| {
        Failure::BadInput(format!("{SEED_ENV}={text:?} is not a seed: give an integer from 0 to {}", u64::MAX))
    })
}

/// `cmd` with each `--set` appended, quoted, as a reproduce line shows them.
pub fn with_sets(mut cmd: String, sets: &[String]) -> String {
    for s in sets {
        cmd.push_str(&format!(" --set '{s}'"));
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_seed_is_an_integer_or_nothing() {
        assert!(matches!(parse_env_seed(None), Ok(None)));
        assert!(matches!(parse_env_seed(Some("  ".into())), Ok(None)));
        assert!(matches!(parse_env_seed(Some(" 42 ".into())), Ok(Some(42))));
        assert!(matches!(parse_env_seed(Some(u64::MAX.to_string())), Ok(Some(u64::MAX))));
        for bad in ["-1", "seven", "1e3", "18446744073709551616"] {
            match parse_env_seed(Some(bad.into())) {
                Err(Failure::BadInput(m)) => assert!(m.starts_with("MCPSTORM_SEED=") && m.contains(bad), "{m}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }
}
