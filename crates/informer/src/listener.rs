//! One event-handler registration (client-go's `processorListener`): an unbounded queue of
//! notifications drained by the registration's own task, so a slow handler delays only itself
//! and every handler sees notifications in order. It also tracks how many initial-list
//! notifications are still undelivered, which decides the registration's `has_synced`.

use std::sync::{
    Arc,
    atomic::{AtomicBool, AtomicUsize, Ordering},
};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::{
    handler::{EventHandler, Notification},
    sync::HasSynced,
};

/// The informer's side of a registration: where it queues notifications.
pub(crate) struct Listener<K> {
    sender: mpsc::UnboundedSender<Notification<K>>,
    pending_initial: Arc<AtomicUsize>,
}

/// The registration's side: the task body that calls the handler.
pub(crate) struct ListenerTask<K> {
    receiver: mpsc::UnboundedReceiver<Notification<K>>,
    handler: Arc<dyn EventHandler<K>>,
    pending_initial: Arc<AtomicUsize>,
}

/// Creates the queue for one handler, and the registration handed back to its owner.
pub(crate) fn register<K>(
    handler: Arc<dyn EventHandler<K>>,
    informer_synced: Arc<AtomicBool>,
) -> (Listener<K>, ListenerTask<K>, HandlerRegistration) {
    let (sender, receiver) = mpsc::unbounded_channel();
    let pending_initial = Arc::new(AtomicUsize::new(0));
    let registration = HandlerRegistration {
        informer_synced,
        pending_initial: pending_initial.clone(),
    };
    (
        Listener {
            sender,
            pending_initial: pending_initial.clone(),
        },
        ListenerTask {
            receiver,
            handler,
            pending_initial,
        },
        registration,
    )
}

impl<K> Listener<K> {
    /// Queues a notification; never blocks.
    pub(crate) fn send(&self, notification: Notification<K>) {
        let initial = notification.is_initial();
        if initial {
            self.pending_initial.fetch_add(1, Ordering::SeqCst);
        }
        if self.sender.send(notification).is_err() && initial {
            // The task has ended (shutdown): nothing will be delivered any more.
            self.pending_initial.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl<K: Send + Sync + 'static> ListenerTask<K> {
    /// Delivers queued notifications until shutdown or until the informer is gone.
    pub(crate) async fn run(mut self, shutdown: CancellationToken) {
        loop {
            let notification = tokio::select! {
                biased;
                () = shutdown.cancelled() => return,
                notification = self.receiver.recv() => notification,
            };
            let Some(notification) = notification else {
                return;
            };
            notification.deliver(self.handler.as_ref());
            if notification.is_initial() {
                self.pending_initial.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }
}

/// Returned by `add_event_handler`: tells whether this handler has seen the whole initial list.
///
/// Controllers wait on their registrations (not just the informer) so that workers start
/// only after their handlers have enqueued every existing object.
#[derive(Debug, Clone)]
pub struct HandlerRegistration {
    informer_synced: Arc<AtomicBool>,
    pending_initial: Arc<AtomicUsize>,
}

impl HandlerRegistration {
    /// True once the informer has synced and every initial-list notification was delivered
    /// to this handler.
    pub fn has_synced(&self) -> bool {
        self.informer_synced.load(Ordering::SeqCst)
            && self.pending_initial.load(Ordering::SeqCst) == 0
    }
}

impl HasSynced for HandlerRegistration {
    fn has_synced(&self) -> bool {
        HandlerRegistration::has_synced(self)
    }
}
