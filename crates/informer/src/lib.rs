#![doc = include_str!("../README.md")]

/// `Clone` for a handle whose one field `$shared` is an `Arc` of `K`'s shared state: a clone
/// shares that state, so unlike `#[derive(Clone)]` it needs no `K: Clone`.
macro_rules! clone_shares_state {
    ($handle:ident, $shared:ident) => {
        impl<K> Clone for $handle<K> {
            fn clone(&self) -> Self {
                Self {
                    $shared: self.$shared.clone(),
                }
            }
        }
    };
}

mod barrier;
mod cached;
mod error;
mod factory;
mod handler;
mod informer;
mod key;
mod labels;
mod listener;
mod lister;
mod pod_index;
mod processor;
mod reflector;
mod resync;
mod store;
mod sync;

pub use barrier::{
    BarrierProgress, BarrierReport, BarrierResource, CatchUp, HandedOver, barrier_progress,
};
pub use cached::{
    CachedContainer, CachedContainerStatus, CachedDeployment, CachedDeploymentSpec, CachedNode,
    CachedNodeSpec, CachedPod, CachedPodCondition, CachedPodConditions, CachedPodSpec,
    CachedPodStatus, CachedReplicaSet, CachedReplicaSetSpec, ClaimVolume, CompactJson,
    CompactLabelSelector, CompactLabels, CompactPodTemplate, KUBELET_CONDITION_TYPES, LabelEntries,
    PodMetadata, PodNode, RawObject, ReadyCondition, TerminatedState, WorkloadMetadata,
};
pub use error::InformerError;
pub use factory::{FactoryConfig, SharedInformerFactory};
pub use handler::{DeletedObject, EventHandler};
pub use informer::{InformerResource, LIST_PAGE_SIZE, SharedInformer};
pub use key::{object_key, split_key};
pub use labels::{LabelLookup, LabelMatcher, Labeled, Labels};
pub use listener::HandlerRegistration;
pub use lister::Lister;
pub use pod_index::{
    CONTROLLER_UID_INDEX, ControllerIndexed, ORPHAN_INDEX_KEY, ORPHAN_POD_INDEX_KEY,
    POD_CONTROLLER_UID_INDEX, controller_index, controller_index_key, orphan_index_key,
    orphan_pod_index_key, owner_index_key, pod_controller_index,
};
pub use processor::Forget;
pub use resync::{DEFAULT_MIN_RESYNC_PERIOD, resync_period};
pub use store::{IndexFn, NAMESPACE_INDEX, ObjectKey, Store};
pub use sync::{CACHE_SYNC_POLL_PERIOD, HasSynced, wait_for_cache_sync, wait_for_named_cache_sync};
