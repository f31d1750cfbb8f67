//! JSON-RPC 2.0 as MCP uses it: one message per frame, no batches.
//!
//! Incoming frames are decoded into [`Message`] by shape (the spec's rules: a `method` with an `id` is a request,
//! without one a notification; an `id` with `result` or `error` is a response). Anything else is
//! [`DecodeError`], never a panic, so a peer's garbage costs one counted frame and not the connection.
//!
//! A frame is read in one pass (`fields.rs`); a response's `result` stays raw text ([`Payload`]) for its caller to
//! parse into the shape it expects, so a tool result is parsed once, not into a `Value` tree and then again. (A
//! connection's reader first offers each frame to the quick reader of `tools/call` responses, `mcp/call_frame.rs`,
//! which parses such a result straight into its type when the frame has exactly the shape it knows.)

mod codes;
mod fields;
mod id;
pub(crate) mod member;
mod message;
mod meta;
mod payload;

pub use codes::ErrorCode;
pub(crate) use fields::{Key, Version};
pub use id::RequestId;
pub use message::{DecodeError, ErrorObject, Message, Notification, Request, Response, ResponseBody};
pub use meta::{MetaLayer, MetaLayers, MetaRequest};
pub use payload::Payload;
