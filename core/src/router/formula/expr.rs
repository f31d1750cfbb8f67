//! Custom formulas: an arithmetic expression over the named statistics, written in a scenario file or on the
//! command line, so an engineer can try a formula without touching Rust.
//!
//! **Language.** Numbers, the [`STATISTICS`] names, `+ - * / ^`, unary `-`/`+`, parentheses, the constants `PI`,
//! `E`, `TAU`, and the one-argument functions in [`FUNCTIONS`] (plus `log`, the natural log). Arithmetic is
//! `f64`. The expression is one candidate's weight; a NaN, infinite or negative result counts as 0.
//!
//! **Crate: `exmex`.** It parses once into a flat operator list (no tree walk, no per-node `Vec`) and evaluates
//! from a slice of values by position, with its working stack inline for up to 32 nodes: no allocation per
//! evaluation, tens of nanoseconds each. Evaluation is plain `f64` arithmetic in a fixed order, so it is
//! deterministic. Its dependencies (`regex`, `smallvec`) were already in our tree. `evalexpr`, the better known
//! crate, allocates a `Vec` per node per evaluation, looks variables up by string, and divides integers as
//! integers (`1/2 == 0` is a trap in a weight formula).
//!
//! **Errors.** exmex's own messages carry no position, so a small grammar check runs first and names the column
//! of a syntax error, an unknown variable (with the list of known ones) or an unknown function; exmex's message is
//! the fallback for what that check lets through.

use std::fmt;

use exmex::{Express, FlatEx};

use super::{Candidates, Choice, Formula};
use crate::router::candidate_stats::CandidateStats;
use crate::router::score::health_score;
use crate::rt::SeededRng;

/// The statistics an expression may name: (name, meaning). See [`CandidateStats`] for definitions.
pub const STATISTICS: [(&str, &str); 11] = [
    ("error_rate", "errors / calls over the 5 min window, 0..1"),
    ("latency_ratio", "windowed P95 / declared latency_p95_ms"),
    ("capacity", "(max_concurrent - in_flight) / max_concurrent, 0..1"),
    ("uptime", "share of successful health checks over 24 h, 0..1"),
    ("score", "the linear health score (health_weighted's weight), 0..1"),
    ("p95_ms", "windowed P95 latency (ms)"),
    ("declared_p95_ms", "declared latency_p95_ms"),
    ("in_flight", "calls in flight"),
    ("max_concurrent", "declared max_concurrent_requests"),
    ("peak_ewma_ms", "Peak-EWMA latency estimate (ms)"),
    ("penalty", "0.5 under the drift penalty, else 1"),
];

/// The functions exmex evaluates, by name (call syntax `name(x)`).
pub const FUNCTIONS: [&str; 25] = [
    "abs", "signum", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
    "floor", "round", "ceil", "trunc", "fract", "exp", "sqrt", "cbrt", "ln", "log2", "log10",
];
/// `log` is exmex's natural log too; listed apart so [`FUNCTIONS`] stays a fixed array of the distinct ones.
const LOG: &str = "log";
const CONSTANTS: [&str; 4] = ["PI", "E", "e", "TAU"];
/// Statistics reach exmex renamed `x<index>`: exmex reads operator names greedily, so `max_concurrent` would
/// otherwise parse as its `max` operator followed by garbage.
const SLOT_PREFIX: &str = "x";

fn read(s: &CandidateStats, stat: usize) -> f64 {
    match stat {
        0 => s.error_rate,
        1 => s.latency_ratio,
        2 => s.capacity,
        3 => s.uptime,
        4 => health_score(s),
        5 => s.p95_ms,
        6 => s.declared_p95_ms,
        7 => s.in_flight,
        8 => s.max_concurrent,
        9 => s.peak_ewma_ms,
        _ => s.penalty,
    }
}

/// Why a formula could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FormulaError {
    #[error(
        "unknown formula `{0}`: expected one of health_weighted, round_robin, random, least_outstanding, \
         p2c_peak_ewma, best_score, or expr:<expression>"
    )]
    UnknownFormula(String),
    #[error("unknown variable `{name}` at column {column}; the statistics are: {}", known_statistics())]
    UnknownVariable { name: String, column: usize },
    #[error("unknown function `{name}` at column {column}")]
    UnknownFunction { name: String, column: usize },
    #[error("syntax error at column {column}: {message}")]
    Syntax { column: usize, message: String },
    #[error("the expression was rejected: {0}")]
    Rejected(String),
}

