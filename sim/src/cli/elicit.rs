//! `mcpstorm call --elicit`: how the CLI answers a server that asks its user to fill a form mid-call
//! (`elicitation/create`, form mode). On a terminal it asks (`ask`: each field on stderr with its default, read from
//! stdin, an empty line taking the default); elsewhere it declines, since nobody is there to answer; `accept-defaults`
//! accepts with the schema's defaults (SEP-1034), for scripts whose forms are known. Sampling, roots and URL-mode
//! elicitation are not answered: the CLI has no model, no roots and no browser (-32601).

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use clap::ValueEnum;
use mcpstorm_core::conn::{AskSink, Asked};
use mcpstorm_core::jsonrpc::{ErrorCode, ErrorObject};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// How `call` answers a server's form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ElicitMode {
    /// Ask on the terminal, field by field (the default when stdin is a terminal).
    Ask,
    /// Decline every form (the default otherwise).
    Decline,
    /// Accept every form with its schema's defaults; a form with a required field that has no default is declined.
    AcceptDefaults,
}

impl ElicitMode {
    /// `--elicit`, else `ask` on a terminal and `decline` elsewhere.
    pub fn resolve(flag: Option<ElicitMode>) -> ElicitMode {
        flag.unwrap_or(if std::io::stdin().is_terminal() { ElicitMode::Ask } else { ElicitMode::Decline })
    }
}

/// What the CLI declares to servers: forms only.
pub fn capabilities() -> Value {
    json!({ "elicitation": { "form": {} } })
}

/// The sink a call's server requests go to, and the task answering them (ends when the call's options are dropped).
pub fn answering(mode: ElicitMode) -> (AskSink, JoinHandle<()>) {
    let (tx, mut rx) = mpsc::channel::<Asked>(4);
    let task = tokio::spawn(async move {
        while let Some(Asked { method, params, reply }) = rx.recv().await {
            let answer = match method.as_str() {
                "elicitation/create" => {
                    let params = params.unwrap_or(Value::Null);
                    tokio::task::spawn_blocking(move || answer(mode, &params)).await.unwrap_or_else(|_| decline())
                }
                other => {
                    Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, format!("mcpstorm call does not answer {other}")))
                }
            };
            let _ = reply.send(answer);
        }
    });
    (Arc::new(tx), task)
}

fn decline() -> Result<Value, ErrorObject> {
    Ok(json!({ "action": "decline" }))
}

/// The answer to one form.
fn answer(mode: ElicitMode, params: &Value) -> Result<Value, ErrorObject> {
    if params.get("mode").and_then(Value::as_str) == Some("url") {
        return Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "mcpstorm call does not open URLs"));
    }
    let message = params.get("message").and_then(Value::as_str).unwrap_or("");
    let schema = params.get("requestedSchema").cloned().unwrap_or(Value::Null);
    match mode {
        ElicitMode::Decline => {
            eprintln!("the server asks: {message} (declined: --elicit ask or accept-defaults to answer)");
            decline()
        }
        ElicitMode::AcceptDefaults => Ok(match defaults(&schema) {
            Some(content) => json!({ "action": "accept", "content": content }),
            None => {
                eprintln!("the server asks: {message} (declined: a required field has no default)");
                json!({ "action": "decline" })
            }
        }),
        ElicitMode::Ask => Ok(ask(message, &schema, &mut std::io::stdin().lock())),
    }
}

/// Each property's default; `None` when a required property has none.
fn defaults(schema: &Value) -> Option<Map<String, Value>> {
    let properties = schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
    let required = required(schema);
    let mut content = Map::new();
    for (name, property) in properties {
        match property.get("default") {
            Some(default) => {
                content.insert(name, default.clone());
            }
            None if required.contains(&name) => return None,
            None => {}
        }
    }
    Some(content)
}

fn required(schema: &Value) -> Vec<String> {
    let list = schema.get("required").and_then(Value::as_array);
    list.map(|r| r.iter().filter_map(Value::as_str).map(str::to_owned).collect()).unwrap_or_default()
}

