//! The list+watch loop under each informer (client-go's Reflector): a consistent list in pages
//! of 500, then a watch from the list's resourceVersion with bookmarks; a watch that ends is
//! resumed from the last version seen, one the server has compacted (410 Gone) re-lists.
//!
//! Why not `kube::runtime::watcher`, which does the same: it keeps the list's resourceVersion
//! and the watch's bookmarks to itself. A read barrier (a new leader waits until each cache
//! holds everything written before it took over) must know which version a cache reflects,
//! and on a resource nobody writes only a bookmark tells it. So this loop hands both on:
//! [`ReflectorEvent::InitDone`] carries the list's version, [`ReflectorEvent::Bookmark`] each
//! bookmark's. Everything else is the watcher's behaviour, event for event, so the informer's
//! processing did not change.

use std::{collections::VecDeque, time::Duration};

use futures::{Stream, StreamExt, future::BoxFuture, stream::BoxStream};
use kube::{
    Api, Resource,
    api::{ListParams, ObjectList, WatchEvent, WatchParams},
    core::Status,
};
use serde::de::DeserializeOwned;

use crate::informer::LIST_PAGE_SIZE;

/// Added to the server-side watch timeout before a silent watch is taken for a dead
/// connection and resumed (kube's watcher uses the same margin).
const IDLE_TIMEOUT_MARGIN: Duration = Duration::from_secs(5);

/// What the loop yields, in the order the server delivered it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ReflectorEvent<K> {
    /// A list starts: the objects until [`ReflectorEvent::InitDone`] replace the cache.
    Init,
    /// One listed object.
    InitApply(K),
    /// The list is complete; the cache reflects the collection at `resource_version`.
    InitDone {
        /// The list's `metadata.resourceVersion`.
        resource_version: String,
    },
    /// An object was added or changed.
    Apply(K),
    /// An object was deleted.
    Delete(K),
    /// Every change up to `resource_version` has been delivered (a watch bookmark).
    Bookmark {
        /// The bookmark's `metadata.resourceVersion`.
        resource_version: String,
    },
}

