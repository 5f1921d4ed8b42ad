//! One shared informer (client-go's `sharedIndexInformer`): a single list+watch of one
//! resource type across all namespaces, feeding a store that listers read and the handlers
//! that every interested controller registered.
//!
//! The list and watch are the `reflector`'s (paged lists of 500, relist on 410, watch bookmarks,
//! kube's default backoff). Each event goes through the [`EventProcessor`] and the resulting
//! notifications are queued to every handler while holding one lock, so a handler registered
//! late sees a consistent replay of the cache followed by exactly the changes after it. A
//! relist can also be asked for ([`SharedInformer::relist`]): a read barrier whose informer
//! does not catch up otherwise gets there with a fresh consistent list.

use std::{
    fmt::Debug,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use futures::StreamExt;
use kube::{Api, Client, Resource, api::ListParams, runtime::WatchStreamExt};
use parking_lot::Mutex;
use rand::Rng;
use serde::de::DeserializeOwned;
use tokio::{runtime::Handle, sync::Notify, time::Interval};
use tokio_util::sync::CancellationToken;

use crate::{
    error::InformerError,
    handler::{EventHandler, Notification},
    listener::{self, HandlerRegistration, Listener, ListenerTask},
    lister::Lister,
    pod_index::ControllerIndexed,
    processor::{EventProcessor, Forget, Transform},
    reflector::{ReflectorEvent, list_watch},
    store::{IndexFn, Store},
    sync::HasSynced,
};

/// Objects an informer can cache: typed, cluster-known Kubernetes resources.
///
/// Implemented for every type that meets the bounds; it only shortens signatures.
pub trait InformerResource:
    Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static
{
}

impl<K> InformerResource for K where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static
{
}

/// Objects per list page, as client-go's pager.
pub const LIST_PAGE_SIZE: u32 = 500;

/// Settings an informer takes from its factory.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InformerConfig {
    pub(crate) resync: Duration,
    pub(crate) transform: Transform,
}

/// A shared, cloneable handle on the one informer of resource type `K`.
pub struct SharedInformer<K> {
    inner: Arc<InformerInner<K>>,
}

clone_shares_state!(SharedInformer, inner);

struct InformerInner<K> {
    store: Arc<Store<K>>,
    synced: Arc<AtomicBool>,
    resync: Duration,
    /// Wakes the list+watch loop to start over with a list.
    relist: Notify,
    /// Every store write and every handler queueing happens under this lock.
    state: Mutex<InformerState<K>>,
}

struct InformerState<K> {
    processor: EventProcessor<K>,
    listeners: Vec<Listener<K>>,
    /// Handlers called on the informer's own task as each change is applied
    /// ([`SharedInformer::add_inline_handler`]).
    inline: Vec<Arc<dyn EventHandler<K>>>,
    phase: Phase<K>,
}

enum Phase<K> {
    /// Handler tasks wait for `start` to get a runtime and a shutdown token.
    NotStarted { pending_tasks: Vec<ListenerTask<K>> },
    Running {
        runtime: Handle,
        shutdown: CancellationToken,
    },
}

impl<K: InformerResource> SharedInformer<K> {
    pub(crate) fn new(config: InformerConfig) -> Self {
        let store = Arc::new(Store::new());
        let processor = EventProcessor::new(store.clone(), config.transform);
        Self {
            inner: Arc::new(InformerInner {
                store,
                synced: Arc::new(AtomicBool::new(false)),
                resync: config.resync,
                relist: Notify::new(),
                state: Mutex::new(InformerState {
                    processor,
                    listeners: Vec::new(),
                    inline: Vec::new(),
                    phase: Phase::NotStarted {
                        pending_tasks: Vec::new(),
                    },
                }),
            }),
        }
    }

