//! The mcpstorm simulator and fake MCP servers.
