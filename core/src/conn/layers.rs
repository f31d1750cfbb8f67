//! The `_meta` layers a connection adds to its requests (see [`MetaLayers`]), and the second set a request made
//! outside the connection's 2025-11-25 session takes: the same layers with a 2026-07-28 envelope in place of the
//! era's (none, on such a connection). Both are merged when a layer changes, never per request.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value};

use crate::jsonrpc::MetaLayers;

/// The indexes of the two layers in [`MetaLayers`], in order of precedence.
const ENVELOPE: usize = 0;
const SESSION: usize = 1;

#[derive(Debug, Default)]
pub(super) struct Layers(Mutex<Set>);

#[derive(Debug, Default)]
struct Set {
    /// Every request's, unless it leaves the session.
    session: Arc<MetaLayers>,
    /// A request that leaves the session: `session`'s layers with the stateless envelope as the era's.
    stateless: Option<Arc<MetaLayers>>,
}

impl Layers {
    fn lock(&self) -> std::sync::MutexGuard<'_, Set> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The layers of a request: the stateless ones when it asks to leave the session and the connection has them.
    pub(super) fn of_request(&self, stateless: bool) -> Arc<MetaLayers> {
        let set = self.lock();
        match (&set.stateless, stateless) {
            (Some(layers), true) => layers.clone(),
            _ => set.session.clone(),
        }
    }

    /// Whether the era's envelope is set (a 2026-07-28 connection).
    pub(super) fn has_envelope(&self) -> bool {
        self.lock().session.layers()[ENVELOPE].is_some()
    }

    pub(super) fn set_envelope(&self, meta: Option<Map<String, Value>>) {
        let mut set = self.lock();
        set.session = Arc::new(set.session.with(ENVELOPE, meta.map(Arc::new)));
    }

    /// The session extension's keys, in both sets.
    pub(super) fn set_session(&self, meta: Option<Map<String, Value>>) {
        let layer = meta.map(Arc::new);
        let mut set = self.lock();
        set.session = Arc::new(set.session.with(SESSION, layer.clone()));
        if let Some(stateless) = &set.stateless {
            set.stateless = Some(Arc::new(stateless.with(SESSION, layer)));
        }
    }

    /// The envelope of requests made outside the session; `None` keeps every request on it. True when there was one.
    pub(super) fn set_stateless(&self, envelope: Option<Map<String, Value>>) -> bool {
        let mut set = self.lock();
        let stateless = envelope.map(|e| Arc::new(set.session.with(ENVELOPE, Some(Arc::new(e)))));
        std::mem::replace(&mut set.stateless, stateless).is_some()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn layer(v: Value) -> Option<Map<String, Value>> {
        v.as_object().cloned()
    }

    fn keys(layers: &MetaLayers) -> Vec<Option<Value>> {
        layers.layers().iter().map(|l| l.as_deref().map(|m| Value::Object(m.clone()))).collect()
    }

    #[test]
    fn a_request_leaves_the_session_only_when_the_connection_has_a_way_out() {
        let layers = Layers::default();
        layers.set_session(layer(json!({"s": 1})));
        assert_eq!(keys(&layers.of_request(true)), [None, Some(json!({"s": 1}))], "no way out: the session's");
        assert!(!layers.set_stateless(layer(json!({"v": "2026-07-28"}))));
        assert_eq!(keys(&layers.of_request(false)), [None, Some(json!({"s": 1}))]);
        assert_eq!(keys(&layers.of_request(true)), [Some(json!({"v": "2026-07-28"})), Some(json!({"s": 1}))]);
        assert!(!layers.has_envelope(), "the stateless envelope is not the era's");
        // A renewal's keys reach both sets.
        layers.set_session(layer(json!({"s": 2})));
        assert_eq!(keys(&layers.of_request(true)), [Some(json!({"v": "2026-07-28"})), Some(json!({"s": 2}))]);
        assert_eq!(keys(&layers.of_request(false)), [None, Some(json!({"s": 2}))]);
        assert!(layers.set_stateless(None), "there was one");
        assert_eq!(keys(&layers.of_request(true)), [None, Some(json!({"s": 2}))]);
    }
}
