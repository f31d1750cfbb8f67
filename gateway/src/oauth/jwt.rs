//! One JWT access token checked (RFC 9068, the MCP authorization spec): the algorithm against the allow-list and
//! the key's type, the signature against the issuer's key, then `iss`, `aud`, `exp`, `nbf` and `iat` by the
//! gateway's clock with a bounded skew. jsonwebtoken checks the signature only: its own time checks read the system
//! clock, which a simulated gateway must not.

use std::collections::HashSet;
use std::time::Duration;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use mcpstorm_core::serve::auth::{Denied, DenyReason, Principal};
use serde::Deserialize;
use serde_json::Value;

use super::keys::{Key, KeyMiss, KeySet};

/// What a token must say.
#[derive(Debug, Clone)]
pub struct Expect {
    pub issuer: String,
    pub audience: String,
    pub algorithms: Vec<Algorithm>,
    pub leeway: Duration,
}

#[derive(Debug, Deserialize)]
struct Claims {
    iss: Option<String>,
    #[serde(default)]
    aud: Option<Value>,
    exp: Option<f64>,
    nbf: Option<f64>,
    iat: Option<f64>,
    sub: Option<String>,
    client_id: Option<String>,
    azp: Option<String>,
    /// RFC 9068 / RFC 8693: space-separated.
    scope: Option<String>,
    /// Some providers (Entra, Okta): an array.
    scp: Option<Value>,
}

/// Whether `token` has a JWT's shape (three base64url parts): anything else is an opaque token.
pub fn looks_like_jwt(token: &str) -> bool {
    token.split('.').count() == 3 && token.starts_with("ey")
}

/// Checks `token` at wall time `now_ms`, fetching keys from `keys` as needed.
pub async fn check(token: &str, expect: &Expect, keys: &KeySet, now_ms: u64) -> Result<Principal, Denied> {
    let denied = |reason, detail: String| Denied::new(reason, detail);
    let header = jsonwebtoken::decode_header(token)
        .map_err(|_| denied(DenyReason::Malformed, "not a readable JWT".to_owned()))?;
    if !expect.algorithms.contains(&header.alg) {
        return Err(denied(DenyReason::Algorithm, format!("the algorithm {:?} is not accepted", header.alg)));
    }
    let key = keys.key(header.kid.as_deref()).await.map_err(|miss| match miss {
        KeyMiss::Unknown => denied(DenyReason::UnknownKey, "signed by a key the issuer does not publish".to_owned()),
        KeyMiss::Unreachable(why) => {
            tracing::warn!(error = %why, "an agent's token could not be checked: the issuer's keys are unreachable");
            denied(DenyReason::Unverifiable, "the issuer's keys cannot be fetched now; retry later".to_owned())
        }
    })?;
    let claims = verify(token, &key, header.alg)?;
    principal(claims, token, expect, now_ms)
}

fn verify(token: &str, key: &Key, alg: Algorithm) -> Result<Claims, Denied> {
    if !key.algorithms.contains(&alg) {
        return Err(Denied::new(DenyReason::Algorithm, format!("the key does not sign with {alg:?}")));
    }
    let mut validation = Validation::new(alg);
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    validation.required_spec_claims = HashSet::new();
    match jsonwebtoken::decode::<Claims>(token, &key.decoding, &validation) {
        Ok(data) => Ok(data.claims),
        Err(e) => Err(match e.kind() {
            ErrorKind::InvalidSignature => Denied::new(DenyReason::Signature, "the signature does not verify"),
            ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => {
                Denied::new(DenyReason::Algorithm, format!("the key does not sign with {alg:?}"))
            }
            _ => Denied::new(DenyReason::Malformed, "the token's claims are not readable"),
        }),
    }
}

