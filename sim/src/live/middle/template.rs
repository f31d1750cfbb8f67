//! The middles' templates: a small subset of Mustache, enough to write a proxy's config from the run's servers and
//! nothing that could run code.
//!
//! - `{{name}}` is a value of the context (a string, a number or a boolean), looked up from the innermost section
//!   outwards;
//! - `{{#name}}…{{/name}}` repeats its body for each element of a list (each element's keys in scope), renders it
//!   once for `true` or a non-empty string, and not at all for `false`, an empty list or an empty string;
//! - `{{^name}}…{{/name}}` renders its body only where `{{#name}}` would not (`{{^last}},{{/last}}`);
//! - `{{! a comment }}`.
//!
//! A section tag alone on its line takes the line with it, so a template reads as the file it writes. A name the
//! context does not have, or a section left open, is an error at its line and column: a template that would write a
//! config the middle then misreads is refused before anything starts.

use serde_json::Value;

/// A template error at `line`:`column` (from 1) of the template.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{column}: {message}")]
pub struct TemplateError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// `template` rendered against `context` (an object).
pub fn render(template: &str, context: &Value) -> Result<String, TemplateError> {
    let tokens = lex(template)?;
    let (nodes, rest) = parse(&tokens, None, template)?;
    debug_assert!(rest.is_empty());
    let mut out = String::with_capacity(template.len());
    let mut scopes = vec![context];
    emit(&nodes, &mut scopes, &mut out, template)?;
    Ok(out)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    Value,
    Open,
    Inverted,
    Close,
}

#[derive(Debug)]
enum Token<'a> {
    Text(&'a str),
    /// A tag, its name and its offset in the template.
    Tag(Tag, &'a str, usize),
}

enum Node<'a> {
    Text(&'a str),
    Value(&'a str, usize),
    Section { name: &'a str, at: usize, inverted: bool, body: Vec<Node<'a>> },
}

fn error_at(template: &str, at: usize, message: String) -> TemplateError {
    let before = &template[..at.min(template.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    TemplateError { line, column, message }
}

fn lex(template: &str) -> Result<Vec<Token<'_>>, TemplateError> {
    let mut tokens = Vec::new();
    let mut pos = 0;
    while let Some(found) = template[pos..].find("{{") {
        let open = pos + found;
        let Some(len) = template[open + 2..].find("}}") else {
            return Err(error_at(template, open, "`{{` without its `}}`".into()));
        };
        let inner = template[open + 2..open + 2 + len].trim();
        let close = open + 2 + len + 2;
        let (tag, name) = match inner.chars().next() {
            Some('#') => (Tag::Open, inner[1..].trim()),
            Some('^') => (Tag::Inverted, inner[1..].trim()),
            Some('/') => (Tag::Close, inner[1..].trim()),
            Some('!') => (Tag::Value, ""),
            _ => (Tag::Value, inner),
        };
        let comment = inner.starts_with('!');
        if !comment && !is_name(name) {
            return Err(error_at(template, open, format!("`{{{{{inner}}}}}`: not a name (letters, digits, `_`)")));
        }
        // A section tag (or a comment) alone on its line removes the whole line.
        let standalone = tag != Tag::Value || comment;
        let line_start = template[..open].rfind('\n').map_or(0, |i| i + 1);
        let line_end = template[close..].find('\n').map_or(template.len(), |i| close + i + 1);
        let alone = standalone
            && template[line_start..open].trim().is_empty()
            && template[close..line_end].trim().is_empty()
            && line_start >= pos;
        let (text_end, next) = if alone { (line_start, line_end) } else { (open, close) };
        if text_end > pos {
            tokens.push(Token::Text(&template[pos..text_end]));
        }
        if !comment {
            tokens.push(Token::Tag(tag, name, open));
        }
        pos = next;
    }
    if pos < template.len() {
        tokens.push(Token::Text(&template[pos..]));
    }
    Ok(tokens)
}

fn is_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The nodes up to the close of `open` (a section's name and offset), and the tokens after it.
fn parse<'a, 't>(
    mut tokens: &'t [Token<'a>],
    open: Option<(&'a str, usize)>,
    template: &str,
) -> Result<(Vec<Node<'a>>, &'t [Token<'a>]), TemplateError> {
    let mut nodes = Vec::new();
    while let Some((token, rest)) = tokens.split_first() {
        tokens = rest;
        match *token {
            Token::Text(text) => nodes.push(Node::Text(text)),
            Token::Tag(Tag::Value, name, at) => nodes.push(Node::Value(name, at)),
            Token::Tag(tag @ (Tag::Open | Tag::Inverted), name, at) => {
                let (body, rest) = parse(tokens, Some((name, at)), template)?;
                tokens = rest;
                nodes.push(Node::Section { name, at, inverted: tag == Tag::Inverted, body });
            }
            Token::Tag(Tag::Close, name, at) => {
                return match open {
                    Some((opened, _)) if opened == name => Ok((nodes, tokens)),
                    Some((opened, _)) => {
                        Err(error_at(template, at, format!("`{{{{/{name}}}}}` closes `{opened}`, which is still open")))
                    }
                    None => Err(error_at(template, at, format!("`{{{{/{name}}}}}` closes no section"))),
                };
            }
        }
    }
    match open {
        Some((name, at)) => Err(error_at(template, at, format!("section `{name}` is never closed"))),
        None => Ok((nodes, tokens)),
    }
}

fn lookup<'v>(scopes: &[&'v Value], name: &str) -> Option<&'v Value> {
    scopes.iter().rev().find_map(|scope| scope.get(name))
}

fn emit<'v>(nodes: &[Node<'_>], scopes: &mut Vec<&'v Value>, out: &mut String, t: &str) -> Result<(), TemplateError> {
    for node in nodes {
        match node {
            Node::Text(text) => out.push_str(text),
            Node::Value(name, at) => match lookup(scopes, name) {
                Some(Value::String(s)) => out.push_str(s),
                Some(v @ (Value::Number(_) | Value::Bool(_))) => out.push_str(&v.to_string()),
                Some(_) => return Err(error_at(t, *at, format!("`{name}` is a list or a table, not a value"))),
                None => return Err(error_at(t, *at, unknown(scopes, name))),
            },
            Node::Section { name, at, inverted, body } => {
                let Some(value) = lookup(scopes, name) else { return Err(error_at(t, *at, unknown(scopes, name))) };
                let items: Vec<&'v Value> = match value {
                    Value::Array(items) => items.iter().collect(),
                    Value::Bool(false) | Value::Null => Vec::new(),
                    Value::String(s) if s.is_empty() => Vec::new(),
                    other => vec![other],
                };
                if *inverted {
                    if items.is_empty() {
                        emit(body, scopes, out, t)?;
                    }
                    continue;
                }
                for item in items {
                    scopes.push(item);
                    let done = emit(body, scopes, out, t);
                    scopes.pop();
                    done?;
                }
            }
        }
    }
    Ok(())
}

