//! A listed tool's compiled schemas: the `schema` feature's part of the capability record.
//!
//! This module is the one place where the record meets jsonschema. Built without the feature it is absent, a
//! [`ToolEntry`] has no `schemas()`, and the client sends arguments unchecked (see `client::call`): a build that
//! cannot check has no method that could be read as having checked.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use super::ToolEntry;
use crate::schema::{ContentHash, SchemaError, ToolSchemas};

/// A tool's schemas, compiled at the first call of the tool and kept. Compiling at listing time would let a
/// server that lists 100,000 tools make the client build 100,000 validators (about 1 GB) it never uses; compiled
/// lazily, their memory is bounded by the tools actually called. Shared (`Arc`) between records whose listings give
/// the tool the same schemas, so a re-fetch never compiles twice.
#[derive(Debug, Default)]
struct LazySchemas(OnceLock<Result<Arc<ToolSchemas>, SchemaError>>);

/// One entry's validators and the cache's compilation counter.
#[derive(Debug, Clone)]
pub(super) struct Compiled {
    schemas: Arc<LazySchemas>,
    compilations: Arc<AtomicU64>,
}

impl Compiled {
    /// The previous listing's validators when its entry for this tool hashed the same schemas, else new ones (not
    /// compiled yet).
    pub(super) fn reuse(previous: Option<&ToolEntry>, schema_hash: ContentHash, compilations: &Arc<AtomicU64>) -> Self {
        let schemas = previous
            .filter(|old| old.schema_hash() == schema_hash)
            .map(|old| old.compiled.schemas.clone())
            .unwrap_or_default();
        Compiled { schemas, compilations: compilations.clone() }
    }
}

impl ToolEntry {
    /// The compiled schemas (compiled now, at the first use), or why the tool cannot be called. Only with the
    /// `schema` feature.
    pub fn schemas(&self) -> Result<&Arc<ToolSchemas>, &SchemaError> {
        self.compiled
            .schemas
            .0
            .get_or_init(|| {
                self.compiled.compilations.fetch_add(1, Ordering::Relaxed);
                let compiled = ToolSchemas::compile(self.tool()).map(Arc::new);
                if let Err(e) = &compiled {
                    tracing::warn!(error = %e, "tool schema does not compile; calls to it fail locally");
                }
                compiled
            })
            .as_ref()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use crate::capabilities::SchemaCache;
    use crate::mcp::{Implementation, Tool};

    fn server() -> Implementation {
        Implementation::new("srv", "1.0")
    }

    fn listing(n_type: &str) -> Vec<Tool> {
        vec![
            Tool::new("a", json!({"type": "object", "properties": {"n": {"type": n_type}}})),
            Tool::new("b", json!({"type": "object", "properties": {"s": {"type": "string"}}})),
            Tool::new("c", json!({"type": "object"})),
        ]
    }

    #[test]
    fn an_unchanged_hash_compiles_nothing_and_a_change_compiles_only_what_changed() {
        let cache = SchemaCache::default();
        let first = cache.record(server(), None, listing("integer"));
        assert_eq!(cache.compilations(), 0, "nothing compiles at listing");
        for name in ["a", "b", "c"] {
            first.tool(name).unwrap().schemas().unwrap();
        }
        assert_eq!(cache.compilations(), 3, "each at its first use");
        first.tool("a").unwrap().schemas().unwrap();
        assert_eq!(cache.compilations(), 3, "and only once");

        // Same listing again (a new session, or list_changed that changed nothing): nothing compiles, the very same
        // validators are used — even if the server's identity changed.
        let again = cache.record(Implementation::new("srv", "1.1"), None, listing("integer"));
        assert_eq!(cache.compilations(), 3);
        assert_eq!(again.hash(), first.hash());
        assert!(again.shares_tools_with(&first));
        assert_eq!(again.server().version, "1.1");
        let (sa, sb) = (first.tool("a").unwrap().schemas().unwrap(), again.tool("a").unwrap().schemas().unwrap());
        assert!(Arc::ptr_eq(sa, sb));

        // One schema changed: only that tool compiles; the others keep their validators.
        let changed = cache.record(server(), None, listing("string"));
        for name in ["a", "b", "c"] {
            changed.tool(name).unwrap().schemas().unwrap();
        }
        assert_eq!(cache.compilations(), 4);
        assert_ne!(changed.hash(), first.hash());
        assert!(!Arc::ptr_eq(
            first.tool("a").unwrap().schemas().unwrap(),
            changed.tool("a").unwrap().schemas().unwrap()
        ));
        assert!(Arc::ptr_eq(
            first.tool("b").unwrap().schemas().unwrap(),
            changed.tool("b").unwrap().schemas().unwrap()
        ));
        changed.tool("a").unwrap().schemas().unwrap().validate_arguments(&json!({"n": "now a string"})).unwrap();
    }

    #[test]
    fn a_broken_tool_does_not_spoil_the_others_and_its_error_is_kept() {
        let cache = SchemaCache::default();
        let mut tools = listing("integer");
        tools.push(Tool::new("broken", json!({"type": "object", "required": "n"})));
        let caps = cache.record(server(), None, tools.clone());
        let err = caps.tool("broken").unwrap().schemas().unwrap_err().clone();
        assert_eq!(err.tool, "broken");
        assert!(caps.tool("a").unwrap().schemas().is_ok());
        // Not recompiled on every look either.
        let again = cache.record(server(), None, tools);
        assert_eq!(again.tool("broken").unwrap().schemas().unwrap_err(), &err);
        assert_eq!(cache.compilations(), 2, "a and broken, once each");
    }
}
