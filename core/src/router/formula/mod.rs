//! Routing formulas: a snapshot of the candidates' statistics in, weights or a choice out.
//!
//! A [`Formula`] sees only eligible candidates (the router has already dropped unsupported, unhealthy and — when
//! others remain — already tried replicas), so no formula can pick an excluded one. Weighted formulas fill a weight
//! per candidate and the router draws; choosing formulas return an index. Randomness comes only from the
//! [`SeededRng`] passed in.
//!
//! | name                | kind     | arithmetic                                                                          |
//! |---------------------|----------|-------------------------------------------------------------------------------------|
//! | `health_weighted`   | weights  | `0.4·(1−error_rate) + 0.3·(1−latency_ratio) + 0.2·capacity + 0.1·uptime`, inputs clamped to [0, 1] |
//! | `round_robin`       | choice   | the next candidate in order, one cursor per tool                                    |
//! | `random`            | choice   | uniform                                                                             |
//! | `least_outstanding` | choice   | fewest in-flight calls; ties broken uniformly at random                             |
//! | `p2c_peak_ewma`     | choice   | two distinct uniform picks; the lower `peak_ewma_ms · (in_flight + 1)` wins, ties the first |
//! | `best_score`        | choice   | the highest `health_weighted` score; ties the first                                 |
//! | `expr:<expression>` | weights  | the expression over the [statistics](STATISTICS), see [`Expression`]                |
//!
//! Why these: `health_weighted` is the linear health score, kept exact so the comparison with it is honest. Round robin
//! and random are the baselines every balancer paper starts from. Least outstanding reacts to load but not to
//! latency. `p2c_peak_ewma` is what Finagle, Linkerd and tower ship: two random choices avoid the herd that "best of
//! all" causes (every router sends to the same best server until its statistics catch up), and Peak-EWMA × pending
//! reacts to a latency spike on the first slow response. `best_score` is that herding strategy, kept to show it.
//! The drift penalty halves the weights of weighted formulas; choice formulas see it as the `penalty` statistic.

mod builtin;
mod expr;

use std::fmt;
use std::str::FromStr;

pub use builtin::{BestScore, HealthWeighted, LeastOutstanding, P2cPeakEwma, RandomChoice, RoundRobin};
pub use expr::{Custom, Expression, FormulaError, STATISTICS};

use super::candidate_stats::CandidateStats;
use crate::rt::SeededRng;

/// The eligible candidates of one decision.
#[derive(Debug, Clone, Copy)]
pub struct Candidates<'a> {
    /// Identifies the routed tool, stable for the router's life: per-tool state (round robin's cursor) indexes by
    /// it.
    pub key: usize,
    /// One entry per candidate, never empty.
    pub stats: &'a [CandidateStats],
}

/// What a formula decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// The weights slice is filled: the router draws by weight (after the drift penalty).
    Weighted,
    /// This candidate (an index into [`Candidates::stats`]).
    Pick(usize),
}

/// A routing formula.
pub trait Formula: fmt::Debug + Send {
    fn name(&self) -> &str;

    /// Decides among `candidates`. `weights` has one zeroed slot per candidate, for [`Choice::Weighted`].
    fn decide(&mut self, candidates: &Candidates<'_>, rng: &SeededRng, weights: &mut [f64]) -> Choice;
}

/// A formula by name, as scenario files and the command line spell it: a built-in name, or `expr:<expression>`.
#[derive(Debug, Clone, PartialEq)]
pub enum FormulaSpec {
    HealthWeighted,
    RoundRobin,
    Random,
    LeastOutstanding,
    P2cPeakEwma,
    BestScore,
    /// A custom expression, with the name it is reported under.
    Custom {
        name: String,
        expression: Box<Expression>,
    },
}

impl FormulaSpec {
    /// The built-in names, in the order the table above lists them.
    pub const BUILT_IN: [&'static str; 6] =
        ["health_weighted", "round_robin", "random", "least_outstanding", "p2c_peak_ewma", "best_score"];

    /// One line on each built-in formula, in [`BUILT_IN`](Self::BUILT_IN)'s order: what `mcpstorm formulas` prints.
    pub const SUMMARIES: [&'static str; 6] = [
        "weights by the linear health score 0.4(1-error_rate) + 0.3(1-latency_ratio) + 0.2 capacity + 0.1 uptime",
        "the next replica in turn, one cursor per tool",
        "uniformly at random",
        "the replica with the fewest calls in flight (ties at random)",
        "two random replicas, the lower Peak-EWMA latency x (in flight + 1) wins: avoids both slow replicas and herds",
        "always the highest health score: herds onto one replica until its statistics catch up (kept to show it)",
    ];

    /// A custom formula reported as `name`.
    pub fn custom(name: impl Into<String>, expression: &str) -> Result<Self, FormulaError> {
        Ok(FormulaSpec::Custom { name: name.into(), expression: Box::new(Expression::parse(expression)?) })
    }

    pub fn name(&self) -> &str {
        match self {
            FormulaSpec::HealthWeighted => Self::BUILT_IN[0],
            FormulaSpec::RoundRobin => Self::BUILT_IN[1],
            FormulaSpec::Random => Self::BUILT_IN[2],
            FormulaSpec::LeastOutstanding => Self::BUILT_IN[3],
            FormulaSpec::P2cPeakEwma => Self::BUILT_IN[4],
            FormulaSpec::BestScore => Self::BUILT_IN[5],
            FormulaSpec::Custom { name, .. } => name,
        }
    }

    /// A fresh instance (each router gets its own: formulas keep per-router state).
    pub fn build(&self) -> Box<dyn Formula> {
        match self {
            FormulaSpec::HealthWeighted => Box::new(HealthWeighted),
            FormulaSpec::RoundRobin => Box::new(RoundRobin::default()),
            FormulaSpec::Random => Box::new(RandomChoice),
            FormulaSpec::LeastOutstanding => Box::new(LeastOutstanding),
            FormulaSpec::P2cPeakEwma => Box::new(P2cPeakEwma),
            FormulaSpec::BestScore => Box::new(BestScore),
            FormulaSpec::Custom { name, expression } => Box::new(Custom::new(name.clone(), (**expression).clone())),
        }
    }
}

impl FromStr for FormulaSpec {
    type Err = FormulaError;

