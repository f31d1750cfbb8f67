//! The `mcpstorm` command as a user meets it: its exit codes and messages (`contract`), `call` and `tools` against
//! the fake and against hostile servers (`call`), `diagnose` layer by layer (`diagnose`), and all three over
//! Streamable HTTP (`http`).

#[path = "../common/mod.rs"]
mod common;
mod servers;

mod call;
mod contract;
mod diagnose;
mod http;
