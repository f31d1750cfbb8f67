//! Content hashes of canonical JSON: the capability record's ETag.
//!
//! Canonical means objects with their keys sorted (by bytes, as a `BTreeMap<String, _>` orders them), no whitespace,
//! arrays in their order. The sort is done here rather than trusted to `serde_json::Map`, which keeps insertion order
//! as soon as any crate in the build enables serde_json's `preserve_order` feature: the hash must not depend on how
//! the server ordered its keys, nor on the feature set of the build.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// A SHA-256 of canonical JSON. Displays (and serialises) as 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContentHash([u8; 32]);

impl ContentHash {
    /// The hash of `value`'s canonical form.
    pub fn of(value: &Value) -> Self {
        ContentHash(Sha256::digest(canonical_json(value)).into())
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    pub fn to_hex(&self) -> String {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut s = String::with_capacity(64);
        for b in self.0 {
            s.push(char::from(HEX[usize::from(b >> 4)]));
            s.push(char::from(HEX[usize::from(b & 0xf)]));
        }
        s
    }

    pub fn from_hex(hex: &str) -> Option<Self> {
        if hex.len() != 64 || !hex.is_ascii() {
            return None;
        }
        let mut out = [0u8; 32];
        for (byte, pair) in out.iter_mut().zip(hex.as_bytes().chunks_exact(2)) {
            let pair = std::str::from_utf8(pair).ok()?;
            *byte = u8::from_str_radix(pair, 16).ok()?;
        }
        Some(ContentHash(out))
    }
}

impl fmt::Display for ContentHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for ContentHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ContentHash({})", self.to_hex())
    }
}

impl Serialize for ContentHash {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for ContentHash {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        ContentHash::from_hex(&s).ok_or_else(|| serde::de::Error::custom("expected 64 hex digits"))
    }
}

/// `value` as canonical JSON bytes.
pub fn canonical_json(value: &Value) -> Vec<u8> {
    // Serialising to memory fails only for non-string map keys, which a `Value` cannot have.
    serde_json::to_vec(&Canonical(value)).unwrap_or_default()
}

/// Serialises a `Value` with every object's keys sorted, without copying it.
struct Canonical<'a>(&'a Value);

impl Serialize for Canonical<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Array(items) => s.collect_seq(items.iter().map(Canonical)),
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                s.collect_map(entries.into_iter().map(|(k, v)| (k, Canonical(v))))
            }
            scalar => scalar.serialize(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_form_sorts_keys_at_every_depth() {
        let mut inner = serde_json::Map::new();
        inner.insert("z".into(), json!(1));
        inner.insert("a".into(), json!([{"y": true, "b": null}]));
        let v = json!({"k": Value::Object(inner), "c": "é\"\n"});
        assert_eq!(
            String::from_utf8(canonical_json(&v)).unwrap(),
            r#"{"c":"é\"\n","k":{"a":[{"b":null,"y":true}],"z":1}}"#
        );
    }

    #[test]
    fn hex_round_trips_and_rejects_garbage() {
        let h = ContentHash::of(&json!({"a": 1}));
        assert_eq!(ContentHash::from_hex(&h.to_hex()), Some(h));
        let json = serde_json::to_string(&h).unwrap();
        assert_eq!(serde_json::from_str::<ContentHash>(&json).unwrap(), h);
        assert_eq!(ContentHash::from_hex("zz"), None);
        assert_eq!(ContentHash::from_hex(&"g".repeat(64)), None);
    }

    #[test]
    fn known_vector() {
        // sha256 of the two bytes `{}`.
        assert_eq!(
            ContentHash::of(&json!({})).to_hex(),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
    }
}