    /// Registers a handler. If the informer already holds objects (registered after start),
    /// the handler first gets `on_add(obj, true)` for each of them, then every later change.
    pub fn add_event_handler<H: EventHandler<K>>(&self, handler: H) -> HandlerRegistration {
        let mut state = self.inner.state.lock();
        let (listener, task, registration) =
            listener::register(Arc::new(handler), self.inner.synced.clone());
        for obj in self.inner.store.list() {
            listener.send(Notification::Add {
                obj,
                is_in_initial_list: true,
            });
        }
        match &mut state.phase {
            Phase::NotStarted { pending_tasks } => pending_tasks.push(task),
            Phase::Running { runtime, shutdown } => {
                if shutdown.is_cancelled() {
                    tracing::warn!(
                        resource = %K::plural(&()),
                        "handler added to a stopped informer; it will never be called"
                    );
                }
                runtime.spawn(task.run(shutdown.clone()));
            }
        }
        state.listeners.push(listener);
        registration
    }

    /// Registers a handler called on the informer's own task, under its lock, right after each
    /// change is applied to the cache and before any queued handler hears of it: whatever it
    /// records is in order with the cache, so a reader that saw an object in the cache at some
    /// instant knows the handler had recorded it by then. It must be quick and must not block
    /// or call back into this informer (a lock and a map insert). Objects already cached are
    /// replayed to it first as `on_add(obj, true)`, as for [`Self::add_event_handler`].
    pub fn add_inline_handler<H: EventHandler<K>>(&self, handler: H) {
        let mut state = self.inner.state.lock();
        for obj in self.inner.store.list() {
            handler.on_add(&obj, true);
        }
        state.inline.push(Arc::new(handler));
    }

    /// Adds a named index (also after start: existing objects are indexed at once).
    /// Idempotent by name: a second registration under the same name keeps the first function.
    pub fn add_indexer(
        &self,
        name: &str,
        index_fn: impl Fn(&K) -> Vec<String> + Send + Sync + 'static,
    ) -> Result<(), InformerError> {
        if self.is_stopped() {
            return Err(InformerError::Stopped {
                resource: K::plural(&()).into_owned(),
                index: name.to_string(),
            });
        }
        let index_fn: IndexFn<K> = Arc::new(index_fn);
        self.inner.store.add_indexer(name, index_fn);
        Ok(())
    }

    /// Keeps no object for which `forget` holds: the object no reader needs, such as a Job's
    /// pod once it finished and its finalizers are gone. The change that makes a cached object
    /// forgettable still reaches every handler as an update; then it leaves the cache. Set it
    /// before the informer starts; a later call replaces it.
    pub fn forget_when(&self, forget: Forget<K>) {
        self.inner.state.lock().processor.set_forget(forget);
    }

    /// Indexes the cache by controller reference ([`ControllerIndexed`]), so that
    /// [`Lister::controlled_by_or_orphaned`] finds an owner's objects and the orphans.
    pub fn add_controller_indexer(&self) -> Result<(), InformerError>
    where
        K: ControllerIndexed,
    {
        self.add_indexer(K::INDEX, K::controller_index_values)
    }

    /// A read handle on this informer's cache.
    pub fn lister(&self) -> Lister<K> {
        Lister::from_store(self.inner.store.clone())
    }

    /// Whether the first list has been applied to the cache.
    pub fn has_synced(&self) -> bool {
        self.inner.synced.load(Ordering::SeqCst)
    }

    /// The highest resourceVersion the cache is known to reflect
    /// ([`Store::last_sync_resource_version`]).
    pub fn last_sync_resource_version(&self) -> Option<u64> {
        self.inner.store.last_sync_resource_version()
    }

    /// The version of the last change the cache took in
    /// ([`Store::last_change_resource_version`]).
    pub fn last_change_resource_version(&self) -> Option<u64> {
        self.inner.store.last_change_resource_version()
    }

    /// Makes the running list+watch loop start over with a consistent list (at once, or when
    /// it starts if it has not yet), as a 410 Gone would. For a read barrier the watch does not
    /// reach in time: the list's version is at least any version read before it.
    pub fn relist(&self) {
        self.inner.relist.notify_one();
    }

    /// The resource's current resourceVersion by a consistent read: a list of at most one
    /// object without a resourceVersion, which the API server answers from etcd (or from a
    /// watch cache it has brought up to date first) with the collection's latest version.
    pub async fn current_resource_version(client: Client) -> Result<Option<String>, kube::Error> {
        let list = Api::<K>::all(client)
            .list(&ListParams::default().limit(1))
            .await?;
        Ok(list
            .metadata
            .resource_version
            .filter(|version| !version.is_empty()))
    }

