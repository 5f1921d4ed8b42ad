//! The one write layer of the three controllers: every API write is an explicit value — what
//! (verb and resource), on which object, and why — handed to an executor.
//!
//! Controllers decide writes; an [`WriteExecutor`] carries them out. [`ApiWriteExecutor`]
//! sends them to the API server; shadow mode swaps in one that records the intent and sends
//! nothing, without any controller code knowing. Typed helpers on [`Writer`] turn a controller's
//! object into a [`Write`] and the server's answer back into the object, and hold the rules
//! every controller shares: the status-update retry ([`StatusRetry`]) and upstream's
//! `slowStartBatch` ([`slow_start`]).
//!
//! A write also knows when the sync that decided it started ([`sync_started`]): its cache
//! reads came after that instant, so an executor that judges writes (shadow mode) can tell
//! which changes the decision had seen.

use std::{fmt, future::Future, sync::Arc, time::Instant};

use futures::future::{BoxFuture, join_all};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy},
    core::{ApiResource, DynamicObject, Request},
};
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::{Value, value::RawValue};

use crate::api_errors::is_conflict;

tokio::task_local! {
    /// When the sync running on this task started.
    static SYNC_STARTED: Instant;
}

/// Runs `sync`, one sync of a key, so that the writes it decides can tell when it started
/// ([`sync_started`]). The controller runtime runs every sync through it.
pub async fn within_sync<F: Future>(sync: F) -> F::Output {
    SYNC_STARTED.scope(Instant::now(), sync).await
}

/// When the sync deciding the write now being executed started, if it runs [`within_sync`]:
/// every cache read the decision rests on came after it, so a change the cache showed before
/// then was seen by the decision.
pub fn sync_started() -> Option<Instant> {
    SYNC_STARTED.try_with(|started| *started).ok()
}

/// What a write does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteVerb {
    /// POST a new object.
    Create,
    /// PUT the whole object (its resourceVersion makes a concurrent change a 409).
    Update,
    /// PUT the status subresource.
    UpdateStatus,
    /// PATCH with a strategic-merge patch.
    StrategicPatch,
    /// PATCH with a JSON merge patch.
    MergePatch,
    /// DELETE.
    Delete {
        /// Only delete the object with [`Write::uid`] (not a namesake created since).
        precondition: bool,
        /// What becomes of the object's dependents.
        propagation: Propagation,
    },
}

/// How a delete treats the deleted object's dependents (its `propagationPolicy`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Propagation {
    /// None sent: the server's default for the kind (for pods and ReplicaSets, background).
    #[default]
    ServerDefault,
    /// `Background`: the object goes at once, the garbage collector deletes its dependents.
    Background,
    /// `Foreground`: the dependents are deleted first, the object once they are gone (the
    /// TTL-after-finished controller's Job deletions, so a Job never outlives its pods'
    /// deletion unseen).
    Foreground,
}

impl Propagation {
    /// The policy sent, if any.
    fn policy(self) -> Option<PropagationPolicy> {
        match self {
            Propagation::ServerDefault => None,
            Propagation::Background => Some(PropagationPolicy::Background),
            Propagation::Foreground => Some(PropagationPolicy::Foreground),
        }
    }
}

impl fmt::Display for WriteVerb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WriteVerb::Create => "create",
            WriteVerb::Update | WriteVerb::UpdateStatus => "update",
            WriteVerb::StrategicPatch | WriteVerb::MergePatch => "patch",
            WriteVerb::Delete { .. } => "delete",
        })
    }
}

/// One API write a controller decided on.
#[derive(Debug, Clone, PartialEq)]
pub struct Write {
    /// What it does.
    pub verb: WriteVerb,
    /// The kind written (group, version, kind, plural).
    pub resource: ApiResource,
    /// The object's namespace.
    pub namespace: String,
    /// The object's name (`metadata.generateName` for a create that lets the server name it).
    pub name: String,
    /// The object's UID as the controller saw it (the object a delete or update was decided
    /// on; `None` for a create or a patch by name).
    pub uid: Option<String>,
    /// The JSON sent: the object or the patch, as the controller encoded it (a
    /// ControllerRevision keeps Go's exact bytes); empty for a delete.
    pub body: Arc<[u8]>,
    /// Why the controller writes: a short phrase for logs and shadow reports ("scale up",
    /// "status", "adopt").
    pub reason: &'static str,
}

