use serde_json::{Map, Value, json};

use super::*;
use crate::mcp::{CallToolResult, Tool};

fn schemas(input: Value) -> ToolSchemas {
    ToolSchemas::compile(&Tool::new("t", input)).expect("compiles")
}

/// (pointer, keyword) of each violation.
fn failures(s: &ToolSchemas, args: Value) -> Vec<(String, String)> {
    let e = s.validate_arguments(&args).expect_err("invalid");
    e.violations.iter().map(|v| (v.pointer.clone(), v.keyword.clone())).collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(p, k)| ((*p).to_owned(), (*k).to_owned())).collect()
}

#[test]
fn type_error_names_pointer_keyword_and_value() {
    let s = schemas(json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}));
    s.validate_arguments(&json!({"message": "hi"})).unwrap();
    let e = s.validate_arguments(&json!({"message": 123})).unwrap_err();
    assert_eq!(e.violations.len(), 1);
    let v = &e.violations[0];
    assert_eq!((v.pointer.as_str(), v.keyword.as_str()), ("/message", "type"));
    assert_eq!(v.schema_pointer, "/properties/message/type");
    assert_eq!(e.to_string(), r#"tool "t": /message: 123 is not of type "string""#);
    assert_eq!(e.pointer(), Some("/message"));
}

#[test]
fn nested_objects_and_arrays_get_deep_pointers() {
    let s = schemas(json!({
        "type": "object",
        "properties": {
            "user": {"type": "object", "properties": {"address": {"type": "object",
                "properties": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"}}}}},
            "tags": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}},
                "required": ["n"]}}
        }
    }));
    assert_eq!(
        failures(&s, json!({"user": {"address": {"zip": "abc"}}, "tags": [{"n": 1}, {"n": "x"}, {}]})),
        pairs(&[("/tags/1/n", "type"), ("/tags/2", "required"), ("/user/address/zip", "pattern")])
    );
}

#[test]
fn pointer_escapes_slash_and_tilde_in_property_names() {
    let s = schemas(json!({"type": "object", "properties": {"a/b~c": {"type": "integer"}}}));
    assert_eq!(failures(&s, json!({"a/b~c": "x"})), pairs(&[("/a~1b~0c", "type")]));
}

