//! Server-Sent Events, server side: the encoding and the resumable stream log live in the core
//! (`mcpstorm_core::serve::sse`), shared with the production MCP front.

pub(crate) use mcpstorm_core::serve::sse::{Chunk, RING, StreamLog, event, event_id, keep_alive, parse_event_id};