/// Carries out [`Write`]s: the server's answer as JSON text (the written object; for a delete
/// the object or a Status).
pub trait WriteExecutor: Send + Sync + 'static {
    /// Performs one write.
    fn execute(&self, write: Write) -> BoxFuture<'static, Result<String, kube::Error>>;
}

/// An object's answer decoded as its metadata alone; serde skips the other fields unread.
#[derive(Deserialize)]
struct MetadataOnly {
    #[serde(default)]
    metadata: ObjectMeta,
}

/// Sends writes to the API server through one client (the controller's, so its user agent and
/// rate limiter apply to every write).
#[derive(Clone)]
pub struct ApiWriteExecutor {
    client: Client,
}

impl ApiWriteExecutor {
    /// Writes through `client`.
    pub fn new(client: Client) -> Self {
        Self { client }
    }
}

fn request_for(write: &Write) -> Result<http::Request<Vec<u8>>, kube::Error> {
    let request = Request::new(DynamicObject::url_path(
        &write.resource,
        Some(&write.namespace),
    ));
    let body = || write.body.to_vec();
    // A patch goes out as the bytes it was encoded to.
    let patch = || {
        let text = String::from_utf8(write.body.to_vec()).map_err(kube::Error::FromUtf8)?;
        RawValue::from_string(text).map_err(kube::Error::SerdeError)
    };
    let built = match &write.verb {
        WriteVerb::Create => request.create(&PostParams::default(), body()),
        WriteVerb::Update => request.replace(&write.name, &PostParams::default(), body()),
        WriteVerb::UpdateStatus => {
            request.replace_subresource("status", &write.name, &PostParams::default(), body())
        }
        WriteVerb::StrategicPatch => request.patch(
            &write.name,
            &PatchParams::default(),
            &Patch::Strategic(patch()?),
        ),
        WriteVerb::MergePatch => request.patch(
            &write.name,
            &PatchParams::default(),
            &Patch::Merge(patch()?),
        ),
        WriteVerb::Delete {
            precondition,
            propagation,
        } => {
            let params = DeleteParams {
                preconditions: write.uid.as_ref().filter(|_| *precondition).map(|uid| {
                    Preconditions {
                        uid: Some(uid.clone()),
                        resource_version: None,
                    }
                }),
                propagation_policy: propagation.policy(),
                ..DeleteParams::default()
            };
            request.delete(&write.name, &params)
        }
    };
    built.map_err(kube::Error::BuildRequest)
}

impl WriteExecutor for ApiWriteExecutor {
    fn execute(&self, write: Write) -> BoxFuture<'static, Result<String, kube::Error>> {
        let client = self.client.clone();
        Box::pin(async move {
            let request = request_for(&write)?;
            client.request_text(request).await
        })
    }
}

/// The typed face of the write layer that controllers call.
#[derive(Clone)]
pub struct Writer {
    executor: Arc<dyn WriteExecutor>,
    /// Reads a conflict retry needs (re-reading the object is not a write).
    client: Client,
}

impl Writer {
    /// Writes through the API server with `client`.
    pub fn new(client: Client) -> Self {
        Self::with_executor(client.clone(), Arc::new(ApiWriteExecutor::new(client)))
    }

    /// Writes through `executor`; `client` serves the reads of conflict retries.
    pub fn with_executor(client: Client, executor: Arc<dyn WriteExecutor>) -> Self {
        Self { executor, client }
    }

    /// The client reads go through.
    pub fn client(&self) -> &Client {
        &self.client
    }

    async fn send<K: DeserializeOwned>(&self, write: Write) -> Result<K, kube::Error> {
        let written = self.executor.execute(write).await?;
        serde_json::from_str(&written).map_err(kube::Error::SerdeError)
    }

