//! Layer 4: the listing (all pages) and whether every schema compiles.

use std::sync::Arc;

use mcpstorm_core::CallError;
use mcpstorm_core::Capabilities;
use mcpstorm_core::jsonrpc::ErrorCode;
use serde_json::json;
use tokio::time::Instant;

use super::Diagnosis;
use super::report::Check;

impl Diagnosis<'_> {
    /// Layer 4: the listing (all pages) and whether every schema compiles.
    pub(super) async fn tools(&self) -> (Check, Option<Arc<Capabilities>>) {
        let before = self.probe.seen.pages();
        let started = Instant::now();
        let result = self.client.capabilities().await;
        let took = started.elapsed();
        let pages = self.probe.seen.pages() - before;
        let caps = match result {
            Ok(caps) => caps,
            Err(e) => {
                let hint = match &e {
                    CallError::Protocol(obj) if obj.code == ErrorCode::METHOD_NOT_FOUND.0 => {
                        "the server does not implement tools/list: does it declare the `tools` capability?"
                    }
                    CallError::MalformedResponse(_) => {
                        "the tools/list result is not valid MCP (each tool needs a name and an inputSchema object)"
                    }
                    _ => "tools/list failed: check the server's stderr and try `mcpstorm tools` with RUST_LOG=debug",
                };
                return (Check::fail("tools", Some(took), e.to_string(), hint), None);
            }
        };
        let count = caps.tools().len();
        let unusable: Vec<_> = caps.entries().filter_map(|t| t.schemas().err()).collect();
        let plural = |n: u64, word: &str| if n == 1 { format!("1 {word}") } else { format!("{n} {word}s") };
        let listed = format!("{} in {}", plural(count as u64, "tool"), plural(pages, "page"));
        let data = json!({
            "count": count,
            "pages": pages,
            "hash": caps.hash().to_hex(),
            "tools": caps.entries().map(|t| t.name()).collect::<Vec<_>>(),
            "unusable": unusable.iter().map(|e| json!({
                "tool": e.tool, "schema": e.schema.field(), "error": e.message,
            })).collect::<Vec<_>>(),
        });
        let check = if unusable.is_empty() {
            let all = if count == 0 { "the server lists no tools" } else { "every schema compiles" };
            Check::pass("tools", Some(took), format!("{listed}, {all}"))
        } else {
            Check::fail(
                "tools",
                Some(took),
                format!("{listed}, {} with a schema that does not compile", unusable.len()),
                "calls to these tools fail locally (their arguments cannot be checked): fix the schema on the \
                 server; a remote $ref or an unknown $schema draft is refused, never fetched",
            )
            .details(unusable.iter().map(|e| format!("{}: {}: {}", e.tool, e.schema.field(), e.message)).collect())
        };
        (check.data(data), Some(caps))
    }
}
