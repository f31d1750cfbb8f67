//! Locating the real MCP servers the interop tests talk to.

pub mod real_servers;
