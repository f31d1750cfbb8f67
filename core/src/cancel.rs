//! One cancellation token for user, request and connection cancellation, carrying its reason so the
//! server's `notifications/cancelled` and the caller's error can both say why.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Waker};

use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

/// Cloned on every layer a call passes (its context, its asker, its client call), so a clone is one reference
/// count: the token, its reason and its parent sit behind one `Arc`. (A clone of a bare `CancellationToken` locks
/// its node to count the handle, and a child then cost three allocations rather than two.)
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<Node>);

#[derive(Debug, Default)]
struct Node {
    token: CancellationToken,
    reason: OnceLock<String>,
    parent: Option<CancelToken>,
}

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }

    /// A token cancelled with this one (or on its own); a request's token is a child of its session's.
    pub fn child(&self) -> CancelToken {
        CancelToken(Arc::new(Node {
            token: self.0.token.child_token(),
            reason: OnceLock::new(),
            parent: Some(self.clone()),
        }))
    }

    /// Cancels with a reason. The first reason wins.
    pub fn cancel(&self, reason: impl Into<String>) {
        let _ = self.0.reason.set(reason.into());
        self.0.token.cancel();
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.token.is_cancelled()
    }

    /// Resolves when cancelled. Cancel-safe.
    pub async fn cancelled(&self) {
        self.0.token.cancelled().await
    }

    /// [`CancelToken::cancelled`] for a task that keeps it across a loop and polls it on every wake-up (a
    /// connection's reader and writer, once per frame): after the first poll registers the task's waker, a poll by
    /// the same task reads the token's flag instead of registering with the token's waiter list again.
    pub fn watch(&self) -> Watch<'_> {
        Watch { token: self, inner: Box::pin(self.0.token.cancelled()), registered: None }
    }

    /// Why it was cancelled: its own reason, else the nearest cancelled ancestor's.
    pub fn reason(&self) -> String {
        if let Some(r) = self.0.reason.get() {
            return r.clone();
        }
        match &self.0.parent {
            Some(p) if p.is_cancelled() => p.reason(),
            _ => "cancelled".to_owned(),
        }
    }
}

/// See [`CancelToken::watch`].
pub struct Watch<'a> {
    token: &'a CancelToken,
    inner: Pin<Box<WaitForCancellationFuture<'a>>>,
    /// The waker the inner future holds: cancelling wakes it, so a poll with a waker that wakes the same task needs
    /// only the flag.
    registered: Option<Waker>,
}

impl std::fmt::Debug for Watch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch").field("cancelled", &self.token.is_cancelled()).finish()
    }
}

impl Future for Watch<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        if this.token.is_cancelled() {
            return Poll::Ready(());
        }
        if this.registered.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            return Poll::Pending;
        }
        let poll = this.inner.as_mut().poll(cx);
        this.registered = poll.is_pending().then(|| cx.waker().clone());
        poll
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_inherits_parent_reason() {
        let session = CancelToken::new();
        let call = session.child();
        assert!(!call.is_cancelled());
        session.cancel("session closed");
        assert!(call.is_cancelled());
        assert_eq!(call.reason(), "session closed");
        let own = session.child();
        own.cancel("mine");
        assert_eq!(own.reason(), "mine");
    }

    #[tokio::test]
    async fn a_watch_kept_across_polls_wakes_its_task_when_cancelled() {
        let token = CancelToken::new();
        let child = token.child();
        let (tx, mut rx) = tokio::sync::mpsc::channel::<u32>(1);
        let (ack, mut acked) = tokio::sync::mpsc::channel::<()>(1);
        let task = tokio::spawn(async move {
            let watch = child.watch();
            tokio::pin!(watch);
            let mut seen = 0;
            loop {
                tokio::select! {
                    biased;
                    _ = &mut watch => return (seen, child.reason()),
                    Some(n) = rx.recv() => {
                        seen += n;
                        ack.send(()).await.unwrap();
                    }
                }
            }
        });
        // Each value wakes the task, which polls the kept watch again before the cancellation comes.
        for n in 1..=3 {
            tx.send(n).await.unwrap();
            acked.recv().await.unwrap();
        }
        assert!(!task.is_finished());
        token.cancel("session closed");
        let (seen, reason) = task.await.unwrap();
        assert_eq!((seen, reason.as_str()), (6, "session closed"));
    }
}
