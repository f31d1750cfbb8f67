//! A tool's compiled schemas: its arguments checked against `inputSchema`, its structured results against
//! `outputSchema`.

use serde_json::Value;

use super::SchemaValidator;
use super::error::{ArgumentError, OutputError, SchemaError, SchemaKind};
use crate::mcp::{CallToolResult, Tool};

/// A tool's compiled `inputSchema` and, when it declares one, `outputSchema`.
#[derive(Debug)]
pub struct ToolSchemas {
    tool: String,
    input: SchemaValidator,
    output: Option<SchemaValidator>,
}

impl ToolSchemas {
    /// Compiles both schemas. Either failing makes the tool unusable: we would otherwise send unchecked arguments
    /// or accept unchecked results.
    pub fn compile(tool: &Tool) -> Result<ToolSchemas, SchemaError> {
        let error = |schema, message| SchemaError { tool: tool.name.clone(), schema, message };
        let input = SchemaValidator::compile(&tool.input_schema).map_err(|m| error(SchemaKind::Input, m))?;
        let output = match &tool.output_schema {
            Some(schema) => Some(SchemaValidator::compile(schema).map_err(|m| error(SchemaKind::Output, m))?),
            None => None,
        };
        Ok(ToolSchemas { tool: tool.name.clone(), input, output })
    }

    pub fn input(&self) -> &SchemaValidator {
        &self.input
    }

    pub fn output(&self) -> Option<&SchemaValidator> {
        self.output.as_ref()
    }

    /// Checks a call's arguments against the `inputSchema`. Arguments must be a JSON object whatever the schema
    /// says (MCP sends them as one).
    pub fn validate_arguments(&self, arguments: &Value) -> Result<(), ArgumentError> {
        if !arguments.is_object() {
            return Err(ArgumentError::not_an_object(&self.tool, arguments));
        }
        self.input.check(arguments).map_err(|(violations, truncated)| ArgumentError {
            tool: self.tool.clone(),
            violations,
            truncated,
        })
    }

    /// Checks a successful result's `structuredContent` against the `outputSchema`, when both are present. Error
    /// results (`isError: true`) are not bound by the output schema, and a result without `structuredContent` is
    /// accepted (older servers send text only).
    pub fn validate_result(&self, result: &CallToolResult) -> Result<(), OutputError> {
        match (&self.output, &result.structured_content) {
            (Some(schema), Some(content)) if !result.is_error => schema
                .check(content)
                .map_err(|(violations, truncated)| OutputError { tool: self.tool.clone(), violations, truncated }),
            _ => Ok(()),
        }
    }
}
