//! The capability record of each server and how it is kept fresh.
//!
//! - **The record** ([`Capabilities`]): the server's identity, its tools with their schemas (compiled at a tool's
//!   first call; `schemas.rs`, the `schema` feature's), annotations and router hints ([`RouterHints`]), and the
//!   tool list's content hash, its ETag.
//!   [`SchemaCache`] reuses compiled validators when a re-fetched list (new session, `list_changed`) hashes the same,
//!   and per tool when only some schemas changed.
//! - **The cache** of one session (`cache.rs`): the tool list fetched once, all pages, within bounds a server
//!   cannot push, and fetched again when something says it may be stale.
//! - **Drift** (`drift.rs`): the signals in a call's outcome that the record went stale, and their counters.

mod cache;
mod drift;
mod hints;
mod record;
#[cfg(feature = "schema")]
mod schemas;

pub(crate) use cache::{FetchCtx, ListingLimits, ToolCache};
pub use drift::DriftStats;
pub(crate) use drift::{DriftCounters, Signal, signal};
pub use hints::RouterHints;
pub use record::{Capabilities, SchemaCache, ToolEntry};

#[cfg(test)]
mod tests;
