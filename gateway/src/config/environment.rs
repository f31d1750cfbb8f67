//! The environment a gateway file names: every variable it reads at start (agent tokens, the admin token, Redis's
//! password, `env:NAME` headers and stdio variables), each with the key that names it, so that a variable that is
//! not set is found before anything starts, at that key's `file:line:column`.

use super::ENV_PREFIX;
use super::file::GatewayFile;
use super::rules::Issue;

/// One variable the file reads, and the key path that names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvRef {
    pub key: String,
    pub var: String,
}

/// Every variable `file` reads at start, in file order.
pub fn references(file: &GatewayFile) -> Vec<EnvRef> {
    let mut refs = Vec::new();
    let mut add = |key: String, var: &str| refs.push(EnvRef { key, var: var.to_owned() });
    for (i, var) in file.listen.agent_tokens_env.iter().enumerate() {
        add(format!("listen.agent_tokens_env[{i}]"), var);
    }
    for (s, server) in file.servers.iter().enumerate() {
        if let Some(oauth) = server.oauth.as_ref().filter(|o| !o.client_secret_env.is_empty()) {
            add(format!("servers[{s}].oauth.client_secret_env"), &oauth.client_secret_env);
        }
        for (r, replica) in server.replicas.iter().enumerate() {
            for (table, values) in [("headers", &replica.headers), ("env", &replica.env)] {
                for (name, value) in values {
                    if let Some(var) = value.strip_prefix(ENV_PREFIX).filter(|v| !v.is_empty()) {
                        add(format!("servers[{s}].replicas[{r}].{table}.{name}"), var);
                    }
                }
            }
        }
    }
    if let Some(var) = file.gateway.sync.as_ref().and_then(|sync| sync.password_env.as_deref()) {
        add("gateway.sync.password_env".to_owned(), var);
    }
    if let Some(intro) = file.auth.as_ref().and_then(|a| a.introspection.as_ref()) {
        add("auth.introspection.client_secret_env".to_owned(), &intro.client_secret_env);
    }
    if let Some(admin) = &file.admin {
        add("admin.token_env".to_owned(), &admin.token_env);
    }
    refs
}

/// An issue for each variable `file` reads that `lookup` finds unset, or empty where it holds a token (an empty
/// token would let anyone in, or no one).
pub fn unset(file: &GatewayFile, lookup: impl Fn(&str) -> Option<String>) -> Vec<Issue> {
    references(file)
        .into_iter()
        .filter_map(|r| {
            let token = r.key.starts_with("admin.") || r.key.starts_with("listen.") || r.key.starts_with("auth.");
            let message = match lookup(&r.var) {
                None => format!("environment variable {} is not set", r.var),
                Some(value) if token && value.trim().is_empty() => format!("environment variable {} is empty", r.var),
                Some(_) => return None,
            };
            Some(Issue { path: r.key, message })
        })
        .collect()
}
