//! An upstream's access token, attached to every request of the transport and renewed when the server refuses it
//! (the MCP authorization spec, from the client's side). The transport knows nothing of OAuth: it asks its
//! [`Authorizer`] for the `Authorization` value before each request, and tells it of a 401. The gateway's
//! `oauth::client` is the authorizer that gets tokens (client credentials, token exchange) and keeps them fresh.

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;

use crate::credential::Secret;
use crate::error::CallError;

pub type AuthorizationFuture<'a> = Pin<Box<dyn Future<Output = Result<Option<Secret>, CallError>> + Send + 'a>>;

/// Supplies the `Authorization` header of an upstream's requests.
pub trait Authorizer: Send + Sync + Debug + 'static {
    /// The value to send now (`Bearer …`), or `None` to send none (nothing is known yet of how to get one: the
    /// server's 401 will say). `on_behalf_of` is the agent's token when the request is a call made for an agent
    /// (`CallOptions::on_behalf_of`): an authorizer that delegates exchanges it; others ignore it. An error fails the
    /// request unsent.
    fn authorization<'a>(&'a self, on_behalf_of: Option<&'a Secret>) -> AuthorizationFuture<'a>;

    /// The server answered 401 (or 403 `insufficient_scope`) to a request that carried `sent`, with this
    /// `WWW-Authenticate` value: the token is forgotten if it is still the current one, so the next
    /// [`authorization`](Self::authorization) gets another (with the scopes the challenge names). Returns whether
    /// sending the request again may succeed: `false` leaves the refusal to the caller as the server's answer (a
    /// 401 that is no OAuth challenge, say).
    fn refused(&self, sent: Option<&Secret>, challenge: Option<&str>) -> bool;
}
