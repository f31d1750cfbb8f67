use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::fields::{self, Fields, Shape};
use super::{ErrorCode, Payload, RequestId};

/// A request: expects exactly one response with the same id.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub id: RequestId,
    pub method: String,
    pub params: Option<Value>,
}

/// A notification: no id, never answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    pub method: String,
    pub params: Option<Value>,
}

/// A response. `id` is `None` only when the peer answered a frame whose id it could not read (JSON-RPC's `null`).
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub id: Option<RequestId>,
    pub body: ResponseBody,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ResponseBody {
    /// Raw until the caller parses it: see [`Payload`].
    Result(Payload),
    Error(ErrorObject),
}

/// A JSON-RPC error object. `data` carries business detail so retry logic can classify without parsing text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorObject { code: code.0, message: message.into(), data: None }
    }

    pub fn code(&self) -> ErrorCode {
        ErrorCode(self.code)
    }
}

/// Any JSON-RPC message, either direction.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Request(Request),
    Notification(Notification),
    Response(Response),
}

/// Why a frame is not a JSON-RPC message. `id` is set when the frame was otherwise readable enough to name the
/// request it belongs to, so the caller waiting on it can be told at once instead of at its timeout.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecodeError {
    #[error("frame is not valid JSON: {0}")]
    NotJson(String),
    #[error("JSON-RPC batches are not part of MCP")]
    Batch,
    #[error("frame is not a JSON object")]
    NotAnObject,
    #[error("invalid JSON-RPC message: {reason}")]
    Invalid { reason: &'static str, id: Option<RequestId> },
}

impl DecodeError {
    pub fn request_id(&self) -> Option<&RequestId> {
        match self {
            DecodeError::Invalid { id, .. } => id.as_ref(),
            _ => None,
        }
    }
}

impl Message {
    /// Decodes one frame in one pass. Never panics, whatever the bytes.
    pub fn decode(frame: &[u8]) -> Result<Message, DecodeError> {
        match fields::read(frame).map_err(|e| DecodeError::NotJson(e.to_string()))? {
            Shape::Object(fields) => Self::from_fields(fields),
            Shape::Array => Err(DecodeError::Batch),
            Shape::Scalar => Err(DecodeError::NotAnObject),
        }
    }

    fn from_fields(fields: Fields) -> Result<Message, DecodeError> {
        let Fields { jsonrpc, id: raw_id, method, params, result, error } = fields;
        // A readable id lets the error reach the right caller; read it before anything can fail.
        let id = match &raw_id {
            Some(v) => RequestId::deserialize(v).ok(),
            None => None,
        };
        let invalid = |reason| DecodeError::Invalid { reason, id: id.clone() };
        if !jsonrpc.is_some_and(|v| v.0) {
            return Err(invalid("missing or wrong \"jsonrpc\": \"2.0\""));
        }
        if let Some(method) = method {
            let Value::String(method) = method else {
                return Err(invalid("\"method\" is not a string"));
            };
            if params.as_ref().is_some_and(|p| !p.is_object() && !p.is_array()) {
                return Err(invalid("\"params\" must be an object or array"));
            }
            return match raw_id {
                None => Ok(Message::Notification(Notification { method, params })),
                Some(_) => match id {
                    Some(id) => Ok(Message::Request(Request { id, method, params })),
                    None => Err(invalid("request id must be a string or an integer")),
                },
            };
        }
        let body = match (result, error) {
            (Some(result), None) => ResponseBody::Result(result),
            (None, Some(error)) => match ErrorObject::deserialize(error) {
                Ok(e) => ResponseBody::Error(e),
                Err(_) => return Err(invalid("\"error\" is not a JSON-RPC error object")),
            },
            (Some(_), Some(_)) => {
                return Err(invalid("response has both \"result\" and \"error\""));
            }
            (None, None) => return Err(invalid("neither \"method\" nor \"result\"/\"error\"")),
        };
        match (raw_id, id.clone()) {
            (Some(Value::Null), _) => Ok(Message::Response(Response { id: None, body })),
            (Some(_), Some(id)) => Ok(Message::Response(Response { id: Some(id), body })),
            _ => Err(invalid("response id must be a string, an integer or null")),
        }
    }

