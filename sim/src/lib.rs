//! The mcpstorm simulator and the mcpstorm command.

pub mod check;
pub mod cli;
pub mod compare;
pub mod report;
pub mod run;
pub mod scenario;
pub mod seed;
pub mod shard;
pub mod swarm;
pub mod world;
