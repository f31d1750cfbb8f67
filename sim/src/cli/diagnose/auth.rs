//! Layer 5: the auth schemes the server declares, and whether a configured credential fits one.

use mcpstorm_core::AuthScheme;
use mcpstorm_core::ClientConfig;
use mcpstorm_core::mcp::InitializeResult;
use mcpstorm_core::session;
use serde_json::{Value, json};

use super::report::Check;

/// Layer 5: the schemes the server declares (the mcpstorm session extension's `io.mcpstorm/authSchemes`) and
/// whether a configured credential fits one; other auth-looking declarations are reported but not checked.
pub(super) fn auth(init: &InitializeResult, config: &ClientConfig) -> Check {
    let meta = init.extra.get("_meta");
    if let Some(accepted) = session::auth_schemes(meta) {
        let names = |s: &[AuthScheme]| s.iter().map(<&str>::from).collect::<Vec<_>>().join(", ");
        let offered: Vec<AuthScheme> = config.credentials.iter().map(|c| c.scheme).collect();
        let data = json!({"accepted": names(&accepted), "offered": names(&offered)});
        return match session::pick_credential(&config.credentials, &accepted) {
            Some(c) => Check::pass(
                "auth",
                None,
                format!("server accepts {}; using a {} credential", names(&accepted), c.scheme),
            )
            .data(data),
            None => Check::fail(
                "auth",
                None,
                format!(
                    "server accepts {}, configured credentials: {}",
                    names(&accepted),
                    if offered.is_empty() { "none".to_owned() } else { names(&offered) }
                ),
                "every call will fail with MCP_AUTH_MISMATCH before it is sent: pass --auth SCHEME=ENV_VAR with a \
                 scheme the server accepts",
            )
            .data(data),
        };
    }
    let mut found = Vec::new();
    find_auth("capabilities", &init.capabilities, 3, &mut found);
    if let Some(meta) = meta {
        find_auth("_meta", meta, 1, &mut found);
    }
    if found.is_empty() {
        return Check::skip("auth", "server declares no auth schemes");
    }
    let declared: Vec<String> = found.iter().map(|(path, v)| format!("{path} = {v}")).collect();
    Check::skip("auth", "server declares auth in a form mcpstorm does not negotiate: not checked")
        .details(declared)
        .data(json!({"declared": found.into_iter().map(|(p, v)| json!({"at": p, "value": v})).collect::<Vec<_>>()}))
}

/// Keys mentioning auth, down to `depth` levels of objects.
fn find_auth(path: &str, value: &Value, depth: u32, found: &mut Vec<(String, Value)>) {
    let Some(map) = value.as_object() else {
        return;
    };
    for (key, v) in map {
        let here = format!("{path}.{key}");
        if key.to_ascii_lowercase().contains("auth") {
            found.push((here, v.clone()));
        } else if depth > 1 {
            find_auth(&here, v, depth - 1, found);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::report::Status;
    use super::*;

    fn init(capabilities: Value, meta: Option<Value>) -> InitializeResult {
        let mut v = json!({
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities,
            "serverInfo": {"name": "s", "version": "1"},
        });
        if let Some(m) = meta {
            v["_meta"] = m;
        }
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn auth_is_skipped_when_nothing_is_declared() {
        let c = auth(&init(json!({"tools": {"listChanged": true}}), None), &ClientConfig::default());
        assert_eq!(c.status, Status::Skip);
        assert_eq!(c.summary, "server declares no auth schemes");
    }

    #[test]
    fn auth_reports_declarations_in_capabilities_and_meta() {
        let c = auth(
            &init(
                json!({"tools": {}, "experimental": {"auth": {"schemes": ["bearer"]}}}),
                Some(json!({"io.example/authSchemes": ["api-key"], "other": 1})),
            ),
            &ClientConfig::default(),
        );
        assert_eq!(c.status, Status::Skip);
        assert_eq!(
            c.details,
            vec![
                r#"capabilities.experimental.auth = {"schemes":["bearer"]}"#.to_owned(),
                r#"_meta.io.example/authSchemes = ["api-key"]"#.to_owned(),
            ]
        );
    }

    #[test]
    fn auth_checks_declared_schemes_against_configured_credentials() {
        use mcpstorm_core::{Credential, Secret};
        let declared = init(json!({}), Some(json!({"io.mcpstorm/authSchemes": ["mcp-jwt", "api-key"]})));
        let with = |schemes: &[AuthScheme]| ClientConfig {
            credentials: schemes.iter().map(|&scheme| Credential { scheme, secret: Secret::new("s3cr3t") }).collect(),
            ..ClientConfig::default()
        };
        let ok = auth(&declared, &with(&[AuthScheme::Bearer, AuthScheme::ApiKey]));
        assert_eq!(ok.status, Status::Pass, "{}", ok.summary);
        assert_eq!(ok.summary, "server accepts mcp-jwt, api-key; using a api-key credential");
        let none = auth(&declared, &with(&[]));
        assert_eq!(none.status, Status::Fail);
        assert_eq!(none.summary, "server accepts mcp-jwt, api-key, configured credentials: none");
        let wrong = auth(&declared, &with(&[AuthScheme::Bearer]));
        assert_eq!(wrong.status, Status::Fail);
        for c in [ok, none, wrong] {
            assert!(!format!("{c:?}").contains("s3cr3t"), "a secret in the report: {c:?}");
        }
    }
}
