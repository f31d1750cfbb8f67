//! What a server declares to the router, in the gateway's `[[servers]]` and a scenario's alike: labels, the
//! capability matrix row, hints and a health tool ([`Declared`]), with one owner for their checks and for the
//! core's [`ServerEntry`].

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use mcpstorm_core::capabilities::RouterHints;
use mcpstorm_core::router::{HealthCheck, ServerEntry};

use super::rules::Rules;

/// The tag every server carries automatically: `server:<name>`, which a call routed to one server requires.
pub fn server_tag(name: &str) -> String {
    format!("server:{name}")
}

/// A declared health tool and its minimal arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HealthCheckSpec {
    /// One of the server's tools.
    pub tool: String,
    /// Its arguments, a table.
    #[serde(default = "empty_args")]
    #[schemars(schema_with = "object_schema")]
    pub arguments: Value,
}

fn object_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "object" })
}

fn empty_args() -> Value {
    Value::Object(Default::default())
}

/// What a server declares to the router, in a scenario's `[[servers]]` and in the gateway process's alike: its
/// labels, capability matrix row, hints and health tool. One owner for their checks and for the core's
/// [`ServerEntry`].
#[derive(Debug, Clone, Copy)]
pub struct Declared<'a> {
    pub tags: &'a [String],
    pub capabilities: &'a BTreeMap<String, Vec<String>>,
    pub latency_p95_ms: Option<f64>,
    pub max_concurrent_requests: Option<u32>,
    pub health_check: Option<&'a HealthCheckSpec>,
}

impl Declared<'_> {
    /// The declaration's rules; `server` is the table's key path (`servers[i]`).
    pub fn problems(&self, server: &str, rules: &mut Rules) {
        let at = |field: &str| format!("{server}.{field}");
        for tag in self.tags {
            if tag.is_empty() {
                rules.fail(at("tags"), "a tag must not be empty");
            } else if tag.starts_with("server:") {
                rules.fail(
                    at("tags"),
                    format!("{tag:?}: `server:` tags are automatic (every server has `server:<name>`)"),
                );
            }
        }
        for (attribute, values) in self.capabilities {
            if !attribute.ends_with("_support") || attribute.len() == "_support".len() {
                rules.fail(
                    at(&format!("capabilities.{attribute}")),
                    "a capability is named `<attribute>_support` (e.g. language_support), as servers declare it in _meta",
                );
            }
            if values.iter().any(String::is_empty) {
                rules.fail(at(&format!("capabilities.{attribute}")), "values must not be empty strings");
            }
        }
        if let Some(ms) = self.latency_p95_ms
            && !(ms.is_finite() && ms > 0.0)
        {
            rules.fail(at("latency_p95_ms"), format!("must be a number of milliseconds > 0, got {ms}"));
        }
        if self.max_concurrent_requests == Some(0) {
            rules.fail(at("max_concurrent_requests"), "must be at least 1");
        }
        if let Some(check) = self.health_check
            && !check.arguments.is_object()
        {
            rules.fail(at("health_check.arguments"), "must be a table of arguments");
        }
    }

    /// The core's declaration of server `name` served by `replicas` (endpoint ids) offering `tools`: the tags plus
    /// the automatic `server:<name>`, the matrix row, the hints and the health check (the declared tool replaces
    /// `ping` and guards the whole server).
    pub fn entry(
        &self,
        name: &str,
        replicas: impl IntoIterator<Item = String>,
        tools: impl IntoIterator<Item = String>,
    ) -> ServerEntry {
        let mut entry = ServerEntry::new(name, replicas).with_tools(tools).with_hints(RouterHints {
            latency_p95: self.latency_p95_ms.and_then(|ms| Duration::try_from_secs_f64(ms / 1000.0).ok()),
            max_concurrent_requests: self.max_concurrent_requests,
        });
        entry.tags = self.tags.iter().cloned().collect();
        entry.tags.insert(server_tag(name));
        for (attribute, values) in self.capabilities {
            entry = entry.with_support(attribute, values.iter().cloned());
        }
        if let Some(check) = self.health_check {
            entry.checks = vec![HealthCheck {
                capability: None,
                tool: Some(check.tool.clone()),
                arguments: check.arguments.clone(),
            }];
        }
        entry
    }
}
