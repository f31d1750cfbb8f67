//! `MCPSTORM_SEED` sets the seed of `sim`, `compare` and `swarm` when no flag does, and every reproduce line they
//! print names the seed as a flag: run with the variable, replay without it (or with another value), same bytes.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{command, text};

fn scratch(name: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("seed-env").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir.to_string_lossy().into_owned()
}

/// `mcpstorm args...` from the repository root with `MCPSTORM_SEED` set to `seed` (or removed).
fn with_seed(seed: Option<&str>, args: &[&str]) -> Output {
    let mut cmd = command();
    cmd.args(args).env_remove("MCPSTORM_SEED");
    if let Some(seed) = seed {
        cmd.env("MCPSTORM_SEED", seed);
    }
    cmd.output().expect("run mcpstorm")
}

/// The line after `reproduce: ` on stdout, split into its arguments (without the leading `mcpstorm`).
fn reproduce_args(o: &Output) -> Vec<String> {
    let stdout = String::from_utf8_lossy(&o.stdout);
    let line = stdout.lines().find_map(|l| l.trim().strip_prefix("reproduce: ")).expect("a reproduce line");
    let words = shlex::split(line).expect("a shell line");
    assert_eq!(words[0], "mcpstorm", "{line}");
    words[1..].to_vec()
}

fn read(dir: &str, file: &str) -> Vec<u8> {
    std::fs::read(Path::new(dir).join(file)).unwrap_or_else(|e| panic!("{dir}/{file}: {e}"))
}

#[test]
fn sim_takes_the_seed_from_the_environment_and_its_reproduce_line_replays_without_it() {
    let first = scratch("sim-env");
    let o = with_seed(Some("7"), &["sim", "scenarios/smoke.toml", "--out", &first]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let mut replay = reproduce_args(&o);
    assert!(replay.windows(2).any(|w| w == ["--seed", "7"]), "{replay:?}");
    let second = scratch("sim-replayed");
    replay.extend(["--out".to_owned(), second.clone()]);
    // Replayed under another value of the variable: the flag wins.
    let args: Vec<&str> = replay.iter().map(String::as_str).collect();
    let again = with_seed(Some("8"), &args);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert_eq!(read(&first, "summary.json"), read(&second, "summary.json"), "the printed line replays the run");
    let own = scratch("sim-own-seed");
    let unset = with_seed(None, &["sim", "scenarios/smoke.toml", "--out", &own]);
    assert_eq!(unset.status.code(), Some(0), "{}", text(&unset));
    assert_ne!(read(&first, "summary.json"), read(&own, "summary.json"), "seed 7 is not the scenario's seed 1");
    assert!(String::from_utf8_lossy(&unset.stdout).contains("--seed 1"), "{}", text(&unset));
}

#[test]
fn compare_starts_at_the_environments_seed_unless_a_flag_names_one() {
    let out = scratch("compare");
    let compare = ["compare", "scenarios/smoke.toml", "--formulas", "round_robin,random", "--seeds", "1", "--out"];
    let o = with_seed(Some("11"), &[&compare[..], &[&out]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(reproduce_args(&o).windows(2).any(|w| w == ["--first-seed", "11"]), "{}", text(&o));
    // A flag beats the variable.
    let flagged = scratch("compare-flag");
    let o = with_seed(Some("11"), &[&compare[..], &[&flagged, "--first-seed", "3"]].concat());
    assert!(reproduce_args(&o).windows(2).any(|w| w == ["--first-seed", "3"]), "{}", text(&o));
}

#[test]
fn a_bad_seed_in_the_environment_is_bad_input_naming_the_variable() {
    for args in [
        &["sim", "scenarios/smoke.toml", "--out", "target/never"][..],
        &["compare", "scenarios/smoke.toml", "--formulas", "round_robin,random", "--seeds", "1"][..],
        &["swarm", "scenarios/smoke.toml", "--seeds", "1", "--out", "target/never"][..],
    ] {
        let o = with_seed(Some("seven"), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains("MCPSTORM_SEED=\"seven\" is not a seed"), "{args:?}: {}", text(&o));
    }
    // Empty is unset, as shells write `MCPSTORM_SEED= cmd`.
    let out = scratch("empty");
    let o = with_seed(Some(""), &["sim", "scenarios/smoke.toml", "--out", &out]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("--seed 1"), "{}", text(&o));
}
