//! OAuth 2.1 as the MCP authorization spec asks of a gateway. Agents → gateway: the gateway is a resource server
//! (`resource`: metadata, challenges, token checks). The pieces any OAuth party here needs: an authorization
//! server's metadata (`discovery`), its signing keys (`keys`), a JWT access token's checks (`jwt`), and opaque
//! tokens' introspection (`introspect`).

pub mod discovery;
pub mod introspect;
pub mod jwt;
pub mod keys;
pub mod resource;

pub use resource::{OnRefused, ResourceServer};
