//! Server doubles for what a scripted fake cannot show: a peer the test plays frame by frame (`peer`), a transport
//! loop around the test's own answers (`line_server`), and a session-extension server on a wall clock of the test's
//! choosing that logs the verdict it gave each request (`session_server`). All of them are reached through in-memory
//! pipes ([`crate::pipe`]).

pub mod line_server;
pub mod peer;
pub mod session_server;
