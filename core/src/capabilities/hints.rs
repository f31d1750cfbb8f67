//! What servers and tools declare about their capacity in `_meta`, for the router and the bulkheads.

use std::time::Duration;

use serde_json::{Map, Value};

/// What a server declares about its capacity, for the router. Read from a `_meta` object; each field accepts these
/// keys, first match wins:
///
/// | field                     | keys                                                                      |
/// |---------------------------|---------------------------------------------------------------------------|
/// | `latency_p95`             | `io.mcpstorm/latency_p95_ms`, `latency_p95_ms`, `latencyP95Ms`            |
/// | `max_concurrent_requests` | `io.mcpstorm/max_concurrent_requests`, `max_concurrent_requests`, `maxConcurrentRequests` |
///
/// Latency is a finite non-negative number of milliseconds; the limit a positive integer. Anything else is ignored
/// (logged at debug), as if absent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RouterHints {
    pub latency_p95: Option<Duration>,
    pub max_concurrent_requests: Option<u32>,
}

const LATENCY_KEYS: [&str; 3] = ["io.mcpstorm/latency_p95_ms", "latency_p95_ms", "latencyP95Ms"];
const MAX_CONCURRENT_KEYS: [&str; 3] =
    ["io.mcpstorm/max_concurrent_requests", "max_concurrent_requests", "maxConcurrentRequests"];

impl RouterHints {
    pub fn from_meta(meta: Option<&Value>) -> Self {
        let Some(meta) = meta.and_then(Value::as_object) else {
            return RouterHints::default();
        };
        RouterHints {
            latency_p95: first(meta, &LATENCY_KEYS, |v| {
                let ms = v.as_f64().filter(|ms| *ms >= 0.0)?;
                Duration::try_from_secs_f64(ms / 1000.0).ok()
            }),
            max_concurrent_requests: first(meta, &MAX_CONCURRENT_KEYS, |v| {
                v.as_u64().filter(|n| *n > 0).and_then(|n| u32::try_from(n).ok())
            }),
        }
    }

    /// Each field from `self`, else from `fallback` (a tool's own declaration overrides its server's).
    pub fn or(self, fallback: RouterHints) -> RouterHints {
        RouterHints {
            latency_p95: self.latency_p95.or(fallback.latency_p95),
            max_concurrent_requests: self.max_concurrent_requests.or(fallback.max_concurrent_requests),
        }
    }
}

fn first<T>(meta: &Map<String, Value>, keys: &[&str], parse: impl Fn(&Value) -> Option<T>) -> Option<T> {
    let (key, value) = keys.iter().find_map(|k| meta.get(*k).map(|v| (*k, v)))?;
    let parsed = parse(value);
    if parsed.is_none() {
        tracing::debug!(key, %value, "ignoring an invalid router hint in _meta");
    }
    parsed
}
