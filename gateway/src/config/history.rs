//! The gateway process's `[history]` table: where its call history goes. Every attempt a replica's client makes is
//! a `ServerCallRecord` (server, tool, hashes of the arguments and the result, duration, status): never an argument
//! or a secret. The records are written as JSON lines to a file that rotates at a size, off the call path.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ranges::Ranges;
use super::rules::Rules;

/// See the module documentation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistorySpec {
    /// The file the records are appended to (JSON lines); created with its directory when missing.
    pub file: String,
    /// When the file reaches this size it is renamed `FILE.1` (older ones shifting to `.2`, ...) and a new one begun.
    #[serde(default = "default_max_bytes")]
    pub max_bytes: u64,
    /// Rotated files kept besides the current one; older ones are deleted.
    #[serde(default = "default_keep")]
    pub keep: usize,
}

fn default_max_bytes() -> u64 {
    10 << 20
}
fn default_keep() -> usize {
    3
}

/// The most rotated files a config may keep.
const MAX_KEEP: usize = 100;

impl HistorySpec {
    pub fn problems(&self, rules: &mut Rules) {
        if self.file.trim().is_empty() {
            rules.fail("history.file", "must name a file");
        }
        if self.max_bytes < 4096 {
            rules.fail("history.max_bytes", format!("must be at least 4096 bytes, got {}", self.max_bytes));
        }
    }

    pub fn ranges(&self, out: &mut Ranges) {
        out.count("history.max_bytes", self.max_bytes as f64, (1u64 << 40) as f64);
        out.count("history.keep", self.keep as f64, MAX_KEEP as f64);
    }
}
