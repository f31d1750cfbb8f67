//! The capability record of one server: who it is, its tools with lazily compiled schemas, annotations and router
//! hints, and the content hash that tells whether a re-fetched tool list changed.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use serde_json::Value;

use super::RouterHints;
#[cfg(feature = "schema")]
use super::schemas::Compiled;
use crate::mcp::{Implementation, Tool, ToolAnnotations};
use crate::schema::ContentHash;

/// One listed tool with everything derived from it.
#[derive(Debug, Clone)]
pub struct ToolEntry {
    /// The listing, and this tool's place in it: the tool is kept once, not copied per entry.
    listed: Arc<Vec<Tool>>,
    index: usize,
    schema_hash: ContentHash,
    /// Its validators, compiled at first use (`capabilities::schemas`). Without the `schema` feature an entry has
    /// none and offers no `schemas()`: nothing may look checked that is not.
    #[cfg(feature = "schema")]
    pub(super) compiled: Compiled,
    annotations: ToolAnnotations,
    hints: RouterHints,
}

impl ToolEntry {
    pub fn name(&self) -> &str {
        &self.tool().name
    }

    /// The tool exactly as listed.
    pub fn tool(&self) -> &Tool {
        // In range by construction (`SchemaCache::build` makes one entry per listed tool).
        &self.listed[self.index]
    }

    pub fn annotations(&self) -> &ToolAnnotations {
        &self.annotations
    }

    /// The tool's own `_meta` declarations (see [`Capabilities::hints`] for them merged with the server's).
    pub fn own_hints(&self) -> RouterHints {
        self.hints
    }

    /// Hash of the canonical `[inputSchema, outputSchema]`: what its compiled validators depend on.
    pub fn schema_hash(&self) -> ContentHash {
        self.schema_hash
    }
}

/// The tools of one listing, shared between records whose listings hash the same.
#[derive(Debug)]
struct ToolSet {
    hash: ContentHash,
    listed: Arc<Vec<Tool>>,
    entries: Vec<ToolEntry>,
    /// Name to index in `entries`. A name listed twice keeps its first entry.
    by_name: BTreeMap<String, usize>,
}

/// The capability record of one server session: identity, tools with compiled schemas, annotations, router hints
/// and the tool list's content hash.
#[derive(Debug, Clone)]
pub struct Capabilities {
    server: Implementation,
    server_hints: RouterHints,
    tools: Arc<ToolSet>,
    /// The `_meta` text of a `tools/call` result already found to carry no drift signal against this record.
    /// Servers stamp every result alike, so the next stamp is nearly always these very bytes: one comparison
    /// instead of a parse per call. Shared by the record's clones; set once.
    quiet_stamp: Arc<OnceLock<Box<str>>>,
}

impl Capabilities {
    /// `serverInfo` from the handshake.
    pub fn server(&self) -> &Implementation {
        &self.server
    }

    /// The remembered `_meta` text that carried no drift signal (see `capabilities::drift`).
    pub(crate) fn quiet_stamp(&self) -> &OnceLock<Box<str>> {
        &self.quiet_stamp
    }

    /// Hints from the server's own `_meta` (the initialize result's), the fallback for every tool.
    pub fn server_hints(&self) -> RouterHints {
        self.server_hints
    }

    /// SHA-256 of the canonical JSON of the tool list in listed order: the ETag. Equal hashes, equal tools.
    pub fn hash(&self) -> ContentHash {
        self.tools.hash
    }

    /// The tools as listed, in the server's order.
    pub fn tools(&self) -> &Arc<Vec<Tool>> {
        &self.tools.listed
    }

    pub fn entries(&self) -> impl Iterator<Item = &ToolEntry> {
        self.tools.entries.iter()
    }

    pub fn tool(&self, name: &str) -> Option<&ToolEntry> {
        self.tools.by_name.get(name).and_then(|i| self.tools.entries.get(*i))
    }

