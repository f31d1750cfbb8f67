//! Credentials a client holds for servers that declare auth schemes, and the schemes they are for. Low in the
//! module graph: errors name schemes, and the session extension (`session::ext`) negotiates with them.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An auth scheme a server may accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, strum::IntoStaticStr)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum AuthScheme {
    Bearer,
    ApiKey,
    #[serde(rename = "mcp-jwt")]
    #[strum(serialize = "mcp-jwt")]
    Jwt,
}

impl fmt::Display for AuthScheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.into())
    }
}

/// A secret that cannot leak by accident: `Debug`, `Display` and `Serialize` all print [`Secret::REDACTED`]; only
/// [`Secret::expose`] reveals it, and only the code that writes the request envelope calls that.
///
/// Hand-written rather than the `secrecy` crate because it must also serialise (redacted) inside scenario copies
/// and session snapshots, which `secrecy` deliberately refuses.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub const REDACTED: &'static str = "[redacted]";

    pub fn new(secret: impl Into<String>) -> Self {
        Secret(secret.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(Self::REDACTED)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(Self::REDACTED)
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(Self::REDACTED)
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Secret)
    }
}

/// A configured credential for one scheme.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credential {
    pub scheme: AuthScheme,
    pub secret: Secret,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn secrets_never_print() {
        let c = Credential { scheme: AuthScheme::Bearer, secret: Secret::new("hunter2") };
        for text in [format!("{c:?}"), format!("{}", c.secret), serde_json::to_string(&c).unwrap()] {
            assert!(!text.contains("hunter2"), "{text}");
        }
        let back: Credential = serde_json::from_value(json!({"scheme": "mcp-jwt", "secret": "s3"})).unwrap();
        assert_eq!((back.scheme, back.secret.expose()), (AuthScheme::Jwt, "s3"));
    }
}
