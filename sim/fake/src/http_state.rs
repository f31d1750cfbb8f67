//! What a server's Streamable HTTP transport keeps across requests: the `Mcp-Session-Id` table (each session with
//! its in-flight table and its resumable streams), stream ids, and the random stream of the HTTP faults.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use mcpstorm_core::Clock;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::config::FakeServerConfig;
use crate::inflight::InFlight;
use crate::sessions::SessionTable;
use crate::sse::StreamLog;
use crate::stats::Counters;

/// Streams a session keeps for resumption; beyond it the oldest is forgotten (resuming it gets 404).
const MAX_STREAMS_PER_SESSION: usize = 32;

#[derive(Debug)]
pub(crate) struct HttpState {
    pub sessions: SessionTable<HttpSession>,
    next_stream: AtomicU64,
    /// Separate from the server's call RNG, so turning an HTTP fault on does not shift the latency and error draws.
    rng: Mutex<ChaCha8Rng>,
}

impl HttpState {
    pub fn new(config: &FakeServerConfig, clock: Arc<dyn Clock>) -> HttpState {
        // Sessions never expire without a TTL: the largest one.
        let ttl = config.http_sessions.then(|| config.http_session_ttl_ms.unwrap_or(u64::MAX));
        HttpState {
            sessions: SessionTable::bounded(clock, ttl, config.http_max_sessions),
            next_stream: AtomicU64::new(0),
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(config.seed ^ 0x4854_5450)),
        }
    }

    /// A new stream id, unique on this server.
    pub fn stream_id(&self) -> u64 {
        self.next_stream.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// True with probability `p` (no draw at all when `p` is 0, so an idle fault costs nothing).
    pub fn chance(&self, p: f64) -> bool {
        p > 0.0 && self.rng.lock().unwrap_or_else(|e| e.into_inner()).random::<f64>() < p
    }

    /// The session store forgets every session (the `session_forget` fault). Requests already running finish on the
    /// streams they have; the next naming a forgotten session gets 404.
    pub fn forget_sessions(&self, counters: &Counters) -> usize {
        let forgotten = self.sessions.drop_all().len();
        Counters::add(&counters.http_sessions_forgotten, forgotten as u64);
        forgotten
    }
}

/// One 2025-11-25 session: the scope of its requests' cancellations, its streams, its GET stream.
#[derive(Debug, Clone)]
pub(crate) struct HttpSession(Arc<SessionInner>);

#[derive(Debug)]
struct SessionInner {
    table: Arc<InFlight>,
    streams: Mutex<BTreeMap<u64, Arc<StreamLog>>>,
    /// The generation of the session's GET stream: a new GET supersedes the previous one (whose client has most
    /// likely gone), so a reconnecting client is never locked out by its own dead stream.
    get_generation: AtomicU64,
}

impl HttpSession {
    pub fn new(max_in_flight: usize) -> HttpSession {
        HttpSession(Arc::new(SessionInner {
            table: Arc::new(InFlight::new(max_in_flight)),
            streams: Mutex::default(),
            get_generation: AtomicU64::new(0),
        }))
    }

    pub fn table(&self) -> &Arc<InFlight> {
        &self.0.table
    }

    fn streams(&self) -> MutexGuard<'_, BTreeMap<u64, Arc<StreamLog>>> {
        self.0.streams.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps `log` for resumption, forgetting the oldest beyond [`MAX_STREAMS_PER_SESSION`].
    pub fn keep(&self, log: Arc<StreamLog>) {
        let mut streams = self.streams();
        if streams.len() >= MAX_STREAMS_PER_SESSION {
            streams.pop_first();
        }
        streams.insert(log.id, log);
    }

    pub fn stream(&self, id: u64) -> Option<Arc<StreamLog>> {
        self.streams().get(&id).cloned()
    }

    /// Opens the session's GET stream, superseding any previous one; its generation.
    pub fn open_get(&self) -> u64 {
        self.0.get_generation.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Whether the GET stream of `generation` is still the session's current one.
    pub fn is_current_get(&self, generation: u64) -> bool {
        self.0.get_generation.load(Ordering::SeqCst) == generation
    }
}
