//! Shared helpers for the cross-crate tests: a scripted MCP peer on an in-memory pipe, a scripted server's transport
//! loop, and locating the real MCP
//! servers used as interop peers.

pub mod line_server;
pub mod peer;
pub mod real_servers;
pub mod session_server;
