use std::collections::BTreeMap;
use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// A response's `result`, kept as the JSON text the peer sent until its caller parses it into the shape it wants
/// (a `tools/call` result straight into `CallToolResult`, an unknown method's into a [`Value`]). Decoding a frame into
/// a `Value` tree and then that tree into the typed result built every map and string twice; this is the hot path of
/// every call.
///
/// The frame decoder checked that the text is one well-formed JSON value. What only a full parse finds (a number out
/// of `f64` range, nesting deeper than serde_json's limit) surfaces when it is parsed, as that call's error.
#[derive(Clone)]
pub struct Payload(Box<RawValue>);

impl Payload {
    pub(super) fn from_raw(raw: &RawValue) -> Self {
        Payload(raw.to_owned())
    }

    /// The payload of a value we send. Serialising a `Value` cannot fail (its map keys are strings).
    pub fn from_value(value: &Value) -> Self {
        Self::serialize(value).unwrap_or_else(|_| Payload::null())
    }

    /// Serialises `value` straight into payload text, with no `Value` in between.
    pub fn serialize<T: Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        serde_json::value::to_raw_value(value).map(Payload)
    }

    fn null() -> Self {
        Payload(RawValue::NULL.to_owned())
    }

    /// Parses the payload into `T`.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.0.get())
    }

    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        self.parse()
    }

    /// The JSON text, as the peer sent it.
    pub fn get(&self) -> &str {
        self.0.get()
    }

    /// This object without its member `name` (the others' text kept as it came; `None` when none is left). Text that
    /// is not an object is kept whole.
    pub fn without_member(&self, name: &str) -> Option<Payload> {
        // Borrowed names and values: nothing is copied but the text written out. A name spelt with escapes cannot be
        // borrowed, and goes through a tree.
        let kept = match serde_json::from_str::<BTreeMap<&str, &RawValue>>(self.get()) {
            Ok(mut members) => {
                members.remove(name);
                (!members.is_empty()).then(|| Payload::serialize(&members))
            }
            Err(_) => match self.to_value() {
                Ok(Value::Object(mut members)) => {
                    members.remove(name);
                    (!members.is_empty()).then(|| Payload::serialize(&members))
                }
                _ => return Some(self.clone()),
            },
        };
        kept.map(|written| written.unwrap_or_else(|_| self.clone()))
    }
}

impl From<Value> for Payload {
    fn from(value: Value) -> Self {
        Payload::from_value(&value)
    }
}

impl Serialize for Payload {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// Keeps the value's JSON text (checked to be well-formed, not parsed into anything).
impl<'de> Deserialize<'de> for Payload {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(deserializer).map(Payload)
    }
}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.get())
    }
}

/// JSON equality, not textual: `{"a": 1}` equals `{"a":1}`. Text that does not parse compares as text.
impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        match (self.to_value(), other.to_value()) {
            (Ok(a), Ok(b)) => a == b,
            _ => self.get() == other.get(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_into_the_shape_asked_and_compares_as_json() {
        let p = Payload::from_value(&json!({"b": [1, 2], "a": "x"}));
        assert_eq!(p.get(), r#"{"a":"x","b":[1,2]}"#);
        assert_eq!(p.parse::<std::collections::BTreeMap<String, Value>>().unwrap().len(), 2);
        let spaced: Box<RawValue> = serde_json::from_str(r#"{ "b": [1,2], "a": "x" }"#).unwrap();
        assert_eq!(Payload::from_raw(&spaced), p);
        assert_ne!(Payload::from_value(&json!(1)), p);
        assert!(p.parse::<Vec<Value>>().is_err());
    }

    #[test]
    fn a_member_is_taken_out_and_the_rest_kept_as_written() {
        let text: Box<RawValue> = serde_json::from_str(r#"{"b": [1, 2], "a": { "x": 1 }}"#).unwrap();
        let p = Payload::from_raw(&text);
        assert_eq!(p.without_member("b").unwrap().get(), r#"{"a":{ "x": 1 }}"#);
        assert_eq!(p.without_member("c").unwrap().get(), r#"{"a":{ "x": 1 },"b":[1, 2]}"#);
        assert_eq!(Payload::from_value(&json!({"a": 1})).without_member("a"), None);
        let escaped: Box<RawValue> = serde_json::from_str(r#"{"\u0061": 1, "b": 2}"#).unwrap();
        assert_eq!(Payload::from_raw(&escaped).without_member("a").unwrap().get(), r#"{"b":2}"#);
        assert_eq!(Payload::from_value(&json!([1])).without_member("a").unwrap().get(), "[1]");
    }

    #[test]
    fn what_only_a_full_parse_finds_fails_at_the_parse() {
        let huge: Box<RawValue> = serde_json::from_str("[1e400]").unwrap();
        assert!(Payload::from_raw(&huge).to_value().unwrap_err().to_string().contains("number out of range"));
    }
}
