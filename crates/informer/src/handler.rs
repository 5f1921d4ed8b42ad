//! What controllers implement to hear about cache changes (client-go's
//! `ResourceEventHandler`), and the notifications the informer queues for them.

use std::sync::Arc;

use kube::Resource;

use crate::key::object_key;

/// Receives the changes an informer applies to its cache, in order.
///
/// Each registration runs on its own task, so a slow handler delays only itself, but handlers
/// should still be quick and must not block (typically they compute a key and enqueue it).
/// The objects are the shared cache objects: never mutate them.
pub trait EventHandler<K>: Send + Sync + 'static {
    /// A new object entered the cache. `is_in_initial_list` is true for objects of the first
    /// list and for the replay a handler gets when it is registered after start.
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool);
    /// A cached object changed (seen on the watch or by a relist), or a resync re-delivered it
    /// (then `old` and `new` are the same object).
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>);
    /// An object left the cache.
    fn on_delete(&self, obj: &DeletedObject<K>);
}

/// The object handed to [`EventHandler::on_delete`].
///
/// A delete observed on the watch carries the object's final state. A delete discovered by a
/// relist (the watch was down when it happened) only has the last state the cache knew, which
/// may be stale: client-go's `DeletedFinalStateUnknown`.
#[derive(Debug, Clone, PartialEq)]
pub enum DeletedObject<K> {
    /// Deleted as seen on the watch: the object's final state.
    Final(Arc<K>),
    /// Deleted while the watch was down: the cache key and the last cached (possibly stale) state.
    Unknown {
        /// The store key of the deleted object.
        key: String,
        /// The last state the cache held.
        last_known: Arc<K>,
    },
}

impl<K> DeletedObject<K> {
    /// The deleted object (final or last known state), for handlers that do not care which.
    pub fn object(&self) -> &Arc<K> {
        match self {
            Self::Final(obj) => obj,
            Self::Unknown { last_known, .. } => last_known,
        }
    }
}

impl<K: Resource> DeletedObject<K> {
    /// The store key of the deleted object (upstream's `DeletionHandlingMetaNamespaceKeyFunc`).
    pub fn key(&self) -> String {
        match self {
            Self::Final(obj) => object_key(obj.as_ref()),
            Self::Unknown { key, .. } => key.clone(),
        }
    }
}

/// One queued call of an [`EventHandler`] method.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Notification<K> {
    Add {
        obj: Arc<K>,
        is_in_initial_list: bool,
    },
    Update {
        old: Arc<K>,
        new: Arc<K>,
    },
    Delete(DeletedObject<K>),
}

impl<K: 'static> Notification<K> {
    /// Calls the matching handler method.
    pub(crate) fn deliver(&self, handler: &dyn EventHandler<K>) {
        match self {
            Self::Add {
                obj,
                is_in_initial_list,
            } => handler.on_add(obj, *is_in_initial_list),
            Self::Update { old, new } => handler.on_update(old, new),
            Self::Delete(deleted) => handler.on_delete(deleted),
        }
    }
}

impl<K: Resource> Notification<K> {
    /// Whether this is a "sync" notification: an update whose object kept its
    /// resourceVersion (a resync, or an unchanged object in a relist). Upstream delivers these
    /// only to handlers whose resync is due.
    pub(crate) fn is_sync(&self) -> bool {
        match self {
            Self::Update { old, new } => old.meta().resource_version == new.meta().resource_version,
            Self::Add { .. } | Self::Delete(_) => false,
        }
    }
}

impl<K> Notification<K> {
    /// Whether this notification belongs to an initial list, which a registration must
    /// deliver before it reports synced.
    pub(crate) fn is_initial(&self) -> bool {
        matches!(
            self,
            Self::Add {
                is_in_initial_list: true,
                ..
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::pod;

    #[test]
    fn deleted_object_exposes_object_and_key() {
        let p = pod("a", "p1", &[], "3");
        let final_state = DeletedObject::Final(p.clone());
        assert_eq!(final_state.key(), "a/p1");
        assert!(Arc::ptr_eq(final_state.object(), &p));
        let unknown = DeletedObject::Unknown {
            key: "a/p1".to_string(),
            last_known: p.clone(),
        };
        assert_eq!(unknown.key(), "a/p1");
        assert!(Arc::ptr_eq(unknown.object(), &p));
    }

    #[test]
    fn only_initial_adds_count_as_initial() {
        let p = pod("a", "p1", &[], "3");
        let cases = [
            (
                Notification::Add {
                    obj: p.clone(),
                    is_in_initial_list: true,
                },
                true,
            ),
            (
                Notification::Add {
                    obj: p.clone(),
                    is_in_initial_list: false,
                },
                false,
            ),
            (
                Notification::Update {
                    old: p.clone(),
                    new: p.clone(),
                },
                false,
            ),
            (Notification::Delete(DeletedObject::Final(p.clone())), false),
        ];
        for (notification, want) in cases {
            assert_eq!(notification.is_initial(), want, "{notification:?}");
        }
    }

    #[test]
    fn only_updates_keeping_the_resource_version_are_sync() {
        let v1 = pod("a", "p1", &[], "1");
        let v1_again = pod("a", "p1", &[("relisted", "yes")], "1");
        let v2 = pod("a", "p1", &[], "2");
        let cases = [
            (
                Notification::Update {
                    old: v1.clone(),
                    new: v1.clone(),
                },
                true,
            ),
            (
                Notification::Update {
                    old: v1.clone(),
                    new: v1_again,
                },
                true,
            ),
            (
                Notification::Update {
                    old: v1.clone(),
                    new: v2,
                },
                false,
            ),
            (
                Notification::Add {
                    obj: v1.clone(),
                    is_in_initial_list: false,
                },
                false,
            ),
            (Notification::Delete(DeletedObject::Final(v1)), false),
        ];
        for (notification, want) in cases {
            assert_eq!(notification.is_sync(), want, "{notification:?}");
        }
    }
}
