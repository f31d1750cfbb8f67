//! Layers 8 and 9: session renewal (skipped when the server grants no session: there is nothing to renew), then a
//! fresh connection that must settle on the same era and tool list.

use mcpstorm_core::Capabilities;
use mcpstorm_core::session::Era;
use serde_json::json;
use tokio::time::Instant;

use super::Diagnosis;
use super::report::Check;

impl Diagnosis<'_> {
    /// Layer 8: renew the session in place, when the server grants sessions.
    pub(super) async fn renewal(&self) -> Check {
        let started = Instant::now();
        match self.client.renew_session().await {
            Ok(None) => Check::skip("renewal", "no session granted (plain MCP): nothing to renew"),
            Ok(Some(grant)) => Check::pass(
                "renewal",
                Some(started.elapsed()),
                format!("session renewed in place ({} s TTL)", grant.ttl_ms / 1000),
            ),
            Err(e) => Check::fail(
                "renewal",
                Some(started.elapsed()),
                format!("the server granted a session but refused to renew it: {e}"),
                "the client replaces such sessions with new ones (a full handshake each time): implement \
                 mcpstorm/session/renew or grant longer TTLs",
            ),
        }
    }

    /// Layer 9: close the connection, reconnect with a fresh handshake and re-list: the hash must not change. The
    /// era cache is cleared too, so the new connection settles its era from scratch (a `server/discover` probe, and
    /// `initialize` for a legacy server) instead of reusing the first connection's answer.
    pub(super) async fn reconnect(&self, era: Era, before: &Capabilities) -> Check {
        let old_conn = self.client.session().await.ok().map(|s| s.conn.id());
        let compiled = self.client.schema_compilations();
        let started = Instant::now();
        self.client.close().await;
        self.client.era_cache().invalidate(self.client.server());
        let session = match self.client.session().await {
            Ok(s) => s,
            Err(e) => {
                return Check::fail(
                    "reconnect",
                    Some(started.elapsed()),
                    format!("could not reconnect: {e}"),
                    "the server accepted one session but not a second: does it serve a single connection, or exit \
                     after the first?",
                );
            }
        };
        let after = self.client.capabilities().await;
        let took = Some(started.elapsed());
        let after = match after {
            Ok(caps) => caps,
            Err(e) => {
                return Check::fail(
                    "reconnect",
                    took,
                    format!("reconnected, but tools/list failed: {e}"),
                    "the second session behaves differently from the first: check the server's stderr",
                );
            }
        };
        let recompiled = self.client.schema_compilations() - compiled;
        let fresh = old_conn != Some(session.conn.id());
        let data = json!({
            "new_connection": fresh,
            "era_before": era,
            "era_after": session.era,
            "hash_before": before.hash().to_hex(),
            "hash_after": after.hash().to_hex(),
            "recompiled": recompiled,
        });
        let short = |caps: &Capabilities| caps.hash().to_hex()[..12].to_owned();
        if !fresh {
            return Check::fail(
                "reconnect",
                took,
                "close() did not replace the connection",
                "mcpstorm bug: the session survived close(); please report it",
            )
            .data(data);
        }
        if session.era != era {
            return Check::fail(
                "reconnect",
                took,
                format!("the era changed across sessions: {era} first, {} after reconnecting", session.era),
                "the server answers server/discover differently on a new connection: is it decided per connection \
                 by something other than the first request?",
            )
            .data(data);
        }
        if before.hash() == after.hash() {
            return Check::pass(
                "reconnect",
                took,
                format!(
                    "new connection, era re-detected ({era}); tool list hash unchanged ({}…), {recompiled} schemas \
                     recompiled",
                    short(&after)
                ),
            )
            .data(data);
        }
        let names = |caps: &Capabilities| caps.entries().map(|t| t.name().to_owned()).collect::<Vec<_>>();
        let (old, new) = (names(before), names(&after));
        let mut details = vec![format!("hash before {}…, after {}…", short(before), short(&after))];
        let added: Vec<&String> = new.iter().filter(|n| !old.contains(n)).collect();
        let removed: Vec<&String> = old.iter().filter(|n| !new.contains(n)).collect();
        if !added.is_empty() {
            details.push(format!("added: {}", added.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")));
        }
        if !removed.is_empty() {
            details.push(format!("removed: {}", removed.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")));
        }
        if added.is_empty() && removed.is_empty() {
            details.push("same tool names: a description, schema or annotation differs".into());
        }
        Check::fail(
            "reconnect",
            took,
            "the tool list changed across sessions",
            "the server lists different tools per session (generated descriptions, ordering, ids?): every renewal \
             then re-validates against a new schema; make the listing deterministic",
        )
        .details(details)
        .data(data)
    }
}