/// Asks on stderr, reads `input`: each field until its value parses (an empty line takes the default, or skips an
/// optional field); end of input declines.
fn ask(message: &str, schema: &Value, input: &mut impl BufRead) -> Value {
    let mut err = std::io::stderr();
    let _ = writeln!(err, "the server asks: {message}");
    let properties = schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
    let required = required(schema);
    let mut content = Map::new();
    for (name, property) in properties {
        loop {
            let default = property.get("default");
            let shown = default.map(|d| format!(" [{d}]")).unwrap_or_default();
            let kind = property.get("type").and_then(Value::as_str).unwrap_or("string");
            let _ = write!(err, "  {name} ({kind}){shown}: ");
            let _ = err.flush();
            let mut line = String::new();
            if input.read_line(&mut line).unwrap_or(0) == 0 {
                let _ = writeln!(err);
                return json!({ "action": "decline" });
            }
            let line = line.trim();
            if line.is_empty() {
                match default {
                    Some(d) => {
                        content.insert(name.clone(), d.clone());
                    }
                    None if required.contains(&name) => continue,
                    None => {}
                }
                break;
            }
            match parse(&property, line) {
                Ok(value) => {
                    content.insert(name.clone(), value);
                    break;
                }
                Err(why) => {
                    let _ = writeln!(err, "  {why}");
                }
            }
        }
    }
    json!({ "action": "accept", "content": content })
}

/// A typed value of `property` from what the user typed.
fn parse(property: &Value, text: &str) -> Result<Value, String> {
    let value = match property.get("type").and_then(Value::as_str).unwrap_or("string") {
        "boolean" => match text.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Value::Bool(true),
            "n" | "no" | "false" => Value::Bool(false),
            _ => return Err("answer yes or no".into()),
        },
        "integer" => text.parse::<i64>().map(Value::from).map_err(|_| "a whole number, please".to_owned())?,
        "number" => text.parse::<f64>().ok().filter(|n| n.is_finite()).map(Value::from).ok_or("a number, please")?,
        _ => Value::String(text.to_owned()),
    };
    let choices: Vec<&Value> = match (property.get("enum"), property.get("oneOf")) {
        (Some(Value::Array(e)), _) => e.iter().collect(),
        (_, Some(Value::Array(one))) => one.iter().filter_map(|o| o.get("const")).collect(),
        _ => Vec::new(),
    };
    if !choices.is_empty() && !choices.contains(&&value) {
        let listed: Vec<String> = choices.iter().map(|c| c.to_string()).collect();
        return Err(format!("one of {}", listed.join(", ")));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> Value {
        json!({ "type": "object", "properties": {
            "name": { "type": "string", "default": "John Doe" },
            "age": { "type": "integer", "default": 30 },
            "status": { "type": "string", "enum": ["active", "inactive"], "default": "active" },
            "verified": { "type": "boolean" }
        }, "required": ["name"] })
    }

    #[test]
    fn accept_defaults_fills_every_default_and_declines_a_required_field_without_one() {
        let content = defaults(&form()).expect("every required field has a default");
        assert_eq!(Value::Object(content), json!({ "name": "John Doe", "age": 30, "status": "active" }));
        let missing = json!({ "properties": { "email": { "type": "string" } }, "required": ["email"] });
        assert_eq!(defaults(&missing), None);
    }

    #[test]
    fn asking_types_each_answer_takes_defaults_and_asks_again_on_a_bad_one() {
        // age: a bad number, then 41; name: the default; status: not a choice, then inactive; verified: yes.
        let typed = "x\n41\n\nbogus\ninactive\nyes\n";
        let answer = ask("who?", &form(), &mut typed.as_bytes());
        assert_eq!(
            answer,
            json!({ "action": "accept", "content": { "age": 41, "name": "John Doe", "status": "inactive", "verified": true } })
        );
        assert_eq!(ask("who?", &form(), &mut "".as_bytes()), json!({ "action": "decline" }), "end of input declines");
    }
}
