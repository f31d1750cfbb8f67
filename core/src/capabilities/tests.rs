use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::*;
use crate::mcp::{Implementation, Tool};

fn server() -> Implementation {
    Implementation::new("srv", "1.0")
}

#[test]
fn hash_ignores_key_order_and_changes_with_a_schema() {
    let a: Vec<Tool> = serde_json::from_str(
        r#"[{"name": "echo", "inputSchema": {"type": "object", "properties": {"m": {"type": "string"}}}}]"#,
    )
    .unwrap();
    let b: Vec<Tool> = serde_json::from_str(
        r#"[{"inputSchema": {"properties": {"m": {"type": "string"}}, "type": "object"}, "name": "echo"}]"#,
    )
    .unwrap();
    let c: Vec<Tool> = serde_json::from_str(
        r#"[{"name": "echo", "inputSchema": {"type": "object", "properties": {"m": {"type": "integer"}}}}]"#,
    )
    .unwrap();
    let (ca, cb, cc) = (SchemaCache::default(), SchemaCache::default(), SchemaCache::default());
    let (ra, rb, rc) = (ca.record(server(), None, a), cb.record(server(), None, b), cc.record(server(), None, c));
    assert_eq!(ra.hash(), rb.hash());
    assert_ne!(ra.hash(), rc.hash());
    assert_eq!(ra.tool("echo").unwrap().schema_hash(), rb.tool("echo").unwrap().schema_hash());
    assert_ne!(ra.tool("echo").unwrap().schema_hash(), rc.tool("echo").unwrap().schema_hash());
    // A description change is a change of the listing, but not of the schemas.
    let mut d = ra.tools().as_ref().clone();
    d[0].description = Some("now documented".into());
    let rd = SchemaCache::default().record(server(), None, d);
    assert_ne!(rd.hash(), ra.hash());
    assert_eq!(rd.tool("echo").unwrap().schema_hash(), ra.tool("echo").unwrap().schema_hash());
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
    assert!(!Arc::ptr_eq(first.tool("a").unwrap().schemas().unwrap(), changed.tool("a").unwrap().schemas().unwrap()));
    assert!(Arc::ptr_eq(first.tool("b").unwrap().schemas().unwrap(), changed.tool("b").unwrap().schemas().unwrap()));
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

#[test]
fn router_hints_come_from_tool_meta_then_server_meta() {
    let mut fast = Tool::new("fast", json!({"type": "object"}));
    fast.extra.insert("_meta".into(), json!({"latency_p95_ms": 12.5}));
    let mut namespaced = Tool::new("ns", json!({"type": "object"}));
    namespaced.extra.insert(
        "_meta".into(),
        json!({"io.mcpstorm/latency_p95_ms": 900, "latency_p95_ms": 1, "maxConcurrentRequests": 3}),
    );
    let mut invalid = Tool::new("bad", json!({"type": "object"}));
    invalid.extra.insert("_meta".into(), json!({"latency_p95_ms": -5, "max_concurrent_requests": 0}));
    let plain = Tool::new("plain", json!({"type": "object"}));
    let server_meta = json!({"latency_p95_ms": 250, "max_concurrent_requests": 16});
    let caps = SchemaCache::default().record(server(), Some(&server_meta), vec![fast, namespaced, invalid, plain]);

    assert_eq!(
        caps.server_hints(),
        RouterHints { latency_p95: Some(Duration::from_millis(250)), max_concurrent_requests: Some(16) }
    );
    let fast = caps.hints("fast").unwrap();
    assert_eq!((fast.latency_p95, fast.max_concurrent_requests), (Some(Duration::from_micros(12_500)), Some(16)));
    assert_eq!(caps.tool("fast").unwrap().own_hints().max_concurrent_requests, None);
    let ns = caps.hints("ns").unwrap();
    assert_eq!((ns.latency_p95, ns.max_concurrent_requests), (Some(Duration::from_millis(900)), Some(3)));
    // Invalid declarations count as absent, so the server's apply.
    assert_eq!(caps.hints("bad"), caps.hints("plain"));
    assert_eq!(caps.hints("plain"), Some(caps.server_hints()));
    assert_eq!(caps.hints("nope"), None);
    assert_eq!(RouterHints::from_meta(Some(&json!("not an object"))), RouterHints::default());
}

#[test]
fn a_name_listed_twice_keeps_its_first_listing() {
    let caps = SchemaCache::default().record(
        server(),
        None,
        vec![Tool::new("x", json!({"type": "object", "required": ["a"]})), Tool::new("x", json!({"type": "object"}))],
    );
    assert_eq!(caps.tools().len(), 2);
    let s = caps.tool("x").unwrap().schemas().unwrap();
    assert!(s.validate_arguments(&json!({})).is_err());
}
