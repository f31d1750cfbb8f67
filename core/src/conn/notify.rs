//! Server notifications other than progress: a bounded queue drained by one dispatcher that runs at most
//! `notification_concurrency` handlers at once. The reader only ever `try_send`s into the queue.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::{Semaphore, mpsc};

use super::ConnectionConfig;
use crate::cancel::CancelToken;
use crate::jsonrpc::Notification;

/// Handles one server notification. Returns a future so handlers can do async work (e.g. re-fetch tools after
/// `notifications/tools/list_changed`).
pub type NotificationHandler = Arc<dyn Fn(Notification) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

pub(crate) fn spawn_dispatcher(
    handler: NotificationHandler,
    config: &ConnectionConfig,
    stop: CancelToken,
) -> mpsc::Sender<Notification> {
    let (tx, mut rx) = mpsc::channel::<Notification>(config.notification_queue.max(1));
    let limit = Arc::new(Semaphore::new(config.notification_concurrency.max(1)));
    tokio::spawn(async move {
        loop {
            let next = tokio::select! {
                biased;
                _ = stop.cancelled() => break,
                n = rx.recv() => n,
            };
            let Some(notification) = next else { break };
            // Waiting here is the backpressure: the queue fills and the reader starts dropping.
            let Ok(permit) = limit.clone().acquire_owned().await else {
                break;
            };
            let fut = handler(notification);
            tokio::spawn(async move {
                fut.await;
                drop(permit);
            });
        }
    });
    tx
}