/// Why one step of the loop failed; the loop goes on after it (the informer backs off).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReflectorError {
    /// A list page could not be read; the list starts over.
    #[error("listing failed: {0}")]
    List(#[source] kube::Error),
    /// The watch could not be started; it is retried from the same version.
    #[error("starting the watch failed: {0}")]
    WatchStart(#[source] kube::Error),
    /// The watch stream broke.
    #[error("the watch failed: {0}")]
    Watch(#[source] kube::Error),
    /// The server sent an ERROR event (410 Gone re-lists).
    #[error("the API server ended the watch: {0}")]
    WatchEvent(#[source] Box<Status>),
    /// A list or event without a resourceVersion: the loop starts over with a list.
    #[error("no metadata.resourceVersion in the list or watch event")]
    NoResourceVersion,
}

/// Where a list and a watch come from: the API server ([`Api`]) or, in unit tests, a script.
pub(crate) trait ListWatch<K: Clone>: Send + Sync {
    /// One list page.
    fn list(&self, params: &ListParams) -> BoxFuture<'_, kube::Result<ObjectList<K>>>;
    /// A watch from `version`.
    fn watch(
        &self,
        params: &WatchParams,
        version: &str,
    ) -> BoxFuture<'_, kube::Result<BoxStream<'static, kube::Result<WatchEvent<K>>>>>;
}

impl<K> ListWatch<K> for Api<K>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    fn list(&self, params: &ListParams) -> BoxFuture<'_, kube::Result<ObjectList<K>>> {
        let params = params.clone();
        Box::pin(async move { Api::list(self, &params).await })
    }

    fn watch(
        &self,
        params: &WatchParams,
        version: &str,
    ) -> BoxFuture<'_, kube::Result<BoxStream<'static, kube::Result<WatchEvent<K>>>>> {
        let (params, version) = (params.clone(), version.to_owned());
        Box::pin(async move {
            Api::watch(self, &params, &version)
                .await
                .map(StreamExt::boxed)
        })
    }
}

/// The loop's state between two events.
enum State<K> {
    /// The next step lists from the start.
    Empty,
    /// Paging through a list.
    Listing {
        continue_token: Option<String>,
        page: VecDeque<K>,
        resource_version: Option<String>,
    },
    /// Listed (or the watch ended): the next step watches from `resource_version`.
    Listed { resource_version: String },
    /// Watching.
    Watching {
        resource_version: String,
        stream: BoxStream<'static, kube::Result<WatchEvent<K>>>,
    },
}

/// The list+watch loop of `source`, its watches ending after `watch_timeout_secs` (and then
/// resumed). Never ends; errors are yielded and the loop goes on after them.
pub(crate) fn list_watch<K, L>(
    source: L,
    watch_timeout_secs: u32,
) -> impl Stream<Item = Result<ReflectorEvent<K>, ReflectorError>> + Send
where
    K: Resource + Clone + Send + 'static,
    L: ListWatch<K> + 'static,
{
    futures::stream::unfold(
        (source, State::Empty),
        move |(source, mut state)| async move {
            loop {
                let (event, next) = step(&source, watch_timeout_secs, state).await;
                state = next;
                if let Some(event) = event {
                    return Some((event, (source, state)));
                }
            }
        },
    )
}

/// One step: the event it yields, if any, and the next state.
async fn step<K, L>(
    source: &L,
    watch_timeout_secs: u32,
    state: State<K>,
) -> (Option<Result<ReflectorEvent<K>, ReflectorError>>, State<K>)
where
    K: Resource + Clone + Send + 'static,
    L: ListWatch<K>,
{
    match state {
        State::Empty => (
            Some(Ok(ReflectorEvent::Init)),
            State::Listing {
                continue_token: None,
                page: VecDeque::new(),
                resource_version: None,
            },
        ),
        State::Listing {
            continue_token,
            mut page,
            resource_version,
        } => {
            if let Some(object) = page.pop_front() {
                return (
                    Some(Ok(ReflectorEvent::InitApply(object))),
                    State::Listing {
                        continue_token,
                        page,
                        resource_version,
                    },
                );
            }
            if continue_token.is_none()
                && let Some(resource_version) = resource_version
            {
                return (
                    Some(Ok(ReflectorEvent::InitDone {
                        resource_version: resource_version.clone(),
                    })),
                    State::Listed { resource_version },
                );
            }
            // No resourceVersion: a consistent read, as client-go's first list.
            let params = ListParams {
                limit: Some(LIST_PAGE_SIZE),
                continue_token,
                ..ListParams::default()
            };
            match source.list(&params).await {
                Ok(list) => {
                    let resource_version = list.metadata.resource_version.filter(|v| !v.is_empty());
                    let continue_token = list.metadata.continue_.filter(|c| !c.is_empty());
                    if resource_version.is_none() && continue_token.is_none() {
                        return (Some(Err(ReflectorError::NoResourceVersion)), State::Empty);
                    }
                    (
                        None,
                        State::Listing {
                            continue_token,
                            page: list.items.into(),
                            resource_version,
                        },
                    )
                }
                Err(error) => (Some(Err(ReflectorError::List(error))), State::Empty),
            }
        }
        State::Listed { resource_version } => {
            let params = WatchParams {
                timeout: Some(watch_timeout_secs),
                bookmarks: true,
                ..WatchParams::default()
            };
            match source.watch(&params, &resource_version).await {
                Ok(stream) => (
                    None,
                    State::Watching {
                        resource_version,
                        stream,
                    },
                ),
                Err(kube::Error::Api(status)) if status.code == 410 => {
                    (Some(Err(ReflectorError::WatchEvent(status))), State::Empty)
                }
                Err(error) => (
                    Some(Err(ReflectorError::WatchStart(error))),
                    State::Listed { resource_version },
                ),
            }
        }
        State::Watching {
            resource_version,
            mut stream,
        } => {
            let idle = Duration::from_secs(u64::from(watch_timeout_secs)) + IDLE_TIMEOUT_MARGIN;
            let next = match tokio::time::timeout(idle, stream.next()).await {
                Ok(next) => next,
                Err(_) => {
                    tracing::debug!("watch idle past its timeout; resuming it");
                    None
                }
            };
            match next {
                Some(Ok(WatchEvent::Added(object) | WatchEvent::Modified(object))) => {
                    object_event(object, stream, ReflectorEvent::Apply)
                }
                Some(Ok(WatchEvent::Deleted(object))) => {
                    object_event(object, stream, ReflectorEvent::Delete)
                }
                Some(Ok(WatchEvent::Bookmark(bookmark))) => {
                    let resource_version = bookmark.metadata.resource_version;
                    (
                        Some(Ok(ReflectorEvent::Bookmark {
                            resource_version: resource_version.clone(),
                        })),
                        State::Watching {
                            resource_version,
                            stream,
                        },
                    )
                }
                Some(Ok(WatchEvent::Error(status))) => {
                    // 410 Gone: the version is compacted away; only a list catches up.
                    let next = if status.code == 410 {
                        State::Empty
                    } else {
                        State::Watching {
                            resource_version,
                            stream,
                        }
                    };
                    (Some(Err(ReflectorError::WatchEvent(status))), next)
                }
                Some(Err(error)) => (
                    Some(Err(ReflectorError::Watch(error))),
                    State::Watching {
                        resource_version,
                        stream,
                    },
                ),
                None => (None, State::Listed { resource_version }),
            }
        }
    }
}

/// An ADDED, MODIFIED or DELETED event: the object's version is where the watch resumes.
fn object_event<K: Resource>(
    object: K,
    stream: BoxStream<'static, kube::Result<WatchEvent<K>>>,
    event: fn(K) -> ReflectorEvent<K>,
) -> (Option<Result<ReflectorEvent<K>, ReflectorError>>, State<K>) {
    match object
        .meta()
        .resource_version
        .clone()
        .filter(|v| !v.is_empty())
    {
        Some(resource_version) => (
            Some(Ok(event(object))),
            State::Watching {
                resource_version,
                stream,
            },
        ),
        None => (Some(Err(ReflectorError::NoResourceVersion)), State::Empty),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::{api::core::v1::ConfigMap, apimachinery::pkg::apis::meta::v1::ListMeta};
    use kube::api::ObjectMeta;
    use kube::core::watch::{Bookmark, BookmarkMeta};
    use parking_lot::Mutex;

    use super::*;

    fn map(name: &str, version: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                resource_version: Some(version.into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    fn page(items: Vec<ConfigMap>, version: &str, continue_token: Option<&str>) -> ListAnswer {
        Ok(ObjectList {
            types: Default::default(),
            metadata: ListMeta {
                resource_version: Some(version.into()),
                continue_: continue_token.map(Into::into),
                ..ListMeta::default()
            },
            items,
        })
    }

    fn bookmark(version: &str) -> WatchEvent<ConfigMap> {
        WatchEvent::Bookmark(Bookmark {
            types: Default::default(),
            metadata: BookmarkMeta {
                resource_version: version.into(),
                annotations: Default::default(),
            },
        })
    }

    fn gone() -> WatchEvent<ConfigMap> {
        WatchEvent::Error(Box::new(Status {
            code: 410,
            reason: "Expired".into(),
            ..Status::default()
        }))
    }

    type ListAnswer = kube::Result<ObjectList<ConfigMap>>;

    /// Answers lists and watches from a script, recording what was asked.
    #[derive(Default, Clone)]
    struct Script {
        lists: Arc<Mutex<VecDeque<ListAnswer>>>,
        watches: Arc<Mutex<VecDeque<Vec<WatchEvent<ConfigMap>>>>>,
        asked: Arc<Mutex<Vec<String>>>,
    }

    impl ListWatch<ConfigMap> for Script {
        fn list(&self, params: &ListParams) -> BoxFuture<'_, ListAnswer> {
            self.asked.lock().push(format!(
                "list limit={:?} continue={:?} rv={:?}",
                params.limit, params.continue_token, params.resource_version
            ));
            let answer = self.lists.lock().pop_front().unwrap_or_else(|| {
                Err(kube::Error::Api(Box::new(Status::failure(
                    "script ended",
                    "",
                ))))
            });
            Box::pin(async move { answer })
        }

        fn watch(
            &self,
            params: &WatchParams,
            version: &str,
        ) -> BoxFuture<'_, kube::Result<BoxStream<'static, kube::Result<WatchEvent<ConfigMap>>>>>
        {
            self.asked.lock().push(format!(
                "watch from {version} bookmarks={}",
                params.bookmarks
            ));
            let events = self.watches.lock().pop_front();
            Box::pin(async move {
                match events {
                    Some(events) => Ok(futures::stream::iter(events.into_iter().map(Ok)).boxed()),
                    None => Ok(futures::stream::pending().boxed()),
                }
            })
        }
    }

    fn render(event: &Result<ReflectorEvent<ConfigMap>, ReflectorError>) -> String {
        let name = |object: &ConfigMap| {
            format!(
                "{}@{}",
                object.metadata.name.clone().unwrap_or_default(),
                object.metadata.resource_version.clone().unwrap_or_default()
            )
        };
        match event {
            Ok(ReflectorEvent::Init) => "init".into(),
            Ok(ReflectorEvent::InitApply(object)) => format!("list {}", name(object)),
            Ok(ReflectorEvent::InitDone { resource_version }) => {
                format!("listed at {resource_version}")
            }
            Ok(ReflectorEvent::Apply(object)) => format!("apply {}", name(object)),
            Ok(ReflectorEvent::Delete(object)) => format!("delete {}", name(object)),
            Ok(ReflectorEvent::Bookmark { resource_version }) => {
                format!("bookmark {resource_version}")
            }
            Err(ReflectorError::WatchEvent(status)) => format!("error {}", status.code),
            Err(error) => format!("error {error}"),
        }
    }

    /// The first `count` events of the loop over `script`, and what it asked the server.
    async fn run(script: Script, count: usize) -> (Vec<String>, Vec<String>) {
        let events: Vec<String> = list_watch(script.clone(), 300)
            .take(count)
            .map(|event| render(&event))
            .collect()
            .await;
        let asked = script.asked.lock().clone();
        (events, asked)
    }

    #[tokio::test]
    async fn the_list_version_and_bookmarks_are_handed_on_in_order() {
        let script = Script::default();
        script.lists.lock().extend([
            page(vec![map("a", "3")], "10", Some("next")),
            page(vec![map("b", "7")], "10", None),
        ]);
        script.watches.lock().push_back(vec![
            WatchEvent::Modified(map("a", "11")),
            bookmark("14"),
            WatchEvent::Deleted(map("b", "15")),
        ]);
        let (events, asked) = run(script, 7).await;
        assert_eq!(
            events,
            [
                "init",
                "list a@3",
                "list b@7",
                "listed at 10",
                "apply a@11",
                "bookmark 14",
                "delete b@15"
            ]
        );
        assert_eq!(
            asked,
            [
                "list limit=Some(500) continue=None rv=None",
                "list limit=Some(500) continue=Some(\"next\") rv=None",
                "watch from 10 bookmarks=true"
            ]
        );
    }

    #[tokio::test]
    async fn an_ended_watch_resumes_from_the_last_version_and_gone_relists() {
        let script = Script::default();
        script.lists.lock().extend([
            page(vec![map("a", "3")], "10", None),
            page(vec![map("a", "30")], "40", None),
        ]);
        script.watches.lock().extend([
            vec![WatchEvent::Added(map("b", "12")), bookmark("20")],
            vec![gone()],
        ]);
        let (events, asked) = run(script, 9).await;
        assert_eq!(
            events,
            [
                "init",
                "list a@3",
                "listed at 10",
                "apply b@12",
                "bookmark 20",
                "error 410",
                "init",
                "list a@30",
                "listed at 40",
            ]
        );
        assert_eq!(
            asked,
            [
                "list limit=Some(500) continue=None rv=None",
                "watch from 10 bookmarks=true",
                "watch from 20 bookmarks=true",
                "list limit=Some(500) continue=None rv=None",
            ]
        );
    }

    #[tokio::test]
    async fn a_failed_list_starts_over() {
        let script = Script::default();
        script.lists.lock().extend([
            Err(kube::Error::Api(Box::new(Status::failure("boom", "")))),
            page(vec![], "5", None),
        ]);
        let (events, _) = run(script, 4).await;
        assert_eq!(events[0], "init");
        assert!(events[1].starts_with("error listing failed"), "{events:?}");
        assert_eq!(events[2..], ["init", "listed at 5"]);
    }
}