    /// Encodes as one compact JSON object (no newline; framing is the transport's job).
    pub fn encode(&self) -> Vec<u8> {
        // Sized for the whole message at once: grown from empty, a buffer is reallocated at every doubling.
        let mut bytes = Vec::with_capacity(match self {
            Message::Response(Response { body: ResponseBody::Result(result), .. }) => result.get().len() + ENVELOPE,
            _ => 4 * ENVELOPE,
        });
        self.encode_into(&mut bytes);
        bytes
    }

    /// [`Message::encode`], appended to `out` (a writer's reused buffer).
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let mut wire = Wire { jsonrpc: "2.0", id: None, method: None, params: None, result: None, error: None };
        match self {
            Message::Request(r) => wire = Wire::request(r),
            Message::Notification(n) => {
                wire.method = Some(&n.method);
                wire.params = n.params.as_ref();
            }
            Message::Response(r) => {
                wire.id = Some(r.id.as_ref());
                match &r.body {
                    ResponseBody::Result(v) => wire.result = Some(v),
                    ResponseBody::Error(e) => wire.error = Some(e),
                }
            }
        }
        wire.write(out);
    }

    pub fn request(id: impl Into<RequestId>, method: impl Into<String>, params: Option<Value>) -> Self {
        Message::Request(Request { id: id.into(), method: method.into(), params })
    }

    pub fn notification(method: impl Into<String>, params: Option<Value>) -> Self {
        Message::Notification(Notification { method: method.into(), params })
    }

    pub fn result(id: RequestId, result: Value) -> Self {
        Self::result_payload(id, Payload::from(result))
    }

    /// A result already serialised (see [`Payload::serialize`]).
    pub fn result_payload(id: RequestId, result: Payload) -> Self {
        Message::Response(Response { id: Some(id), body: ResponseBody::Result(result) })
    }

    pub fn error(id: Option<RequestId>, error: ErrorObject) -> Self {
        Message::Response(Response { id, body: ResponseBody::Error(error) })
    }
}

/// Room for a message's members other than its payload (`jsonrpc`, an `id`, a `method` or the `result` name).
const ENVELOPE: usize = 64;

/// A message's members as they are encoded, in their order on the wire.
#[derive(Serialize)]
pub(super) struct Wire<'a> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<Option<&'a RequestId>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a Payload>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a ErrorObject>,
}

impl<'a> Wire<'a> {
    pub(super) fn request(r: &'a Request) -> Self {
        let (id, method, params) = (Some(Some(&r.id)), Some(r.method.as_str()), r.params.as_ref());
        Wire { jsonrpc: "2.0", id, method, params, result: None, error: None }
    }

