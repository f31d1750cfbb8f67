//! Breaker sync through the simulated Redis (`[gateway.sync]`): a gateway cut off from one replica does not eject it
//! from the others (`sync_poison`), and Redis crashing in the middle of an incident fails no call (`sync_outage`).

use std::path::{Path, PathBuf};

use crate::common::{scratch_in, sim, summary, text};

fn scratch(name: &str) -> PathBuf {
    scratch_in("sync", name)
}

/// The events of `events.csv` that name breaker transitions of `replica` on load host `host`.
fn breaker_events(dir: &Path, replica: &str, host: &str) -> Vec<String> {
    let events = std::fs::read_to_string(dir.join("events.csv")).expect("events.csv");
    let prefix = format!(",breaker,{replica},");
    let suffix = format!(" on {host}");
    events.lines().filter(|l| l.contains(&prefix) && l.ends_with(&suffix)).map(str::to_owned).collect()
}

/// `scenario` without `[gateway.sync]` and without the faults on Redis, in the scratch folder.
fn unsynced(scenario: &Path, out: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = std::fs::read_to_string(root.join(scenario)).expect("scenario");
    let text = text.replace("[gateway.sync]\nredis = \"redis://redis:6379\"\n", "");
    let text =
        text.replace("[[faults]]\nkind = \"crash\"\ntarget = \"redis\"\nstart = \"6s\"\nduration = \"3s\"\n", "");
    assert!(!text.contains("redis"), "every mention of Redis is gone:\n{text}");
    std::fs::create_dir_all(out).expect("scratch");
    let path = out.join("unsynced.toml");
    std::fs::write(&path, text).expect("write");
    path
}

#[test]
fn a_gateway_cut_off_from_a_replica_does_not_eject_it_from_the_others() {
    let out = scratch("poison");
    let o = sim(Path::new("scenarios/sync_poison.toml"), &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let events = std::fs::read_to_string(out.join("events.csv")).expect("events.csv");
    assert!(events.contains(",partitioned,api-0,from load-1\n"), "one link cut: {events}");
    // Cut off, load-1's connects to api-0 are refused (turmoil refuses a connect across a partition): it takes api-0
    // out of its own rotation at once (an ejection, which stays local), or its breaker opens on the failures (and the
    // others hear of it through Redis, and probe before they trust it).
    let cut = breaker_events(&out, "api-0", "load-1");
    let opened = cut.iter().any(|l| l.contains("-> open (failure_rate)"));
    let ejected = events.contains(",ejected,api-0,on load-1\n");
    assert!(opened || ejected, "load-1 takes api-0 out on its own evidence: {cut:?}\n{events}");
    for host in ["load-0", "load-2"] {
        let heard = breaker_events(&out, "api-0", host);
        assert!(!opened || heard.iter().any(|l| l.contains("closed -> half_open (remote)")), "{host}: {heard:?}");
        assert!(!heard.iter().any(|l| l.contains("-> open")), "{host} never opens on api-0: {heard:?}");
        assert!(!events.contains(&format!(",ejected,api-0,on {host}\n")), "{host} never ejects api-0");
    }
}

#[test]
fn redis_crashing_in_the_middle_of_an_incident_fails_no_call() {
    let scenario = Path::new("scenarios/sync_outage.toml");
    let out = scratch("outage");
    let o = sim(scenario, &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let events = std::fs::read_to_string(out.join("events.csv")).expect("events.csv");
    assert!(events.contains(",host_crashed,redis,"), "{events}");
    let alone = scratch("outage-unsynced");
    let o = sim(&unsynced(scenario, &alone), &alone.join("run"), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (synced, unsynced) = (summary(&out)["totals"].clone(), summary(&alone.join("run"))["totals"].clone());
    assert_eq!(synced["offered"], unsynced["offered"]);
    assert_eq!(synced["errors"], unsynced["errors"], "no extra failed call: {synced} against {unsynced}");
}
