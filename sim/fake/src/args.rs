//! Tool arguments: the top-level checks a real server's validator makes against `inputSchema`, and the reply
//! template that turns a call into its result text.
//!
//! Only the top level of the schema is checked (`required`, each property's `type` and `minimum`,
//! `additionalProperties: false`): enough for a caller's mistake to come back as a tool error the way it would from a
//! real server, without a JSON Schema engine in the simulator.

use std::fmt::Write as _;

use serde_json::{Map, Value};

/// Checks `args` against the top level of `schema`. The error text names the argument.
pub fn check(schema: &Value, args: &Map<String, Value>) -> Result<(), String> {
    let properties = schema.get("properties").and_then(Value::as_object);
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            if !args.contains_key(name) {
                return Err(format!("missing required argument `{name}`"));
            }
        }
    }
    for (name, value) in args {
        let Some(prop) = properties.and_then(|p| p.get(name)) else {
            if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
                return Err(format!("unexpected argument `{name}`"));
            }
            continue;
        };
        if let Some(ty) = prop.get("type")
            && !type_matches(ty, value)
        {
            return Err(format!("argument `{name}` must be of type {ty}, got {value}"));
        }
        if let (Some(min), Some(v)) = (prop.get("minimum").and_then(Value::as_f64), value.as_f64())
            && v < min
        {
            return Err(format!("argument `{name}` must be >= {min}, got {value}"));
        }
    }
    Ok(())
}

/// `type` is a name or a list of names (JSON Schema allows both). Unknown names match anything: we only reject what
/// we understand.
fn type_matches(ty: &Value, value: &Value) -> bool {
    match ty {
        Value::String(name) => one_type_matches(name, value),
        Value::Array(names) => names.iter().filter_map(Value::as_str).any(|n| one_type_matches(n, value)),
        _ => true,
    }
}

fn one_type_matches(name: &str, value: &Value) -> bool {
    match name {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "null" => value.is_null(),
        _ => true,
    }
}

/// One piece of a reply template.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Piece<'a> {
    Text(&'a str),
    Tool,
    LatencyMs,
    Arg(&'a str),
}

/// Walks a template's pieces in order, handing each to `each`. Placeholders: `{tool}`, `{latency_ms}`,
/// `{arg:NAME}`; a `{` without a closing `}` is literal text. A callback rather than a list: rendering runs on every
/// call, and needs no allocation for the pieces.
fn for_each_piece<'a>(template: &'a str, mut each: impl FnMut(Piece<'a>)) -> Result<(), String> {
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(len) = rest[open..].find('}') else { break };
        if open > 0 {
            each(Piece::Text(&rest[..open]));
        }
        let key = &rest[open + 1..open + len];
        each(match key {
            "tool" => Piece::Tool,
            "latency_ms" => Piece::LatencyMs,
            _ => match key.strip_prefix("arg:") {
                Some(name) if !name.is_empty() => Piece::Arg(name),
                _ => {
                    return Err(format!(
                        "unknown placeholder {{{key}}} (use {{tool}}, {{latency_ms}} or {{arg:NAME}})"
                    ));
                }
            },
        });
        rest = &rest[open + len + 1..];
    }
    if !rest.is_empty() {
        each(Piece::Text(rest));
    }
    Ok(())
}

/// Checks a template at load time.
pub fn check_template(template: &str) -> Result<(), String> {
    for_each_piece(template, |_| {})
}

/// Renders a template. String arguments are inserted raw, others as JSON, a missing one as nothing.
pub fn render(template: &str, tool: &str, latency_ms: u128, args: &Map<String, Value>) -> String {
    let mut out = String::with_capacity(template.len() + tool.len());
    let rendered = for_each_piece(template, |piece| match piece {
        Piece::Text(t) => out.push_str(t),
        Piece::Tool => out.push_str(tool),
        // Writing into a String cannot fail.
        Piece::LatencyMs => {
            let _ = write!(out, "{latency_ms}");
        }
        Piece::Arg(name) => match args.get(name) {
            Some(Value::String(s)) => out.push_str(s),
            Some(v) => {
                let _ = write!(out, "{v}");
            }
            None => {}
        },
    });
    // Templates are checked at load, so the fallback (the raw template) is only a safety net.
    match rendered {
        Ok(()) => out,
        Err(_) => template.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn checks_required_types_minimum_and_extras() {
        let schema = json!({"type": "object", "properties": {"ms": {"type": "integer", "minimum": 0},
            "tag": {"type": ["string", "null"]}}, "required": ["ms"], "additionalProperties": false});
        assert_eq!(check(&schema, &obj(json!({"ms": 5, "tag": null}))), Ok(()));
        assert!(check(&schema, &obj(json!({}))).is_err_and(|e| e.contains("missing required argument `ms`")));
        assert!(check(&schema, &obj(json!({"ms": 1.5}))).is_err_and(|e| e.contains("`ms`")));
        assert!(check(&schema, &obj(json!({"ms": -1}))).is_err_and(|e| e.contains(">= 0")));
        assert!(check(&schema, &obj(json!({"ms": 1, "tag": 3}))).is_err_and(|e| e.contains("`tag`")));
        assert!(check(&schema, &obj(json!({"ms": 1, "x": 3}))).is_err_and(|e| e.contains("unexpected argument `x`")));
        assert_eq!(check(&json!({"type": "object"}), &obj(json!({"anything": [1]}))), Ok(()));
    }

    #[test]
    fn renders_placeholders() {
        let args = obj(json!({"message": "hi", "n": 3}));
        assert_eq!(render("ok {tool} {latency_ms}ms", "q", 40, &args), "ok q 40ms");
        assert_eq!(render("{arg:message}/{arg:n}/{arg:missing}", "q", 0, &args), "hi/3/");
        assert_eq!(render("a { b", "q", 0, &args), "a { b");
        assert!(check_template("{nope}").is_err_and(|e| e.contains("{nope}")));
        assert!(check_template("{arg:}").is_err());
    }
}
