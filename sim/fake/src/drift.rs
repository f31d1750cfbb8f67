//! Schema drift: a server changing its tools or version while clients hold the old ones, as deployments do.
//!
//! A drift replaces the server's catalog (tools and version) at once; calls already accepted keep the snapshot they
//! were checked against, and every later call is validated against the new schema (`args::check`), so a client
//! still sending against the old one is refused the way real servers refuse it (see `ValidationError`).

use serde_json::{Map, Value, json};

use crate::config::ToolConfig;
use crate::shared::Catalog;

/// One change to a server's tools or identity.
#[derive(Debug, Clone, PartialEq)]
pub enum Drift {
    /// Adds `param` to `tool`'s input schema as a required property with property schema `schema`. Give the
    /// schema a `default` (or `examples`) so that a client reading the new schema can fill it in.
    AddRequired { tool: String, param: String, schema: Value },
    /// Replaces `tool`'s whole input schema (a JSON Schema with `"type": "object"`).
    Replace { tool: String, input_schema: Value },
    /// Renames `tool` to `to`: calls by the old name become unknown-tool errors.
    Rename { tool: String, to: String },
    /// Bumps `serverInfo.version` (the tools stay as they are).
    Version { version: String },
}

impl Drift {
    /// The catalog after this drift, or why it cannot apply (an unknown tool, a name taken, a bad schema).
    pub(crate) fn apply(&self, before: &Catalog) -> Result<Catalog, String> {
        let mut version = before.version.clone();
        let mut tools = before.tools.clone();
        match self {
            Drift::AddRequired { tool, param, schema } => {
                if !schema.is_object() {
                    return Err(format!("the schema of parameter {param:?} must be an object, got {schema}"));
                }
                let t = tool_mut(&mut tools, before, tool)?;
                let mut input = t.schema();
                add_required(&mut input, param, schema.clone());
                t.input_schema = Some(input);
            }
            Drift::Replace { tool, input_schema } => {
                if input_schema.get("type").and_then(Value::as_str) != Some("object") {
                    return Err(format!("a tool's input schema needs \"type\": \"object\", got {input_schema}"));
                }
                tool_mut(&mut tools, before, tool)?.input_schema = Some(input_schema.clone());
            }
            Drift::Rename { tool, to } => {
                if before.by_name.contains_key(to) {
                    return Err(format!("cannot rename {tool:?} to {to:?}: that name is taken"));
                }
                tool_mut(&mut tools, before, tool)?.name = to.clone();
            }
            Drift::Version { version: v } => version = v.clone(),
        }
        Ok(Catalog::new(before.server.clone(), version, tools))
    }
}

fn tool_mut<'a>(tools: &'a mut [ToolConfig], before: &Catalog, name: &str) -> Result<&'a mut ToolConfig, String> {
    let i = before.by_name.get(name).copied().ok_or_else(|| format!("the server has no tool {name:?}"))?;
    tools.get_mut(i).ok_or_else(|| format!("tool {name:?} vanished"))
}

/// Inserts `param` into `schema.properties` and `schema.required` (once).
fn add_required(schema: &mut Value, param: &str, prop: Value) {
    let Some(obj) = schema.as_object_mut() else { return };
    if let Some(props) = obj.entry("properties").or_insert_with(|| json!({})).as_object_mut() {
        props.insert(param.to_owned(), prop);
    }
    let required = obj.entry("required").or_insert_with(|| json!([]));
    if !required.is_array() {
        *required = json!([]);
    }
    if let Some(list) = required.as_array_mut()
        && !list.iter().any(|v| v == param)
    {
        list.push(json!(param));
    }
}

/// The notification that tells clients to re-list (sent after a drift when asked).
pub(crate) fn list_changed() -> mcpstorm_core::jsonrpc::Message {
    mcpstorm_core::jsonrpc::Message::notification(
        mcpstorm_core::mcp::method::TOOLS_LIST_CHANGED,
        Some(Value::Object(Map::new())),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Catalog {
        let echo = ToolConfig {
            input_schema: Some(json!({"type": "object", "properties": {"m": {"type": "string"}}, "required": ["m"]})),
            ..ToolConfig::new("echo")
        };
        Catalog::new("s".into(), "1.0.0".into(), vec![echo, ToolConfig::new("other")])
    }

    #[test]
    fn add_required_extends_properties_and_required() {
        let schema = json!({"type": "string", "default": "eu"});
        let after = Drift::AddRequired { tool: "echo".into(), param: "region".into(), schema: schema.clone() }
            .apply(&catalog())
            .expect("applies");
        let input = &after.listing[0].input_schema;
        assert_eq!(input.pointer("/properties/region"), Some(&schema));
        assert_eq!(input["required"], json!(["m", "region"]));
        // On a tool without a schema, one is made.
        let after = Drift::AddRequired { tool: "other".into(), param: "x".into(), schema: json!({"type": "integer"}) }
            .apply(&catalog())
            .expect("applies");
        assert_eq!(after.listing[1].input_schema["required"], json!(["x"]));
    }

    #[test]
    fn rename_replace_and_version() {
        let after = Drift::Rename { tool: "echo".into(), to: "echo2".into() }.apply(&catalog()).expect("applies");
        assert!(after.by_name.contains_key("echo2") && !after.by_name.contains_key("echo"));
        let new = json!({"type": "object", "properties": {"q": {"type": "integer"}}, "required": ["q"]});
        let after =
            Drift::Replace { tool: "echo".into(), input_schema: new.clone() }.apply(&catalog()).expect("applies");
        assert_eq!(after.listing[0].input_schema, new);
        let after = Drift::Version { version: "2.0.0".into() }.apply(&catalog()).expect("applies");
        assert_eq!((after.version.as_str(), after.tools.len()), ("2.0.0", 2));
    }

    #[test]
    fn refuses_what_cannot_apply() {
        let c = catalog();
        let err = |d: Drift| d.apply(&c).expect_err("must not apply");
        assert!(err(Drift::Rename { tool: "nope".into(), to: "x".into() }).contains("no tool \"nope\""));
        assert!(err(Drift::Rename { tool: "echo".into(), to: "other".into() }).contains("taken"));
        assert!(
            err(Drift::Replace { tool: "echo".into(), input_schema: json!({"type": "string"}) }).contains("object")
        );
        assert!(
            err(Drift::AddRequired { tool: "echo".into(), param: "p".into(), schema: json!(3) }).contains("object")
        );
    }
}
