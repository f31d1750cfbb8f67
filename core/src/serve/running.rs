//! A service's answer, computed on the request's own task. A task per request would cost a spawn, a move of the
//! whole future and a wake-up on every call; polling in place costs none of them, and keeps what the task gave:
//! - a panic in the service is caught, and costs that request an error, never the connection;
//! - a request that stops waiting (cancelled, or its connection closed) before the answer does not kill the
//!   service's work: the rest runs on as a task of its own, so the service can wind down in its own way (telling
//!   an upstream server, say), and its late answer goes nowhere.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

use super::service::{ServiceAnswer, ServiceFuture};
use crate::jsonrpc::ErrorObject;

/// The service's answer on the way; `Err(Panicked)` when the service panicked.
pub(crate) struct Running(Option<ServiceFuture>);

/// The service panicked while answering.
#[derive(Debug)]
pub(crate) struct Panicked;

impl Running {
    pub fn new(work: ServiceFuture) -> Running {
        Running(Some(work))
    }
}

impl Future for Running {
    type Output = Result<Result<ServiceAnswer, ErrorObject>, Panicked>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(work) = self.0.as_mut() else { return Poll::Ready(Err(Panicked)) };
        let polled = catch_unwind(AssertUnwindSafe(|| work.as_mut().poll(cx)));
        match polled {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(answer)) => {
                self.0 = None;
                Poll::Ready(Ok(answer))
            }
            Err(_) => {
                // A panicked future must not be polled again: dropped here, before anything else sees it.
                self.0 = None;
                Poll::Ready(Err(Panicked))
            }
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(rest) = self.0.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(rest);
        }
    }
}
