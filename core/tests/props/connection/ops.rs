//! A connection script: its setup (timeouts, permits, pipe size) and the operations it is made of, with their
//! strategies.

use std::time::Duration;

use mcpstorm_core::ConnectionConfig;
use proptest::prelude::*;

use crate::messages::text;

#[derive(Debug, Clone)]
pub(crate) struct Setup {
    pub(crate) calls: usize,
    pub(crate) first_ms: u64,
    pub(crate) idle_ms: u64,
    pub(crate) deadline_ms: u64,
    pub(crate) queue_ms: u64,
    pub(crate) probe_ms: u64,
    pub(crate) max_in_flight: usize,
    pub(crate) pipe: usize,
}

impl Setup {
    pub(crate) fn config(&self) -> ConnectionConfig {
        ConnectionConfig {
            max_in_flight: self.max_in_flight,
            queue_wait: Duration::from_millis(self.queue_ms),
            first_response: Duration::from_millis(self.first_ms),
            stream_idle: Duration::from_millis(self.idle_ms),
            call_deadline: Duration::from_millis(self.deadline_ms),
            stall_probe: Duration::from_millis(self.probe_ms),
            ..ConnectionConfig::default()
        }
    }
}

pub(crate) fn setup() -> impl Strategy<Value = Setup> {
    (
        1usize..=30,
        200u64..=5000,
        200u64..=4000,
        1000u64..=20_000,
        100u64..=5000,
        100u64..=2000,
        1usize..=8,
        prop::sample::select(vec![64usize, 512, 1 << 16]),
    )
        .prop_map(|(calls, first_ms, idle_ms, deadline_ms, queue_ms, probe_ms, max_in_flight, pipe)| Setup {
            calls,
            first_ms,
            idle_ms,
            deadline_ms,
            queue_ms,
            probe_ms,
            max_in_flight,
            pipe,
        })
}

/// Frames the peer can send that the client must reject (or ignore) without harm: (bytes, frames rejected).
pub(crate) const GARBAGE: &[(&[u8], u64)] = &[
    (b"{not json\n", 1),
    (b"[1,2]\n", 1),
    (b"\xff\xfe\n", 1),
    (b"{\"foo\":1}\n", 1),
    (b"42\n", 1),
    (b"\n\r\n \t \n", 0),
    (b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n", 0),
    (b"{\"jsonrpc\":\"2.0\",\"id\":1000000,\"error\":\"boom\"}\n", 1),
];

#[derive(Debug, Clone)]
pub(crate) enum UnknownId {
    Large(i64),
    NonPositive(i64),
    Text(String),
    Null,
}

/// Whose progress token a progress notification names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProgressTo {
    /// A request the peer has not answered: keeps a live call streaming.
    Unanswered,
    /// Any request ever seen, live or finished (stray progress after a cancel or timeout).
    AnySeen,
    NeverIssued,
}

#[derive(Debug, Clone)]
pub(crate) enum Op {
    /// Start the next call (ignored once `Setup::calls` have started).
    Start {
        cancel: bool,
        deadline_ms: Option<u64>,
        progress: bool,
        priority: bool,
        tool: bool,
    },
    /// Answer a request the peer has not answered yet, with a result naming its id and call.
    Respond(usize),
    RespondError(usize, i64),
    /// A frame naming an unanswered request's id but malformed: that call fails with `MalformedResponse`.
    RespondMalformed(usize),
    /// Answer a request whose call already finished (or that was already answered).
    Late(usize),
    Unknown(UnknownId),
    Progress(usize, ProgressTo),
    Cancel(usize),
    Advance(u64),
    Garbage(usize),
    ServerPing,
    /// Drops a call's future (its task is aborted) while it may still be waiting.
    Abort(usize),
    /// A frame over the client's `max_frame`: the connection fails with `FrameTooLarge`. Only with a pipe big
    /// enough to take the whole frame at once (the scripted peer's writes panic once the client's end is gone).
    Oversize(usize),
    /// The peer stops reading (the client's writer backs up on the pipe) or starts again.
    ToggleReading,
    /// The peer drops the pipe. `script()` places at most one of this, `Oversize` or `Shutdown`, anywhere or nowhere.
    Disconnect,
    /// The client shuts the connection down (`Connection::shutdown`).
    Shutdown,
}

fn op() -> impl Strategy<Value = Op> {
    let index = || 0usize..64;
    let unknown = prop_oneof![
        (1_000_000i64..i64::MAX).prop_map(UnknownId::Large),
        (i64::MIN..=0).prop_map(UnknownId::NonPositive),
        prop_oneof![Just("1".to_owned()), text()].prop_map(UnknownId::Text),
        Just(UnknownId::Null),
    ];
    prop_oneof![
        8 => (any::<bool>(), prop::option::of(0u64..3000), any::<bool>(), prop::bool::weighted(0.2), any::<bool>())
            .prop_map(|(cancel, deadline_ms, progress, priority, tool)| Op::Start {
                cancel, deadline_ms, progress, priority, tool
            }),
        5 => index().prop_map(Op::Respond),
        1 => (index(), any::<i64>()).prop_map(|(i, c)| Op::RespondError(i, c)),
        1 => index().prop_map(Op::RespondMalformed),
        1 => index().prop_map(Op::Late),
        1 => unknown.prop_map(Op::Unknown),
        3 => (index(), prop::sample::select(vec![ProgressTo::Unanswered, ProgressTo::Unanswered, ProgressTo::AnySeen, ProgressTo::NeverIssued]))
            .prop_map(|(i, to)| Op::Progress(i, to)),
        2 => index().prop_map(Op::Cancel),
        4 => prop_oneof![0u64..100, 0u64..7000].prop_map(Op::Advance),
        1 => index().prop_map(Op::Garbage),
        1 => Just(Op::ServerPing),
        1 => Just(Op::ToggleReading),
        1 => index().prop_map(Op::Abort),
    ]
}

/// Ops, with at most one connection failure (in half the scripts) at a random point: the peer hangs up, the peer
/// sends an oversize frame, or the client shuts the connection down.
pub(crate) fn script() -> impl Strategy<Value = Vec<Op>> {
    let failure = prop_oneof![
        3 => Just(Op::Disconnect),
        1 => (0usize..64).prop_map(Op::Oversize),
        1 => Just(Op::Shutdown),
    ];
    (prop::collection::vec(op(), 1..60), prop::option::of((0usize..64, failure))).prop_map(|(mut ops, failure)| {
        if let Some((at, op)) = failure {
            let i = at % (ops.len() + 1);
            ops.insert(i, op);
        }
        ops
    })
}
