//! `gateway_config = "gw.toml"`: a scenario that runs the settings of a gateway config file, the file that
//! `mcpstorm gateway --config` (or `mcpstorm-gateway`) deploys, rather than a copy of them to keep in step.
//!
//! The file is read by the gateway's own strict loader ([`GatewayFile::load_str`]), so its problems keep their
//! own `file:line:column`. Its `[gateway]` and `[client]` become the scenario's, and so do the router declarations
//! (`tags`, `capabilities`, `latency_p95_ms`, `max_concurrent_requests`, `health_check`) of each of its servers
//! that the scenario models under the same name. That happens as the scenario loads, before validation, so every
//! rule of the scenario (ranges against the run, the sync rules, the nodes' rules) judges the settings that will run.
//!
//! Nothing is merged: a scenario that names the file and sets one of those tables or keys itself is refused,
//! naming both, and a `--set` of them is refused with the file to edit. A loaded scenario holds the file's tables
//! as its own and no longer names the file, so the copy a run writes to its report and a swarm's failure file load
//! on their own.

use std::path::Path;

use mcpstorm_gateway::config::read::{locate, read_text};
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::doc::{self, Node, Source};
use super::model::Scenario;
use super::path::KeyPath;
use super::rules::Issue;
use super::tables::GatewayFile;
use super::{Location, Problem};

/// The scenario's key that names a gateway config file.
pub const GATEWAY_CONFIG: &str = "gateway_config";

/// The tables a scenario takes from the file it names.
const TABLES: [&str; 2] = ["gateway", "client"];

/// What a server declares to the router: the keys a modelled server takes from the file's server of its name.
const DECLARED: [&str; 5] = ["tags", "capabilities", "latency_p95_ms", "max_concurrent_requests", "health_check"];

/// The file a loaded scenario took its settings from: its text, to place a problem the scenario's rules find in it.
pub(super) struct Taken {
    origin: String,
    text: String,
}

/// Puts the file that `gateway_config` names (relative to the directory of `src.origin`, the scenario's path) into
/// `scenario`; `None` when the scenario names none. The problems come unsorted and ready to print: the scenario's
/// key first, then the file's own, each at its place in that file.
pub(super) fn attach(
    scenario: &mut Scenario,
    root: &Node<'_>,
    src: &Source<'_>,
) -> Result<Option<Taken>, Vec<Problem>> {
    let Some(name) = scenario.gateway_config.take() else { return Ok(None) };
    let at_key = |message: String| locate(vec![Issue { path: GATEWAY_CONFIG.to_owned(), message }], root, src);
    if name.trim().is_empty() {
        return Err(at_key("must name a gateway config file (the file `mcpstorm gateway --config` reads)".into()));
    }
    let path = Path::new(src.origin).parent().unwrap_or(Path::new("")).join(&name);
    let shown = path.display().to_string();
    let taken: Vec<Issue> = TABLES
        .iter()
        .filter(|table| doc::get(root, &KeyPath::root().key(table)).is_some())
        .map(|table| Issue { path: (*table).to_owned(), message: String::new() })
        .collect();
    if !taken.is_empty() {
        return Err(conflicts(taken, root, src, &format!("`[{{}}]` is taken from {shown} by `{GATEWAY_CONFIG}`")));
    }
    let text = read_text(&path).map_err(|e| {
        let why = match e {
            mcpstorm_gateway::config::ConfigError::Read { message, .. } => message,
            other => other.to_string(),
        };
        at_key(format!("cannot read the gateway config {shown}: {why}"))
    })?;
    let file = GatewayFile::load_str(&text, &shown).map_err(|e| {
        let problems = e.problems().to_vec();
        let n = problems.len();
        let mut out = at_key(format!(
            "the gateway config {shown} is not valid ({n} problem{} below, in that file)",
            if n == 1 { "" } else { "s" }
        ));
        out.extend(problems);
        out
    })?;

    // A modelled server of the file's name declares what the file declares; one that declares a key itself would be
    // silently overruled, so it is refused.
    let mut declared_here = Vec::new();
    for (i, server) in scenario.servers.iter().enumerate() {
        if !file.servers.iter().any(|u| u.name == server.name) {
            continue;
        }
        let at = KeyPath::root().key("servers").index(i);
        for key in DECLARED {
            if doc::get(root, &at.key(key)).is_some() {
                declared_here.push(Issue { path: format!("servers[{i}].{key}"), message: String::new() });
            }
        }
    }
    if !declared_here.is_empty() {
        let what = format!("the server's `{{}}` is taken from its namesake in {shown} by `{GATEWAY_CONFIG}`");
        return Err(conflicts(declared_here, root, src, &what));
    }

    scenario.gateway = file.gateway;
    scenario.client = file.client;
    for server in &mut scenario.servers {
        let Some(up) = file.servers.iter().find(|u| u.name == server.name) else { continue };
        server.tags.clone_from(&up.tags);
        server.capabilities.clone_from(&up.capabilities);
        server.latency_p95_ms = up.latency_p95_ms;
        server.max_concurrent_requests = up.max_concurrent_requests;
        server.health_check.clone_from(&up.health_check);
    }
    Ok(Some(Taken { origin: shown, text }))
}

/// One problem per key the scenario sets although the file gives it: `what` says so (its `{}` is the key's last
/// part), and the rest says what to do, for the file (no merge) or for a `--set` (edit the file).
fn conflicts(issues: Vec<Issue>, root: &Node<'_>, src: &Source<'_>, what: &str) -> Vec<Problem> {
    let mut problems = locate(issues, root, src);
    for p in &mut problems {
        let key = p.key.as_deref().unwrap_or_default();
        let last = key.rsplit(['.']).next().unwrap_or(key);
        let said = what.replacen("{}", last, 1);
        p.message = if matches!(p.location, Location::Set { .. }) {
            format!(
                "{said}, so --set cannot change it: edit that file, or point `{GATEWAY_CONFIG}` at an edited copy \
                 (--set {GATEWAY_CONFIG}=copy.toml)"
            )
        } else {
            format!(
                "{said}: set it in that file, or remove `{GATEWAY_CONFIG}` to give the scenario its own (the two are \
                 never merged)"
            )
        };
    }
    problems
}

/// Places the issues the scenario's rules found: one about a table the scenario took from a file at its key in that
/// file (or the file as a whole, for a defaulted key), the rest in the scenario.
pub(super) fn place(issues: Vec<Issue>, taken: Option<&Taken>, root: &Node<'_>, src: &Source<'_>) -> Vec<Problem> {
    let Some(taken) = taken else { return locate(issues, root, src) };
    let in_file = |i: &Issue| TABLES.iter().any(|t| KeyPath::parse(&i.path).is_ok_and(|p| p.first_key() == Some(t)));
    let (theirs, ours): (Vec<Issue>, Vec<Issue>) = issues.into_iter().partition(in_file);
    let mut problems = locate(ours, root, src);
    let file_src = Source { origin: &taken.origin, text: &taken.text, sets: &[] };
    let file_root: Node<'_> = match DeTable::parse(&taken.text) {
        Ok(table) => Spanned::new(table.span(), DeValue::Table(table.into_inner())),
        // The file parsed when it was loaded; were it changed since, its problems are placed at the file.
        Err(_) => Spanned::new(0..0, DeValue::Table(DeTable::default())),
    };
    for mut p in locate(theirs, &file_root, &file_src) {
        p.message = format!("{} (this scenario's `{GATEWAY_CONFIG}` runs this file)", p.message);
        problems.push(p);
    }
    problems
}
