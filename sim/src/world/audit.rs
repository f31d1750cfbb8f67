//! Collects a run's [`RunAudit`] as it happens: per-server outcomes and latency, dropped responses, and each load
//! host's gateway's in-flight counters once its drain is over. Part of the [`Recorder`](super::Recorder)'s state.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use mcpstorm_core::gateway::InFlightSnapshot;

use crate::run::memory::latency_histogram;
use crate::run::{RunAudit, ServerTotals};

/// Significant digits of a server's latency histogram: two are plenty for a ratio of P99s.
const SIGFIG: u8 = 2;

#[derive(Debug, Default)]
pub struct AuditLog {
    servers: BTreeMap<String, Server>,
    end: Vec<Option<InFlightSnapshot>>,
    unknown_responses: u64,
    late_responses: u64,
}

/// One server's calls so far.
#[derive(Debug)]
struct Server {
    totals: ServerTotals,
    latency: Histogram<u64>,
}

/// How a logical call ended, for the audit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    Failed,
    Ok,
    /// Ok, and waited out (see [`ServerTotals::waited_out`]).
    WaitedOut,
}

impl AuditLog {
    pub fn set_hosts(&mut self, hosts: usize) {
        self.end = vec![None; hosts];
    }

    /// A logical call for `server` ended after `latency`, as `settled`.
    pub fn call(&mut self, server: Option<&str>, latency: Duration, settled: Settled) {
        let server = server.unwrap_or("?");
        if !self.servers.contains_key(server) {
            let fresh = Server { totals: ServerTotals::default(), latency: latency_histogram(SIGFIG) };
            self.servers.insert(server.to_owned(), fresh);
        }
        if let Some(Server { totals, latency: hist }) = self.servers.get_mut(server) {
            totals.calls += 1;
            totals.failed += u64::from(settled == Settled::Failed);
            totals.waited_out += u64::from(settled == Settled::WaitedOut);
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
            .map(|(name, Server { totals, latency: hist })| {
                let p99_ms = if hist.is_empty() { 0.0 } else { hist.value_at_quantile(0.99) as f64 / 1000.0 };
                (name.clone(), ServerTotals { p99_ms, ..*totals })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::{Outcome, Phases, Recorder};

    #[test]
    fn the_recorder_counts_each_servers_waited_out_calls() {
        let text = "name = \"t\"\nduration = \"20s\"\n[[servers]]\nname = \"db\"\nreplicas = 2\n[[servers.tools]]\n\
                    name = \"q\"\n[load]\nmode = \"open\"\nrate = 10.0\n[[load.mix]]\nserver = \"db\"\ntool = \"q\"\n\
                    [[faults]]\nkind = \"latency_spike\"\ntarget = \"db\"\nstart = \"10s\"\nduration = \"2s\"\n\
                    extra = \"3s\"\n";
        let scenario = crate::scenario::load_str(text, "t.toml", &[]).expect("valid");
        let recorder = Recorder::default();
        recorder.set_phases(Phases::of(&scenario));
        let (s, ms) = (Duration::from_secs, Duration::from_millis);
        let done = |at: Duration, outcome: Outcome, replica: &str, sent: Duration| {
            recorder.logical_done(at, at - sent, outcome, Some("db"), Some("db"), Some((replica, sent)));
        };
        // Ok, sent inside the window and answered inside it: not waited out.
        done(ms(11_500), Outcome::Ok, "db-0", s(11));
        // Ok, sent at 11 s on either replica (the fault is on the whole server), answered after 12 s: waited out.
        done(s(13), Outcome::Ok, "db-0", s(11));
        done(s(13), Outcome::Ok, "db-1", ms(10_500));
        // Failed, or sent before the window: not waited out.
        done(s(13), Outcome::Tool, "db-1", s(11));
        done(s(13), Outcome::Ok, "db-1", s(9));
        // No attempt at all (declined before any replica was chosen).
        recorder.logical_done(s(14), ms(1), Outcome::Error("local"), None, Some("db"), None);
        let db = recorder.audit(&[]).servers["db"];
        assert_eq!((db.calls, db.failed, db.waited_out, db.ok()), (6, 2, 2, 4));
    }
}
