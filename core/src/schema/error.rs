//! What validation reports: each failure names the JSON pointer of the offending value and the schema keyword that
//! rejected it.

use std::fmt;

use serde_json::Value;

/// Violations reported per check. Beyond this an error says "and more": a bad call is fixed one problem at a time.
pub const MAX_VIOLATIONS: usize = 10;

/// Longest message kept for one violation. A message quotes the offending value, which can be a whole argument
/// object; the pointer already says where it is.
pub(crate) const MAX_MESSAGE_CHARS: usize = 200;

/// One way an instance failed its schema.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Violation {
    /// JSON pointer (RFC 6901) of the failing value inside the instance; `""` is the instance itself.
    pub pointer: String,
    /// The schema keyword that rejected it: `type`, `required`, `additionalProperties`, `enum`, ...
    pub keyword: String,
    /// The human-readable reason, at most `MAX_MESSAGE_CHARS` (200) characters.
    pub message: String,
    /// JSON pointer of that keyword inside the schema, e.g. `/properties/message/type`.
    pub schema_pointer: String,
}

impl Violation {
    pub(crate) fn new(pointer: String, keyword: String, message: String, schema_pointer: String) -> Self {
        Violation { pointer, keyword, message: truncate(message), schema_pointer }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() { "(root)" } else { &self.pointer };
        write!(f, "{at}: {}", self.message)
    }
}

fn truncate(mut message: String) -> String {
    if let Some((cut, _)) = message.char_indices().nth(MAX_MESSAGE_CHARS) {
        message.truncate(cut);
        message.push('…');
    }
    message
}

fn fmt_violations(f: &mut fmt::Formatter<'_>, violations: &[Violation], truncated: bool) -> fmt::Result {
    for (i, v) in violations.iter().enumerate() {
        if i > 0 {
            f.write_str("; ")?;
        }
        write!(f, "{v}")?;
    }
    if truncated {
        f.write_str("; and more")?;
    }
    Ok(())
}

/// A tool's arguments do not satisfy its `inputSchema`. Displays as `tool "echo": /message: 3 is not of type
/// "string"`, several violations separated by `; `.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentError {
    pub tool: String,
    /// The first few violations (at most [`MAX_VIOLATIONS`]), ordered by pointer.
    pub violations: Vec<Violation>,
    /// More violations were found than are listed.
    pub truncated: bool,
}

impl ArgumentError {
    /// MCP arguments are always an object, whatever the schema says.
    pub fn not_an_object(tool: &str, arguments: &Value) -> Self {
        ArgumentError {
            tool: tool.to_owned(),
            violations: vec![Violation::new(
                String::new(),
                "type".into(),
                format!("{arguments} is not of type \"object\" (tool arguments must be a JSON object)"),
                String::new(),
            )],
            truncated: false,
        }
    }

    /// The pointer of the first violation (`""` for the arguments object itself).
    pub fn pointer(&self) -> Option<&str> {
        self.violations.first().map(|v| v.pointer.as_str())
    }
}

impl fmt::Display for ArgumentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tool {:?}: ", self.tool)?;
        fmt_violations(f, &self.violations, self.truncated)
    }
}

impl std::error::Error for ArgumentError {}

/// A tool's `structuredContent` does not satisfy its own `outputSchema`: the server broke its contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputError {
    pub tool: String,
    pub violations: Vec<Violation>,
    pub truncated: bool,
}

impl fmt::Display for OutputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tool {:?} returned structuredContent that violates its outputSchema: ", self.tool)?;
        fmt_violations(f, &self.violations, self.truncated)
    }
}

impl std::error::Error for OutputError {}

/// Which of a tool's schemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SchemaKind {
    Input,
    Output,
}

impl SchemaKind {
    pub fn field(self) -> &'static str {
        match self {
            SchemaKind::Input => "inputSchema",
            SchemaKind::Output => "outputSchema",
        }
    }
}

/// A tool's schema cannot be used: it does not compile, names an unsupported draft, or `$ref`s something outside
/// itself (never fetched). Calling the tool fails locally with this error rather than sending unchecked arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    pub tool: String,
    pub schema: SchemaKind,
    /// Where in the schema and why, e.g. `/properties/n/type: "strin" is not valid under any of the schemas ...`.
    pub message: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tool {:?} has an unusable {}: {}", self.tool, self.schema.field(), self.message)
    }
}

impl std::error::Error for SchemaError {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn long_messages_are_cut_on_a_char_boundary() {
        let v = Violation::new("/a".into(), "type".into(), "é".repeat(500), String::new());
        assert_eq!(v.message.chars().count(), MAX_MESSAGE_CHARS + 1);
        assert!(v.message.ends_with('…'));
    }

    #[test]
    fn display_names_tool_pointer_and_root() {
        let e = ArgumentError::not_an_object("echo", &json!([1]));
        assert_eq!(e.pointer(), Some(""));
        assert_eq!(
            e.to_string(),
            "tool \"echo\": (root): [1] is not of type \"object\" (tool arguments must be a JSON object)"
        );
    }
}
