//! An identity provider double: an OAuth 2.1 authorization server's metadata (RFC 8414) and token endpoint
//! (`client_credentials`, RFC 6749 §4.4), over HTTP/1.1 on the same [`Listener`] seam as the fake servers, so the
//! gateway's real OAuth client reaches it through the simulator's network.
//!
//! It is as slow as a real provider under load, which is the point: `workers` token requests are served at once,
//! each taking `latency` (plus an outage's extra); up to `max_queue` more wait their turn; beyond that it sheds with
//! 503 `temporarily_unavailable`. Its faults ([`IdpControl`]): slow, answering an error status, or down (every
//! connection closed at once). What it issues, the servers check through the shared [`TokenAuthority`].

mod tokens;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use mcpstorm_core::serve::body::{self, Reply};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use tokio::sync::Semaphore;

use crate::listener::Listener;
pub use tokens::{Refusal, TokenAuthority};

/// The token endpoint's path under the issuer.
pub const TOKEN_PATH: &str = "/token";
/// A token request's body is a short form; anything larger is refused.
const MAX_BODY: usize = 16 * 1024;

/// How an identity provider behaves when nothing is wrong.
#[derive(Debug, Clone)]
pub struct IdpConfig {
    /// Its issuer identifier, `http://host:port`: the metadata names it, and the token endpoint is under it.
    pub issuer: String,
    /// Each token request's service time.
    pub latency: Duration,
    /// Token requests served at once.
    pub workers: usize,
    /// Token requests waiting for a worker, at most; more are shed with 503.
    pub max_queue: usize,
    /// Seeds the draws of an erroring outage's `rate`.
    pub seed: u64,
}

/// An outage in force (`idp_outage`): all zero when there is none.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Outage {
    /// Added to every token request's service time.
    pub extra: Duration,
    /// Answered instead of a token, to a share `rate` of the requests.
    pub status: Option<u16>,
    pub rate: f64,
    /// Every connection is closed at once, unanswered.
    pub down: bool,
}

impl Outage {
    /// The outage as the event log shows it.
    pub fn describe(&self) -> String {
        match (self.down, self.status) {
            (true, _) => "down".to_owned(),
            (false, Some(status)) => format!("status={status} rate={} extra={:?}", self.rate, self.extra),
            (false, None) => format!("extra={:?}", self.extra),
        }
    }
}

/// What the provider has done: token requests by outcome, and the busiest second.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IdpStats {
    /// Token requests received, whatever became of them.
    pub requests: u64,
    /// Tokens issued.
    pub issued: u64,
    /// Shed with 503 for want of room to wait.
    pub shed: u64,
    /// Answered with an outage's error status.
    pub failed: u64,
    /// Connections closed unanswered while down.
    pub dropped: u64,
    /// Token requests received in each second of the provider's wall clock that had any.
    pub per_second: BTreeMap<u64, u64>,
}

impl IdpStats {
    /// The most token requests received in one second.
    pub fn peak_per_second(&self) -> u64 {
        self.per_second.values().copied().max().unwrap_or(0)
    }
}

#[derive(Debug)]
struct Shared {
    config: IdpConfig,
    authority: Arc<TokenAuthority>,
    workers: Semaphore,
    waiting: AtomicUsize,
    outage: Mutex<Outage>,
    rng: Mutex<ChaCha8Rng>,
    requests: AtomicU64,
    issued: AtomicU64,
    shed: AtomicU64,
    failed: AtomicU64,
    dropped: AtomicU64,
    per_second: Mutex<BTreeMap<u64, u64>>,
}

/// The identity provider. Cheap to clone: clones are the same provider.
#[derive(Debug, Clone)]
pub struct IdentityProvider(Arc<Shared>);

/// Steers a running provider's outage and reads its counters.
#[derive(Debug, Clone)]
pub struct IdpControl(Arc<Shared>);

impl IdentityProvider {
    pub fn new(config: IdpConfig, authority: Arc<TokenAuthority>) -> IdentityProvider {
        let rng = ChaCha8Rng::seed_from_u64(config.seed);
        IdentityProvider(Arc::new(Shared {
            workers: Semaphore::new(config.workers.max(1)),
            config,
            authority,
            waiting: AtomicUsize::new(0),
            outage: Mutex::default(),
            rng: Mutex::new(rng),
            requests: AtomicU64::new(0),
            issued: AtomicU64::new(0),
            shed: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            per_second: Mutex::default(),
        }))
    }

    pub fn control(&self) -> IdpControl {
        IdpControl(self.0.clone())
    }

