//! Which request a server message came with. A Streamable HTTP server sends a request's log messages, and the
//! requests it makes of its client for that request (sampling, elicitation, roots), on that request's SSE stream,
//! and only the transport sees the stream; it tags each such message with the request's id under a private `_meta`
//! key, which the connection's reader takes off again to hand the message to its call. A tag the server itself wrote
//! is removed first: a server cannot aim a message at another request.

use serde_json::Value;

use crate::jsonrpc::Message;
use crate::mcp::{logging, method};

/// The private key (never sent to anyone: the reader removes it before the message goes on).
const KEY: &str = "mcpstorm/streamRequest";

/// Tags a log message or a server request that came on request `request`'s stream with its id (`None`: a stream of
/// no request, whose messages keep no tag).
pub(crate) fn tag_stream_request(msg: &mut Message, request: Option<i64>) {
    let params = match msg {
        Message::Notification(n) if n.method == logging::MESSAGE => n.params.as_mut(),
        Message::Request(r) if method::ASKED_OF_CLIENTS.contains(&r.method.as_str()) => {
            if request.is_some() && r.params.is_none() {
                r.params = Some(Value::Object(Default::default()));
            }
            r.params.as_mut()
        }
        _ => return,
    };
    let Some(Value::Object(params)) = params else { return };
    if let Some(Value::Object(meta)) = params.get_mut("_meta") {
        meta.remove(KEY);
    }
    if let Some(id) = request {
        let meta = params.entry("_meta").or_insert_with(|| Value::Object(Default::default()));
        if let Value::Object(meta) = meta {
            meta.insert(KEY.to_owned(), Value::from(id));
        }
    }
}

/// Takes the tag off a log message's or a server request's params: the id of the request whose stream it came on, if a transport knew.
pub(crate) fn take_stream_request(params: &mut Value) -> Option<i64> {
    let meta = params.get_mut("_meta")?.as_object_mut()?;
    let id = meta.remove(KEY)?.as_i64();
    if meta.is_empty()
        && let Some(params) = params.as_object_mut()
    {
        params.remove("_meta");
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn log(params: Value) -> Message {
        Message::notification(logging::MESSAGE, Some(params))
    }

    fn params(msg: Message) -> Value {
        let Message::Notification(n) = msg else { panic!("a notification") };
        n.params.expect("params")
    }

    #[test]
    fn a_log_message_on_a_request_stream_is_tagged_and_the_tag_comes_off() {
        let mut msg = log(json!({ "level": "info", "data": "x" }));
        tag_stream_request(&mut msg, Some(7));
        let mut p = params(msg);
        assert_eq!(take_stream_request(&mut p), Some(7));
        assert_eq!(p, json!({ "level": "info", "data": "x" }), "nothing of the tag is left");
    }

    #[test]
    fn a_tag_the_server_wrote_is_removed_and_other_notifications_are_untouched() {
        let mut forged = log(json!({ "level": "info", "data": "x", "_meta": { KEY: 3, "k": 1 } }));
        tag_stream_request(&mut forged, None);
        let mut p = params(forged);
        assert_eq!(take_stream_request(&mut p), None);
        assert_eq!(p["_meta"], json!({ "k": 1 }));
        let mut progress = Message::notification("notifications/progress", Some(json!({ "_meta": { KEY: 3 } })));
        tag_stream_request(&mut progress, Some(9));
        assert_eq!(params(progress)["_meta"][KEY], 3);
    }

    #[test]
    fn a_server_request_on_a_request_stream_is_tagged_even_without_params() {
        let mut ask = Message::request(5, "roots/list", None);
        tag_stream_request(&mut ask, Some(2));
        let Message::Request(r) = ask else { panic!("a request") };
        let mut p = r.params.expect("params made for the tag");
        assert_eq!(take_stream_request(&mut p), Some(2));
        let mut ping = Message::request(6, "ping", None);
        tag_stream_request(&mut ping, Some(2));
        assert!(matches!(ping, Message::Request(r) if r.params.is_none()), "only relayed requests are tagged");
    }
}
