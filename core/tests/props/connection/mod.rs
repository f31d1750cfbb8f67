//! Every call resolves exactly once, never to another caller, and the pending table and permits drain to zero,
//! whatever a random script (calls, answers, errors, late and unknown responses, progress, cancels, time jumps,
//! garbage, disconnects) does.

mod harness;
mod ops;

use proptest::prelude::*;

use crate::{config, paused_runtime};
use harness::run_script;
use ops::{script, setup};

proptest! {
    #![proptest_config(config(96))]

    /// A random script over up to 30 calls on one connection: every call resolves exactly once, to its own
    /// response (or an error the script explains, at the instant the script explains), the pending table and the
    /// permits drain to zero, and a disconnect fails every outstanding call at that same instant.
    #[test]
    fn every_call_resolves_once_and_the_pending_table_drains(
        setup in setup(),
        ops in script(),
    ) {
        let outcome = paused_runtime().block_on(run_script(setup, ops));
        prop_assert!(outcome.is_ok(), "{}", outcome.err().unwrap_or_default());
    }
}
