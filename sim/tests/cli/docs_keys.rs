//! docs/scenarios.md's "Every key, annotated" against the scenario format's JSON Schema: every key the schema knows
//! is in the section (docs/generate.py writes it from the schema with `just docs`; this fails when the schema gained a
//! key and the docs were not regenerated).

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

const START: &str = "<!-- generated: scenario_keys (just docs) -->";
const END: &str = "<!-- /generated: scenario_keys -->";

fn read(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every property name at any depth of the schema, definitions included.
fn keys(node: &Value, out: &mut BTreeSet<String>) {
    match node {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = map.get("properties") {
                out.extend(props.keys().cloned());
            }
            map.values().for_each(|v| keys(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| keys(v, out)),
        _ => {}
    }
}

#[test]
fn every_key_of_the_scenario_schema_is_in_the_generated_section() {
    let schema: Value = serde_json::from_str(&read("scenarios/scenario.schema.json")).expect("the schema is JSON");
    let doc = read("docs/scenarios.md");
    let start = doc.find(START).expect("docs/scenarios.md has the scenario_keys block");
    let end = doc[start..].find(END).expect("the block is closed") + start;
    let section = &doc[start..end];
    let mut names = BTreeSet::new();
    keys(&schema, &mut names);
    assert!(names.len() > 100, "the walk found the keys: {names:?}");
    let missing: Vec<&String> = names
        .iter()
        .filter(|n| {
            let shown = [format!("`{n}`"), format!("`{n} = "), format!("[{n}]"), format!(".{n}]")];
            !shown.iter().any(|s| section.contains(s.as_str()))
        })
        .collect();
    assert!(missing.is_empty(), "keys of the schema missing from docs/scenarios.md (run `just docs`): {missing:?}");
    for key in ["annotations", "output_schema", "degraded", "contrast_p99_ratio", "contrast_extra_errors"] {
        assert!(section.contains(&format!("| `{key}` |")), "{key} has a row");
    }
    let page = &doc[..end];
    assert!(
        page.contains("treated as **not\n  idempotent**"),
        "the page says how a tool without annotations is treated"
    );
}
