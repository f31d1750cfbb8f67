//! The seams that let the same core run in production and inside a simulated network.
//!
//! The core reads time, randomness and sockets only through these. The simulator swaps each for its own; nothing in
//! the core knows which it got.

mod clock;
mod dial;
mod rng;

pub use clock::{Clock, TokioClock};
pub use dial::{ByteStream, DialFuture, Dialer, StdioDialer, TcpDialer};
pub use rng::SeededRng;
pub(crate) use rng::scale;
