//! The observer of a synced gateway: every event passes on to the embedder's observer, and this node's own breaker
//! transitions are queued for the link to publish. It runs on the call path, so it never waits: a full queue drops
//! the report and counts it (the next transition of that breaker will say where it stands).

use std::sync::Arc;

use super::Node;
use super::report::{Shared, opened_for_slowness, shared_state};
use crate::observe::{Event, Observer};

#[derive(Debug)]
pub(super) struct Tap {
    pub inner: Arc<dyn Observer>,
    pub node: Arc<Node>,
}

impl Observer for Tap {
    fn event(&self, event: &Event<'_>) {
        self.inner.event(event);
        if let Event::Breaker { replica, tool, transition, .. } = event
            && let Some(state) = shared_state(transition)
        {
            let mut report = self.node.report(replica, tool, state, transition.open_for, None);
            report.slow = state == Shared::Open && opened_for_slowness(transition);
            self.node.queue(report);
        }
    }
}