    /// A tool's router hints: its own `_meta` first, then the server's.
    pub fn hints(&self, name: &str) -> Option<RouterHints> {
        self.tool(name).map(|t| t.hints.or(self.server_hints))
    }

    /// Whether two records share one compiled tool set (a re-fetch that found the same hash).
    pub fn shares_tools_with(&self, other: &Capabilities) -> bool {
        Arc::ptr_eq(&self.tools, &other.tools)
    }
}

/// Builds capability records and remembers the last tool set, so a re-fetch with an unchanged hash — a new
/// session, or `notifications/tools/list_changed` that changed nothing — reuses its compiled validators. When the
/// hash did change, each tool whose schemas hash the same as before still keeps its validators; only changed
/// schemas compile.
///
/// One per server (the client owns it, so it outlives sessions). Counts the tools it compiled.
#[derive(Debug, Default)]
pub struct SchemaCache {
    last: Mutex<Option<Arc<ToolSet>>>,
    compilations: Arc<AtomicU64>,
}

impl SchemaCache {
    /// Tools whose schemas were compiled so far (input and output schema together count one). Compilation happens
    /// at a tool's first use, not at listing; without the `schema` feature nothing compiles and this stays 0.
    pub fn compilations(&self) -> u64 {
        self.compilations.load(Ordering::Relaxed)
    }

    /// The record for a freshly fetched listing. `server_meta` is the server-level `_meta` (router hints).
    pub fn record(&self, server: Implementation, server_meta: Option<&Value>, tools: Vec<Tool>) -> Capabilities {
        let listed = serde_json::to_value(&tools).unwrap_or_default();
        let hash = ContentHash::of(&listed);
        let last = self.last.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let set = match last {
            Some(set) if set.hash == hash => set,
            previous => {
                // Compiled outside the lock. Two sessions racing here may both compile; the counter then says so.
                let set = Arc::new(self.build(hash, tools, previous.as_deref()));
                *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(set.clone());
                set
            }
        };
        let server_hints = RouterHints::from_meta(server_meta);
        Capabilities { server, server_hints, tools: set, quiet_stamp: Arc::default() }
    }

    /// The tool set of a new listing. What carries over from `previous` is each unchanged tool's compiled schemas,
    /// so without the `schema` feature nothing does.
    fn build(
        &self,
        hash: ContentHash,
        tools: Vec<Tool>,
        #[cfg_attr(not(feature = "schema"), expect(unused_variables))] previous: Option<&ToolSet>,
    ) -> ToolSet {
        let listed = Arc::new(tools);
        let mut entries = Vec::with_capacity(listed.len());
        let mut by_name = BTreeMap::new();
        let mut duplicates = 0usize;
        for (index, tool) in listed.iter().enumerate() {
            let schema_hash = ContentHash::of(&Value::Array(vec![
                tool.input_schema.clone(),
                tool.output_schema.clone().unwrap_or(Value::Null),
            ]));
            if by_name.contains_key(&tool.name) {
                duplicates += 1;
            } else {
                by_name.insert(tool.name.clone(), entries.len());
            }
            entries.push(ToolEntry {
                listed: listed.clone(),
                index,
                schema_hash,
                #[cfg(feature = "schema")]
                compiled: Compiled::reuse(
                    previous.and_then(|p| p.by_name.get(&tool.name).and_then(|i| p.entries.get(*i))),
                    schema_hash,
                    &self.compilations,
                ),
                annotations: ToolAnnotations::from_value(tool.annotations.as_ref()),
                hints: RouterHints::from_meta(tool.extra.get("_meta")),
            });
        }
        if duplicates > 0 {
            // One line for the whole listing: a hostile list of a million duplicates must not flood the log.
            tracing::warn!(duplicates, "tools listed more than once; the first listing of each is used");
        }
        ToolSet { hash, listed, entries, by_name }
    }
}
