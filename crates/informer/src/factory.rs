//! The per-process informer registry (client-go's `SharedInformerFactory`): the first request
//! for a resource type creates its informer, every later request (from any controller) gets the
//! same one, so each resource is listed and watched once however many controllers use it.

use std::{
    any::{Any, TypeId},
    collections::{BTreeMap, HashMap},
    sync::Arc,
    time::Duration,
};

use kube::Client;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::{
    HasSynced,
    barrier::VersionReader,
    informer::{InformerConfig, InformerResource, SharedInformer},
    processor::Transform,
};

/// Settings shared by all informers of a factory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FactoryConfig {
    /// How often every cached object is re-delivered to handlers as `on_update(obj, obj)`;
    /// zero disables resync. kcm draws it once per factory with [`crate::resync_period`].
    pub default_resync: Duration,
    /// Clear `metadata.managedFields` before objects enter the cache, as kcm's transform does.
    pub drop_managed_fields: bool,
}

impl Default for FactoryConfig {
    fn default() -> Self {
        Self {
            default_resync: Duration::ZERO,
            drop_managed_fields: true,
        }
    }
}

/// Creates and starts the shared informers; cheap to clone (all clones share the informers).
#[derive(Clone)]
pub struct SharedInformerFactory {
    inner: Arc<FactoryInner>,
}

struct FactoryInner {
    client: Client,
    config: FactoryConfig,
    informers: Mutex<HashMap<TypeId, Entry>>,
}

struct Entry {
    informer: Box<dyn ErasedInformer>,
    started: bool,
}

/// A `SharedInformer<K>` with `K` erased, so informers of all types share one map.
pub(crate) trait ErasedInformer: Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn start(&self, client: Client, shutdown: CancellationToken) -> bool;
    fn has_synced(&self) -> bool;
    /// The resource's plural name (`pods`).
    fn resource(&self) -> String;
    fn last_sync_resource_version(&self) -> Option<u64>;
    fn last_change_resource_version(&self) -> Option<u64>;
    /// How many objects the cache holds.
    fn cached_objects(&self) -> usize;
    fn relist(&self);
    /// [`SharedInformer::current_resource_version`] of this informer's resource.
    fn version_reader(&self) -> VersionReader;
}

impl<K: InformerResource> ErasedInformer for SharedInformer<K> {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn start(&self, client: Client, shutdown: CancellationToken) -> bool {
        SharedInformer::start(self, client, shutdown)
    }

    fn has_synced(&self) -> bool {
        HasSynced::has_synced(self)
    }

    fn resource(&self) -> String {
        K::plural(&()).into_owned()
    }

    fn last_sync_resource_version(&self) -> Option<u64> {
        SharedInformer::last_sync_resource_version(self)
    }

    fn last_change_resource_version(&self) -> Option<u64> {
        SharedInformer::last_change_resource_version(self)
    }

    fn cached_objects(&self) -> usize {
        self.lister().len()
    }

    fn relist(&self) {
        SharedInformer::relist(self);
    }

    fn version_reader(&self) -> VersionReader {
        |client| Box::pin(SharedInformer::<K>::current_resource_version(client))
    }
}

impl SharedInformerFactory {
    /// A factory whose informers list and watch through `client`.
    pub fn new(client: Client, config: FactoryConfig) -> Self {
        Self {
            inner: Arc::new(FactoryInner {
                client,
                config,
                informers: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The informer for `K`, created on first request; every call returns the same instance.
    pub fn informer<K: InformerResource>(&self) -> SharedInformer<K> {
        let mut informers = self.inner.informers.lock();
        let entry = informers.entry(TypeId::of::<K>()).or_insert_with(|| Entry {
            informer: Box::new(SharedInformer::<K>::new(InformerConfig {
                resync: self.inner.config.default_resync,
                transform: Transform {
                    drop_managed_fields: self.inner.config.drop_managed_fields,
                },
            })),
            started: false,
        });
        match entry.informer.as_any().downcast_ref::<SharedInformer<K>>() {
            Some(informer) => informer.clone(),
            None => unreachable!("the informer map is keyed by the informer's TypeId"),
        }
    }

    /// The informer for `K` if one was requested already, without creating one (a reader that
    /// must not add a watch of its own).
    pub fn existing<K: InformerResource>(&self) -> Option<SharedInformer<K>> {
        self.inner
            .informers
            .lock()
            .get(&TypeId::of::<K>())
            .and_then(|entry| entry.informer.as_any().downcast_ref::<SharedInformer<K>>())
            .cloned()
    }

    /// Starts every informer created so far that is not running yet (must be called inside a
    /// tokio runtime). Informers requested later need another `start`. All stop on `shutdown`.
    pub fn start(&self, shutdown: CancellationToken) {
        let mut informers = self.inner.informers.lock();
        for entry in informers.values_mut().filter(|entry| !entry.started) {
            entry.started = entry
                .informer
                .start(self.inner.client.clone(), shutdown.clone());
        }
    }

    /// Whether every started informer has processed its first list (the manager's readiness).
    pub fn has_synced(&self) -> bool {
        self.inner
            .informers
            .lock()
            .values()
            .filter(|entry| entry.started)
            .all(|entry| entry.informer.has_synced())
    }

    /// Polls every 100 ms until [`has_synced`](Self::has_synced) (true) or `shutdown` (false).
    pub async fn wait_for_cache_sync(&self, shutdown: &CancellationToken) -> bool {
        loop {
            if self.has_synced() {
                return true;
            }
            tokio::select! {
                () = shutdown.cancelled() => return false,
                () = tokio::time::sleep(crate::sync::CACHE_SYNC_POLL_PERIOD) => {}
            }
        }
    }

    /// The client the informers list and watch with.
    pub(crate) fn client(&self) -> Client {
        self.inner.client.clone()
    }

    /// Runs `visit` on every started informer, type-erased (the read barrier's view).
    pub(crate) fn for_each_started(&self, mut visit: impl FnMut(&dyn ErasedInformer)) {
        for entry in self.inner.informers.lock().values() {
            if entry.started {
                visit(entry.informer.as_ref());
            }
        }
    }

    /// For each started informer's resource (`pods`), the version of the last change its
    /// cache took in ([`crate::Store::last_change_resource_version`]): what every decision
    /// made from these caches so far rests on. Resources with no change yet are left out.
    pub fn changes_seen(&self) -> BTreeMap<String, u64> {
        let mut seen = BTreeMap::new();
        self.for_each_started(|informer| {
            if let Some(version) = informer.last_change_resource_version() {
                seen.insert(informer.resource(), version);
            }
        });
        seen
    }

    /// Number of informers started so far.
    pub fn started_count(&self) -> usize {
        self.inner
            .informers
            .lock()
            .values()
            .filter(|entry| entry.started)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ConfigMap, Pod};

    use super::*;

    #[tokio::test]
    async fn existing_finds_requested_informers_and_creates_none() {
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("valid URL"));
        let client = Client::try_from(config).expect("client builds");
        let factory = SharedInformerFactory::new(client, FactoryConfig::default());
        assert!(factory.existing::<Pod>().is_none());
        factory.informer::<Pod>();
        assert!(factory.existing::<Pod>().is_some());
        assert!(factory.existing::<ConfigMap>().is_none());
        assert_eq!(factory.inner.informers.lock().len(), 1);
    }
}
