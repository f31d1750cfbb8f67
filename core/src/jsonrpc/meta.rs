//! A request whose `params._meta` still lacks the members its connection adds to every request: the progress token
//! and the layers set on the connection (the 2026-07-28 era's envelope, the session extension's keys).
//!
//! Merging those layers into each request's params cloned their maps (long keys, nested capabilities) per request
//! only for the encoder to walk them again and the writer to drop them. [`MetaLayers`] encodes the merged members
//! once, when a layer is set, and [`MetaRequest::encode_into`] copies that text into the frame: the bytes are those
//! of the merged request ([`MetaRequest::into_message`]), member for member.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::credential::Secret;

use super::message::Wire;
use super::{Message, Request};

const META: &str = "_meta";
const PROGRESS_TOKEN: &str = "progressToken";

/// `_meta` members added to every request of a connection.
pub type MetaLayer = Map<String, Value>;

/// A connection's two `_meta` layers (the era's envelope, then the session extension's keys), merged once into the
/// text of their members when either changes: every request then copies that text around its progress token instead
/// of merging the layers member by member.
#[derive(Debug, Clone, Default)]
pub struct MetaLayers {
    layers: [Option<Arc<MetaLayer>>; 2],
    /// The merged members whose keys sort before `progressToken`, comma-separated, in key order.
    before: String,
    /// A layer's own `progressToken` member (the first layer's wins): written only when the request has no token.
    token: Option<Box<str>>,
    /// The merged members whose keys sort after `progressToken`.
    after: String,
}

impl MetaLayers {
    /// On equal keys the first layer wins.
    pub fn new(layers: [Option<Arc<MetaLayer>>; 2]) -> Self {
        let mut merged =
            MetaLayers { layers: Default::default(), before: String::new(), token: None, after: String::new() };
        let mut sources = layers.each_ref().map(|l| l.as_deref().map(|l| l.iter().peekable()));
        loop {
            let heads = sources.iter_mut().flatten().filter_map(|s| s.peek().map(|(k, _)| k.as_str()));
            let Some(key) = heads.min() else { break };
            // Every source's member of that key is consumed; the first one found is the one kept.
            let mut kept = None;
            for source in sources.iter_mut().flatten() {
                if let Some((_, value)) = source.next_if(|(k, _)| k.as_str() == key) {
                    kept.get_or_insert(value);
                }
            }
            let Some(value) = kept else { break };
            let mut text = Vec::new();
            write_member(&mut text, key, value);
            // serde_json writes UTF-8 only.
            let text = String::from_utf8(text).unwrap_or_default();
            match key.cmp(PROGRESS_TOKEN) {
                std::cmp::Ordering::Less => join(&mut merged.before, &text),
                std::cmp::Ordering::Equal => merged.token = Some(text.into()),
                std::cmp::Ordering::Greater => join(&mut merged.after, &text),
            }
        }
        merged.layers = layers;
        merged
    }

    /// The layers as set, in order of precedence.
    pub fn layers(&self) -> &[Option<Arc<MetaLayer>>; 2] {
        &self.layers
    }

    /// The same layers with `layer` in place of the one at `index` (0: the envelope, 1: the session's keys).
    pub fn with(&self, index: usize, layer: Option<Arc<MetaLayer>>) -> Self {
        let mut layers = self.layers.clone();
        if let Some(slot) = layers.get_mut(index) {
            *slot = layer;
        }
        MetaLayers::new(layers)
    }

    fn is_empty(&self) -> bool {
        self.layers.iter().all(Option::is_none)
    }
}

fn join(list: &mut String, member: &str) {
    if !list.is_empty() {
        list.push(',');
    }
    list.push_str(member);
}

/// A request and what its connection adds to its `params._meta`: `progress_token` first, then `meta`'s layers in
/// order of precedence. A key set earlier wins, the request's own keys first.
#[derive(Debug, Clone)]
pub struct MetaRequest {
    pub request: Request,
    pub progress_token: Option<i64>,
    pub meta: Arc<MetaLayers>,
    /// The agent's access token for the transport's authorizer ([`CallOptions::on_behalf_of`](crate::CallOptions));
    /// not part of the message.
    pub on_behalf_of: Option<Secret>,
}

impl MetaRequest {
    /// The request as sent, its `_meta` merged: for a sink that needs the whole message rather than its bytes.
    pub fn into_message(self) -> Message {
        let MetaRequest { request, progress_token, meta, on_behalf_of: _ } = self;
        let params = with_meta(request.params, progress_token, meta.layers());
        Message::Request(Request { params, ..request })
    }

    /// The member `key` (any but `progressToken`) of the request's `params._meta` as [`MetaRequest::into_message`]
    /// would send it: the request's own, else the first layer's that has it; none of the layers' when the params or
    /// their `_meta` are not objects, as then nothing is merged. Read without merging.
    pub fn meta_member(&self, key: &str) -> Option<&Value> {
        match &self.request.params {
            Some(Value::Object(params)) => match params.get(META) {
                Some(Value::Object(own)) if own.contains_key(key) => return own.get(key),
                None | Some(Value::Object(_)) => {}
                Some(_) => return None,
            },
            Some(_) => return None,
            None => {}
        }
        self.meta.layers.iter().flatten().find_map(|layer| layer.get(key))
    }

