//! `mcpstorm scenarios [NAME]`: the scenarios that ship with mcpstorm, listed with their descriptions, or one of them
//! printed whole. They are compiled into the binary, so an installed `mcpstorm` (`cargo install --path sim`) has them
//! without a checkout: `mcpstorm scenarios retry_storm > retry_storm.toml && mcpstorm sim retry_storm.toml`.

use clap::Args;

use super::Failure;
use super::out::outln;

#[derive(Debug, Args)]
#[command(after_help = "Exit codes: 0 on success; 2 for a name that is not a shipped scenario.")]
pub struct ScenariosArgs {
    /// Print this scenario's file (TOML) instead of the list.
    pub name: Option<String>,
}

/// Every file of `scenarios/`, by name (a test keeps the list and the folder equal).
pub const SHIPPED: &[(&str, &str)] = &[
    ("breaker_sync", include_str!("../../../scenarios/breaker_sync.toml")),
    ("bulkhead", include_str!("../../../scenarios/bulkhead.toml")),
    ("capability_routing", include_str!("../../../scenarios/capability_routing.toml")),
    ("cascading_failure", include_str!("../../../scenarios/cascading_failure.toml")),
    ("clock_skew", include_str!("../../../scenarios/clock_skew.toml")),
    ("concurrency_knee", include_str!("../../../scenarios/concurrency_knee.toml")),
    ("gateway_nodes", include_str!("../../../scenarios/gateway_nodes.toml")),
    ("http_pool", include_str!("../../../scenarios/http_pool.toml")),
    ("latency_spike", include_str!("../../../scenarios/latency_spike.toml")),
    ("replica_crash", include_str!("../../../scenarios/replica_crash.toml")),
    ("replica_killed", include_str!("../../../scenarios/replica_killed.toml")),
    ("retry_storm", include_str!("../../../scenarios/retry_storm.toml")),
    ("schema_drift", include_str!("../../../scenarios/schema_drift.toml")),
    ("smoke", include_str!("../../../scenarios/smoke.toml")),
    ("sync_outage", include_str!("../../../scenarios/sync_outage.toml")),
    ("sync_poison", include_str!("../../../scenarios/sync_poison.toml")),
    ("token_storm", include_str!("../../../scenarios/token_storm.toml")),
];

pub fn run(args: ScenariosArgs) -> Result<(), Failure> {
    if let Some(name) = &args.name {
        let wanted = name.trim_end_matches(".toml").rsplit('/').next().unwrap_or(name);
        return match SHIPPED.iter().find(|(n, _)| *n == wanted) {
            Some((_, text)) => outln!("{}", text.trim_end()),
            None => Err(Failure::BadInput(format!(
                "{name:?} is not a shipped scenario{}; `mcpstorm scenarios` lists them",
                nearest(wanted).map_or(String::new(), |n| format!(" (did you mean `{n}`?)"))
            ))),
        };
    }
    let width = SHIPPED.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    for (name, text) in SHIPPED {
        outln!("{name:<width$}  {}", description(text))?;
    }
    outln!(
        "\nrun one from a checkout: mcpstorm sim scenarios/NAME.toml\n\
         or anywhere: mcpstorm scenarios NAME > NAME.toml && mcpstorm sim NAME.toml"
    )
}

/// The shipped name nearest to `wanted` when it looks like a typo of it (a third of its letters changed at most).
fn nearest(wanted: &str) -> Option<&'static str> {
    let limit = (wanted.chars().count() / 3).max(1);
    let scored = SHIPPED.iter().map(|(n, _)| (strsim::damerau_levenshtein(wanted, n), *n));
    scored.filter(|(d, _)| *d <= limit).min_by_key(|(d, _)| *d).map(|(_, n)| n)
}

/// A scenario's `description` key (every shipped file has one: a test checks it).
fn description(text: &str) -> String {
    let table: toml::Table = text.parse().unwrap_or_default();
    table.get("description").and_then(|d| d.as_str()).unwrap_or("").to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_the_scenarios_folder_and_every_entry_has_a_description() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .expect("scenarios/")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter_map(|f| f.strip_suffix(".toml").map(str::to_owned))
            .collect();
        on_disk.sort();
        let listed: Vec<&str> = SHIPPED.iter().map(|(n, _)| *n).collect();
        assert_eq!(on_disk, listed, "add the new scenario to SHIPPED in sim/src/cli/scenarios.rs");
        for (name, text) in SHIPPED {
            assert!(!description(text).is_empty(), "{name} has no description");
            let file = std::fs::read_to_string(dir.join(format!("{name}.toml"))).expect("read");
            assert_eq!(&file, text);
        }
    }

    #[test]
    fn a_typo_gets_a_suggestion() {
        assert_eq!(nearest("retry_strom"), Some("retry_storm"));
        assert_eq!(nearest("nothing_like_it"), None);
    }
}