    /// The write of `object` with `body` as its encoding.
    fn write_of<K>(object: &K, verb: WriteVerb, body: Vec<u8>, reason: &'static str) -> Write
    where
        K: Resource<DynamicType = ()>,
    {
        let meta = object.meta();
        let name = meta
            .name
            .clone()
            .or_else(|| meta.generate_name.clone())
            .unwrap_or_default();
        Write {
            verb,
            resource: ApiResource::erase::<K>(&()),
            namespace: object.namespace().unwrap_or_default(),
            name,
            uid: meta.uid.clone(),
            body: body.into(),
            reason,
        }
    }

    /// Sends `object` itself, encoded as JSON.
    async fn send_object<K>(
        &self,
        object: &K,
        verb: WriteVerb,
        reason: &'static str,
    ) -> Result<K, kube::Error>
    where
        K: Resource<DynamicType = ()> + Serialize + DeserializeOwned,
    {
        let body = serde_json::to_vec(object).map_err(kube::Error::SerdeError)?;
        self.send(Self::write_of(object, verb, body, reason)).await
    }

    /// POSTs `exact`, the encoding of `object` that must reach the server byte for byte.
    pub async fn create_exact<K>(
        &self,
        object: &K,
        exact: Vec<u8>,
        reason: &'static str,
    ) -> Result<K, kube::Error>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        self.send(Self::write_of(object, WriteVerb::Create, exact, reason))
            .await
    }

    /// POSTs `object`; the server's copy comes back.
    pub async fn create<K>(&self, object: &K, reason: &'static str) -> Result<K, kube::Error>
    where
        K: Resource<DynamicType = ()> + Serialize + DeserializeOwned,
    {
        self.send_object(object, WriteVerb::Create, reason).await
    }

    /// POSTs `object` and decodes only the metadata of the server's copy: a caller that records
    /// what it created and reads nothing else skips decoding a spec and a status (for a pod,
    /// most of the answer's cost).
    pub async fn create_for_metadata<K>(
        &self,
        object: &K,
        reason: &'static str,
    ) -> Result<ObjectMeta, kube::Error>
    where
        K: Resource<DynamicType = ()> + Serialize,
    {
        let body = serde_json::to_vec(object).map_err(kube::Error::SerdeError)?;
        let written: MetadataOnly = self
            .send(Self::write_of(object, WriteVerb::Create, body, reason))
            .await?;
        Ok(written.metadata)
    }

    /// PUTs `object` (conflicts answer 409).
    pub async fn update<K>(&self, object: &K, reason: &'static str) -> Result<K, kube::Error>
    where
        K: Resource<DynamicType = ()> + Serialize + DeserializeOwned,
    {
        self.send_object(object, WriteVerb::Update, reason).await
    }

    /// PUTs `object`'s status subresource (conflicts answer 409).
    pub async fn update_status<K>(&self, object: &K, reason: &'static str) -> Result<K, kube::Error>
    where
        K: Resource<DynamicType = ()> + Serialize + DeserializeOwned,
    {
        self.send_object(object, WriteVerb::UpdateStatus, reason)
            .await
    }

    /// PATCHes the `K` named `name` in `namespace` with a strategic-merge `patch`.
    pub async fn strategic_patch<K>(
        &self,
        namespace: &str,
        name: &str,
        patch: Value,
        reason: &'static str,
    ) -> Result<K, kube::Error>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        let body = serde_json::to_vec(&patch).map_err(kube::Error::SerdeError)?;
        self.send_patch(WriteVerb::StrategicPatch, namespace, name, body, reason)
            .await
    }

    /// PATCHes the `K` named `name` in `namespace` with the JSON merge patch `patch`, sent as
    /// these bytes (upstream's DaemonSet controller relabels pods this way).
    pub async fn merge_patch<K>(
        &self,
        namespace: &str,
        name: &str,
        patch: Vec<u8>,
        reason: &'static str,
    ) -> Result<K, kube::Error>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        self.send_patch(WriteVerb::MergePatch, namespace, name, patch, reason)
            .await
    }

    /// The PATCH of the `K` named `name` in `namespace` with `body` (one write for both patch
    /// types: a patch names its target, with no UID precondition).
    async fn send_patch<K>(
        &self,
        verb: WriteVerb,
        namespace: &str,
        name: &str,
        body: Vec<u8>,
        reason: &'static str,
    ) -> Result<K, kube::Error>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        self.send(Write {
            verb,
            resource: ApiResource::erase::<K>(&()),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            uid: None,
            body: body.into(),
            reason,
        })
        .await
    }

