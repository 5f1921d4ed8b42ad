//! The orphan-pod queue (`job_orphan_pod`, upstream `syncOrphanPod` and
//! `handleSingleOrphanPod`): a pod that carries the tracking finalizer but has no live,
//! unfinished Job would never be deleted (its finalizer keeps it), so the finalizer is removed.
//!
//! A key names one pod, or a label selector: a finished or deleted Job enqueues its selector,
//! so every pod it leaves behind is looked at once.

use std::sync::Arc;

use controller_toolkit::controller_ref::controller_of;
use informer::{CachedPod, LabelMatcher, Lister};
use k8s_openapi::{api::batch::v1::Job, apimachinery::pkg::apis::meta::v1::LabelSelector};

use crate::{
    context::{Shared, SyncError},
    decide::{pods::has_tracking_finalizer, spec::JobView},
};

/// The API version a Job's controller reference names.
const JOB_API_VERSION: &str = "batch/v1";

/// One key of the orphan queue (upstream `orphanPodKey`), kept on the queue as a string
/// ([`OrphanKey::encode`]): `pod/<namespace>/<name>` or `selector/<namespace>/<selector as
/// JSON>` (the selector as the Job had it, so it matches exactly as the Job's did).
#[derive(Debug, Clone, PartialEq)]
pub enum OrphanKey {
    /// One pod.
    Pod {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// The pods of a namespace that a selector matches.
    Selector {
        /// The namespace.
        namespace: String,
        /// The selector.
        selector: LabelSelector,
    },
}

impl OrphanKey {
    /// The key of `pod`.
    pub fn pod(pod: &CachedPod) -> Self {
        Self::Pod {
            namespace: pod.metadata.namespace.clone().unwrap_or_default(),
            name: pod.metadata.name.clone().unwrap_or_default(),
        }
    }

    /// The key of `job`'s selector (`enqueueLabelSelector`), if it has one.
    pub fn selector_of(job: &Job) -> Option<Self> {
        Some(Self::Selector {
            namespace: job.metadata.namespace.clone().unwrap_or_default(),
            selector: job.spec.as_ref()?.selector.clone()?,
        })
    }

    /// The key as queued.
    pub fn encode(&self) -> String {
        match self {
            Self::Pod { namespace, name } => format!("pod/{namespace}/{name}"),
            Self::Selector {
                namespace,
                selector,
            } => format!(
                "selector/{namespace}/{}",
                serde_json::to_string(selector).unwrap_or_default()
            ),
        }
    }

    /// The key `encoded` stands for.
    pub fn decode(encoded: &str) -> Result<Self, SyncError> {
        let unknown = || SyncError::OrphanKey(format!("unknown key type: {encoded:?}"));
        let mut parts = encoded.splitn(3, '/');
        let (Some(kind), Some(namespace), Some(value)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(unknown());
        };
        let namespace = namespace.to_owned();
        match kind {
            "pod" => Ok(Self::Pod {
                namespace,
                name: value.to_owned(),
            }),
            "selector" => serde_json::from_str(value)
                .map(|selector| Self::Selector {
                    namespace,
                    selector,
                })
                .map_err(|error| SyncError::OrphanKey(format!("invalid label selector: {error}"))),
            _ => Err(unknown()),
        }
    }
}

/// What the orphan worker reads and writes through.
pub struct Orphans<'a> {
    /// The Jobs.
    pub jobs: &'a Lister<Job>,
    /// The pods.
    pub pods: &'a Lister<CachedPod>,
    /// The sync's shared machinery.
    pub shared: &'a Shared,
}

impl Orphans<'_> {
    /// `syncOrphanPod`: one pod's finalizer, or those of every pod a selector matches (their
    /// failures only logged, as upstream).
    pub async fn sync(&self, encoded: &str) -> Result<(), SyncError> {
        match OrphanKey::decode(encoded)? {
            OrphanKey::Pod { namespace, name } => {
                let Some(pod) = self.pods.get(&namespace, &name) else {
                    return Ok(());
                };
                self.handle_single_orphan_pod(&pod).await
            }
            OrphanKey::Selector {
                namespace,
                selector,
            } => {
                let selector = LabelMatcher::try_from(selector).map_err(|error| {
                    SyncError::OrphanKey(format!("invalid label selector: {error}"))
                })?;
                let pods: Vec<Arc<CachedPod>> = self
                    .pods
                    .in_namespace(&namespace)
                    .into_iter()
                    .filter(|pod| has_tracking_finalizer(pod) && selector.selects(pod.as_ref()))
                    .collect();
                for pod in pods {
                    if let Err(error) = self.handle_single_orphan_pod(&pod).await {
                        tracing::error!(
                            pod = %controller_toolkit::pod_key(&pod),
                            %error,
                            "failed to remove the tracking finalizer of an orphan pod"
                        );
                    }
                }
                Ok(())
            }
        }
    }

    /// `handleSingleOrphanPod`: leaves a pod whose controller is not a Job, or is a Job that
    /// another controller manages or that has not finished; removes the finalizer otherwise.
    ///
    /// The pod is read from the cache again first: a selector's pods are handled one after
    /// another, and by the time one's turn comes, its finalizer may be gone already (the
    /// Job's last sync removed it), which the copy listed before would not show.
    async fn handle_single_orphan_pod(&self, listed: &CachedPod) -> Result<(), SyncError> {
        let namespace = listed.metadata.namespace.as_deref().unwrap_or_default();
        let name = listed.metadata.name.as_deref().unwrap_or_default();
        let Some(pod) = self
            .pods
            .get(namespace, name)
            .filter(|pod| pod.metadata.uid == listed.metadata.uid)
        else {
            return Ok(());
        };
        if let Some(owner) = controller_of(&pod.metadata) {
            if owner.kind != "Job" || owner.api_version != JOB_API_VERSION {
                return Ok(());
            }
            // Our own removal of this finalizer is on its way (the Job's last sync counted the
            // pod and the cache has not shown the patch yet): a second patch would change
            // nothing.
            let job_key = format!("{namespace}/{}", owner.name);
            if self
                .shared
                .finalizers
                .is_expected(&job_key, pod.metadata.uid.as_deref().unwrap_or_default())
            {
                return Ok(());
            }
            if let Some(job) = self.jobs.resolve_controller_ref(namespace, owner) {
                let view = JobView::new(&job);
                // Finished in the cache, or by our own write the cache has not shown yet.
                let finished = view.is_finished() || self.shared.finished_jobs.contains(view.uid());
                if view.managed_by_external_controller().is_some() || !finished {
                    return Ok(());
                }
            }
        }
        if !has_tracking_finalizer(&pod) {
            return Ok(());
        }
        self.shared
            .remove_tracking_finalizer(None, &pod)
            .await
            .map_err(SyncError::RemoveFinalizer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_survive_the_queue() {
        let selector: LabelSelector = serde_json::from_value(serde_json::json!({
            "matchLabels": {"batch.kubernetes.io/controller-uid": "u/1"},
            "matchExpressions": [{"key": "a/b", "operator": "In", "values": ["x,y"]}]
        }))
        .expect("selector");
        let keys = [
            OrphanKey::Pod {
                namespace: "ns".into(),
                name: "pod-1".into(),
            },
            OrphanKey::Selector {
                namespace: "ns".into(),
                selector,
            },
        ];
        for key in keys {
            assert_eq!(OrphanKey::decode(&key.encode()).expect("decodes"), key);
        }
        assert!(OrphanKey::decode("node/x/y").is_err());
        assert!(OrphanKey::decode("pod/x").is_err());
        assert!(OrphanKey::decode("selector/ns/{not json").is_err());
    }
}
