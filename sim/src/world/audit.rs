//! Collects a run's [`RunAudit`] as it happens: per-server outcomes and latency, dropped responses, and each load
//! host's gateway's in-flight counters once its drain is over. Part of the [`Recorder`](super::Recorder)'s state.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use mcpstorm_core::InFlightSnapshot;

use crate::run::memory::latency_histogram;
use crate::run::{RunAudit, ServerTotals};

/// Significant digits of a server's latency histogram: two are plenty for a ratio of P99s.
const SIGFIG: u8 = 2;

#[derive(Debug, Default)]
pub struct AuditLog {
    servers: BTreeMap<String, (u64, u64, Histogram<u64>)>,
    end: Vec<Option<InFlightSnapshot>>,
    unknown_responses: u64,
    late_responses: u64,
}

impl AuditLog {
    pub fn set_hosts(&mut self, hosts: usize) {
        self.end = vec![None; hosts];
    }

    /// A logical call for `server` ended after `latency`, ok or not.
    pub fn call(&mut self, server: Option<&str>, latency: Duration, ok: bool) {
        let server = server.unwrap_or("?");
        if !self.servers.contains_key(server) {
            self.servers.insert(server.to_owned(), (0, 0, latency_histogram(SIGFIG)));
        }
        if let Some((calls, failed, hist)) = self.servers.get_mut(server) {
            *calls += 1;
            *failed += u64::from(!ok);
            let _ = hist.record((latency.as_micros() as u64).clamp(1, 3_600_000_000));
        }
    }

    pub fn dropped_response(&mut self, unknown: bool) {
        if unknown {
            self.unknown_responses += 1;
        } else {
            self.late_responses += 1;
        }
    }

    /// Load host `host`'s gateway after its drain.
    pub fn ended(&mut self, host: usize, snapshot: InFlightSnapshot) {
        if let Some(slot) = self.end.get_mut(host) {
            *slot = Some(snapshot);
        }
    }

    pub fn finish(&self, peak_in_flight: u64) -> RunAudit {
        let servers = self
            .servers
            .iter()
            .map(|(name, (calls, failed, hist))| {
                let p99_ms = if hist.is_empty() { 0.0 } else { hist.value_at_quantile(0.99) as f64 / 1000.0 };
                (name.clone(), ServerTotals { calls: *calls, failed: *failed, p99_ms })
            })
            .collect();
        RunAudit {
            end: self.end.clone(),
            unknown_responses: self.unknown_responses,
            late_responses: self.late_responses,
            servers,
            peak_in_flight,
        }
    }
}
