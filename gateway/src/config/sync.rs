//! `[gateway.sync]`: breaker sync between `mcpstorm gateway` nodes through Redis (the core's `sync` module).
//!
//! | key            | default                      | meaning                                                      |
//! |----------------|------------------------------|--------------------------------------------------------------|
//! | `redis`        | required                     | `redis://host:port[/db]`                                     |
//! | `password_env` | none                         | the environment variable holding Redis's password            |
//! | `node`         | the host name and process id | this node's name in its reports, unique per node             |
//! | `key`          | `"mcpstorm:breakers"`        | the Redis hash and channel the nodes share                   |

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::rules::Rules;

/// The default Redis key of the hash and the channel.
pub const DEFAULT_KEY: &str = "mcpstorm:breakers";

/// Breaker sync between gateway nodes through Redis: when one node's breaker opens, the others hear of it; a node
/// follows only when its own calls or a second node corroborate it (else its breaker probes), so a node that alone
/// lost a replica cannot eject it elsewhere. Redis down means each node decides alone; no call fails because of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SyncSpec {
    /// `redis://host:port[/db]` (a password in the URL is accepted, but `password_env` keeps it out of the file).
    pub redis: String,
    /// The environment variable that holds Redis's password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_env: Option<String>,
    /// This node's name in its reports; unique per node. Default: the host name and the process id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The Redis hash and channel the nodes share: nodes of one fleet use the same.
    #[serde(default = "default_key", skip_serializing_if = "is_default_key")]
    pub key: String,
}

fn default_key() -> String {
    DEFAULT_KEY.to_owned()
}

fn is_default_key(key: &String) -> bool {
    key == DEFAULT_KEY
}

impl SyncSpec {
    pub fn problems(&self, rules: &mut Rules) {
        if let Err(e) = mcpstorm_core::sync::check_url(&self.redis) {
            rules.fail("gateway.sync.redis", e.to_string());
        }
        if self.password_env.as_deref().is_some_and(str::is_empty) {
            rules.fail("gateway.sync.password_env", "must name an environment variable");
        }
        if self.node.as_deref().is_some_and(str::is_empty) || self.key.is_empty() {
            rules.fail("gateway.sync", "`node` and `key` must not be empty");
        }
    }
}