fn principal(claims: Claims, token: &str, expect: &Expect, now_ms: u64) -> Result<Principal, Denied> {
    let denied = |reason, detail: String| Denied::new(reason, detail);
    if claims.iss.as_deref() != Some(expect.issuer.as_str()) {
        return Err(denied(DenyReason::Issuer, "issued by another issuer".to_owned()));
    }
    let audiences: Vec<&str> = match &claims.aud {
        Some(Value::String(a)) => vec![a.as_str()],
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !audiences.contains(&expect.audience.as_str()) {
        return Err(denied(DenyReason::Audience, format!("not issued for {}", expect.audience)));
    }
    let now = now_ms as f64 / 1000.0;
    let leeway = expect.leeway.as_secs_f64();
    match claims.exp {
        None => return Err(denied(DenyReason::Malformed, "the token has no exp".to_owned())),
        Some(exp) if exp + leeway <= now => {
            return Err(denied(DenyReason::Expired, "the token has expired".to_owned()));
        }
        Some(_) => {}
    }
    if claims.nbf.is_some_and(|nbf| nbf - leeway > now) || claims.iat.is_some_and(|iat| iat - leeway > now) {
        return Err(denied(DenyReason::NotYetValid, "the token is not valid yet".to_owned()));
    }
    let mut scopes: Vec<String> = claims.scope.iter().flat_map(|s| s.split_whitespace()).map(str::to_owned).collect();
    if let Some(Value::Array(list)) = &claims.scp {
        scopes.extend(list.iter().filter_map(Value::as_str).map(str::to_owned));
    }
    Ok(Principal {
        subject: claims.sub,
        client_id: claims.client_id.or(claims.azp),
        scopes: Some(scopes),
        token: Some(mcpstorm_core::Secret::new(token)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn expect() -> Expect {
        Expect {
            issuer: "https://idp".into(),
            audience: "https://gw/mcp".into(),
            algorithms: vec![Algorithm::RS256],
            leeway: Duration::from_secs(60),
        }
    }

    fn claims(v: Value) -> Claims {
        serde_json::from_value(v).expect("claims")
    }

    const NOW: u64 = 1_000_000_000;

    fn check_at(v: Value) -> Result<Principal, DenyReason> {
        principal(claims(v), "t", &expect(), NOW * 1000).map_err(|d| d.reason)
    }

    #[test]
    fn each_claim_is_checked_and_named() {
        let ok = json!({"iss": "https://idp", "aud": ["x", "https://gw/mcp"], "exp": NOW + 10, "scope": "mcp tools:add", "sub": "alice"});
        let p = check_at(ok.clone()).expect("valid");
        assert_eq!(p.scopes, Some(vec!["mcp".to_owned(), "tools:add".to_owned()]));
        assert_eq!(p.subject.as_deref(), Some("alice"));
        let with = |k: &str, v: Value| {
            let mut c = ok.clone();
            c[k] = v;
            check_at(c).err()
        };
        assert_eq!(with("iss", json!("https://evil")), Some(DenyReason::Issuer));
        assert_eq!(with("aud", json!("https://other/mcp")), Some(DenyReason::Audience));
        assert_eq!(with("exp", json!(NOW - 61)), Some(DenyReason::Expired));
        assert_eq!(with("exp", json!(NOW - 59)), None, "within the leeway");
        assert_eq!(with("nbf", json!(NOW + 120)), Some(DenyReason::NotYetValid));
        assert_eq!(with("iat", json!(NOW + 120)), Some(DenyReason::NotYetValid));
        assert_eq!(with("exp", Value::Null), Some(DenyReason::Malformed));
    }

    #[test]
    fn an_array_of_scopes_counts_as_well() {
        let p = check_at(json!({"iss": "https://idp", "aud": "https://gw/mcp", "exp": NOW + 10, "scp": ["a", "b"]}));
        assert_eq!(p.expect("valid").scopes, Some(vec!["a".to_owned(), "b".to_owned()]));
    }

    #[test]
    fn only_three_part_tokens_are_read_as_jwts() {
        assert!(looks_like_jwt("eyJh.eyJi.sig"));
        assert!(!looks_like_jwt("opaque-token"));
        assert!(!looks_like_jwt("a.b"));
    }
}