    fn is_stopped(&self) -> bool {
        matches!(&self.inner.state.lock().phase, Phase::Running { shutdown, .. } if shutdown.is_cancelled())
    }

    /// Starts the watch and the handler tasks on the current tokio runtime. Returns false
    /// (and does nothing) if already started or if called outside a runtime.
    pub(crate) fn start(&self, client: Client, shutdown: CancellationToken) -> bool {
        let Ok(runtime) = Handle::try_current() else {
            tracing::error!(resource = %K::plural(&()), "informer start called outside a tokio runtime");
            return false;
        };
        if !self.start_handlers(&runtime, &shutdown) {
            return false;
        }
        let watch_timeout_secs = rand::rng().random_range(300..600);
        runtime.spawn(self.inner.clone().run(client, shutdown, watch_timeout_secs));
        true
    }

    /// Spawns the tasks of handlers registered before start; false if already started.
    fn start_handlers(&self, runtime: &Handle, shutdown: &CancellationToken) -> bool {
        let mut state = self.inner.state.lock();
        let pending_tasks = match &mut state.phase {
            Phase::NotStarted { pending_tasks } => std::mem::take(pending_tasks),
            Phase::Running { .. } => return false,
        };
        for task in pending_tasks {
            runtime.spawn(task.run(shutdown.clone()));
        }
        state.phase = Phase::Running {
            runtime: runtime.clone(),
            shutdown: shutdown.clone(),
        };
        true
    }
}

impl<K: InformerResource> InformerInner<K> {
    async fn run(
        self: Arc<Self>,
        client: Client,
        shutdown: CancellationToken,
        watch_timeout_secs: u32,
    ) {
        let resource = K::plural(&()).into_owned();
        tracing::debug!(resource, "informer starting");
        let start = || {
            list_watch(Api::<K>::all(client.clone()), watch_timeout_secs)
                .default_backoff()
                .boxed()
        };
        let mut events = start();
        let mut resync_timer = resync_timer(self.resync);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                event = events.next() => match event {
                    Some(Ok(event)) => self.handle(event),
                    Some(Err(error)) => tracing::warn!(resource, %error, "list/watch failed; retrying with backoff"),
                    None => break,
                },
                () = tick(&mut resync_timer) => self.resync(),
                () = self.relist.notified() => {
                    tracing::info!(resource, "relisting");
                    events = start();
                }
            }
        }
        tracing::debug!(resource, "informer stopped");
    }

    fn handle(&self, event: ReflectorEvent<K>) {
        let mut state = self.state.lock();
        let mut notifications = state.processor.process(event);
        // A relist re-delivers unchanged objects as updates; upstream hands such "sync"
        // updates only to handlers whose resync is due, which is only ever at a resync tick.
        notifications.retain(|notification| !notification.is_sync());
        distribute(&state, notifications);
        if state.processor.has_synced() {
            self.synced.store(true, Ordering::SeqCst);
        }
    }

    fn resync(&self) {
        let state = self.state.lock();
        distribute(&state, state.processor.resync());
    }
}

/// Hands `notifications` to the inline handlers, then queues them to every listener.
fn distribute<K: Clone + 'static>(state: &InformerState<K>, notifications: Vec<Notification<K>>) {
    for notification in notifications {
        for handler in &state.inline {
            notification.deliver(handler.as_ref());
        }
        for listener in &state.listeners {
            listener.send(notification.clone());
        }
    }
}

fn resync_timer(period: Duration) -> Option<Interval> {
    if period.is_zero() {
        return None;
    }
    let mut timer = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    Some(timer)
}

async fn tick(timer: &mut Option<Interval>) {
    match timer {
        Some(timer) => {
            timer.tick().await;
        }
        None => std::future::pending().await,
    }
}

