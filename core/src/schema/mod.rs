//! Runtime JSON Schema checks: compiling a tool's schemas and validating its arguments and results.
//!
//! - **Arguments** are checked against the tool's `inputSchema` before a call is sent: an invalid call fails locally
//!   with an [`ArgumentError`] naming the JSON pointer of each failing value and the keyword that rejected it, and
//!   never reaches the network.
//! - **Results**: a successful result's `structuredContent` is checked against the tool's `outputSchema`; a mismatch
//!   is the server breaking its own contract ([`OutputError`], surfaced as a malformed response).
//! - **Drafts**: a schema without `$schema` is 2020-12, MCP's default; `$schema` may name 2020-12, 2019-09, 07 (what
//!   zod-based servers such as server-everything emit), 06 or 04.
//! - **Offline**: a `$ref` is resolved only inside the schema document. A remote or file `$ref` makes the schema
//!   unusable ([`SchemaError`]) instead of making the gateway fetch what a server points it at; the `jsonschema`
//!   crate is built without its HTTP and file resolvers, so the code to fetch is not even compiled in.
//! - **Unusable schemas**: a schema that does not compile makes that one tool fail locally with a [`SchemaError`]
//!   naming it; the other tools work.
//! - **Hashing**: [`ContentHash`] (SHA-256 of canonical JSON) is what the capability record uses as its ETag and to
//!   reuse compiled validators (see `capabilities`).
//!
//! **The `schema` feature.** The checks (`compile.rs`, `tool.rs`: `SchemaValidator`, `ToolSchemas`) are the
//! only users of jsonschema and exist only with the crate's `schema` feature (on by default). What a check reports
//! (the error types) and the content hashes stay in every build: the error types are part of [`LocalError`]
//! and of history records, and hashing keys the capability record whether or not anything is validated.
//!
//! [`LocalError`]: crate::LocalError

#[cfg(feature = "schema")]
mod compile;
mod error;
mod hash;
#[cfg(feature = "schema")]
mod tool;

#[cfg(feature = "schema")]
pub use compile::{Dialect, SchemaValidator};
pub use error::{ArgumentError, MAX_VIOLATIONS, OutputError, SchemaError, SchemaKind, Violation};
pub use hash::{ContentHash, canonical_json};
#[cfg(feature = "schema")]
pub use tool::ToolSchemas;

#[cfg(all(test, feature = "schema"))]
mod tests;
