//! The gateway process's `[telemetry]` table: where its traces go. Absent, no span is built and nothing is exported;
//! present, every `tools/call` through the process becomes a SERVER span with a CLIENT span per attempt, in the MCP
//! semantic conventions (`core/src/observe/trace.rs`), posted as OTLP/HTTP protobuf to the collector in batches off
//! the call path (see `crate::telemetry`).

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ranges::{MAX_CONCURRENCY, Ranges, Upper};
use super::rules::Rules;
use super::units::Dur;

/// Traces of every tool call, as OTLP/HTTP protobuf to a collector, in batches off the call path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TelemetrySpec {
    /// The OTLP/HTTP collector's base URL, `http://host:port` (spans are posted to its `/v1/traces`, or to the
    /// URL as given when it already ends so). Plain HTTP only: a collector on the same host or network (the
    /// OpenTelemetry Collector's agent pattern), which forwards over TLS if it must.
    pub otlp: String,
    /// The most finished spans waiting to be exported. When full, a new span is dropped and counted
    /// (`mcpstorm_gateway_trace_spans_dropped_total`), never waited for: a slow or absent collector never slows a call.
    #[serde(default = "default_queue")]
    pub queue: usize,
    /// The most spans in one export request.
    #[serde(default = "default_batch")]
    pub batch: usize,
    /// How long a span may wait for its batch to fill before the batch is sent anyway.
    #[serde(default = "default_interval")]
    pub interval: Dur,
    /// How long one export request may take (connecting included) before it is abandoned and its spans counted as
    /// dropped.
    #[serde(default = "default_timeout")]
    pub timeout: Dur,
    /// Whether a call's span holds the tool's arguments and result (`gen_ai.tool.call.arguments`,
    /// `gen_ai.tool.call.result`, each cut to 4 KiB). Off by default: they may hold what an agent's user would not
    /// have an operator's backend keep. The gateway's credentials and agents' tokens are never in a span either way.
    #[serde(default)]
    pub record_content: bool,
}

fn default_queue() -> usize {
    4096
}
fn default_batch() -> usize {
    512
}
fn default_interval() -> Dur {
    Dur(Duration::from_secs(1))
}
fn default_timeout() -> Dur {
    Dur(Duration::from_secs(10))
}

impl TelemetrySpec {
    pub fn problems(&self, rules: &mut Rules) {
        if let Err(why) = collector_url(&self.otlp) {
            rules.fail("telemetry.otlp", why);
        }
        rules.at_least_one("telemetry.queue", self.queue);
        rules.at_least_one("telemetry.batch", self.batch);
        if self.batch > self.queue {
            rules.fail(
                "telemetry.batch",
                format!("must be at most telemetry.queue ({}), got {}", self.queue, self.batch),
            );
        }
        rules.positive("telemetry.interval", self.interval.0);
        rules.positive("telemetry.timeout", self.timeout.0);
    }

    pub fn ranges(&self, out: &mut Ranges) {
        out.count("telemetry.queue", self.queue as f64, MAX_CONCURRENCY as f64);
        out.count("telemetry.batch", self.batch as f64, MAX_CONCURRENCY as f64);
        out.duration("telemetry.interval", self.interval.0, Upper::Week);
        out.duration("telemetry.timeout", self.timeout.0, Upper::Week);
    }
}

/// Where a collector's traces go, split for the exporter: `host:port` to connect to and the request's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectorUrl {
    /// `host:port`, the port 80 when the URL names none.
    pub authority: String,
    /// `/v1/traces`, under the URL's own path when it has one.
    pub path: String,
}

/// Reads `otlp`: `http://host[:port][/path]`, no query, no credentials in it.
pub fn collector_url(url: &str) -> Result<CollectorUrl, String> {
    let Some(rest) = url.strip_prefix("http://") else {
        return Err(if url.starts_with("https://") {
            format!("must be a plain http:// URL (a collector on this host or network), got {url:?}")
        } else {
            format!("must be an http:// URL such as \"http://127.0.0.1:4318\", got {url:?}")
        });
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    if authority.is_empty() || authority.contains('@') || path.contains(['?', '#']) || url.contains(char::is_whitespace)
    {
        return Err(format!("must be http://host[:port][/path] with no credentials or query, got {url:?}"));
    }
    let authority = match authority.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') && !port.contains(']') => {
            if port.parse::<u16>().is_err() || host.is_empty() {
                return Err(format!("has a bad port in {url:?}"));
            }
            authority.to_owned()
        }
        _ => format!("{authority}:80"),
    };
    let path = path.trim_end_matches('/');
    let path = if path.ends_with("/v1/traces") { path.to_owned() } else { format!("{path}/v1/traces") };
    Ok(CollectorUrl { authority, path })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::GatewayFile;

    #[test]
    fn a_bad_table_is_refused_at_its_keys() {
        let text = "[[servers]]\nname = \"a\"\n[[servers.replicas]]\nhttp = \"http://127.0.0.1:1/mcp\"\n\n\
                    [telemetry]\notlp = \"https://collector:4318\"\nqueue = 4\nbatch = 8\n";
        let e = GatewayFile::load_str(text, "gateway.toml").expect_err("refused").to_string();
        assert!(e.contains("gateway.toml:7:8") && e.contains("plain http://"), "{e}");
        assert!(e.contains("gateway.toml:9:9") && e.contains("at most telemetry.queue (4)"), "{e}");
        let ok = text.replace("https", "http").replace("batch = 8", "batch = 4");
        let file = GatewayFile::load_str(&ok, "gateway.toml").expect("valid");
        let spec = file.telemetry.expect("the table");
        assert_eq!((spec.interval.0, spec.record_content), (Duration::from_secs(1), false));
    }

    #[test]
    fn a_collector_url_gives_its_address_and_the_traces_path() {
        let u = collector_url("http://collector:4318").unwrap();
        assert_eq!((u.authority.as_str(), u.path.as_str()), ("collector:4318", "/v1/traces"));
        let u = collector_url("http://10.0.0.1/otel/").unwrap();
        assert_eq!((u.authority.as_str(), u.path.as_str()), ("10.0.0.1:80", "/otel/v1/traces"));
        let u = collector_url("http://[::1]:4318/v1/traces").unwrap();
        assert_eq!((u.authority.as_str(), u.path.as_str()), ("[::1]:4318", "/v1/traces"));
        for bad in ["https://c:4318", "collector:4318", "http://", "http://u:p@c:4318", "http://c:x", "http://c:4318?a"]
        {
            assert!(collector_url(bad).is_err(), "{bad}");
        }
    }
}