#[test]
fn required_additional_properties_and_enum() {
    let s = schemas(json!({
        "type": "object",
        "properties": {"mode": {"enum": ["fast", "slow"]}, "n": {"type": "integer"}},
        "required": ["n"],
        "additionalProperties": false
    }));
    let e = s.validate_arguments(&json!({"mode": "medium", "extra": 1})).unwrap_err();
    let got: Vec<(&str, &str)> = e.violations.iter().map(|v| (v.pointer.as_str(), v.keyword.as_str())).collect();
    assert_eq!(got, [("", "additionalProperties"), ("", "required"), ("/mode", "enum")]);
    let text = e.to_string();
    assert!(text.contains(r#"(root): "n" is a required property"#), "{text}");
    assert!(text.contains("'extra' was unexpected"), "{text}");
    assert!(text.contains(r#"/mode: "medium" is not one of"#), "{text}");
}

#[test]
fn arguments_must_be_an_object_whatever_the_schema() {
    let s = schemas(json!({}));
    for bad in [json!(null), json!([1]), json!("s")] {
        assert_eq!(failures(&s, bad), pairs(&[("", "type")]));
    }
    s.validate_arguments(&json!({"anything": [1, 2]})).unwrap();
}

#[test]
fn violations_are_bounded_and_say_there_are_more() {
    let props: Map<String, Value> = (0..30).map(|i| (format!("p{i:02}"), json!({"type": "integer"}))).collect();
    let s = schemas(json!({"type": "object", "properties": props}));
    let args: Map<String, Value> = (0..30).map(|i| (format!("p{i:02}"), json!("x"))).collect();
    let e = s.validate_arguments(&Value::Object(args)).unwrap_err();
    assert_eq!(e.violations.len(), MAX_VIOLATIONS);
    assert!(e.truncated);
    assert!(e.to_string().ends_with("; and more"));
    // Ordered by pointer, so the first ten are always the same ten.
    assert_eq!(e.violations[0].pointer, "/p00");
    assert_eq!(e.violations[9].pointer, "/p09");
}

#[test]
fn drafts_differ_where_they_should_prefix_items_vs_items_array() {
    // 2020-12 (the default without `$schema`): `prefixItems` checks positions, `items` the rest.
    let modern = schemas(json!({"type": "object", "properties": {"pair": {
        "type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false}}}));
    assert_eq!(modern.input().dialect(), Dialect::Draft202012);
    modern.validate_arguments(&json!({"pair": ["a", 1]})).unwrap();
    assert_eq!(failures(&modern, json!({"pair": [1, 1]})), pairs(&[("/pair/0", "type")]));
    assert!(modern.validate_arguments(&json!({"pair": ["a", 1, 2]})).is_err(), "items: false forbids a third");

    // Draft 07: `items` as an array is the tuple form; `prefixItems` is an unknown keyword and ignored.
    let tuple = schemas(json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
        "properties": {"pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}],
        "additionalItems": false}}}));
    assert_eq!(tuple.input().dialect(), Dialect::Draft7);
    tuple.validate_arguments(&json!({"pair": ["a", 1]})).unwrap();
    assert_eq!(failures(&tuple, json!({"pair": ["a", "b"]})), pairs(&[("/pair/1", "type")]));
    assert_eq!(failures(&tuple, json!({"pair": ["a", 1, 2]})), pairs(&[("/pair", "additionalItems")]));
    let ignored = schemas(json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
        "properties": {"pair": {"type": "array", "prefixItems": [{"type": "string"}]}}}));
    ignored.validate_arguments(&json!({"pair": [1]})).unwrap();

    // The same tuple-form `items` under 2020-12 is not a valid schema at all.
    let e = ToolSchemas::compile(&Tool::new(
        "t",
        json!({"type": "object", "properties": {"pair": {
        "type": "array", "items": [{"type": "string"}]}}}),
    ))
    .unwrap_err();
    assert_eq!(e.schema, SchemaKind::Input);
    assert!(e.message.starts_with("/properties/pair/items"), "{e}");
}

#[test]
fn format_is_an_annotation_in_every_draft() {
    for dialect in
        [json!("http://json-schema.org/draft-07/schema#"), json!("https://json-schema.org/draft/2020-12/schema")]
    {
        let s = schemas(json!({"$schema": dialect, "type": "object", "properties": {"to": {"format": "email"}}}));
        s.validate_arguments(&json!({"to": "not an address"})).unwrap();
    }
}

#[test]
fn a_schema_that_does_not_compile_is_an_error_naming_the_tool_and_place() {
    let broken = Tool::new("search", json!({"type": "object", "properties": {"n": {"type": "strin"}}}));
    let e = ToolSchemas::compile(&broken).unwrap_err();
    assert_eq!((e.tool.as_str(), e.schema), ("search", SchemaKind::Input));
    assert!(e.message.starts_with("/properties/n/type"), "{e}");
    assert!(e.to_string().starts_with(r#"tool "search" has an unusable inputSchema: /properties/n/type"#), "{e}");

    let bad_regex = Tool::new("r", json!({"type": "object", "properties": {"s": {"type": "string", "pattern": "(["}}}));
    assert!(ToolSchemas::compile(&bad_regex).is_err());

    let not_a_schema = Tool::new("n", json!(42));
    assert!(ToolSchemas::compile(&not_a_schema).unwrap_err().message.contains("object or a boolean"));

    let unknown_draft = Tool::new("u", json!({"$schema": "https://example.com/my-meta", "type": "object"}));
    let e = ToolSchemas::compile(&unknown_draft).unwrap_err();
    assert!(e.message.contains("unsupported \"$schema\""), "{e}");

    let mut output = Tool::new("o", json!({"type": "object"}));
    output.output_schema = Some(json!({"type": 7}));
    assert_eq!(ToolSchemas::compile(&output).unwrap_err().schema, SchemaKind::Output);
}

#[test]
fn remote_and_file_refs_are_never_fetched() {
    for target in ["https://example.com/schemas/user.json", "http://127.0.0.1:9/x.json", "file:///etc/passwd"] {
        let t = Tool::new("r", json!({"type": "object", "properties": {"u": {"$ref": target}}}));
        let e = ToolSchemas::compile(&t).unwrap_err();
        assert!(e.message.contains(target), "{target}: {e}");
        assert!(e.message.contains("Retrieval is disabled"), "{target}: {e}");
    }
    // Local references work in both drafts.
    let local = schemas(json!({"type": "object", "properties": {"u": {"$ref": "#/$defs/user"}},
        "$defs": {"user": {"type": "object", "required": ["id"]}}}));
    assert_eq!(failures(&local, json!({"u": {}})), pairs(&[("/u", "required")]));
    let local07 = schemas(json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
        "properties": {"u": {"$ref": "#/definitions/user"}},
        "definitions": {"user": {"type": "object", "required": ["id"]}}}));
    assert_eq!(failures(&local07, json!({"u": {}})), pairs(&[("/u", "required")]));
}

#[test]
fn structured_output_is_checked_only_for_successful_results() {
    let mut t = Tool::new("weather", json!({"type": "object"}));
    t.output_schema = Some(json!({"type": "object", "properties": {"temperature": {"type": "number"}},
        "required": ["temperature"]}));
    let s = ToolSchemas::compile(&t).unwrap();
    let mut r = CallToolResult::text("ok", false);
    s.validate_result(&r).unwrap();
    r.structured_content = Some(json!({"temperature": 21.5}));
    s.validate_result(&r).unwrap();
    r.structured_content = Some(json!({"temperature": "warm"}));
    let e = s.validate_result(&r).unwrap_err();
    assert_eq!(e.violations[0].pointer, "/temperature");
    assert!(e.to_string().contains("violates its outputSchema: /temperature: \"warm\" is not of type \"number\""));
    r.is_error = true;
    s.validate_result(&r).unwrap();
}
