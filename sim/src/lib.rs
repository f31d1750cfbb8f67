//! The mcpstorm simulator and fake MCP servers.

pub mod fake;
