//! A live bench's `main`: a multi-threaded tokio runtime running the bench, and exit 1 with one line on stderr when
//! the runtime cannot start or the bench fails. Shared by the benches.

use std::future::Future;

/// Runs `bench` to completion; `name` prefixes the failure line.
pub fn run_or_exit(name: &str, bench: impl Future<Output = Result<(), String>>) {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{name}: cannot start the runtime: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = runtime.block_on(bench) {
        eprintln!("{name}: {e}");
        std::process::exit(1);
    }
}