    /// Accepts connections forever, each served on its own task (HTTP/1.1 keep-alive).
    pub async fn serve<L: Listener>(&self, mut listener: L) {
        let mut conns = tokio::task::JoinSet::new();
        loop {
            while conns.try_join_next().is_some() {}
            let Ok((reader, writer, _peer)) = listener.accept().await else {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            if self.0.outage().down {
                self.0.dropped.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let shared = self.0.clone();
            conns.spawn(async move {
                let io = TokioIo::new(tokio::io::join(reader, writer));
                let service = service_fn(|request| {
                    let shared = shared.clone();
                    async move { Ok::<_, Infallible>(shared.handle(request).await) }
                });
                // No `Date` header: hyper would read the system clock for it.
                let _ = http1::Builder::new().auto_date_header(false).serve_connection(io, service).await;
            });
        }
    }
}

impl IdpControl {
    pub fn set_outage(&self, outage: Outage) {
        *self.0.outage.lock().unwrap_or_else(PoisonError::into_inner) = outage;
    }

    pub fn outage(&self) -> Outage {
        self.0.outage()
    }

    pub fn stats(&self) -> IdpStats {
        let s = &self.0;
        IdpStats {
            requests: s.requests.load(Ordering::Relaxed),
            issued: s.issued.load(Ordering::Relaxed),
            shed: s.shed.load(Ordering::Relaxed),
            failed: s.failed.load(Ordering::Relaxed),
            dropped: s.dropped.load(Ordering::Relaxed),
            per_second: s.per_second.lock().unwrap_or_else(PoisonError::into_inner).clone(),
        }
    }
}

impl Shared {
    fn outage(&self) -> Outage {
        *self.outage.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn handle(&self, request: Request<Incoming>) -> Reply {
        match (request.method(), request.uri().path()) {
            (&Method::GET, "/.well-known/oauth-authorization-server" | "/.well-known/openid-configuration") => {
                let issuer = &self.config.issuer;
                json_reply(
                    StatusCode::OK,
                    &json!({
                        "issuer": issuer,
                        "token_endpoint": format!("{issuer}{TOKEN_PATH}"),
                        "grant_types_supported": ["client_credentials"],
                        "token_endpoint_auth_methods_supported": ["client_secret_basic"],
                        "response_types_supported": [],
                    }),
                )
            }
            (&Method::POST, TOKEN_PATH) => self.token(request).await,
            _ => body::empty(StatusCode::NOT_FOUND),
        }
    }

    /// One token request: counted, queued for a worker (or shed), served in the service time, then answered.
    async fn token(&self, request: Request<Incoming>) -> Reply {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let second = self.authority_second();
        *self.per_second.lock().unwrap_or_else(PoisonError::into_inner).entry(second).or_default() += 1;
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= self.config.max_queue + self.config.workers {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            self.shed.fetch_add(1, Ordering::Relaxed);
            return oauth_error(StatusCode::SERVICE_UNAVAILABLE, "temporarily_unavailable");
        }
        let basic = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.len() > 6 && v[..6].eq_ignore_ascii_case("basic "));
        let form = body::read(request.into_body(), MAX_BODY).await.unwrap_or_default();
        let permit = self.workers.acquire().await;
        let outage = self.outage();
        tokio::time::sleep(self.config.latency.saturating_add(outage.extra)).await;
        drop(permit);
        self.waiting.fetch_sub(1, Ordering::AcqRel);
        if let Some(status) = outage.status
            && self.rng.lock().unwrap_or_else(PoisonError::into_inner).random_bool(outage.rate.clamp(0.0, 1.0))
        {
            self.failed.fetch_add(1, Ordering::Relaxed);
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
            return oauth_error(status, "temporarily_unavailable");
        }
        if !basic {
            return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client");
        }
        if !form_has(&form, "grant_type", "client_credentials") {
            return oauth_error(StatusCode::BAD_REQUEST, "unsupported_grant_type");
        }
        self.issued.fetch_add(1, Ordering::Relaxed);
        let token = self.authority.issue();
        let mut reply = json_reply(
            StatusCode::OK,
            &json!({"access_token": token, "token_type": "Bearer", "expires_in": self.authority.ttl().as_secs()}),
        );
        reply.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        reply
    }

    /// The current second of the authority's wall clock.
    fn authority_second(&self) -> u64 {
        self.authority.wall_ms() / 1000
    }
}

/// Whether the urlencoded `form` has `key=value` (the values this checks need no decoding).
fn form_has(form: &[u8], key: &str, value: &str) -> bool {
    std::str::from_utf8(form)
        .unwrap_or_default()
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .any(|(k, v)| k == key && v == value)
}

fn json_reply(status: StatusCode, value: &serde_json::Value) -> Reply {
    body::bytes(status, "application/json", Bytes::from(value.to_string()))
}

/// An RFC 6749 §5.2 error answer.
fn oauth_error(status: StatusCode, error: &'static str) -> Reply {
    json_reply(status, &json!({ "error": error }))
}
