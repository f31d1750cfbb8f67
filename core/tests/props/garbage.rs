//! Strategies for garbage: near-messages, mutated messages, token soup, junk frames and streams.

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::messages::{error_object, json_array, json_object, json_value, message, method_name, text};

/// Objects that are almost JSON-RPC messages: every field present or not, each with a right or wrong type. These
/// reach the decoder's deeper branches, which uniformly random bytes almost never do.
fn near_message() -> impl Strategy<Value = Vec<u8>> {
    let jsonrpc = prop_oneof![Just(json!("2.0")), Just(json!("1.0")), Just(json!(2.0)), Just(Value::Null)];
    let id = prop_oneof![
        any::<i64>().prop_map(Value::from),
        Just(json!(u64::MAX)),
        Just(json!(1.5)),
        Just(json!(3.0)),
        text().prop_map(Value::String),
        Just(Value::Null),
        Just(json!(true)),
        Just(json!({"id": 1})),
    ];
    let method = prop_oneof![method_name().prop_map(Value::String), Just(json!(7)), Just(Value::Null)];
    let params = prop_oneof![json_object(), json_array(), Just(Value::Null), Just(json!("p")), Just(json!(1))];
    let error = prop_oneof![
        error_object().prop_map(|e| serde_json::to_value(e).unwrap_or_default()),
        Just(json!({"code": 1})),
        Just(json!({"code": 1.5, "message": "m"})),
        Just(json!({"code": "1", "message": "m"})),
        Just(json!("boom")),
        Just(Value::Null),
        Just(json!({"code": -32600, "message": "m", "data": null})),
    ];
    (
        prop::option::of(jsonrpc),
        prop::option::of(id),
        prop::option::of(method),
        prop::option::of(params),
        prop::option::of(json_value()),
        prop::option::of(error),
    )
        .prop_map(|(jsonrpc, id, method, params, result, error)| {
            let mut map = serde_json::Map::new();
            let fields = [("jsonrpc", jsonrpc), ("id", id), ("method", method), ("params", params)];
            for (k, v) in fields.into_iter().chain([("result", result), ("error", error)]) {
                if let Some(v) = v {
                    map.insert(k.to_owned(), v);
                }
            }
            serde_json::to_vec(&Value::Object(map)).unwrap_or_default()
        })
}

/// A valid encoding with a few bytes deleted, inserted, flipped, or the tail cut.
fn mutated_message() -> impl Strategy<Value = Vec<u8>> {
    let edit = (any::<prop::sample::Index>(), any::<u8>(), 0u8..4);
    (message(), prop::collection::vec(edit, 1..4)).prop_map(|(m, edits)| {
        let mut bytes = m.encode();
        for (at, byte, kind) in edits {
            if bytes.is_empty() {
                bytes.push(byte);
                continue;
            }
            let i = at.index(bytes.len());
            match kind {
                0 => {
                    bytes.remove(i);
                }
                1 => bytes.insert(i, byte),
                2 => bytes[i] ^= byte | 1,
                _ => bytes.truncate(i),
            }
        }
        bytes
    })
}

fn token_soup() -> impl Strategy<Value = Vec<u8>> {
    const TOKENS: &[&str] = &[
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
        "\"jsonrpc\"",
        "\"2.0\"",
        "\"id\"",
        "\"method\"",
        "\"params\"",
        "\"result\"",
        "\"error\"",
        "\"code\"",
        "\"message\"",
        "\"data\"",
        "null",
        "true",
        "1",
        "-1",
        "1.5",
        "1e400",
        "-0",
        "18446744073709551616",
        "\"x\"",
        "\"\\ud800\"",
        "\"\\u0000\"",
        " ",
        "\t",
    ];
    prop::collection::vec(prop::sample::select(TOKENS), 0..32).prop_map(|t| t.concat().into_bytes())
}

pub(crate) fn junk_frame() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => prop::collection::vec(any::<u8>(), 0..256),
        3 => near_message(),
        2 => mutated_message(),
        2 => token_soup(),
    ]
}

/// A byte stream of garbage for the framing layer: newlines, CRs, invalid UTF-8, near-messages and long lines.
pub(crate) fn junk_stream() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        4 => junk_frame(),
        2 => Just(b"\n".to_vec()),
        1 => Just(b"\r\n".to_vec()),
        1 => Just(b"\r".to_vec()),
        1 => Just(b" \t \x0c".to_vec()),
        1 => Just(b"\xff\xfe\xc3\x28\xed\xa0\x80".to_vec()),
        1 => (1usize..3000).prop_map(|n| vec![b'x'; n]),
        1 => message().prop_map(|m| m.encode()),
    ];
    prop::collection::vec(piece, 0..12).prop_map(|p| p.concat())
}
