//! The units a scenario writes its durations in: [`Dur`] (`"250ms"`, `"2s"`, `"1m30s"`) and [`SignedDur`] for
//! clock offsets that may be negative. Every table's durations go through them, so the spelling, the schema and the
//! error for a bad one are the same everywhere.

use std::borrow::Cow;
use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

/// A duration written with a unit: `"250ms"`, `"2s"`, `"1m30s"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Dur(pub Duration);

impl Serialize for Dur {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(self.0).to_string())
    }
}

impl JsonSchema for Dur {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "A duration with a unit: \"250ms\", \"2s\", \"1m30s\" (units: ns, us, ms, s, m, h, d); at most 7 days.",
            "pattern": "^\\s*([0-9]+\\s*[a-zA-Zµ]+\\s*)+$",
            "examples": ["250ms", "2s", "1m30s"]
        })
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        humantime::parse_duration(&text).map(Dur).map_err(|e| {
            serde::de::Error::custom(format!("invalid duration {text:?} ({e}); write e.g. \"250ms\", \"2s\", \"1m\""))
        })
    }
}

/// A signed duration: `"-3m"`, `"+30s"`, `"90s"` (a clock's offset or step: ahead when positive, behind when
/// negative).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct SignedDur {
    pub negative: bool,
    pub magnitude: Duration,
}

impl SignedDur {
    pub fn as_millis(self) -> i64 {
        let ms = i64::try_from(self.magnitude.as_millis()).unwrap_or(i64::MAX);
        if self.negative { -ms } else { ms }
    }
}

impl std::fmt::Display for SignedDur {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sign = if self.negative && !self.magnitude.is_zero() { "-" } else { "" };
        write!(f, "{sign}{}", humantime::format_duration(self.magnitude))
    }
}

impl Serialize for SignedDur {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl JsonSchema for SignedDur {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "SignedDuration".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "A duration with a unit and an optional sign: \"-3m\" (behind), \"+30s\", \"90s\" (ahead); at most 7 days either way.",
            "pattern": "^\\s*[+-]?\\s*([0-9]+\\s*[a-zA-Zµ]+\\s*)+$",
            "examples": ["-3m", "+30s", "90s"]
        })
    }
}

impl<'de> Deserialize<'de> for SignedDur {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let trimmed = text.trim();
        let (negative, rest) = match trimmed.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, trimmed.strip_prefix('+').unwrap_or(trimmed)),
        };
        humantime::parse_duration(rest.trim()).map(|magnitude| SignedDur { negative, magnitude }).map_err(|e| {
            serde::de::Error::custom(format!(
                "invalid signed duration {text:?} ({e}); write e.g. \"-3m\", \"+30s\", \"90s\""
            ))
        })
    }
}