    /// Appends the encoding of [`MetaRequest::into_message`] to `out` without building it: the added members are
    /// copied from their layers' merged text. A request with a `_meta` of its own (or params that are not an
    /// object) takes the merge.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let r = &self.request;
        if self.progress_token.is_none() && self.meta.is_empty() {
            return Wire::request(r).write(out);
        }
        let params = match &r.params {
            None => None,
            Some(Value::Object(p)) if !p.contains_key(META) => Some(p),
            Some(_) => return self.clone().into_message().encode_into(out),
        };
        let start = out.len();
        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        let id = serde_json::to_writer(&mut *out, &r.id);
        out.extend_from_slice(br#","method":"#);
        let method = serde_json::to_writer(&mut *out, &r.method);
        out.extend_from_slice(br#","params":{"#);
        // The params' own members in their (sorted) order, with `_meta` in its place among them.
        let mut meta = Some(());
        let mut first = true;
        for (k, v) in params.into_iter().flatten() {
            if k.as_str() > META && meta.take().is_some() {
                separate(out, &mut first);
                self.write_meta(out);
            }
            separate(out, &mut first);
            write_member(out, k, v);
        }
        if meta.is_some() {
            separate(out, &mut first);
            self.write_meta(out);
        }
        out.extend_from_slice(b"}}");
        // As in `Message::encode_into`: nothing of a message that failed to encode is left behind.
        if id.is_err() || method.is_err() {
            out.truncate(start);
        }
    }

    /// `"_meta":{…}`: the token in its sorted place among the layers' merged members, as the merged map would
    /// encode them; the request's token wins over a layer's.
    fn write_meta(&self, out: &mut Vec<u8>) {
        let m = &*self.meta;
        out.extend_from_slice(br#""_meta":{"#);
        let mut first = true;
        if !m.before.is_empty() {
            separate(out, &mut first);
            out.extend_from_slice(m.before.as_bytes());
        }
        if let Some(id) = self.progress_token {
            separate(out, &mut first);
            write_member(out, PROGRESS_TOKEN, &id);
        } else if let Some(text) = &m.token {
            separate(out, &mut first);
            out.extend_from_slice(text.as_bytes());
        }
        if !m.after.is_empty() {
            separate(out, &mut first);
            out.extend_from_slice(m.after.as_bytes());
        }
        out.push(b'}');
    }
}

fn separate(out: &mut Vec<u8>, first: &mut bool) {
    if !std::mem::replace(first, false) {
        out.push(b',');
    }
}

/// `"key":value`, compact, as serde_json writes a map's member. Writing into a `Vec` cannot fail for a string key.
fn write_member<V: Serialize + ?Sized>(out: &mut Vec<u8>, key: &str, value: &V) {
    let _ = serde_json::to_writer(&mut *out, key);
    out.push(b':');
    let _ = serde_json::to_writer(&mut *out, value);
}

/// The params as sent: `progress_token`, then the layers merged into `params._meta`; keys set earlier win, the
/// caller's own first.
fn with_meta(
    params: Option<Value>,
    progress_token: Option<i64>,
    layers: &[Option<Arc<MetaLayer>>; 2],
) -> Option<Value> {
    if progress_token.is_none() && layers.iter().all(Option::is_none) {
        return params;
    }
    let mut params = params.unwrap_or_else(|| Value::Object(Map::new()));
    let Some(obj) = params.as_object_mut() else { return Some(params) };
    let Some(meta) = obj.entry(META).or_insert_with(|| Value::Object(Map::new())).as_object_mut() else {
        return Some(params);
    };
    if let Some(id) = progress_token {
        meta.entry(PROGRESS_TOKEN).or_insert(id.into());
    }
    for layer in layers.iter().flatten() {
        for (k, v) in layer.iter() {
            if !meta.contains_key(k) {
                meta.insert(k.clone(), v.clone());
            }
        }
    }
    Some(params)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn layer(v: Value) -> Option<Arc<MetaLayer>> {
        v.as_object().cloned().map(Arc::new)
    }

    fn merged(params: Option<Value>, token: Option<i64>, layers: [Option<Arc<MetaLayer>>; 2]) -> Option<Value> {
        let request = Request { id: 1.into(), method: "m".into(), params };
        let meta = Arc::new(MetaLayers::new(layers));
        let Message::Request(r) =
            (MetaRequest { request, progress_token: token, meta, on_behalf_of: None }).into_message()
        else {
            unreachable!("a request stays a request")
        };
        r.params
    }

    #[test]
    fn nothing_to_merge_leaves_params_as_they_are() {
        assert_eq!(merged(None, None, [None, None]), None);
        assert_eq!(merged(Some(json!({"a": 1})), None, [None, None]), Some(json!({"a": 1})));
    }

    #[test]
    fn token_beats_the_layers_and_the_first_layer_beats_the_second() {
        let first = layer(json!({"progressToken": "theirs", "k": 1, "both": "first"}));
        let second = layer(json!({"both": "second", "s": 2}));
        let params = merged(Some(json!({"name": "t"})), Some(7), [first, second]);
        let want = json!({"name": "t", "_meta": {"progressToken": 7, "k": 1, "both": "first", "s": 2}});
        assert_eq!(params, Some(want));
    }

    #[test]
    fn the_callers_own_keys_win() {
        let params = json!({"_meta": {"progressToken": "mine", "k": "mine"}});
        let params = merged(Some(params), Some(7), [layer(json!({"k": 1, "x": 2})), layer(json!({"k": 3}))]);
        assert_eq!(params, Some(json!({"_meta": {"progressToken": "mine", "k": "mine", "x": 2}})));
    }

    #[test]
    fn missing_params_get_an_object_and_other_shapes_are_left_alone() {
        assert_eq!(merged(None, Some(1), [None, None]), Some(json!({"_meta": {"progressToken": 1}})));
        assert_eq!(merged(None, None, [None, layer(json!({"s": 1}))]), Some(json!({"_meta": {"s": 1}})));
        assert_eq!(merged(Some(json!([1])), Some(1), [layer(json!({"k": 1})), None]), Some(json!([1])));
        let odd = json!({"_meta": 5});
        assert_eq!(merged(Some(odd.clone()), Some(1), [layer(json!({"k": 1})), None]), Some(odd));
    }

    #[test]
    fn replacing_one_layer_keeps_the_other_and_remerges() {
        let both = MetaLayers::new([layer(json!({"a": 1, "z": 2})), layer(json!({"m": 3, "a": 4}))]);
        let encoded = |meta: MetaLayers| {
            let request = Request { id: 1.into(), method: "m".into(), params: None };
            let mut out = Vec::new();
            (MetaRequest { request, progress_token: Some(5), meta: Arc::new(meta), on_behalf_of: None })
                .encode_into(&mut out);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(
            encoded(both.clone()),
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"a":1,"m":3,"progressToken":5,"z":2}}}"#
        );
        let renewed = both.with(1, layer(json!({"s": "new"})));
        assert_eq!(renewed.layers()[0], both.layers()[0]);
        assert_eq!(
            encoded(renewed),
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"a":1,"progressToken":5,"s":"new","z":2}}}"#
        );
        let dropped = both.with(0, None).with(1, None);
        assert_eq!(encoded(dropped), r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"progressToken":5}}}"#);
    }

    #[test]
    fn the_spliced_bytes_are_those_of_the_merged_request() {
        let envelope = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"sampling": {}, "roots": {"listChanged": true}},
            "io.modelcontextprotocol/clientInfo": {"name": "mcpstorm", "version": "0.1.0"},
        });
        let session = json!({"io.modelcontextprotocol/session": "s-1", "zz": [1, "two"], "A": null});
        let params = [
            None,
            Some(json!({})),
            Some(json!({"name": "t", "arguments": {"x": 1, "y": "\u{1}\"é"}})),
            Some(json!({"Upper": 1, "_a": 2, "_meta_": 3, "z": 4})),
            Some(json!({"_meta": {}})),
            Some(json!({"_meta": {"progressToken": "mine", "k": "mine"}})),
            Some(json!({"_meta": 5})),
            Some(json!([1])),
        ];
        let layer_sets = [
            [None, None],
            [layer(envelope.clone()), None],
            [None, layer(session.clone())],
            [layer(envelope.clone()), layer(session)],
            [layer(json!({"progressToken": "theirs", "k": 1, "both": "first"})), layer(json!({"both": "2", "s": 2}))],
            [layer(json!({"k": 1, "x": 2})), layer(json!({"k": 3}))],
            [layer(json!({})), layer(json!({"é\n": 1}))],
            [layer(envelope.clone()), layer(envelope)],
        ];
        for params in &params {
            for layers in &layer_sets {
                for token in [None, Some(7), Some(-1)] {
                    let request = Request { id: 42.into(), method: "tools/\"call".into(), params: params.clone() };
                    let meta = Arc::new(MetaLayers::new(layers.clone()));
                    let req = MetaRequest { request, progress_token: token, meta, on_behalf_of: None };
                    let mut spliced = b"prefix".to_vec();
                    req.encode_into(&mut spliced);
                    let merged = req.clone().into_message();
                    let want = [&b"prefix"[..], &merged.encode()].concat();
                    let Message::Request(merged) = merged else { unreachable!("a request stays a request") };
                    for key in ["io.modelcontextprotocol/protocolVersion", "k", "both", "s", "missing"] {
                        let sent = merged.params.as_ref().and_then(|p| p.get(META)).and_then(|m| m.get(key));
                        assert_eq!(req.meta_member(key), sent, "{key} of {params:?} {layers:?}");
                    }
                    assert_eq!(
                        String::from_utf8_lossy(&spliced),
                        String::from_utf8_lossy(&want),
                        "{params:?} {token:?} {layers:?}"
                    );
                }
            }
        }
    }
}