    /// Appends the compact JSON object (no newline; framing is the transport's job).
    pub(super) fn write(&self, out: &mut Vec<u8>) {
        // Serialising borrowed serde_json values into a Vec cannot fail: no maps with non-string keys exist here.
        // Were it to, nothing of the message is left behind.
        let start = out.len();
        if serde_json::to_writer(&mut *out, self).is_err() {
            out.truncate(start);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn classifies_by_shape() {
        let req = Message::decode(br#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#).unwrap();
        assert!(matches!(req, Message::Request(Request { id: RequestId::String(_), .. })));
        let note = Message::decode(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert!(matches!(note, Message::Notification(_)));
        let resp = Message::decode(br#"{"jsonrpc":"2.0","id":7,"result":{}}"#).unwrap();
        assert_eq!(resp, Message::result(RequestId::Number(7), json!({})));
        let null_id = Message::decode(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#);
        assert!(matches!(null_id, Ok(Message::Response(Response { id: None, .. }))));
    }

    #[test]
    fn invalid_frames_keep_their_id_when_readable() {
        let e = Message::decode(br#"{"jsonrpc":"2.0","id":3,"error":"boom"}"#).unwrap_err();
        assert_eq!(e.request_id(), Some(&RequestId::Number(3)));
        let e = Message::decode(br#"{"jsonrpc":"1.0","id":4,"result":1}"#).unwrap_err();
        assert_eq!(e.request_id(), Some(&RequestId::Number(4)));
        assert_eq!(Message::decode(b"[1,2]").unwrap_err(), DecodeError::Batch);
        assert_eq!(Message::decode(b"3").unwrap_err(), DecodeError::NotAnObject);
        assert!(matches!(Message::decode(b"{not json").unwrap_err(), DecodeError::NotJson(_)));
        let both = Message::decode(br#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":""}}"#);
        assert!(matches!(both, Err(DecodeError::Invalid { .. })));
        let float_id = Message::decode(br#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#);
        assert!(matches!(float_id, Err(DecodeError::Invalid { id: None, .. })));
    }

    #[test]
    fn only_the_result_text_is_left_for_its_caller_to_parse() {
        // A result is checked to be well-formed JSON here; the rest of its parse is its caller's (a call's error).
        let Ok(Message::Response(r)) = Message::decode(br#"{"jsonrpc":"2.0","id":1,"result":[1e400]}"#) else {
            panic!("a well-formed result decodes")
        };
        let ResponseBody::Result(result) = r.body else { panic!("a result") };
        assert!(result.to_value().is_err());
        assert!(matches!(Message::decode(br#"{"jsonrpc":"2.0","id":1,"result":[1e]}"#), Err(DecodeError::NotJson(_))));
        // Every other member is parsed as fully as before.
        for frame in [
            &br#"{"jsonrpc":"2.0","id":1,"result":1,"x":1e400}"#[..],
            br#"[1e400]"#,
            br#"{"jsonrpc":"2.0","method":"m","params":[1e400]}"#,
            br#"{"jsonrpc":{"v":[1e400]},"id":1,"result":1}"#,
            br#"{"jsonrpc":[1e400],"id":1,"result":1}"#,
            br#"{"jsonrpc":1e400,"id":1,"result":1}"#,
        ] {
            assert!(matches!(Message::decode(frame), Err(DecodeError::NotJson(_))), "{frame:?}");
        }
        // `jsonrpc` is "2.0" only as that string (escaped or not); any other well-formed value is invalid, not "not JSON".
        for (frame, ok) in [
            (&br#"{"jsonrpc":"2.\u0030","id":1,"result":1}"#[..], true),
            (br#"{"jsonrpc":2.0,"id":1,"result":1}"#, false),
            (br#"{"jsonrpc":["2.0"],"id":1,"result":1}"#, false),
            (br#"{"jsonrpc":{"2.0":"2.0"},"id":1,"result":1}"#, false),
            (br#"{"jsonrpc":null,"id":1,"result":1}"#, false),
            (br#"{"jsonrpc":true,"id":1,"result":1}"#, false),
            (br#"{"jsonrpc":"2.0 ","id":1,"result":1}"#, false),
        ] {
            let decoded = Message::decode(frame);
            assert_eq!(decoded.is_ok(), ok, "{frame:?}");
            assert!(ok || matches!(decoded, Err(DecodeError::Invalid { .. })), "{frame:?}");
        }
        // A repeated member keeps its last value; escaped member names are still the names.
        let dup = Message::decode(br#"{"jsonrpc":"1.0","\u0069d":2,"jsonrpc":"2.0","result":{"a":1},"id":3}"#).unwrap();
        assert_eq!(dup, Message::result(RequestId::Number(3), json!({"a": 1})));
    }

    #[test]
    fn encode_is_compact_and_round_trips() {
        let m = Message::error(None, ErrorObject::new(ErrorCode::PARSE_ERROR, "bad"));
        let bytes = m.encode();
        assert_eq!(bytes, br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}"#);
        assert_eq!(Message::decode(&bytes).unwrap(), m);
    }
}