    /// DELETEs the `K` described by `target` (its namespace, name and UID), only if it still
    /// has that UID when `precondition` says so. A graceful delete answers with the object (its
    /// new version); an immediate one with a Status, which is `None`.
    pub async fn delete<K>(
        &self,
        target: &ObjectMeta,
        precondition: bool,
        reason: &'static str,
    ) -> Result<Option<K>, kube::Error>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        self.delete_propagating(target, precondition, Propagation::ServerDefault, reason)
            .await
    }

    /// [`delete`](Self::delete) with the dependents treated as `propagation` says.
    pub async fn delete_propagating<K>(
        &self,
        target: &ObjectMeta,
        precondition: bool,
        propagation: Propagation,
        reason: &'static str,
    ) -> Result<Option<K>, kube::Error>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        let answer = self
            .executor
            .execute(Write {
                verb: WriteVerb::Delete {
                    precondition,
                    propagation,
                },
                resource: ApiResource::erase::<K>(&()),
                namespace: target.namespace.clone().unwrap_or_default(),
                name: target.name.clone().unwrap_or_default(),
                uid: target.uid.clone(),
                body: Arc::from([]),
                reason,
            })
            .await?;
        /// Just the kind of an answer: the object, or a Status.
        #[derive(serde::Deserialize)]
        struct Kind {
            kind: Option<String>,
        }
        let kind: Kind = serde_json::from_str(&answer).map_err(kube::Error::SerdeError)?;
        if kind.kind.as_deref() == Some(K::kind(&()).as_ref()) {
            serde_json::from_str(&answer)
                .map(Some)
                .map_err(kube::Error::SerdeError)
        } else {
            Ok(None)
        }
    }

    /// Writes a status computed by the sync, retrying as `retry` says with a fresh read of the
    /// object: `put` sets what the sync decided onto whichever copy is being written.
    pub async fn update_status_retrying<K>(
        &self,
        object: &K,
        retry: StatusRetry,
        put: impl Fn(&mut K),
    ) -> Result<K, kube::Error>
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + Serialize
            + DeserializeOwned
            + fmt::Debug,
    {
        let mut current = object.clone();
        let mut attempt = 1;
        loop {
            put(&mut current);
            match self.update_status(&current, "status").await {
                Ok(written) => return Ok(written),
                Err(error) if attempt < retry.attempts && retry.retries(&error) => {
                    attempt += 1;
                    tracing::debug!(
                        object = %informer::object_key(object),
                        %error,
                        "status update failed; re-reading"
                    );
                    let api: Api<K> = Api::namespaced(
                        self.client.clone(),
                        &object.namespace().unwrap_or_default(),
                    );
                    current = api.get(&object.name_any()).await?;
                }
                Err(error) => return Err(error),
            }
        }
    }
}

/// How a status write is retried (each controller's upstream rule, in one place).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusRetry {
    /// Attempts in all, the first included.
    pub attempts: usize,
    /// Which failures are retried: every one (upstream's ReplicaSet controller), or only 409
    /// Conflicts (the StatefulSet and Deployment controllers).
    pub on: RetryOn,
}

/// Failures a [`StatusRetry`] retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryOn {
    /// Any failure.
    AnyError,
    /// 409 Conflict only.
    Conflict,
}

impl StatusRetry {
    fn retries(&self, error: &kube::Error) -> bool {
        match self.on {
            RetryOn::AnyError => true,
            RetryOn::Conflict => is_conflict(error),
        }
    }
}

/// Upstream's `slowStartBatch` batch limit.
pub const SLOW_START_MAX_BATCH: usize = 500;

/// The batch sizes upstream's `slowStartBatch` uses for `count` calls: 1, 2, 4, … (doubling,
/// at most [`SLOW_START_MAX_BATCH`] and what remains).
pub fn slow_start_batches(count: usize) -> Vec<usize> {
    let mut batches = Vec::new();
    let mut remaining = count;
    let mut size = remaining.min(1);
    while size > 0 {
        batches.push(size);
        remaining -= size;
        size = (2 * size).min(remaining).min(SLOW_START_MAX_BATCH);
    }
    batches
}

/// What [`slow_start`] did.
#[derive(Debug)]
pub struct SlowStartOutcome<E> {
    /// Calls that succeeded.
    pub successes: usize,
    /// The failures of the batch that stopped the run (empty when every call succeeded).
    pub errors: Vec<E>,
}