fn known_statistics() -> String {
    STATISTICS.map(|(name, _)| name).join(", ")
}

/// A parsed expression: the text, exmex's flat form, and for each of its variables (in exmex's order) which
/// statistic feeds it.
#[derive(Clone)]
pub struct Expression {
    text: String,
    flat: FlatEx<f64>,
    slots: Vec<usize>,
}

impl Expression {
    pub fn parse(text: &str) -> Result<Expression, FormulaError> {
        let renamed = check(text)?;
        let flat = exmex::parse::<f64>(&renamed).map_err(|e| FormulaError::Rejected(clean(&e.to_string())))?;
        let slots = flat
            .var_names()
            .iter()
            .map(|name| {
                name.strip_prefix(SLOT_PREFIX)
                    .and_then(|i| i.parse::<usize>().ok())
                    .filter(|i| *i < STATISTICS.len())
                    .ok_or_else(|| FormulaError::Rejected(format!("unexpected variable `{name}`")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Expression { text: text.to_owned(), flat, slots })
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// The expression's value for one candidate; 0 for anything that is not a finite non-negative number.
    pub fn weight(&self, s: &CandidateStats) -> f64 {
        let mut values = [0.0; STATISTICS.len()];
        for (value, stat) in values.iter_mut().zip(&self.slots) {
            *value = read(s, *stat);
        }
        match self.flat.eval(&values[..self.slots.len()]) {
            Ok(w) if w.is_finite() && w > 0.0 => w,
            _ => 0.0,
        }
    }
}

impl fmt::Debug for Expression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Expression").field(&self.text).finish()
    }
}

impl PartialEq for Expression {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

/// A custom formula: the expression is each candidate's weight.
///
/// Weights are memoised per tool and candidate position on the exact statistics they were computed from: a
/// weight is a pure function of them, so an equal snapshot (eleven float compares) reuses it and only candidates
/// whose statistics moved since the previous decision (a call started or finished, a refresh) are evaluated
/// again. That keeps a decision near the built-ins' cost, where evaluating 100 expressions would take microseconds.
#[derive(Debug, Clone)]
pub struct Custom {
    name: String,
    expression: Expression,
    /// Per tool key: per candidate position, the statistics last evaluated and their weight.
    memo: Vec<Vec<(CandidateStats, f64)>>,
}

impl Custom {
    pub fn new(name: String, expression: Expression) -> Self {
        Custom { name, expression, memo: Vec::new() }
    }
}

impl Formula for Custom {
    fn name(&self) -> &str {
        &self.name
    }

    fn decide(&mut self, candidates: &Candidates<'_>, _rng: &SeededRng, weights: &mut [f64]) -> Choice {
        if self.memo.len() <= candidates.key {
            self.memo.resize_with(candidates.key + 1, Vec::new);
        }
        let memo = &mut self.memo[candidates.key];
        // NaN never equals itself, so a NaN placeholder is always re-evaluated.
        memo.resize(candidates.stats.len().max(memo.len()), (nan_stats(), 0.0));
        for ((w, s), (seen, weight)) in weights.iter_mut().zip(candidates.stats).zip(memo.iter_mut()) {
            if seen != s {
                *seen = *s;
                *weight = self.expression.weight(s);
            }
            *w = *weight;
        }
        Choice::Weighted
    }
}

fn nan_stats() -> CandidateStats {
    CandidateStats {
        error_rate: f64::NAN,
        latency_ratio: f64::NAN,
        capacity: f64::NAN,
        uptime: f64::NAN,
        score: f64::NAN,
        p95_ms: f64::NAN,
        declared_p95_ms: f64::NAN,
        in_flight: f64::NAN,
        max_concurrent: f64::NAN,
        peak_ewma_ms: f64::NAN,
        penalty: f64::NAN,
    }
}

/// exmex formats some errors with `Debug` dumps of its operators; keep the sentence before them.
fn clean(message: &str) -> String {
    message.split(", Operator {").next().unwrap_or(message).trim().to_owned()
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Token<'a> {
    Number,
    Name(&'a str),
    Op(char),
    Open,
    Close,
}

/// Splits `text` into tokens with their 1-based columns and their text.
fn tokens(text: &str) -> Result<Vec<(usize, Token<'_>, &str)>, FormulaError> {
    let mut out = Vec::new();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut i = 0;
    while let Some(&(byte, c)) = chars.get(i) {
        let column = i + 1;
        let run_end = |from: usize, accept: &dyn Fn(char) -> bool| {
            let mut j = from;
            while chars.get(j).is_some_and(|(_, c)| accept(*c)) {
                j += 1;
            }
            j
        };
        let byte_at = |j: usize| chars.get(j).map_or(text.len(), |(b, _)| *b);
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() || c == '.' {
            // No exponent notation: exmex does not read it.
            let j = run_end(i, &|c| c.is_ascii_digit() || c == '.');
            if text[byte..byte_at(j)].matches('.').count() > 1 {
                return Err(FormulaError::Syntax { column, message: "a number with two decimal points".into() });
            }
            out.push((column, Token::Number, &text[byte..byte_at(j)]));
            i = j;
        } else if c.is_alphabetic() || c == '_' {
            let j = run_end(i, &|c| c.is_alphanumeric() || c == '_');
            let name = &text[byte..byte_at(j)];
            out.push((column, Token::Name(name), name));
            i = j;
        } else {
            let token = match c {
                '+' | '-' | '*' | '/' | '^' => Token::Op(c),
                '(' => Token::Open,
                ')' => Token::Close,
                other => {
                    return Err(FormulaError::Syntax { column, message: format!("unexpected character `{other}`") });
                }
            };
            out.push((column, token, &text[byte..byte + c.len_utf8()]));
            i += 1;
        }
    }
    Ok(out)
}

/// The grammar check: `expr := operand (op operand)*`, `operand := [+-]* (number | name | function '(' expr ')' |
/// '(' expr ')')`. Returns the text with each statistic renamed to its slot, for exmex.
fn check(text: &str) -> Result<String, FormulaError> {
    let tokens = tokens(text)?;
    let end = text.chars().count() + 1;
    let syntax = |column, message: &str| FormulaError::Syntax { column, message: message.to_owned() };
    let mut open: Vec<usize> = Vec::new();
    let mut renamed = String::with_capacity(text.len());
    let mut want_operand = true;
    let mut iter = tokens.iter().peekable();
    while let Some(&(column, token, text)) = iter.next() {
        let slot = match token {
            Token::Name(name) => STATISTICS.iter().position(|(s, _)| *s == name),
            _ => None,
        };
        match slot {
            Some(i) => renamed.push_str(&format!(" {SLOT_PREFIX}{i} ")),
            None => {
                renamed.push(' ');
                renamed.push_str(text);
            }
        }
        match (want_operand, token) {
            (true, Token::Number) => want_operand = false,
            (true, Token::Name(name)) => {
                let is_call = matches!(iter.peek(), Some((_, Token::Open, _)));
                let is_function = FUNCTIONS.contains(&name) || name == LOG;
                if is_call {
                    if !is_function {
                        return Err(FormulaError::UnknownFunction { name: name.to_owned(), column });
                    }
                } else if is_function {
                    return Err(syntax(column, &format!("function `{name}` needs its argument in parentheses")));
                } else if !CONSTANTS.contains(&name) && slot.is_none() {
                    return Err(FormulaError::UnknownVariable { name: name.to_owned(), column });
                } else {
                    want_operand = false;
                }
            }
            (true, Token::Open) => open.push(column),
            (true, Token::Op('+' | '-')) => {}
            (true, _) => return Err(syntax(column, "expected a number, a statistic or `(`")),
            (false, Token::Op(_)) => want_operand = true,
            (false, Token::Close) => {
                if open.pop().is_none() {
                    return Err(syntax(column, "`)` without a matching `(`"));
                }
            }
            (false, _) => return Err(syntax(column, "expected an operator or `)`")),
        }
    }
    if want_operand {
        return Err(syntax(end, "the expression ends where a value is expected"));
    }
    match open.pop() {
        Some(column) => Err(syntax(column, "`(` is never closed")),
        None => Ok(renamed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats() -> CandidateStats {
        CandidateStats {
            error_rate: 0.2,
            latency_ratio: 0.5,
            capacity: 0.75,
            uptime: 1.0,
            score: 0.0,
            p95_ms: 50.0,
            declared_p95_ms: 100.0,
            in_flight: 3.0,
            max_concurrent: 12.0,
            peak_ewma_ms: 40.0,
            penalty: 1.0,
        }
    }

    fn weight(text: &str) -> f64 {
        Expression::parse(text).unwrap().weight(&stats())
    }

    #[test]
    fn evaluates_over_the_named_statistics() {
        assert!((weight("0.5*(1-error_rate) + 0.5*capacity") - (0.4 + 0.375)).abs() < 1e-12);
        assert!((weight("1 / (peak_ewma_ms * (in_flight + 1))") - 1.0 / 160.0).abs() < 1e-12);
        assert!((weight("score") - health_score(&stats())).abs() < 1e-12);
        assert!((weight("(1 - error_rate)^2 * sqrt(uptime)") - 0.64).abs() < 1e-12);
        assert_eq!(weight("1/2"), 0.5, "float division, not integer");
    }

    #[test]
    fn every_statistic_parses_alone_and_reads_its_own_field() {
        // exmex reads operator names greedily (`max` in `max_concurrent`): the renaming must shield every name.
        let s = CandidateStats { penalty: 0.5, score: 0.0, ..stats() };
        for (i, (name, _)) in STATISTICS.iter().enumerate() {
            let e = Expression::parse(name).unwrap_or_else(|err| panic!("{name}: {err}"));
            assert_eq!(e.weight(&s), read(&s, i), "{name}");
        }
        assert_eq!(Expression::parse("max_concurrent / 2").unwrap().weight(&s), 6.0);
    }

    #[test]
    fn negative_and_non_finite_results_weigh_zero() {
        assert_eq!(weight("error_rate - 1"), 0.0);
        assert_eq!(weight("1 / (in_flight - 3)"), 0.0, "1/0 is infinite");
        assert_eq!(weight("sqrt(0 - 1)"), 0.0, "NaN");
    }

    #[test]
    fn an_unknown_variable_is_named_with_its_column_and_the_known_ones() {
        let err = Expression::parse("0.5*error_rate + 0.5*capcity").unwrap_err();
        assert_eq!(err, FormulaError::UnknownVariable { name: "capcity".into(), column: 22 });
        let text = err.to_string();
        assert!(text.contains("`capcity` at column 22") && text.contains("latency_ratio"), "{text}");
    }

    #[test]
    fn syntax_errors_name_their_column() {
        let column = |text: &str| match Expression::parse(text).unwrap_err() {
            FormulaError::Syntax { column, .. } => column,
            other => panic!("{text}: {other:?}"),
        };
        assert_eq!(column("1 + * 2"), 5);
        assert_eq!(column("0.5*(1-error_rate"), 5, "the unclosed parenthesis");
        assert_eq!(column("capacity)"), 9);
        assert_eq!(column("2 $ 3"), 3);
        assert_eq!(column("uptime capacity"), 8);
        assert_eq!(column("1 +"), 4, "end of input");
        assert_eq!(column(""), 1);
        assert_eq!(column("1.2.3"), 1);
        assert_eq!(column("sqrt uptime"), 1);
        assert_eq!(column("1e-3"), 2, "no exponent notation");
        assert!(Expression::parse("1 + * 2").unwrap_err().to_string().starts_with("syntax error at column 5"));
    }

    #[test]
    fn memoised_weights_follow_changed_statistics() {
        let mut f = Custom::new("c".into(), Expression::parse("capacity").unwrap());
        let rng = SeededRng::new(1);
        let a = stats();
        let b = CandidateStats { capacity: 0.25, ..a };
        let mut w = [0.0; 2];
        f.decide(&Candidates { key: 0, stats: &[a, b] }, &rng, &mut w);
        assert_eq!(w, [0.75, 0.25]);
        // The same positions with swapped statistics, another tool, and a shorter set: all must be recomputed.
        f.decide(&Candidates { key: 0, stats: &[b, a] }, &rng, &mut w);
        assert_eq!(w, [0.25, 0.75]);
        f.decide(&Candidates { key: 3, stats: &[a, a] }, &rng, &mut w);
        assert_eq!(w, [0.75, 0.75]);
        let mut one = [0.0];
        f.decide(&Candidates { key: 0, stats: &[a] }, &rng, &mut one);
        assert_eq!(one, [0.75]);
    }

    #[test]
    fn an_unknown_function_is_named() {
        assert_eq!(
            Expression::parse("1 + foo(uptime)").unwrap_err(),
            FormulaError::UnknownFunction { name: "foo".into(), column: 5 }
        );
    }
}
