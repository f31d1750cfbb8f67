//! One pass over a frame's top-level object, keeping the fields JSON-RPC names: the small ones (`jsonrpc`, `id`,
//! `method`, `params`, `error`) as [`Value`]s, `result` as raw text for its caller to parse into the shape it wants
//! (see [`Payload`]). Other members are parsed and dropped, so a frame is "not JSON" exactly when it was as a whole
//! `Value`, apart from the `result` text (see [`Payload`]). A repeated member keeps its last value, as a `Value` map
//! did.

use std::fmt;

use serde::Deserializer;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, Deserialize, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::Payload;
use super::member::{Member, MemberName};

/// What a frame's top level turned out to be.
pub(super) enum Shape {
    Object(Fields),
    Array,
    Scalar,
}

#[derive(Default)]
pub(super) struct Fields {
    pub jsonrpc: Option<Version>,
    pub id: Option<Value>,
    pub method: Option<Value>,
    pub params: Option<Value>,
    pub result: Option<Payload>,
    pub error: Option<Value>,
}

/// A frame's `jsonrpc` member: whether it is the string `"2.0"`, read without keeping the string. Any other value is
/// parsed whole as a [`Value`] would be, so what is "not JSON" stays so.
pub(crate) struct Version(pub bool);

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(VersionVisitor)
    }
}

struct VersionVisitor;

impl<'de> Visitor<'de> for VersionVisitor {
    type Value = Version;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Version, E> {
        Ok(Version(v == "2.0"))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Version, A::Error> {
        Value::deserialize(MapAccessDeserializer::new(map)).map(|_| Version(false))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Version, A::Error> {
        Value::deserialize(SeqAccessDeserializer::new(seq)).map(|_| Version(false))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Version, E> {
        Ok(Version(false))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Version, E> {
        Ok(Version(false))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Version, E> {
        Ok(Version(false))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Version, E> {
        Ok(Version(false))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Version, E> {
        Ok(Version(false))
    }
}

/// Reads one frame. Errors are serde_json's, for text that is not one well-formed JSON value.
pub(super) fn read(frame: &[u8]) -> Result<Shape, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(frame);
    let shape = ShapeSeed.deserialize(&mut de)?;
    de.end()?;
    Ok(shape)
}

struct ShapeSeed;

impl<'de> DeserializeSeed<'de> for ShapeSeed {
    type Value = Shape;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Shape, D::Error> {
        deserializer.deserialize_any(ShapeVisitor)
    }
}

struct ShapeVisitor;

/// The member names of a JSON-RPC message (also what the quick reader of `tools/call` responses looks for).
pub(crate) enum Key {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
}

impl MemberName for Key {
    fn classify(name: &str) -> Key {
        match name {
            "jsonrpc" => Key::Jsonrpc,
            "id" => Key::Id,
            "method" => Key::Method,
            "params" => Key::Params,
            "result" => Key::Result,
            "error" => Key::Error,
            _ => Key::Other,
        }
    }
}

impl<'de> Visitor<'de> for ShapeVisitor {
    type Value = Shape;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Shape, A::Error> {
        let mut fields = Fields::default();
        while let Some(Member(key)) = map.next_key::<Member<Key>>()? {
            match key {
                Key::Jsonrpc => fields.jsonrpc = Some(map.next_value()?),
                Key::Id => fields.id = Some(map.next_value()?),
                Key::Method => fields.method = Some(map.next_value()?),
                Key::Params => fields.params = Some(map.next_value()?),
                Key::Result => fields.result = Some(Payload::from_raw(map.next_value::<&RawValue>()?)),
                Key::Error => fields.error = Some(map.next_value()?),
                // Parsed as fully as before (a number out of range is still "not JSON"); rare on the hot path.
                Key::Other => {
                    map.next_value::<Value>()?;
                }
            }
        }
        Ok(Shape::Object(fields))
    }

    /// A batch: read to its end, so a malformed one is still "not JSON".
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Shape, A::Error> {
        while seq.next_element::<Value>()?.is_some() {}
        Ok(Shape::Array)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Shape, E> {
        Ok(Shape::Scalar)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Shape, E> {
        Ok(Shape::Scalar)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Shape, E> {
        Ok(Shape::Scalar)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Shape, E> {
        Ok(Shape::Scalar)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Shape, E> {
        Ok(Shape::Scalar)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Shape, E> {
        Ok(Shape::Scalar)
    }
}
