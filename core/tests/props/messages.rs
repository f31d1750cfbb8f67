//! Strategies for JSON values and JSON-RPC messages, and the approximate equality a float round trip allows.

use mcpstorm_core::jsonrpc::{ErrorObject, Message, Notification, Request, RequestId, ResponseBody};
use mcpstorm_core::mcp::method;
use proptest::prelude::*;
use serde_json::{Value, json};

/// Strings that stress the encoder: any char (controls, quotes, backslashes, surrogates' neighbours, emoji).
pub(crate) fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::collection::vec(any::<char>(), 0..12).prop_map(String::from_iter),
        2 => "[\"\\\\\n\r\t\u{0}\u{1}\u{1f}\u{7f}\u{85}\u{2028}\u{2029}\u{feff}é😀/ a]{0,12}",
        1 => "[a-z/_]{0,16}",
    ]
}

/// Finite floats that serde_json (built without `float_roundtrip`) parses back to the same bits' value.
fn json_float() -> impl Strategy<Value = Value> {
    use prop::num::f64::{NEGATIVE, NORMAL, POSITIVE, SUBNORMAL, ZERO};
    (POSITIVE | NEGATIVE | NORMAL | SUBNORMAL | ZERO).prop_map(|f| {
        let text = serde_json::to_string(&f).unwrap_or_default();
        match serde_json::from_str::<f64>(&text) {
            Ok(back) if back == f => json!(f),
            // Best-effort float parsing can be one ulp off; keep the case with an integer instead of rejecting it.
            _ => json!(f.trunc() as i64),
        }
    })
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        json_float(),
        text().prop_map(Value::String),
    ]
}

pub(crate) fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(text(), inner, 0..6).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

pub(crate) fn json_object() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(text(), json_value(), 0..5).prop_map(|m| Value::Object(m.into_iter().collect()))
}

pub(crate) fn json_array() -> impl Strategy<Value = Value> {
    prop::collection::vec(json_value(), 0..5).prop_map(Value::Array)
}

fn request_id() -> impl Strategy<Value = RequestId> {
    prop_oneof![
        any::<i64>().prop_map(RequestId::Number),
        (-3i64..1000).prop_map(RequestId::Number),
        text().prop_map(RequestId::String),
    ]
}

pub(crate) fn method_name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            method::TOOLS_CALL,
            method::PING,
            method::PROGRESS,
            method::CANCELLED,
            method::INITIALIZE
        ])
        .prop_map(str::to_owned),
        text(),
    ]
}

/// Params as MCP allows them: absent, an object or an array (a JSON-RPC `params` is never a scalar or null).
fn params() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![Just(None), json_object().prop_map(Some), json_array().prop_map(Some)]
}

/// `data: Some(null)` is excluded: it decodes as `None` (see `error_data_null_is_not_preserved`).
pub(crate) fn error_object() -> impl Strategy<Value = ErrorObject> {
    let data = prop::option::of(json_value().prop_filter("data: null", |v| !v.is_null()));
    (any::<i64>(), text(), data).prop_map(|(code, message, data)| ErrorObject { code, message, data })
}

pub(crate) fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (request_id(), method_name(), params()).prop_map(|(id, method, params)| Message::Request(Request {
            id,
            method,
            params
        })),
        (method_name(), params()).prop_map(|(method, params)| Message::Notification(Notification { method, params })),
        (request_id(), json_value()).prop_map(|(id, result)| Message::result(id, result)),
        (prop::option::of(request_id()), error_object()).prop_map(|(id, e)| Message::error(id, e)),
    ]
}

/// JSON floats re-parsed from text may move by an ulp; everything else must match exactly.
fn json_approx_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y || ((x - y).abs() <= f64::EPSILON * 4.0 * x.abs().max(y.abs())),
            _ => false,
        },
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_approx_eq(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_approx_eq(v, w)))
        }
        _ => a == b,
    }
}

pub(crate) fn message_approx_eq(a: &Message, b: &Message) -> bool {
    let opt = |x: &Option<Value>, y: &Option<Value>| match (x, y) {
        (Some(x), Some(y)) => json_approx_eq(x, y),
        (None, None) => true,
        _ => false,
    };
    match (a, b) {
        (Message::Request(x), Message::Request(y)) => x.id == y.id && x.method == y.method && opt(&x.params, &y.params),
        (Message::Notification(x), Message::Notification(y)) => x.method == y.method && opt(&x.params, &y.params),
        (Message::Response(x), Message::Response(y)) => {
            x.id == y.id
                && match (&x.body, &y.body) {
                    // A result is kept as the text the peer sent: the same text is the same result, even one a
                    // full parse refuses (a number beyond f64's range, say: that surfaces when its caller parses it).
                    (ResponseBody::Result(x), ResponseBody::Result(y)) => {
                        x.get() == y.get()
                            || match (x.to_value(), y.to_value()) {
                                (Ok(x), Ok(y)) => json_approx_eq(&x, &y),
                                _ => false,
                            }
                    }
                    (ResponseBody::Error(x), ResponseBody::Error(y)) => {
                        x.code == y.code && x.message == y.message && opt(&x.data, &y.data)
                    }
                    _ => false,
                }
        }
        _ => false,
    }
}
