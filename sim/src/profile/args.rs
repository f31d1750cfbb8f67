//! Arguments for a tool that the user gave none for: what its inputSchema suggests.

use serde_json::{Map, Value};

use crate::world::fill_required;

/// Every required property of `schema` with the value its schema suggests, in this order: `default`, the first of
/// `examples`, `const`, the first of `enum`; a property with none of them gets its type's zero (the simulator's own
/// agents fill arguments the same way). Optional properties are left out: the server's defaults apply.
pub fn sample_arguments(schema: &Value) -> Value {
    let mut args = Map::new();
    let props = schema.get("properties").and_then(Value::as_object);
    let required = schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str);
    for name in required {
        if let Some(v) = props.and_then(|p| p.get(name)).and_then(suggested) {
            args.insert(name.to_owned(), v);
        }
    }
    fill_required(schema, Value::Object(args))
}

fn suggested(prop: &Value) -> Option<Value> {
    let first = |key: &str| prop.get(key).and_then(Value::as_array).and_then(|a| a.first()).cloned();
    prop.get("default")
        .cloned()
        .or_else(|| first("examples"))
        .or_else(|| prop.get("const").cloned())
        .or_else(|| first("enum"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_required_property_takes_its_default_example_const_or_enum_before_a_zero() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer", "default": 5, "examples": [7]},
                "b": {"type": "string", "examples": ["x"]},
                "c": {"const": true},
                "d": {"type": "string", "enum": ["red", "blue"]},
                "e": {"type": "number"},
                "f": {"type": "string", "default": "not required"},
            },
            "required": ["a", "b", "c", "d", "e"],
        });
        let args = sample_arguments(&schema);
        assert_eq!(args["a"], json!(5));
        assert_eq!(args["b"], json!("x"));
        assert_eq!(args["c"], json!(true));
        assert_eq!(args["d"], json!("red"));
        assert!(args["e"].is_number(), "{args}");
        assert!(args.get("f").is_none(), "optional properties are left to the server: {args}");
        assert_eq!(sample_arguments(&json!({"type": "object"})), json!({}));
    }
}
