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
    // What `schemas()` compiles (with the `schema` feature) is this listing.
    assert_eq!(caps.tool("x").unwrap().tool().input_schema, json!({"type": "object", "required": ["a"]}));
}
