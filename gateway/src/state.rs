//! What the gateway's protection looks like now: every breaker by (server, replica, tool), every replica's health
//! (with whether it is ejected: out of rotation since its address refused a connection), every bulkhead. Read by the admin API (`GET /admin/breakers`) and by the metrics at scrape time, so the two
//! always agree.

use mcpstorm_core::Gateway;
use serde::Serialize;
use tokio::time::Instant;

/// One breaker.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BreakerRow {
    pub server: String,
    pub replica: String,
    pub tool: String,
    /// `closed`, `open`, `half_open`, `forced_open`, `disabled` or `metrics_only`.
    pub state: &'static str,
    /// The current window's calls, failures and slow calls.
    pub calls: u32,
    pub failures: u32,
    pub slow: u32,
}

/// One replica's health as the router sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HealthRow {
    pub server: String,
    pub replica: String,
    /// The linear health score at the last refresh: 1 healthy, below 0.5 worth an alert.
    pub score: f64,
    pub error_rate: f64,
    pub p95_ms: f64,
    pub in_flight: f64,
    pub uptime: f64,
    /// Out of rotation since its address refused a connection, until a probe answers: for how many seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ejected_s: Option<f64>,
    /// Readmission probes that failed while ejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_probes: Option<u32>,
}

/// One bulkhead pool: its permits in use and its current (adaptive) limit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BulkheadRow {
    pub pool: String,
    pub in_flight: usize,
    pub limit: usize,
}

/// The whole picture.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Protection {
    pub breakers: Vec<BreakerRow>,
    pub health: Vec<HealthRow>,
    pub bulkheads: Vec<BulkheadRow>,
}

/// The server of replica id `server#i`.
pub fn server_of(replica: &str) -> &str {
    replica.rsplit_once('#').map_or(replica, |(server, _)| server)
}

impl Protection {
    /// Reads `gateway` now; `replicas` are the endpoint ids to report health for, in order.
    pub fn read<'a>(gateway: &Gateway, replicas: impl IntoIterator<Item = &'a str>) -> Protection {
        let now = Instant::now();
        let breakers = gateway
            .breakers()
            .into_iter()
            .map(|((replica, tool), gate)| {
                let counts = gate.counts(now);
                BreakerRow {
                    server: server_of(&replica).to_owned(),
                    state: gate.state().into(),
                    calls: counts.calls,
                    failures: counts.failures,
                    slow: counts.slow,
                    replica,
                    tool,
                }
            })
            .collect();
        let health = gateway.with_router(|router| {
            let ejected = router.ejected(now);
            replicas
                .into_iter()
                .filter_map(|replica| {
                    let stats = router.stats(router.replica_id(replica)?)?;
                    let ejection = ejected.iter().find(|e| e.replica == replica);
                    Some(HealthRow {
                        ejected_s: ejection.map(|e| e.for_.as_secs_f64()),
                        failed_probes: ejection.map(|e| e.failed_probes),
                        server: server_of(replica).to_owned(),
                        replica: replica.to_owned(),
                        score: stats.score,
                        error_rate: stats.error_rate,
                        p95_ms: stats.p95_ms,
                        in_flight: stats.in_flight,
                        uptime: stats.uptime,
                    })
                })
                .collect()
        });
        let bulkheads = gateway
            .bulkheads()
            .into_iter()
            .map(|(pool, in_flight, limit)| BulkheadRow { pool, in_flight, limit })
            .collect();
        Protection { breakers, health, bulkheads }
    }
}