/// upstream `slowStartBatch`: runs `call(i)` for `i` in `0..count` in batches of growing size,
/// each batch concurrently; stops after the first batch with a failure, so a call that fails
/// for everyone (a quota, a webhook) is not made `count` times.
pub async fn slow_start<F, Fut, E>(count: usize, call: F) -> SlowStartOutcome<E>
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<(), E>>,
{
    let mut outcome = SlowStartOutcome {
        successes: 0,
        errors: Vec::new(),
    };
    let mut next = 0;
    for batch in slow_start_batches(count) {
        let results = join_all((next..next + batch).map(&call)).await;
        next += batch;
        for result in results {
            match result {
                Ok(()) => outcome.successes += 1,
                Err(error) => outcome.errors.push(error),
            }
        }
        if !outcome.errors.is_empty() {
            break;
        }
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_write_knows_when_the_sync_deciding_it_started() {
        assert_eq!(sync_started(), None, "outside a sync");
        let before = Instant::now();
        let (first, later) = within_sync(async {
            let first = sync_started();
            tokio::task::yield_now().await;
            (first, sync_started())
        })
        .await;
        let first = first.expect("within a sync");
        assert!(first >= before && first <= Instant::now());
        assert_eq!(later, Some(first), "one instant for the whole sync");
        assert_eq!(sync_started(), None, "only within it");
    }

    #[test]
    fn slow_start_batch_sizes() {
        let cases: [(usize, &[usize]); 5] = [
            (0, &[]),
            (1, &[1]),
            (3, &[1, 2]),
            (10, &[1, 2, 4, 3]),
            (1200, &[1, 2, 4, 8, 16, 32, 64, 128, 256, 500, 189]),
        ];
        for (count, want) in cases {
            assert_eq!(slow_start_batches(count), want, "{count}");
        }
    }

    #[tokio::test]
    async fn slow_start_stops_after_the_first_failing_batch() {
        // Calls 0..=2 succeed, 3 fails: batches 1, 2 succeed, the batch of 4 (3..7) fails once.
        let outcome = slow_start(20, |i| async move { if i == 3 { Err(i) } else { Ok(()) } }).await;
        assert_eq!(outcome.successes, 6);
        assert_eq!(outcome.errors, vec![3]);
        let clean = slow_start(7, |_| async { Ok::<(), ()>(()) }).await;
        assert_eq!((clean.successes, clean.errors.len()), (7, 0));
    }

    #[test]
    fn writes_name_their_verb_resource_and_object() {
        let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"generateName": "web-", "namespace": "default"}
        }))
        .expect("pod");
        let body = serde_json::to_vec(&pod).expect("encodes");
        let write = Writer::write_of(&pod, WriteVerb::Create, body, "create replica");
        assert_eq!(write.resource.plural, "pods");
        assert_eq!(
            (write.namespace.as_str(), write.name.as_str()),
            ("default", "web-")
        );
        let sent: Value = serde_json::from_slice(&write.body).expect("JSON body");
        assert_eq!(
            (&sent["kind"], &sent["apiVersion"]),
            (&"Pod".into(), &"v1".into())
        );
        let request = request_for(&Write {
            verb: WriteVerb::Delete {
                precondition: true,
                propagation: Propagation::ServerDefault,
            },
            body: Arc::from([]),
            name: "web-1".into(),
            uid: Some("u1".into()),
            ..write.clone()
        })
        .expect("request");
        assert_eq!(request.method(), http::Method::DELETE);
        assert_eq!(
            request.uri().path(),
            "/api/v1/namespaces/default/pods/web-1"
        );
        let sent = String::from_utf8_lossy(request.body()).into_owned();
        assert!(sent.contains("\"uid\":\"u1\""), "{sent}");
        assert!(!sent.contains("propagationPolicy"), "{sent}");
        let foreground = request_for(&Write {
            verb: WriteVerb::Delete {
                precondition: true,
                propagation: Propagation::Foreground,
            },
            body: Arc::from([]),
            name: "web-1".into(),
            uid: Some("u1".into()),
            ..write.clone()
        })
        .expect("request");
        let sent = String::from_utf8_lossy(foreground.body()).into_owned();
        assert!(
            sent.contains("\"propagationPolicy\":\"Foreground\""),
            "{sent}"
        );

        // A patch goes out byte for byte, with its content type.
        let patch = br#"{"metadata":{"uid":"u1","labels":{"a":"b"}}}"#;
        let request = request_for(&Write {
            verb: WriteVerb::StrategicPatch,
            body: Arc::from(&patch[..]),
            name: "web-1".into(),
            ..write
        })
        .expect("request");
        assert_eq!(request.method(), http::Method::PATCH);
        assert_eq!(
            request.headers()[http::header::CONTENT_TYPE],
            "application/strategic-merge-patch+json"
        );
        assert_eq!(request.body().as_slice(), &patch[..]);
    }
}
