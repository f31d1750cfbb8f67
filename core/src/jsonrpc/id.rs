use std::fmt;

use serde::{Deserialize, Serialize};

/// A JSON-RPC request id. MCP allows strings and integers (never null for requests).
///
/// Our own connections only ever allocate integers; strings appear when a server sends us a request.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    Number(i64),
    String(String),
}

impl RequestId {
    /// The integer id, if this is one we could have allocated.
    pub fn as_number(&self) -> Option<i64> {
        match self {
            RequestId::Number(n) => Some(*n),
            RequestId::String(_) => None,
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}
