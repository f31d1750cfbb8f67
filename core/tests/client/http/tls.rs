//! HTTPS: the scripted peer behind rustls with a certificate generated here.

use std::sync::Arc;

use mcpstorm_core::{
    CallError, CallOptions, ClientConfig, HttpEndpoint, McpClient, SeededRng, TokioClock, TransportError,
    error::HttpError,
};
use rustls::pki_types::PrivateKeyDer;
use serde_json::json;
use tokio_rustls::TlsAcceptor;

use super::client_of;
use super::peer::*;

/// Mid-2025: inside the generated certificate's validity (1975 to 4096).
const WALL_MS: u64 = 1_750_000_000_000;

/// A legacy peer over TLS for `localhost`, and the PEM of its certificate.
async fn tls_peer() -> (Peer, String) {
    let key = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).expect("test certificate");
    let pem = key.cert.pem();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("test certificate")
        .with_no_client_auth()
        .with_single_cert(vec![key.cert.der().clone()], PrivateKeyDer::Pkcs8(key.signing_key.serialize_der().into()))
        .expect("test certificate");
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let script: Script =
        Arc::new(|req: &Req| legacy_basics(req, "tls-s").unwrap_or_else(|| vec![json_reply(req, text("secure"))]));
    let peer = Peer::start_with(script, move |tcp| {
        let acceptor = acceptor.clone();
        async move { acceptor.accept(tcp).await.ok().map(|s| Box::new(s) as Box<dyn Io>) }
    })
    .await;
    (peer, pem)
}

fn https(peer: &Peer) -> String {
    format!("https://localhost:{}/mcp", peer.addr.rsplit(':').next().expect("test certificate"))
}

#[tokio::test]
async fn a_session_over_https_with_an_added_root() {
    let (peer, pem) = tls_peer().await;
    let endpoint = HttpEndpoint::new(&https(&peer)).unwrap().with_root_pem(pem.as_bytes()).unwrap();
    let c = client_of(endpoint, &peer.addr).with_clock(Arc::new(TokioClock::new(WALL_MS)));
    let result = c.call_tool("echo", json!({}), CallOptions::default()).await.unwrap();
    assert_eq!(result.content[0]["text"], "secure");
    let call = peer.wait_for(|r| r.rpc() == "tools/call").await;
    assert_eq!(call.header("mcp-session-id"), Some("tls-s"));
    assert_eq!(call.header("host"), Some(https(&peer).trim_start_matches("https://").trim_end_matches("/mcp")));
}

#[tokio::test]
async fn an_untrusted_certificate_is_a_tls_error() {
    let (peer, _) = tls_peer().await;
    let c =
        client_of(HttpEndpoint::new(&https(&peer)).unwrap(), &peer.addr).with_clock(Arc::new(TokioClock::new(WALL_MS)));
    let err = c.list_tools().await.unwrap_err();
    assert!(
        matches!(&err, CallError::Transport(TransportError::Http(HttpError::Tls(m))) if m.contains("UnknownIssuer")),
        "{err:?}"
    );
}

#[tokio::test]
async fn certificates_are_checked_at_the_clocks_time() {
    let (peer, pem) = tls_peer().await;
    let endpoint = HttpEndpoint::new(&https(&peer)).unwrap().with_root_pem(pem.as_bytes()).unwrap();
    // The default clock reads 1970: before the certificate's validity.
    let c = client_of(endpoint, &peer.addr);
    let err = c.list_tools().await.unwrap_err();
    assert!(
        matches!(&err, CallError::Transport(TransportError::Http(HttpError::Tls(m))) if m.contains("not valid yet")),
        "{err:?}"
    );
}

/// A root that is PEM but no certificate cannot become a TLS configuration: a configuration error, refused at once
/// however many retries the client has. Time is paused, so a retry would show as the backoff's virtual second (at
/// least 0.8 s with its jitter) passing.
#[tokio::test(start_paused = true)]
async fn a_root_that_is_no_certificate_is_a_config_error_not_retried() {
    let garbage = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    let endpoint = HttpEndpoint::new("https://localhost:1/mcp").unwrap().with_root_pem(garbage).unwrap();
    let config = ClientConfig { lifecycle_retries: 5, ..ClientConfig::default() };
    let c = McpClient::http("bad", endpoint, config, SeededRng::new(1)).with_clock(Arc::new(TokioClock::new(WALL_MS)));
    let started = tokio::time::Instant::now();
    let err = c.list_tools().await.unwrap_err();
    assert!(matches!(&err, CallError::Transport(TransportError::Config(m)) if m.contains("root")), "{err:?}");
    assert!(!err.retry_allowed(true));
    assert!(started.elapsed() < std::time::Duration::from_millis(800), "retried: {:?}", started.elapsed());
}
