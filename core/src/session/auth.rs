//! Auth-scheme negotiation for one session: the schemes the server declared at connect, matched against the
//! configured credentials (first configured one the server accepts wins, see [`pick_credential`]).
//!
//! Edge cases, decided here once:
//! - a server that declares nothing gets no authorization key (plain MCP);
//! - a server that declares an empty list (or only scheme names we do not know) requires nothing we can offer a
//!   credential for, so it also gets no authorization key — the server, not us, then decides whether that is enough;
//! - no configured credentials against a non-empty declaration is a mismatch that offers `[]`.

use serde_json::{Map, Value, json};

use super::ext::{META_AUTHORIZATION, pick_credential};
use crate::credential::{AuthScheme, Credential};
use crate::error::AuthError;

/// What a session sends for authorization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AuthChoice {
    /// The server declared no schemes (or an empty list): send nothing.
    None,
    /// Send this credential.
    Chosen(Credential),
    /// The server accepts none of our credentials: fail calls before sending them.
    NoMatch(AuthError),
}

impl AuthChoice {
    /// Picks for a server that declared `declared` (`None`: declared nothing).
    pub fn negotiate(declared: Option<&[AuthScheme]>, configured: &[Credential]) -> AuthChoice {
        match declared {
            None | Some([]) => AuthChoice::None,
            Some(accepted) => match pick_credential(configured, accepted) {
                Some(c) => AuthChoice::Chosen(c.clone()),
                None => AuthChoice::NoMatch(mismatch(accepted, configured)),
            },
        }
    }

    /// `Err` when no credential matches: the call must not be sent.
    pub fn check(&self) -> Result<(), AuthError> {
        match self {
            AuthChoice::NoMatch(e) => Err(e.clone()),
            AuthChoice::None | AuthChoice::Chosen(_) => Ok(()),
        }
    }

    /// Adds the authorization key for the chosen credential to a request `_meta` layer. The only place a secret is
    /// exposed: it goes on the wire and nowhere else.
    pub fn add_to_meta(&self, meta: &mut Map<String, Value>) {
        if let AuthChoice::Chosen(c) = self {
            meta.insert(
                META_AUTHORIZATION.to_owned(),
                json!({"scheme": <&str>::from(c.scheme), "credential": c.secret.expose()}),
            );
        }
    }
}

/// The error for a server accepting `accepted` when we hold `configured`: names schemes, never secrets.
pub(crate) fn mismatch(accepted: &[AuthScheme], configured: &[Credential]) -> AuthError {
    AuthError::Mismatch { accepted: accepted.to_vec(), offered: configured.iter().map(|c| c.scheme).collect() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::credential::Secret;

    fn cred(scheme: AuthScheme, secret: &str) -> Credential {
        Credential { scheme, secret: Secret::new(secret) }
    }

    #[test]
    fn negotiates_and_writes_the_envelope() {
        let creds = [cred(AuthScheme::ApiKey, "k-secret"), cred(AuthScheme::Bearer, "b-secret")];
        let chosen = AuthChoice::negotiate(Some(&[AuthScheme::Bearer, AuthScheme::Jwt]), &creds);
        assert_eq!(chosen, AuthChoice::Chosen(creds[1].clone()));
        assert!(chosen.check().is_ok());
        let mut meta = Map::new();
        chosen.add_to_meta(&mut meta);
        assert_eq!(Value::Object(meta), json!({META_AUTHORIZATION: {"scheme": "bearer", "credential": "b-secret"}}));
        assert!(!format!("{chosen:?}").contains("b-secret"));
    }

    #[test]
    fn declared_nothing_or_empty_sends_nothing() {
        for declared in [None, Some(&[][..])] {
            let c = AuthChoice::negotiate(declared, &[cred(AuthScheme::Bearer, "x")]);
            assert_eq!(c, AuthChoice::None);
            let mut meta = Map::new();
            c.add_to_meta(&mut meta);
            assert!(meta.is_empty());
        }
    }

    #[test]
    fn no_match_names_schemes_only() {
        let c = AuthChoice::negotiate(Some(&[AuthScheme::Jwt]), &[cred(AuthScheme::ApiKey, "hunter2")]);
        let e = c.check().unwrap_err();
        assert_eq!(e, AuthError::Mismatch { accepted: vec![AuthScheme::Jwt], offered: vec![AuthScheme::ApiKey] });
        assert!(!format!("{e} {e:?} {c:?}").contains("hunter2"));
        let none = AuthChoice::negotiate(Some(&[AuthScheme::Jwt]), &[]);
        assert_eq!(none.check().unwrap_err(), AuthError::Mismatch { accepted: vec![AuthScheme::Jwt], offered: vec![] });
    }
}
