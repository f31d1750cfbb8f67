//! Layer 6: a few pings (modern: `server/discover` round trips) on the priority lane.

use std::time::Duration;

use mcpstorm_core::session::Era;
use serde_json::json;
use tokio::time::Instant;

use super::Diagnosis;
use super::report::{self, Check};

impl Diagnosis<'_> {
    /// Layer 6: a few pings on the priority lane.
    pub(super) async fn ping(&self, era: Era) -> Check {
        // The modern era has no `ping`; the client times `server/discover` instead.
        let (what, hint) = match era {
            Era::Legacy => {
                ("pings", "every MCP server must answer `ping` with an empty result, at any time after initialize")
            }
            Era::Modern => (
                "server/discover round trips (the modern era has no ping)",
                "a modern server must answer server/discover at any time, with the request's _meta envelope",
            ),
        };
        let started = Instant::now();
        let mut samples = Vec::new();
        for _ in 0..self.args.pings {
            match self.client.ping().await {
                Ok(rtt) => samples.push(rtt),
                Err(e) => {
                    return Check::fail(
                        "ping",
                        Some(started.elapsed()),
                        format!("round trip {} of {} failed: {e}", samples.len() + 1, self.args.pings),
                        hint,
                    );
                }
            }
        }
        samples.sort();
        let (min, max) = (samples[0], samples[samples.len() - 1]);
        let median = samples[samples.len() / 2];
        let fmt = |d: Duration| format!("{:.2}", report::ms(d));
        Check::pass(
            "ping",
            Some(started.elapsed()),
            format!("{} {what}: min {} / median {} / max {} ms", samples.len(), fmt(min), fmt(median), fmt(max)),
        )
        .data(json!({
            "count": samples.len(),
            "min_ms": report::ms(min),
            "median_ms": report::ms(median),
            "max_ms": report::ms(max),
        }))
    }
}