/// "no `name` here", with the names that are.
fn unknown(scopes: &[&Value], name: &str) -> String {
    let mut known: Vec<&str> =
        scopes.iter().filter_map(|s| s.as_object()).flat_map(|o| o.keys().map(String::as_str)).collect();
    known.sort_unstable();
    known.dedup();
    format!("no `{name}` here (known: {})", known.join(", "))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn context() -> Value {
        json!({
            "listen": "127.0.0.1:9000",
            "port": 9000,
            "servers": [
                {"name": "db", "last": false, "replicas": [{"url": "http://a/mcp"}, {"url": "http://b/mcp"}]},
                {"name": "search", "last": true, "replicas": [{"url": "http://c/mcp"}]},
            ],
        })
    }

    #[test]
    fn values_sections_and_standalone_lines() {
        let template = "listen {{listen}} ({{port}})\n{{#servers}}\nupstream {{name}} {\n{{#replicas}}\n  server \
                        {{url}}; # {{listen}}\n{{/replicas}}\n}\n{{/servers}}\nend\n";
        let text = render(template, &context()).unwrap();
        assert_eq!(
            text,
            "listen 127.0.0.1:9000 (9000)\nupstream db {\n  server http://a/mcp; # 127.0.0.1:9000\n  server \
             http://b/mcp; # 127.0.0.1:9000\n}\nupstream search {\n  server http://c/mcp; # 127.0.0.1:9000\n}\nend\n"
        );
    }

    #[test]
    fn an_inverted_section_separates_a_list() {
        let text = render("[{{#servers}}\"{{name}}\"{{^last}}, {{/last}}{{/servers}}]{{! done }}", &context());
        assert_eq!(text.unwrap(), "[\"db\", \"search\"]");
    }

    #[test]
    fn errors_name_their_line_and_column() {
        let e = render("a\n  {{#servers}}{{nme}}{{/servers}}", &context()).unwrap_err();
        assert_eq!((e.line, e.column), (2, 15), "{e}");
        assert!(e.message.contains("no `nme` here") && e.message.contains("name"), "{e}");
        let e = render("{{#servers}}\nx\n", &context()).unwrap_err();
        assert_eq!((e.line, e.column, e.message.as_str()), (1, 1, "section `servers` is never closed"));
        let e = render("{{#servers}}{{/replicas}}", &context()).unwrap_err();
        assert!(e.message.contains("closes `servers`"), "{e}");
        let e = render("x {{listen", &context()).unwrap_err();
        assert_eq!((e.line, e.column), (1, 3));
        let e = render("{{servers}}", &context()).unwrap_err();
        assert!(e.message.contains("not a value"), "{e}");
        let e = render("{{a b}}", &context()).unwrap_err();
        assert!(e.message.contains("not a name"), "{e}");
    }
}
