//! The command's stdout and stderr. `println!` panics when stdout is a pipe whose reader has gone (`mcpstorm tools
//! ... | head -1`: "failed printing to stdout: Broken pipe", exit 101). Rust ignores SIGPIPE, `unsafe` is forbidden
//! here (so no resetting it), and a command killed by the signal would lose its exit code anyway; so every print to
//! stdout goes through [`outln!`](crate::cli::out) and [`write`], which turn a broken pipe into
//! [`Failure::StdoutClosed`]: the command stops where it is and exits 0 without a word, as `cat` or `grep` would
//! for a reader that wanted no more. Any other write error is a failure like any other.
//!
//! Messages on stderr go through [`errln!`]: if stderr is gone too there is no one to tell, so errors are ignored.

use std::fmt;
use std::io::{self, Write};

use super::Failure;

/// `println!` that returns `Err(Failure::StdoutClosed)` when the reader has gone, to be propagated with `?`.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::out::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprintln!` that never panics.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::cli::out::error(format_args!("{}\n", format_args!($($arg)*)))
    };
}

pub(crate) use {errln, outln};

/// Writes to stdout; see the module docs.
pub fn write(args: fmt::Arguments<'_>) -> Result<(), Failure> {
    io::stdout().lock().write_fmt(args).map_err(failure)
}

/// Flushes stdout, for output written without a final newline (stdout is line-buffered).
pub fn flush() -> Result<(), Failure> {
    io::stdout().lock().flush().map_err(failure)
}

/// Writes to stderr, ignoring errors.
pub fn error(args: fmt::Arguments<'_>) {
    let _ = io::stderr().lock().write_fmt(args);
}

fn failure(e: io::Error) -> Failure {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Failure::StdoutClosed
    } else {
        Failure::Failed(format!("cannot write to stdout: {e}"))
    }
}
