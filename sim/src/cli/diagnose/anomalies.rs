//! The last check: what the server sent that the protocol does not allow.

use mcpstorm_core::conn::ConnectionStats;
use serde_json::json;

use super::report::Check;

/// What the server sent that the protocol does not allow, as the connection counted it (the log shows only the
/// 1st, 10th, 100th, ... of each): frames that are not JSON-RPC and responses to ids never issued fail the check;
/// notifications dropped because their queue was full are the client's limit, reported but not failed.
pub(super) fn anomalies(seen: &ConnectionStats) -> Check {
    let data = json!({
        "rejected_frames": seen.rejected_frames,
        "unknown_responses": seen.unknown_responses,
        "notifications_dropped": seen.notifications_dropped,
    });
    let mut parts = Vec::new();
    for (n, what) in [
        (seen.rejected_frames, "frames that are not JSON-RPC"),
        (seen.unknown_responses, "responses to ids never issued"),
        (seen.notifications_dropped, "notifications dropped (queue full)"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    if seen.rejected_frames + seen.unknown_responses == 0 {
        let summary = if parts.is_empty() { "none".to_owned() } else { parts.join(", ") };
        return Check::pass("anomalies", None, summary).data(data);
    }
    let hint = "the server wrote what JSON-RPC does not allow on this connection (a stdio server must write only \
                JSON-RPC messages on stdout: logs belong on stderr)";
    Check::fail("anomalies", None, parts.join(", "), hint).data(data)
}
