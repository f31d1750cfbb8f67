//! The runtime a gateway process runs on: how many threads carry its calls.
//!
//! A proxied call hops between three tasks (the agent's connection, the upstream exchange, the upstream HTTP
//! connection; a 2025-11-25 upstream session's calls also pass its connection's writer). On a multi-thread runtime
//! each hop that lands while another worker is parked wakes that worker (a futex or eventfd write, a context switch),
//! and on a small host those wakeups cost more than the call's own work: see docs/benchmarks.md ("Where the
//! gateway's CPU goes"). One thread does every hop as a queue push, with no system call, so a host of one or two
//! cores runs the gateway on a single-threaded runtime by default, leaving the other core to the kernel's TCP work,
//! which on loopback is as large as the gateway's own.
//! Larger hosts get a worker per core, where the throughput is worth the wakeups.

use std::io;

/// `--workers`: `None` for the default above.
pub fn build(workers: Option<usize>) -> io::Result<tokio::runtime::Runtime> {
    match workers.unwrap_or_else(default_workers) {
        0 | 1 => tokio::runtime::Builder::new_current_thread().enable_all().build(),
        n => tokio::runtime::Builder::new_multi_thread().worker_threads(n).enable_all().build(),
    }
}

/// One thread on a host of at most two cores, else one per core.
fn default_workers() -> usize {
    match std::thread::available_parallelism().map_or(1, |n| n.get()) {
        n if n <= 2 => 1,
        n => n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_worker_is_a_single_threaded_runtime_and_more_are_a_pool() {
        let flavor = |n| build(Some(n)).expect("runtime").handle().runtime_flavor();
        assert_eq!(flavor(1), tokio::runtime::RuntimeFlavor::CurrentThread);
        assert_eq!(flavor(3), tokio::runtime::RuntimeFlavor::MultiThread);
    }
}