    /// A built-in name, or `expr:<expression>` (reported under the whole string).
    fn from_str(s: &str) -> Result<Self, FormulaError> {
        let s = s.trim();
        if let Some(text) = s.strip_prefix("expr:") {
            return FormulaSpec::custom(s, text);
        }
        let spec = match s {
            // `seed_weighted` was this formula's name before issue 25 ("seed" now only ever means an RNG seed):
            // files that spell it so still load, and report the canonical name.
            "health_weighted" | "seed_weighted" => FormulaSpec::HealthWeighted,
            "round_robin" => FormulaSpec::RoundRobin,
            "random" => FormulaSpec::Random,
            "least_outstanding" => FormulaSpec::LeastOutstanding,
            "p2c_peak_ewma" => FormulaSpec::P2cPeakEwma,
            "best_score" => FormulaSpec::BestScore,
            other => return Err(FormulaError::UnknownFormula(other.to_owned())),
        };
        Ok(spec)
    }
}

/// Scenario files write a formula as a string (`"p2c_peak_ewma"`, `"expr:..."`) or, to name a custom one, as a
/// table `{ name = "mine", expr = "0.5*(1-error_rate) + 0.5*capacity" }`.
impl<'de> serde::Deserialize<'de> for FormulaSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged, deny_unknown_fields)]
        enum Written {
            Name(String),
            Table { name: String, expr: String },
        }
        let spec = match Written::deserialize(deserializer)? {
            Written::Name(text) => text.parse(),
            Written::Table { name, expr } => FormulaSpec::custom(name, &expr),
        };
        spec.map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for FormulaSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_name_round_trips() {
        for name in FormulaSpec::BUILT_IN {
            let spec: FormulaSpec = name.parse().unwrap();
            assert_eq!(spec.name(), name);
            assert_eq!(spec.build().name(), name);
        }
    }

    #[test]
    fn the_old_name_seed_weighted_is_an_alias_reported_under_the_canonical_name() {
        let spec: FormulaSpec = "seed_weighted".parse().unwrap();
        assert_eq!(spec, FormulaSpec::HealthWeighted);
        assert_eq!((spec.name(), spec.build().name()), ("health_weighted", "health_weighted"));
        assert!(!FormulaSpec::BUILT_IN.contains(&"seed_weighted"), "the alias is accepted, never listed");
        let err = "fastest".parse::<FormulaSpec>().unwrap_err().to_string();
        assert!(err.contains("health_weighted") && !err.contains("seed_weighted"), "{err}");
    }

    #[test]
    fn expr_prefix_makes_a_custom_formula_and_unknown_names_say_what_exists() {
        let spec: FormulaSpec = "expr: 0.5*(1-error_rate) + 0.5*capacity".parse().unwrap();
        assert!(matches!(spec, FormulaSpec::Custom { .. }));
        let err = "fastest".parse::<FormulaSpec>().unwrap_err().to_string();
        assert!(err.contains("fastest") && err.contains("p2c_peak_ewma") && err.contains("expr:"), "{err}");
    }

    #[test]
    fn deserializes_from_a_name_or_a_table() {
        let spec: FormulaSpec = serde_json::from_str(r#""round_robin""#).unwrap();
        assert_eq!(spec, FormulaSpec::RoundRobin);
        let spec: FormulaSpec = serde_json::from_str(r#"{"name": "mine", "expr": "score^4"}"#).unwrap();
        assert_eq!(spec.name(), "mine");
        let err = serde_json::from_str::<FormulaSpec>(r#"{"name": "mine", "expr": "scor"}"#).unwrap_err();
        assert!(err.to_string().contains("unknown variable `scor` at column 1"), "{err}");
    }
}
