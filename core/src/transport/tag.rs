//! Which request a server notification came with. A Streamable HTTP server sends a request's log messages on that
//! request's SSE stream, and only the transport sees the stream; it tags each `notifications/message` with the
//! request's id under a private `_meta` key, which the connection's reader takes off again to hand the message to
//! its call. A tag the server itself wrote is removed first: a server cannot aim a message at another request.

use serde_json::Value;

use crate::jsonrpc::Message;
use crate::mcp::logging;

/// The private key (never sent to anyone: the reader removes it before the message goes on).
const KEY: &str = "mcpstorm/streamRequest";

/// Tags a log message that came on request `request`'s stream with its id (`None`: a stream of no request, whose
/// messages keep no tag).
pub(crate) fn tag_stream_request(msg: &mut Message, request: Option<i64>) {
    let Message::Notification(n) = msg else { return };
    if n.method != logging::MESSAGE {
        return;
    }
    let Some(Value::Object(params)) = n.params.as_mut() else { return };
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

/// Takes the tag off a log message's params: the id of the request whose stream it came on, if a transport knew.
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
}
