//! The mcpstorm simulator and fake MCP servers.

pub mod check;
pub mod cli;
pub mod compare;
pub mod fake;
pub mod report;
pub mod run;
pub mod scenario;
pub mod seed;
pub mod world;
