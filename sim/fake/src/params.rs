//! A request's params as the server reads them: the general decoder's `Value` tree, or a plain `tools/call`'s
//! members as [`call_frame`](crate::call_frame) read them straight from the frame. The routing, the envelope check,
//! the gate and the call read both through the same lookups, so a call read either way is answered alike; the quick
//! one never builds a `params` tree only to take it apart again.

use serde_json::Value;

use crate::call_frame::CallParams;

#[derive(Debug)]
pub(crate) enum Params<'a> {
    /// As the general decoder read them (`None`: the request had none).
    Value(Option<Value>),
    /// A `tools/call`'s, read by the quick reader (borrowing from its frame): never another method's.
    Call(CallParams<'a>),
}

impl Params<'_> {
    /// Whether `params._meta[key]` is there (`null` included).
    pub fn has_meta(&self, key: &str) -> bool {
        match self {
            Params::Value(_) => self.meta(key).is_some(),
            Params::Call(call) => call.meta.as_ref().is_some_and(|m| m.has(key)),
        }
    }

    /// `params._meta[key]`, if it is a string.
    pub fn meta_str(&self, key: &str) -> Option<&str> {
        match self {
            Params::Value(_) => self.meta(key)?.as_str(),
            Params::Call(call) => call.meta.as_ref()?.str(key),
        }
    }

    /// `params._meta[key]` as a JSON value. The quick reader keeps the progress token, the session and the
    /// authorization as values; the envelope keys it reads only through [`has_meta`](Self::has_meta) and
    /// [`meta_str`](Self::meta_str).
    pub fn meta(&self, key: &str) -> Option<&Value> {
        match self {
            Params::Value(params) => params.as_ref()?.get("_meta")?.get(key),
            Params::Call(call) => call.meta.as_ref()?.get(key),
        }
    }

    /// Whether `params._meta` is an object.
    pub fn meta_is_object(&self) -> bool {
        match self {
            Params::Value(params) => params.as_ref().and_then(|p| p.get("_meta")).is_some_and(Value::is_object),
            Params::Call(call) => call.meta.is_some(),
        }
    }

    /// The general decoder's tree, for the methods that read more than `_meta` and are never read quickly.
    pub fn value(&self) -> Option<&Value> {
        match self {
            Params::Value(params) => params.as_ref(),
            Params::Call(_) => None,
        }
    }
}
