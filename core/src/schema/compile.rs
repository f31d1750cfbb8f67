//! One compiled JSON Schema: draft detection, offline compilation, bounded and ordered error collection.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};

use jsonschema::{Draft, Validator};
use serde_json::Value;

use super::error::{MAX_VIOLATIONS, Violation};

/// How many violations are read from the validator before sorting and cutting to [`MAX_VIOLATIONS`]. Sorting makes
/// the listed ones independent of the validator's internal (hash-map) order whenever there are at most this many.
const COLLECT: usize = 64;

/// The JSON Schema dialect a schema was compiled as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dialect {
    Draft4,
    Draft6,
    Draft7,
    Draft201909,
    Draft202012,
}

impl Dialect {
    /// From the schema's `$schema`; MCP's default, 2020-12, when it has none. `None` for a `$schema` naming
    /// something else (a custom meta-schema would have to be fetched, which we never do).
    pub fn detect(schema: &Value) -> Option<Dialect> {
        match Draft::default().detect(schema) {
            Draft::Draft4 => Some(Dialect::Draft4),
            Draft::Draft6 => Some(Dialect::Draft6),
            Draft::Draft7 => Some(Dialect::Draft7),
            Draft::Draft201909 => Some(Dialect::Draft201909),
            Draft::Draft202012 => Some(Dialect::Draft202012),
            _ => None,
        }
    }

    fn draft(self) -> Draft {
        match self {
            Dialect::Draft4 => Draft::Draft4,
            Dialect::Draft6 => Draft::Draft6,
            Dialect::Draft7 => Draft::Draft7,
            Dialect::Draft201909 => Draft::Draft201909,
            Dialect::Draft202012 => Draft::Draft202012,
        }
    }
}

/// A compiled schema, cheap to run many times.
pub struct SchemaValidator {
    dialect: Dialect,
    validator: Validator,
}

impl fmt::Debug for SchemaValidator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SchemaValidator").field("dialect", &self.dialect).finish_non_exhaustive()
    }
}

impl SchemaValidator {
    /// Compiles `schema`, or says where it is broken.
    ///
    /// - The schema is first checked against its draft's meta-schema (bundled in the crate, not fetched).
    /// - Retrieval is off: a `$ref` to anything outside the schema document is an error, never a request. A server's
    ///   schema must not make the gateway open URLs or read files.
    /// - `format` is an annotation in every draft (2020-12's default, and optional in draft 07): the server decides
    ///   what a valid e-mail address or URI is, and we must not reject a call it would accept.
    pub fn compile(schema: &Value) -> Result<SchemaValidator, String> {
        if !(schema.is_object() || schema.is_boolean()) {
            return Err(format!("a schema must be an object or a boolean, got {schema}"));
        }
        let Some(dialect) = Dialect::detect(schema) else {
            return Err(format!(
                "unsupported \"$schema\" {}: supported are drafts 2020-12 (the default), 2019-09, 07, 06 and 04",
                schema.get("$schema").unwrap_or(&Value::Null)
            ));
        };
        let options = jsonschema::options().with_draft(dialect.draft()).should_validate_formats(false).offline();
        // The schema comes from a server we do not control; a panic in the compiler on some odd schema must become
        // an error for that one tool, not take the gateway down.
        let built = catch_unwind(AssertUnwindSafe(|| options.build(schema)))
            .map_err(|_| "the schema compiler panicked on this schema".to_owned())?;
        let validator = built.map_err(|e| {
            let at = e.instance_path().as_str();
            if at.is_empty() { e.to_string() } else { format!("{at}: {e}") }
        })?;
        Ok(SchemaValidator { dialect, validator })
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    pub fn is_valid(&self, instance: &Value) -> bool {
        self.validator.is_valid(instance)
    }

    /// `Ok` or the first [`MAX_VIOLATIONS`] violations ordered by pointer, and whether there were more.
    pub fn check(&self, instance: &Value) -> Result<(), (Vec<Violation>, bool)> {
        // The fast path: no error objects are built for a valid instance.
        if self.validator.is_valid(instance) {
            return Ok(());
        }
        let mut found: Vec<Violation> = self
            .validator
            .iter_errors(instance)
            .take(COLLECT)
            .map(|e| {
                Violation::new(
                    e.instance_path().as_str().to_owned(),
                    e.kind().keyword().to_owned(),
                    e.to_string(),
                    e.schema_path().as_str().to_owned(),
                )
            })
            .collect();
        if found.is_empty() {
            // is_valid and iter_errors disagreeing would be a validator bug; still refuse, and say so.
            found.push(Violation::new(String::new(), String::new(), "invalid".into(), String::new()));
        }
        found.sort();
        found.dedup();
        let truncated = found.len() > MAX_VIOLATIONS;
        found.truncate(MAX_VIOLATIONS);
        Err((found, truncated))
    }
}
