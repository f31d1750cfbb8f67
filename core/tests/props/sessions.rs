//! Sessions under clock skew: the server's expiry runs on its own (offset, drifting, jumping) wall clock.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mcpstorm_core::CallOptions;
use mcpstorm_core::mcp::method;
use mcpstorm_core::session::EraMode;
use mcpstorm_core::session::SessionStats;
use mcpstorm_core::{ClientConfig, McpClient};
use mcpstorm_fake::doubles::session_server::{self as ext_server, ServerConfig, SessionServer, Verdict, WallFn};
use proptest::prelude::*;
use serde_json::json;

use crate::{config, paused_runtime};

/// A server wall clock: a constant offset, a linear drift (parts per million of elapsed time) and step jumps.
#[derive(Debug, Clone)]
struct SkewSchedule {
    offset_ms: i64,
    drift_ppm: i64,
    /// (at, by): from `at` seconds of elapsed time on, the clock reads `by` ms more.
    jumps: Vec<(u64, i64)>,
}

impl SkewSchedule {
    fn wall(&self) -> WallFn {
        let s = self.clone();
        Arc::new(move |elapsed: Duration| {
            let ms = elapsed.as_millis() as i64;
            let jumped: i64 = s.jumps.iter().filter(|(at, _)| elapsed.as_secs() >= *at).map(|(_, by)| by).sum();
            (1_700_000_000_000 + s.offset_ms + ms + ms * s.drift_ppm / 1_000_000 + jumped) as u64
        })
    }

    /// Whether the server's clock never runs far enough ahead of ours to expire a session inside our margin: no
    /// forward jump, and a drift the margin absorbs (`ttl / (1 + drift)` outlasts `ttl - margin`, with 1 s slack).
    fn within_margin(&self, ttl: Duration) -> bool {
        let margin = (ttl / 5).min(Duration::from_secs(30));
        let server_life = ttl.as_secs_f64() / (1.0 + self.drift_ppm as f64 / 1e6);
        self.jumps.iter().all(|(_, by)| *by <= 0) && server_life > (ttl - margin).as_secs_f64() + 1.0
    }
}

fn skew_schedule() -> impl Strategy<Value = SkewSchedule> {
    (-600_000i64..600_000, -50_000i64..50_000, prop::collection::vec((0u64..20_000, -600_000i64..900_000), 0..4))
        .prop_map(|(offset_ms, drift_ppm, jumps)| SkewSchedule { offset_ms, drift_ppm, jumps })
}

/// Sequential calls at the given gaps (per mille of the TTL); what the server saw, and every call's outcome.
async fn calls_under_skew(
    ttl: Duration,
    skew: &SkewSchedule,
    gaps: &[u32],
) -> (Vec<ext_server::Seen>, Vec<bool>, SessionStats) {
    let server = SessionServer::new(ServerConfig { ttl: Some(ttl), wall: skew.wall(), ..ServerConfig::default() });
    let config = ClientConfig { era_mode: EraMode::Legacy, lifecycle_retries: 0, ..ClientConfig::default() };
    let client = McpClient::new("srv", Arc::new(server.clone()), config, mcpstorm_core::SeededRng::new(0));
    let mut ok = Vec::new();
    for gap in gaps {
        tokio::time::sleep(ttl.mul_f64(f64::from(*gap) / 1000.0)).await;
        ok.push(client.call_tool("echo", json!({}), CallOptions::default()).await.is_ok());
        // Let a renewal the call started finish, as it would during any real gap between calls.
        tokio::task::yield_now().await;
    }
    (server.log(), ok, client.session_stats())
}

proptest! {
    #![proptest_config(config(64))]

    /// Whatever the server's clock does, on the default profile: every call succeeds; a session the server has
    /// expired receives at most one call (the one that discovers it), which is resent at once on a new session that
    /// succeeds; and when the skew stays inside the renewal margin, not even that one happens.
    #[test]
    fn no_call_goes_out_on_a_session_the_server_considers_expired(
        ttl_s in prop::sample::select(vec![20u64, 60, 100, 600, 3600]),
        skew in skew_schedule(),
        gaps in prop::collection::vec(0u32..2000, 1..30),
    ) {
        let ttl = Duration::from_secs(ttl_s);
        let (log, ok, stats) = paused_runtime().block_on(calls_under_skew(ttl, &skew, &gaps));
        prop_assert!(ok.iter().all(|ok| *ok), "{ok:?}");
        let calls: Vec<&ext_server::Seen> = log.iter().filter(|s| s.method == method::TOOLS_CALL).collect();
        let mut refused_per_session: BTreeMap<String, usize> = BTreeMap::new();
        for (i, call) in calls.iter().enumerate() {
            if call.verdict == Verdict::Ok {
                continue;
            }
            prop_assert!(matches!(call.verdict, Verdict::Expired | Verdict::UnknownSession), "{call:?}");
            let id = call.session.clone().unwrap_or_default();
            *refused_per_session.entry(id.clone()).or_default() += 1;
            let resend = calls.get(i + 1);
            prop_assert!(
                resend.is_some_and(|r| r.verdict == Verdict::Ok && r.session.as_deref() != Some(id.as_str())),
                "call {i} on {id} refused, then {resend:?}"
            );
        }
        prop_assert!(refused_per_session.values().all(|n| *n == 1), "{refused_per_session:?}");
        let refused = refused_per_session.len() as u64;
        prop_assert_eq!((stats.resent, calls.len() as u64), (refused, gaps.len() as u64 + refused));
        if skew.within_margin(ttl) {
            prop_assert_eq!(refused, 0, "skew inside the margin, yet the server refused: {:?}", log);
        }
    }
}
