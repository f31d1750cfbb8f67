//! One cancellation token for user, request and connection cancellation, carrying its reason so the
//! server's `notifications/cancelled` and the caller's error can both say why.

use std::sync::{Arc, OnceLock};

use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Default)]
pub struct CancelToken {
    token: CancellationToken,
    reason: Arc<OnceLock<String>>,
    parent: Option<Arc<CancelToken>>,
}

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }

    /// A token cancelled with this one (or on its own); a request's token is a child of its session's.
    pub fn child(&self) -> CancelToken {
        CancelToken { token: self.token.child_token(), reason: Arc::default(), parent: Some(Arc::new(self.clone())) }
    }

    /// Cancels with a reason. The first reason wins.
    pub fn cancel(&self, reason: impl Into<String>) {
        let _ = self.reason.set(reason.into());
        self.token.cancel();
    }

    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Resolves when cancelled. Cancel-safe.
    pub async fn cancelled(&self) {
        self.token.cancelled().await
    }

    /// Why it was cancelled: its own reason, else the nearest cancelled ancestor's.
    pub fn reason(&self) -> String {
        if let Some(r) = self.reason.get() {
            return r.clone();
        }
        match &self.parent {
            Some(p) if p.is_cancelled() => p.reason(),
            _ => "cancelled".to_owned(),
        }
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
}
