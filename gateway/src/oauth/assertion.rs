//! How the gateway proves who it is at a token endpoint: a client secret with HTTP Basic, or `private_key_jwt`
//! (RFC 7523 §2.2, OpenID Connect Core §9): a JWT signed with the client's private key, naming the client as issuer
//! and subject and the token endpoint as audience, valid for a minute and never used twice (`jti`).

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcpstorm_core::Secret;
use rustls_pki_types::PrivateKeyDer;
use rustls_pki_types::pem::PemObject;
use serde::Serialize;

/// An assertion's lifetime: long enough to cross a slow network, short enough that a captured one is soon useless.
const LIFETIME_SECS: u64 = 60;
const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// The client's credentials at the token endpoint.
pub enum ClientAuth {
    /// `Authorization: Basic …` (RFC 6749 §2.3.1).
    Basic(Secret),
    /// A signed assertion per request.
    PrivateKeyJwt { client_id: String, key: EncodingKey, alg: Algorithm, kid: Option<String> },
}

impl std::fmt::Debug for ClientAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientAuth::Basic(_) => f.write_str("Basic([redacted])"),
            ClientAuth::PrivateKeyJwt { client_id, alg, kid, .. } => f
                .debug_struct("PrivateKeyJwt")
                .field("client_id", client_id)
                .field("alg", alg)
                .field("kid", kid)
                .finish_non_exhaustive(),
        }
    }
}

#[derive(Serialize)]
struct Claims<'a> {
    iss: &'a str,
    sub: &'a str,
    aud: &'a str,
    iat: u64,
    exp: u64,
    jti: String,
}

impl ClientAuth {
    /// `private_key_jwt` with the PEM key `pem` for `alg`. An RSA key in PKCS#8 is refused with the command that
    /// converts it: the signer (ring, through jsonwebtoken) reads RSA keys as PKCS#1 only.
    pub fn private_key(client_id: &str, pem: &[u8], alg: &str, kid: Option<String>) -> Result<ClientAuth, String> {
        let alg: Algorithm = alg.parse().map_err(|_| format!("{alg:?} is not a signing algorithm"))?;
        let der = PrivateKeyDer::from_pem_slice(pem).map_err(|e| format!("no private key in the PEM: {e}"))?;
        let key = match (&der, alg) {
            (PrivateKeyDer::Pkcs1(k), Algorithm::RS256 | Algorithm::PS256) => {
                EncodingKey::from_rsa_der(k.secret_pkcs1_der())
            }
            (PrivateKeyDer::Pkcs8(_), Algorithm::RS256 | Algorithm::PS256) => {
                return Err("an RSA key must be PKCS#1 (BEGIN RSA PRIVATE KEY): convert it with \
                            `openssl rsa -in key.pem -traditional -out key-pkcs1.pem`"
                    .to_owned());
            }
            (PrivateKeyDer::Pkcs8(k), Algorithm::ES256 | Algorithm::ES384) => {
                EncodingKey::from_ec_der(k.secret_pkcs8_der())
            }
            (PrivateKeyDer::Pkcs8(k), Algorithm::EdDSA) => EncodingKey::from_ed_der(k.secret_pkcs8_der()),
            _ => return Err(format!("the key is not a PKCS#8 key usable with {alg:?}")),
        };
        let auth = ClientAuth::PrivateKeyJwt { client_id: client_id.to_owned(), key, alg, kid };
        // Signed once now, so a key that does not fit its algorithm is a start error, not every call's.
        auth.assertion("https://check.invalid/token", 0).map(|_| auth)
    }

    /// The `Authorization` header to send, if this kind sends one.
    pub fn header(&self) -> Option<&Secret> {
        match self {
            ClientAuth::Basic(basic) => Some(basic),
            ClientAuth::PrivateKeyJwt { .. } => None,
        }
    }

    /// The form fields to add to a token request to `token_url` at wall time `now_secs`.
    pub fn form_fields(&self, token_url: &str, now_secs: u64) -> Result<Vec<(&'static str, String)>, String> {
        match self {
            ClientAuth::Basic(_) => Ok(Vec::new()),
            ClientAuth::PrivateKeyJwt { client_id, .. } => Ok(vec![
                ("client_id", client_id.clone()),
                ("client_assertion_type", ASSERTION_TYPE.to_owned()),
                ("client_assertion", self.assertion(token_url, now_secs)?),
            ]),
        }
    }

    fn assertion(&self, token_url: &str, now_secs: u64) -> Result<String, String> {
        let ClientAuth::PrivateKeyJwt { client_id, key, alg, kid } = self else { return Err("no key".to_owned()) };
        let mut header = Header::new(*alg);
        header.kid = kid.clone();
        let jti = getrandom::u64().map_err(|e| format!("no randomness for the assertion's jti: {e}"))?;
        let claims = Claims {
            iss: client_id,
            sub: client_id,
            aud: token_url,
            iat: now_secs,
            exp: now_secs + LIFETIME_SECS,
            jti: format!("{jti:016x}"),
        };
        jsonwebtoken::encode(&header, &claims, key).map_err(|e| format!("the key cannot sign {alg:?}: {e}"))
    }
}
