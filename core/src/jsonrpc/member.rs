//! Reading a JSON object member's name straight into the caller's own enum of the names it knows (no allocation
//! for those), for the hand-written visitors of the hot path: a frame's top level ([`super::fields`]) and a
//! `tools/call` result (`mcp/call_result.rs`).

use std::fmt;
use std::marker::PhantomData;

use serde::Deserializer;
use serde::de::{self, Deserialize, Visitor};

/// An enum of member names; `classify` maps any other name to its catch-all variant.
pub(crate) trait MemberName: Sized {
    fn classify(name: &str) -> Self;
}

/// A member name, classified as it is read: `map.next_key::<Member<K>>()`.
pub(crate) struct Member<K>(pub K);

impl<'de, K: MemberName> Deserialize<'de> for Member<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_identifier(NameVisitor(PhantomData))
    }
}

struct NameVisitor<K>(PhantomData<K>);

impl<K: MemberName> Visitor<'_> for NameVisitor<K> {
    type Value = Member<K>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("field identifier")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Member<K>, E> {
        Ok(Member(K::classify(name)))
    }
}
