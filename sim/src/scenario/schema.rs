//! The scenario format's JSON Schema, derived from the serde types in [`model`](super::model) (and the fake server's
//! tool types), for editors: with `#:schema ./scenario.schema.json` on a scenario's first line, taplo-based editors
//! (Even Better TOML) complete keys, show each key's doc comment and flag unknown keys as you type.
//!
//! `scenarios/scenario.schema.json` is generated; a test fails when it differs from [`schema_json`]. Regenerate it
//! with `MCPSTORM_WRITE_SCHEMA=1 cargo test -p mcpstorm-sim schema`.

use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

use super::model::Scenario;
use super::tables::GatewayFile;

/// Where the generated schema lives, relative to the workspace root.
pub const SCHEMA_FILE: &str = "scenarios/scenario.schema.json";

/// Where the gateway config's generated schema lives (`mcpstorm gateway --config`), relative to the workspace root.
pub const GATEWAY_SCHEMA_FILE: &str = "scenarios/gateway.schema.json";

/// The schema (JSON Schema draft 7, which every TOML editor supports), as a JSON value.
pub fn schema() -> Value {
    schema_of::<Scenario>()
}

/// The gateway config's schema ([`GatewayFile`]), as [`schema`] is the scenario's.
pub fn gateway_schema() -> Value {
    schema_of::<GatewayFile>()
}

fn schema_of<T: schemars::JsonSchema>() -> Value {
    let schema = SchemaSettings::draft07().into_generator().into_root_schema_for::<T>();
    let mut value = schema.to_value();
    drop_null(&mut value);
    value
}

/// TOML has no null: an absent key is how a file says "none". schemars writes `Option<T>` as "T or null"; this
/// leaves just T, so that editors do not offer null.
fn drop_null(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    map.insert("type".to_owned(), only);
                }
            }
            if let Some(Value::Array(any)) = map.get_mut("anyOf") {
                any.retain(|s| s != &json!({"type": "null"}));
                if any.len() == 1
                    && let Value::Object(only) = any.remove(0)
                {
                    map.remove("anyOf");
                    for (k, v) in only {
                        map.entry(k).or_insert(v);
                    }
                }
            }
            map.values_mut().for_each(drop_null);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_null),
        _ => {}
    }
}

/// The schema as the committed file holds it: pretty-printed, keys sorted, a final newline.
pub fn schema_json() -> String {
    pretty(&schema())
}

/// [`gateway_schema`] as its committed file holds it.
pub fn gateway_schema_json() -> String {
    pretty(&gateway_schema())
}

fn pretty(schema: &Value) -> String {
    let mut text = serde_json::to_string_pretty(schema).unwrap_or_default();
    text.push('\n');
    text
}
