//! Defaults, schemas and names that more than one table's keys use.

use schemars::{Schema, SchemaGenerator, json_schema};
use serde_json::Value;

pub(super) fn one() -> usize {
    1
}

pub(super) fn yes() -> bool {
    true
}

pub(super) fn object_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "object" })
}

pub(super) fn empty_args() -> Value {
    Value::Object(Default::default())
}

/// The `target` of a `clock_skew` on every load host (the gateway) rather than a server.
pub const GATEWAY: &str = "gateway";