impl<K: InformerResource> HasSynced for SharedInformer<K> {
    fn has_synced(&self) -> bool {
        SharedInformer::has_synced(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reflector::ReflectorEvent as Event;
    use crate::{handler::DeletedObject, key::object_key, store::tests::pod};
    use k8s_openapi::api::core::v1::Pod;

    /// Blocks the handler while closed: a slow handler.
    #[derive(Default)]
    struct Gate {
        closed: Mutex<bool>,
        changed: parking_lot::Condvar,
    }

    impl Gate {
        fn set_closed(&self, closed: bool) {
            *self.closed.lock() = closed;
            self.changed.notify_all();
        }

        fn pass(&self) {
            let mut closed = self.closed.lock();
            while *closed {
                self.changed.wait(&mut closed);
            }
        }
    }

    /// Records every call as a compact string.
    #[derive(Clone, Default)]
    struct Recorder {
        calls: Arc<Mutex<Vec<String>>>,
        gate: Arc<Gate>,
    }

    impl Recorder {
        fn calls(&self) -> Vec<String> {
            self.calls.lock().clone()
        }

        fn record(&self, call: String) {
            self.gate.pass();
            self.calls.lock().push(call);
        }
    }

    impl EventHandler<Pod> for Recorder {
        fn on_add(&self, obj: &Arc<Pod>, is_in_initial_list: bool) {
            self.record(format!(
                "add {} {is_in_initial_list}",
                object_key(obj.as_ref())
            ));
        }

        fn on_update(&self, _old: &Arc<Pod>, new: &Arc<Pod>) {
            self.record(format!("update {}", object_key(new.as_ref())));
        }

        fn on_delete(&self, obj: &DeletedObject<Pod>) {
            self.record(format!("delete {}", obj.key()));
        }
    }

    /// An informer with a [`Recorder`] registered and its handlers running until `shutdown`.
    fn recording_informer(shutdown: &CancellationToken) -> (SharedInformer<Pod>, Recorder) {
        let informer = informer();
        let recorder = Recorder::default();
        informer.add_event_handler(recorder.clone());
        informer.start_handlers(&Handle::current(), shutdown);
        (informer, recorder)
    }

    fn informer() -> SharedInformer<Pod> {
        SharedInformer::new(InformerConfig {
            resync: Duration::ZERO,
            transform: Transform {
                drop_managed_fields: true,
            },
        })
    }

    /// The end of a list.
    fn done() -> Event<Pod> {
        Event::InitDone {
            resource_version: "100".into(),
        }
    }

    fn p(name: &str) -> Pod {
        pod("ns", name, &[], "1").as_ref().clone()
    }

    async fn eventually(what: &str, condition: impl Fn() -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while !condition() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out waiting for {what}"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[tokio::test]
    async fn an_inline_handler_has_recorded_a_change_once_the_cache_shows_it() {
        let shutdown = CancellationToken::new();
        let (informer, queued) = recording_informer(&shutdown);
        informer.inner.handle(Event::Init);
        informer.inner.handle(Event::InitApply(p("a")));
        informer.inner.handle(done());
        let inline = Recorder::default();
        informer.add_inline_handler(inline.clone());
        assert_eq!(inline.calls(), ["add ns/a true"], "the cache replayed");
        queued.gate.set_closed(true);
        informer.inner.handle(Event::Apply(p("b")));
        informer
            .inner
            .handle(Event::Apply(pod("ns", "a", &[], "2").as_ref().clone()));
        informer.inner.handle(Event::Delete(p("b")));
        assert_eq!(
            inline.calls(),
            [
                "add ns/a true",
                "add ns/b false",
                "update ns/a",
                "delete ns/b"
            ],
            "recorded on the informer's task, whatever the queued handler does"
        );
        queued.gate.set_closed(false);
        eventually("the queued handler", || queued.calls().len() == 4).await;
        shutdown.cancel();
    }

    #[tokio::test]
    async fn handler_registered_before_start_syncs_after_initial_list_delivery() {
        let informer = informer();
        let recorder = Recorder::default();
        let registration = informer.add_event_handler(recorder.clone());
        let shutdown = CancellationToken::new();
        assert!(informer.start_handlers(&Handle::current(), &shutdown));
        assert!(!informer.start_handlers(&Handle::current(), &shutdown));
        assert!(!informer.has_synced());
        recorder.gate.set_closed(true);
        for event in [
            Event::Init,
            Event::InitApply(p("a")),
            Event::InitApply(p("b")),
            done(),
        ] {
            informer.inner.handle(event);
        }
        assert!(informer.has_synced());
        assert!(!registration.has_synced(), "initial adds not delivered yet");
        recorder.gate.set_closed(false);
        eventually("handler sync", || registration.has_synced()).await;
        informer
            .inner
            .handle(Event::Apply(pod("ns", "a", &[], "2").as_ref().clone()));
        informer.inner.handle(Event::Delete(p("b")));
        eventually("all calls", || recorder.calls().len() == 4).await;
        assert_eq!(
            recorder.calls(),
            [
                "add ns/a true",
                "add ns/b true",
                "update ns/a",
                "delete ns/b"
            ]
        );
        shutdown.cancel();
    }

    #[tokio::test]
    async fn late_handler_gets_replay_of_cache_then_changes() {
        let informer = informer();
        let shutdown = CancellationToken::new();
        informer.start_handlers(&Handle::current(), &shutdown);
        for event in [
            Event::Init,
            Event::InitApply(p("a")),
            done(),
            Event::Apply(p("b")),
        ] {
            informer.inner.handle(event);
        }
        let recorder = Recorder::default();
        let registration = informer.add_event_handler(recorder.clone());
        informer.inner.handle(Event::Apply(p("c")));
        eventually("all calls", || recorder.calls().len() == 3).await;
        assert_eq!(
            recorder.calls(),
            ["add ns/a true", "add ns/b true", "add ns/c false"]
        );
        eventually("handler sync", || registration.has_synced()).await;
        shutdown.cancel();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slow_handler_delays_only_itself() {
        let informer = informer();
        let shutdown = CancellationToken::new();
        let slow = Recorder::default();
        let fast = Recorder::default();
        informer.add_event_handler(slow.clone());
        informer.add_event_handler(fast.clone());
        informer.start_handlers(&Handle::current(), &shutdown);
        slow.gate.set_closed(true);
        informer.inner.handle(Event::Init);
        informer.inner.handle(done());
        for name in ["a", "b", "c"] {
            informer.inner.handle(Event::Apply(p(name)));
        }
        eventually("fast handler", || fast.calls().len() == 3).await;
        assert!(slow.calls().is_empty());
        slow.gate.set_closed(false);
        eventually("slow handler", || slow.calls().len() == 3).await;
        assert_eq!(slow.calls(), fast.calls());
        shutdown.cancel();
    }

    #[tokio::test]
    async fn relist_hides_unchanged_objects_from_handlers() {
        let shutdown = CancellationToken::new();
        let (informer, recorder) = recording_informer(&shutdown);
        let relist = |pods: Vec<Pod>| {
            let mut events = vec![Event::Init];
            events.extend(pods.into_iter().map(Event::InitApply));
            events.push(done());
            events
        };
        let changed = pod("ns", "b", &[], "2").as_ref().clone();
        for event in relist(vec![p("a"), p("b")])
            .into_iter()
            .chain(relist(vec![p("a"), changed]))
        {
            informer.inner.handle(event);
        }
        eventually("all calls", || recorder.calls().len() == 3).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(
            recorder.calls(),
            ["add ns/a true", "add ns/b true", "update ns/b"]
        );
        shutdown.cancel();
    }

    #[tokio::test]
    async fn resync_reaches_every_handler() {
        let shutdown = CancellationToken::new();
        let (informer, recorder) = recording_informer(&shutdown);
        for event in [Event::Init, Event::InitApply(p("a")), done()] {
            informer.inner.handle(event);
        }
        informer.inner.resync();
        eventually("resync", || recorder.calls().len() == 2).await;
        assert_eq!(recorder.calls(), ["add ns/a true", "update ns/a"]);
        shutdown.cancel();
    }

    #[tokio::test]
    async fn indexers_are_rejected_once_stopped() {
        let informer = informer();
        let by_name = |pod: &Pod| pod.metadata.name.clone().into_iter().collect();
        assert_eq!(informer.add_indexer("name", by_name), Ok(()));
        let shutdown = CancellationToken::new();
        informer.start_handlers(&Handle::current(), &shutdown);
        assert_eq!(informer.add_indexer("name", by_name), Ok(()));
        shutdown.cancel();
        assert!(matches!(
            informer.add_indexer("other", by_name),
            Err(InformerError::Stopped { .. })
        ));
    }

    #[test]
    fn resync_timer_is_off_for_zero_period() {
        assert!(resync_timer(Duration::ZERO).is_none());
    }
}
