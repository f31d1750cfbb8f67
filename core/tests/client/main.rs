//! The client end to end: the connection core against a peer played frame by frame (`conn`), era detection
//! (`eras`), the session extension (`sessions`), schema checks (`schemas`) and schema drift (`drift`) against
//! scripted servers, and the connection failure stories against the fake server over loopback TCP (`fake_tcp`), and
//! the Streamable HTTP transport against a scripted HTTP peer (`http`), and the MCP front served to the core's own
//! client (`serve`).

mod conn;
mod drift;
mod eras;
mod fake_tcp;
mod http;
// The tests of an optional part are compiled with it. (The fake server, every test's peer, depends on the core with
// its default features, so in practice they are always on here.)
#[cfg(feature = "schema")]
mod schemas;
#[cfg(feature = "serve")]
mod serve;
mod sessions;
