//! The `mcpstorm` command as a user meets it: its exit codes and messages (`contract`), `call` and `tools` against
//! the fake and against hostile servers (`call`), `diagnose` layer by layer (`diagnose`), all three over
//! Streamable HTTP (`http`), `fidelity` without a live runner and its `[fidelity]` table (`fidelity`), and what
//! `--help` promises (`help`).

#[path = "../common/mod.rs"]
mod common;
mod servers;

mod asks;
mod call;
mod contract;
mod diagnose;
mod docs_keys;
mod fidelity;
mod gateway;
mod gateway_sync;
mod help;
mod http;
mod profile;
mod profile_config;
mod scenarios;
mod seed_env;
