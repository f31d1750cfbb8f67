//! One machine's share of a long study: `--shard K/N` takes every item whose index `i` has `i % N == K - 1`. Any
//! command that splits its runs across machines takes it; the shard can also come from the index a Kubernetes
//! Indexed Job gives each pod.

use std::fmt;
use std::str::FromStr;

/// Shard `index` of `count`, both counted from 1 (`index` in `1..=count`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

/// The variable a Kubernetes Indexed Job sets in each pod: the pod's index, from 0.
pub const INDEX_VAR: &str = "JOB_COMPLETION_INDEX";
/// The shard count, for when it does not come from `--shard-count`.
pub const COUNT_VAR: &str = "MCPSTORM_SHARD_COUNT";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    #[error("shard {0:?}: expected K/N, e.g. 2/4 for the second of four shards")]
    Form(String),
    #[error("shard {0:?}: K and N must be whole numbers")]
    NotNumbers(String),
    #[error("shard {0:?}: N must be at least 1")]
    NoShards(String),
    #[error("shard {0:?}: K counts from 1 to N")]
    OutOfRange(String),
    #[error("{var}={value:?}: {problem}")]
    Env { var: &'static str, value: String, problem: String },
    #[error("{INDEX_VAR} is set but the shard count is not: give --shard-count N or {COUNT_VAR}, or --shard K/N")]
    NoCount,
    #[error("a shard count is given but no shard: give --shard K/N or set {INDEX_VAR}")]
    NoIndex,
}

impl Shard {
    /// The one shard that is the whole.
    pub const WHOLE: Shard = Shard { index: 1, count: 1 };

    pub fn new(index: u32, count: u32) -> Result<Shard, ShardError> {
        let shown = || format!("{index}/{count}");
        if count == 0 {
            return Err(ShardError::NoShards(shown()));
        }
        if index == 0 || index > count {
            return Err(ShardError::OutOfRange(shown()));
        }
        Ok(Shard { index, count })
    }

    /// Whether item `i` (counted from 0) is this shard's.
    pub fn takes(&self, i: usize) -> bool {
        i % self.count as usize == (self.index - 1) as usize
    }

    /// The shard to run: `explicit` (`--shard`) wins; else, when a count is known (`--shard-count`, else
    /// [`COUNT_VAR`]), [`INDEX_VAR`] + 1 of it; else none. `env` reads a variable (the process environment, or a
    /// test's).
    pub fn resolve(
        explicit: Option<Shard>,
        count: Option<u32>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Shard>, ShardError> {
        if explicit.is_some() {
            return Ok(explicit);
        }
        let count = match count {
            Some(n) => Some(n),
            None => env(COUNT_VAR).map(|v| parse_env(COUNT_VAR, &v)).transpose()?,
        };
        match (count, env(INDEX_VAR)) {
            (None, None) => Ok(None),
            (None, Some(_)) => Err(ShardError::NoCount),
            (Some(_), None) => Err(ShardError::NoIndex),
            (Some(count), Some(v)) => {
                let index = parse_env(INDEX_VAR, &v)?;
                let problem =
                    |e: ShardError| ShardError::Env { var: INDEX_VAR, value: v.clone(), problem: e.to_string() };
                Shard::new(index.checked_add(1).ok_or_else(|| problem(ShardError::OutOfRange(v.clone())))?, count)
                    .map(Some)
                    .map_err(problem)
            }
        }
    }
}

fn parse_env(var: &'static str, value: &str) -> Result<u32, ShardError> {
    value.trim().parse().map_err(|_| ShardError::Env {
        var,
        value: value.to_owned(),
        problem: "expected a whole number".to_owned(),
    })
}

impl FromStr for Shard {
    type Err = ShardError;

    fn from_str(s: &str) -> Result<Shard, ShardError> {
        let (k, n) = s.split_once('/').ok_or_else(|| ShardError::Form(s.to_owned()))?;
        let number = |x: &str| x.trim().parse::<u32>().map_err(|_| ShardError::NotNumbers(s.to_owned()));
        let (index, count) = (number(k)?, number(n)?);
        Shard::new(index, count).map_err(|e| match e {
            ShardError::NoShards(_) => ShardError::NoShards(s.to_owned()),
            _ => ShardError::OutOfRange(s.to_owned()),
        })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_refuses_clearly() {
        assert_eq!("2/4".parse(), Ok(Shard { index: 2, count: 4 }));
        assert_eq!("0/4".parse::<Shard>(), Err(ShardError::OutOfRange("0/4".into())));
        assert_eq!("5/4".parse::<Shard>(), Err(ShardError::OutOfRange("5/4".into())));
        assert_eq!("a/b".parse::<Shard>(), Err(ShardError::NotNumbers("a/b".into())));
        assert_eq!("4".parse::<Shard>(), Err(ShardError::Form("4".into())));
        assert_eq!("1/0".parse::<Shard>(), Err(ShardError::NoShards("1/0".into())));
        assert!("5/4".parse::<Shard>().unwrap_err().to_string().contains("from 1 to N"));
        assert_eq!(Shard { index: 3, count: 7 }.to_string(), "3/7");
    }

    #[test]
    fn shards_split_indices_evenly_and_completely() {
        let shards: Vec<Shard> = (1..=3).map(|k| Shard::new(k, 3).unwrap()).collect();
        for i in 0..10 {
            assert_eq!(shards.iter().filter(|s| s.takes(i)).count(), 1, "item {i}");
        }
        assert!(shards[1].takes(1) && shards[1].takes(4) && !shards[1].takes(2));
    }

    #[test]
    fn the_environment_gives_the_shard_unless_told() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        let pod = env(&[(INDEX_VAR, "2"), (COUNT_VAR, "4")]);
        assert_eq!(Shard::resolve(None, None, pod), Ok(Some(Shard { index: 3, count: 4 })));
        assert_eq!(Shard::resolve(None, Some(5), pod), Ok(Some(Shard { index: 3, count: 5 })));
        assert_eq!(Shard::resolve(Some(Shard::WHOLE), None, pod), Ok(Some(Shard::WHOLE)));
        assert_eq!(Shard::resolve(None, None, env(&[])), Ok(None));
        assert_eq!(Shard::resolve(None, None, env(&[(INDEX_VAR, "0")])), Err(ShardError::NoCount));
        assert_eq!(Shard::resolve(None, Some(2), env(&[])), Err(ShardError::NoIndex));
        let past = Shard::resolve(None, Some(4), env(&[(INDEX_VAR, "4")])).unwrap_err().to_string();
        assert!(past.contains("JOB_COMPLETION_INDEX=\"4\""), "{past}");
        assert!(Shard::resolve(None, None, env(&[(INDEX_VAR, "1"), (COUNT_VAR, "x")])).is_err());
    }
}
