use std::time::Duration;

/// Per-connection settings. Defaults:
///
/// | field                      | default | meaning                                                        |
/// |----------------------------|---------|----------------------------------------------------------------|
/// | `max_in_flight`            | 256     | requests on this connection at once (server's `maxConcurrency`) |
/// | `queue_wait`               | 10 s    | longest wait for an in-flight permit                           |
/// | `first_response`           | 5 s     | from sending to the response or the first progress event       |
/// | `stream_idle`              | 120 s   | longest gap between progress events once a call is streaming   |
/// | `call_deadline`            | 300 s   | overall deadline of a client's or a connection's call when the caller gives none |
/// | `probe_after`              | 1 s     | a tool call unanswered this long on a stream that spoke before and has been silent since it was written: the stream is probed (one `ping`) without waiting for the call's own timeout; `None`: only then. The client turns it off for a child's pipes and for Streamable HTTP |
/// | `stall_probe`              | 2 s     | how long that `ping` (or one after a silent timeout) may take before the stream is declared dead |
/// | `priority_lane_capacity`   | 256     | queued lifecycle/ping/cancel messages                          |
/// | `notification_queue`       | 256     | queued server notifications; beyond it they are dropped and counted |
/// | `notification_concurrency` | 8       | notifications handled at once                                  |
#[derive(Debug, Clone)]
pub struct ConnectionConfig {
    pub max_in_flight: usize,
    pub queue_wait: Duration,
    pub first_response: Duration,
    pub stream_idle: Duration,
    pub call_deadline: Duration,
    pub probe_after: Option<Duration>,
    pub stall_probe: Duration,
    pub priority_lane_capacity: usize,
    pub notification_queue: usize,
    pub notification_concurrency: usize,
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig {
            max_in_flight: 256,
            queue_wait: Duration::from_secs(10),
            first_response: Duration::from_secs(5),
            stream_idle: Duration::from_secs(120),
            call_deadline: Duration::from_secs(300),
            probe_after: Some(Duration::from_secs(1)),
            stall_probe: Duration::from_secs(2),
            priority_lane_capacity: 256,
            notification_queue: 256,
            notification_concurrency: 8,
        }
    }
}
