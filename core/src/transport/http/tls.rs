//! TLS for `https` endpoints: rustls with the `ring` provider over the stream the `Dialer` opened.
//!
//! Certificate validity is checked at the wall time of the injected [`Clock`], never the system's: the core reads no
//! std time, and a simulator can skew it. (rustls still draws its handshake randomness from the OS through `ring`;
//! that changes bytes on the wire, never control flow.)

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::time_provider::TimeProvider;
use tokio_rustls::TlsConnector;

use super::endpoint::{HttpConfigError, HttpEndpoint};
use crate::rt::Clock;

/// The connector and the name to verify, for one endpoint.
#[derive(Clone)]
pub(crate) struct Tls {
    pub connector: TlsConnector,
    pub name: ServerName<'static>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").field("name", &self.name).finish_non_exhaustive()
    }
}

#[derive(Debug)]
struct ClockTime(Arc<dyn Clock>);

impl TimeProvider for ClockTime {
    fn current_time(&self) -> Option<UnixTime> {
        Some(UnixTime::since_unix_epoch(std::time::Duration::from_millis(self.0.wall_ms())))
    }
}

/// `None` for `http` endpoints.
pub(crate) fn for_endpoint(endpoint: &HttpEndpoint, clock: Arc<dyn Clock>) -> Result<Option<Tls>, HttpConfigError> {
    let url = endpoint.parts();
    if !url.tls {
        return Ok(None);
    }
    let mut roots = rustls::RootCertStore::empty();
    if endpoint.webpki_roots {
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    }
    for der in endpoint.roots() {
        roots.add(CertificateDer::from(der.clone())).map_err(|e| HttpConfigError::Root(e.to_string()))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_details(provider, Arc::new(ClockTime(clock)))
        .with_safe_default_protocol_versions()
        .map_err(|e| HttpConfigError::Root(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let name = ServerName::try_from(url.host.clone()).map_err(|e| HttpConfigError::Url(e.to_string()))?;
    Ok(Some(Tls { connector: TlsConnector::from(Arc::new(config)), name }))
}
