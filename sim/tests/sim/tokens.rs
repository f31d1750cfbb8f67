//! Token storms through the real `mcpstorm sim` command (scenarios/token_storm.toml at a third of its rate): the
//! default gateway's OAuth clients ask the identity provider once per client and event and fail no call; the naive
//! profile's ask per call, the provider sheds them, and calls fail. The live twin runs the same storm on loopback
//! (the identity provider double and the fakes in this process, the gateways' real OAuth clients).

use std::path::Path;

use crate::common::{failed, run_scenario, scratch_in, sim, summary, text};

const SHORT: &[&str] = &["load.rate=100.0", "report={}"];

fn storm(name: &str, profile: &str) -> (Option<i32>, serde_json::Value, String) {
    let out = scratch_in("tokens", name);
    let profile = format!("gateway.profile={profile}");
    let sets: Vec<&str> = SHORT.iter().copied().chain([profile.as_str()]).collect();
    let o = sim(Path::new("scenarios/token_storm.toml"), &out, &sets);
    (o.status.code(), summary(&out), text(&o))
}

#[test]
fn a_mass_token_expiry_costs_one_request_per_client_on_default_and_a_storm_on_naive() {
    let (code, s, out) = storm("default", "default");
    assert_eq!(code, Some(0), "{out}");
    let t = &s["totals"];
    // Two load hosts' gateways, two servers each: the first token, the expiry, the rotation.
    assert_eq!(t["tokens"]["requests"], 12, "{t}");
    assert_eq!(t["tokens"]["shed"], 0, "{t}");
    assert_eq!(t["errors"], 0, "{t}");
    assert!(out.contains("tokens     requests 12"), "{out}");

    let (code, s, out) = storm("naive", "naive");
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(failed(&s), ["errors", "token_requests"], "{out}");
    let t = &s["totals"];
    assert!(t["tokens"]["requests"].as_u64().unwrap_or(0) > 100, "{t}");
    assert!(t["tokens"]["shed"].as_u64().unwrap_or(0) > 0, "{t}");
    assert!(t["errors_by_class"]["auth"].as_u64().unwrap_or(0) > 0, "{t}");
}

/// token_storm's timeline compressed into 22 s of real time, the default gateway only.
const SHORT_LIVE: &[&str] = &[
    "duration=\"22s\"",
    "load.rate=100.0",
    "report={}",
    "faults[0].start=\"4s\"",
    "faults[0].duration=\"10s\"",
    "faults[1].start=\"7s\"",
    "faults[2].start=\"16s\"",
];

#[test]
fn the_live_twin_rides_out_the_same_storm_with_one_request_per_client_and_event() {
    let out = scratch_in("tokens", "live");
    let o = run_scenario("live", Path::new("scenarios/token_storm.toml"), &out, SHORT_LIVE);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = &summary(&out)["totals"];
    assert_eq!(t["tokens"]["requests"], 12, "{t}");
    assert_eq!(t["errors"], 0, "{t}");
    // Gateway nodes are processes whose files carry no OAuth client: refused before anything runs.
    let refused = scratch_in("tokens", "live-nodes");
    let o = run_scenario("live", Path::new("scenarios/token_storm.toml"), &refused, &["nodes.count=1"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("live runs do not support identity_provider with gateway nodes"), "{}", text(&o));
    assert!(!refused.join("summary.json").exists(), "nothing runs");
}
