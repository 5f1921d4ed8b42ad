//! An event handler that records what it was called with, for asserting on order.

use std::sync::Arc;

use informer::{DeletedObject, EventHandler, object_key};
use k8s_openapi::api::core::v1::Pod;
use parking_lot::Mutex;

/// One handler call, reduced to what the tests check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    Add {
        key: String,
        rv: String,
        initial: bool,
    },
    Update {
        key: String,
        old_rv: String,
        new_rv: String,
        /// `old` and `new` are the same cached object (a resync).
        same_object: bool,
    },
    Delete {
        key: String,
        rv: String,
        /// `DeletedObject::Final` (seen on the watch) rather than `Unknown` (found by a relist).
        final_state: bool,
    },
}

impl Call {
    pub fn key(&self) -> &str {
        match self {
            Call::Add { key, .. } | Call::Update { key, .. } | Call::Delete { key, .. } => key,
        }
    }
}

/// Records every call; clones share the record.
#[derive(Clone, Default)]
pub struct Recorder {
    calls: Arc<Mutex<Vec<Call>>>,
}

impl Recorder {
    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().clone()
    }

    pub fn calls_for(&self, key: &str) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| c.key() == key)
            .collect()
    }

    pub fn clear(&self) {
        self.calls.lock().clear();
    }
}

fn rv(pod: &Pod) -> String {
    pod.metadata.resource_version.clone().unwrap_or_default()
}

impl EventHandler<Pod> for Recorder {
    fn on_add(&self, obj: &Arc<Pod>, is_in_initial_list: bool) {
        self.calls.lock().push(Call::Add {
            key: object_key(obj.as_ref()),
            rv: rv(obj),
            initial: is_in_initial_list,
        });
    }

    fn on_update(&self, old: &Arc<Pod>, new: &Arc<Pod>) {
        self.calls.lock().push(Call::Update {
            key: object_key(new.as_ref()),
            old_rv: rv(old),
            new_rv: rv(new),
            same_object: Arc::ptr_eq(old, new),
        });
    }

    fn on_delete(&self, obj: &DeletedObject<Pod>) {
        self.calls.lock().push(Call::Delete {
            key: obj.key(),
            rv: rv(obj.object()),
            final_state: matches!(obj, DeletedObject::Final(_)),
        });
    }
}
