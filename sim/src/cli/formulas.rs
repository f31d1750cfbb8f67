//! `mcpstorm formulas`: the routing formulas a scenario's `[gateway] formula` (or `compare --formulas`) may name,
//! one line each, and the statistics a custom `expr:` formula may use.

use clap::Args;
use mcpstorm_core::router::{FormulaSpec, STATISTICS};

use super::Failure;
use super::out::outln;

#[derive(Debug, Args)]
#[command(after_help = "Exit codes: 0 always.")]
pub struct FormulasArgs {}

pub fn run(_: FormulasArgs) -> Result<(), Failure> {
    let width = FormulaSpec::BUILT_IN.iter().map(|n| n.len()).max().unwrap_or(0).max("expr:<expression>".len());
    for (name, summary) in FormulaSpec::BUILT_IN.iter().zip(FormulaSpec::SUMMARIES) {
        let default = if *name == crate::scenario::DEFAULT_FORMULA { " (the default)" } else { "" };
        outln!("{name:<width$}  {summary}{default}")?;
    }
    outln!("{:<width$}  weights by your own expression over these statistics of each replica:", "expr:<expression>")?;
    let stat_width = STATISTICS.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    for (stat, meaning) in STATISTICS {
        outln!("{:<width$}    {stat:<stat_width$}  {meaning}", "")?;
    }
    outln!(
        "\ncompare them on a scenario: mcpstorm compare scenarios/latency_spike.toml --formulas round_robin,p2c_peak_ewma"
    )
}

#[cfg(test)]
mod tests {
    use mcpstorm_core::router::FormulaSpec;

    #[test]
    fn every_listed_name_parses_to_itself() {
        for name in FormulaSpec::BUILT_IN {
            assert_eq!(name.parse::<FormulaSpec>().expect(name).name(), name);
        }
        assert!(FormulaSpec::BUILT_IN.contains(&crate::scenario::DEFAULT_FORMULA));
    }
}
