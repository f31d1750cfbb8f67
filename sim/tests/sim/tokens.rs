//! Token storms through the real `mcpstorm sim` command (scenarios/token_storm.toml at a third of its rate): the
//! default gateway's OAuth clients ask the identity provider once per client and event and fail no call; the naive
//! profile's ask per call, the provider sheds them, and calls fail. A scenario that misuses the tables is refused
//! with the key that is wrong.

use std::path::Path;

use crate::common::{failed, scratch_in, sim, summary, text};

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
