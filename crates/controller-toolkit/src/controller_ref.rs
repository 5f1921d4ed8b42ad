//! Claiming dependents for an owner: adopt orphans, release what no longer matches
//! (upstream `ControllerRefManager`).
//!
//! A controller lists candidate dependents (pods, ReplicaSets, ControllerRevisions) from its
//! cache and claims them once per sync. The decision for each dependent is a pure function
//! ([`claim_decision`]); acting on it sends upstream's strategic-merge patches byte for byte, so
//! the API server's merge-by-UID of `ownerReferences` keeps other owners' references and the
//! dependent's `uid` in the patch makes it fail if the object was recreated under the same name.
//! Before the first adoption of a pass the owner is re-read live from the API server (never from
//! the cache) so a controller that has just been deleted, or replaced by a namesake, adopts
//! nothing.

use std::fmt;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use informer::{LabelMatcher, Labeled};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::jiff::Timestamp;
use k8s_openapi::serde::de::DeserializeOwned;
use kube::core::{GroupVersionKind, NamespaceResourceScope};
use kube::{Api, Resource, ResourceExt};
use serde_json::{Value, json};

use crate::api_errors::{error_message, is_invalid, is_not_found};
use crate::writes::Writer;

/// The group, version and kind of `K`: what a controller reference to a `K` names.
pub fn gvk_of<K: Resource<DynamicType = ()>>() -> GroupVersionKind {
    GroupVersionKind::gvk(&K::group(&()), &K::version(&()), &K::kind(&()))
}

/// The reference a controller puts on the objects it creates or adopts (upstream
/// `NewControllerRef`): `controller` and `blockOwnerDeletion` set, so the garbage collector
/// deletes dependents in the foreground of their owner.
pub fn new_controller_ref<O: Resource>(owner: &O, gvk: &GroupVersionKind) -> OwnerReference {
    OwnerReference {
        api_version: gvk.api_version(),
        kind: gvk.kind.clone(),
        name: owner.meta().name.clone().unwrap_or_default(),
        uid: owner.meta().uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The owner reference marked `controller: true`, if any (upstream `GetControllerOf`).
pub fn controller_of(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
}

/// What the claim decision needs to know about the owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimOwner {
    /// The owner's UID; a controller ref with this UID is "ours".
    pub uid: String,
    /// The owner's namespace; `None` or empty for cluster-scoped owners.
    pub namespace: Option<String>,
    /// Whether the owner has a deletionTimestamp: a dying owner neither adopts nor releases.
    pub being_deleted: bool,
}

impl ClaimOwner {
    /// Reads the claim-relevant fields of an owner object.
    pub fn of<O: Resource>(owner: &O) -> Self {
        let meta = owner.meta();
        ClaimOwner {
            uid: meta.uid.clone().unwrap_or_default(),
            namespace: meta.namespace.clone(),
            being_deleted: meta.deletion_timestamp.is_some(),
        }
    }
}

/// What to do with one dependent (upstream `ClaimObject`'s branches).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimDecision {
    /// Controlled by another owner: not ours, leave it alone.
    Ignore,
    /// Ours and still matching: keep it (even while the owner is being deleted).
    Claimed,
    /// Ours but no longer matching: remove our controller ref.
    Release,
    /// An orphan that matches: add our controller ref.
    Adopt,
    /// Not claimed and nothing to do (owner dying, no match, dependent dying, other namespace).
    Skip,
}

/// Decides what to do with a dependent given whether it matches the owner's selector (and any
/// filters). Pure: the caller acts on the decision.
pub fn claim_decision(owner: &ClaimOwner, dependent: &ObjectMeta, matches: bool) -> ClaimDecision {
    if let Some(controller) = controller_of(dependent) {
        if controller.uid != owner.uid {
            return ClaimDecision::Ignore;
        }
        if matches {
            return ClaimDecision::Claimed;
        }
        if owner.being_deleted {
            return ClaimDecision::Skip;
        }
        return ClaimDecision::Release;
    }
    if owner.being_deleted || !matches || dependent.deletion_timestamp.is_some() {
        return ClaimDecision::Skip;
    }
    let owner_namespace = owner.namespace.as_deref().unwrap_or_default();
    if !owner_namespace.is_empty() && dependent.namespace.as_deref() != Some(owner_namespace) {
        return ClaimDecision::Skip;
    }
    ClaimDecision::Adopt
}

/// The strategic-merge patch that adopts a dependent, with upstream's field order
/// (`ownerReferences`, `uid`, then the owner's `finalizers`, which the merge appends to the
/// dependent's own: the Job controller's tracking finalizer).
pub fn adopt_patch(
    controller_ref: &OwnerReference,
    dependent_uid: &str,
    finalizers: &[&str],
) -> Value {
    let mut metadata = json!({
        "ownerReferences": [{
            "apiVersion": controller_ref.api_version,
            "kind": controller_ref.kind,
            "name": controller_ref.name,
            "uid": controller_ref.uid,
            "controller": true,
            "blockOwnerDeletion": true,
        }],
        "uid": dependent_uid,
    });
    if !finalizers.is_empty() {
        metadata["finalizers"] = json!(finalizers);
    }
    json!({ "metadata": metadata })
}

/// The strategic-merge patch that releases a dependent: deletes our entry from
/// `ownerReferences` by UID, keeping every other owner reference, and removes the owner's
/// `finalizers` from the dependent (upstream's `$deleteFromPrimitiveList/finalizers`).
pub fn release_patch(owner_uid: &str, dependent_uid: &str, finalizers: &[&str]) -> Value {
    let mut metadata = json!({
        "uid": dependent_uid,
        "ownerReferences": [{"$patch": "delete", "uid": owner_uid}],
    });
    if !finalizers.is_empty() {
        metadata["$deleteFromPrimitiveList/finalizers"] = json!(finalizers);
    }
    json!({ "metadata": metadata })
}

/// The pre-adoption check (upstream `canAdopt`): an error message if adoption must not happen.
/// It is called at most once per [`ControllerRefManager`], and only when an adoption is tried.
pub type CanAdoptFn = Box<dyn Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync>;

/// Upstream's "recheck deletion" check: an uncached GET of the owner through `api`; adoption is
/// refused if the GET fails, if the live object has another UID (the owner was replaced) or if it
/// is being deleted. Messages are worded as upstream's `RecheckDeletionTimestamp`.
pub fn recheck_deletion<O>(api: Api<O>, owner: &O) -> CanAdoptFn
where
    O: Resource<DynamicType = ()> + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    let name = owner.name_any();
    let namespace = owner.namespace().unwrap_or_default();
    let uid = owner.uid().unwrap_or_default();
    let kind = O::kind(&()).into_owned();
    Box::new(move || {
        let (api, name, namespace, uid, kind) = (
            api.clone(),
            name.clone(),
            namespace.clone(),
            uid.clone(),
            kind.clone(),
        );
        async move {
            let fresh = api.get(&name).await.map_err(|err| {
                format!("can't recheck DeletionTimestamp: {}", error_message(&err))
            })?;
            let fresh_uid = fresh.uid().unwrap_or_default();
            if fresh_uid != uid {
                return Err(format!(
                    "can't recheck DeletionTimestamp: original {kind} {namespace}/{name} is gone: got uid {fresh_uid}, wanted {uid}"
                ));
            }
            if let Some(deleted_at) = &fresh.meta().deletion_timestamp {
                return Err(format!(
                    "{}/{} has just been deleted at {}",
                    fresh.namespace().unwrap_or_default(),
                    fresh.name_any(),
                    go_time_string(deleted_at.0)
                ));
            }
            Ok(())
        }
        .boxed()
    })
}

/// A time as Go's `time.Time.String()` prints it in UTC, which is how upstream's messages show
/// deletion timestamps.
fn go_time_string(time: Timestamp) -> String {
    let nanos = time.subsec_nanosecond();
    let fraction = if nanos == 0 {
        String::new()
    } else {
        format!(".{nanos:09}").trim_end_matches('0').to_owned()
    };
    format!("{}{fraction} +0000 UTC", time.strftime("%Y-%m-%d %H:%M:%S"))
}

/// Whether a failed release patch can be ignored: the dependent is gone (NotFound), or the
/// server found no such owner reference or a different UID, i.e. the object was recreated
/// (Invalid). Either way it is no longer ours.
fn release_failure_is_moot(err: &kube::Error) -> bool {
    is_not_found(err) || is_invalid(err)
}

/// Why claiming one dependent failed.
#[derive(Debug, thiserror::Error)]
pub enum ControllerRefError {
    /// The pre-adoption check refused.
    #[error("can't adopt {kind} {namespace}/{name} ({uid}): {reason}")]
    CannotAdopt {
        /// Kind of the dependent.
        kind: String,
        /// Namespace of the dependent.
        namespace: String,
        /// Name of the dependent.
        name: String,
        /// UID of the dependent.
        uid: String,
        /// The check's message.
        reason: String,
    },
    /// The adopt or release patch failed; shown as the server's message, like upstream.
    #[error("{}", error_message(.source))]
    Patch {
        /// `namespace/name` of the dependent.
        dependent: String,
        /// The API error.
        source: kube::Error,
    },
}

impl ControllerRefError {
    /// Whether the dependent was gone when it was patched.
    pub fn is_not_found(&self) -> bool {
        matches!(self, ControllerRefError::Patch { source, .. } if is_not_found(source))
    }
}

/// Several claim failures, shown like upstream's aggregate error (one message alone, or
/// `[a, b]`).
#[derive(Debug, thiserror::Error)]
pub struct ClaimErrors(pub Vec<ControllerRefError>);

impl fmt::Display for ClaimErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.as_slice() {
            [single] => write!(f, "{single}"),
            many => {
                let messages: Vec<String> = many.iter().map(ToString::to_string).collect();
                write!(f, "[{}]", messages.join(", "))
            }
        }
    }
}

/// The outcome of claiming a list: what is ours now, and what failed (claiming continues past
/// failures, as upstream).
#[derive(Debug)]
pub struct ClaimResult<T> {
    /// Dependents owned by the owner after this pass, in input order.
    pub claimed: Vec<Arc<T>>,
    /// Per-dependent failures.
    pub errors: Vec<ControllerRefError>,
}

impl<T> ClaimResult<T> {
    /// The claimed list, or the aggregate error if anything failed (what upstream's callers do
    /// with the pair).
    pub fn into_result(self) -> Result<Vec<Arc<T>>, ClaimErrors> {
        if self.errors.is_empty() {
            Ok(self.claimed)
        } else {
            Err(ClaimErrors(self.errors))
        }
    }
}

/// A namespaced kind a controller claims (pods, ReplicaSets, ControllerRevisions).
pub trait Claimable:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Labeled
    + Clone
    + DeserializeOwned
    + fmt::Debug
{
}

impl<D> Claimable for D where
    D: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Labeled
        + Clone
        + DeserializeOwned
        + fmt::Debug
{
}

/// `(namespace, name, uid)` of a dependent, empty where missing.
fn identity(meta: &ObjectMeta) -> (String, String, String) {
    (
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
        meta.uid.clone().unwrap_or_default(),
    )
}

/// Claims dependents for one owner during one sync. Create a new one per sync: the
/// pre-adoption check result is cached for the manager's lifetime.
pub struct ControllerRefManager {
    writer: Writer,
    owner: ClaimOwner,
    owner_key: String,
    controller_ref: OwnerReference,
    selector: LabelMatcher,
    can_adopt: CanAdoptFn,
    can_adopt_result: tokio::sync::OnceCell<Result<(), String>>,
    finalizers: &'static [&'static str],
}

impl ControllerRefManager {
    /// A manager for `owner` claiming dependents that match `selector`, which adopts only
    /// after a fresh read of the owner shows it is the same object and not being deleted
    /// ([`recheck_deletion`]): what every workload controller's claim does.
    pub fn for_owner<O>(writer: Writer, owner: &O, selector: LabelMatcher) -> Self
    where
        O: Resource<DynamicType = (), Scope = NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + fmt::Debug
            + Send
            + Sync
            + 'static,
    {
        let namespace = owner.meta().namespace.as_deref().unwrap_or_default();
        let api = Api::<O>::namespaced(writer.client().clone(), namespace);
        let can_adopt = recheck_deletion(api, owner);
        Self::new(writer, owner, &gvk_of::<O>(), selector, can_adopt)
    }

    /// A manager for `owner` (whose kind is `gvk`) claiming dependents that match `selector`;
    /// `can_adopt` is usually [`recheck_deletion`].
    pub fn new<O: Resource>(
        writer: Writer,
        owner: &O,
        gvk: &GroupVersionKind,
        selector: LabelMatcher,
        can_adopt: CanAdoptFn,
    ) -> Self {
        let meta = owner.meta();
        ControllerRefManager {
            writer,
            owner: ClaimOwner::of(owner),
            owner_key: format!(
                "{}/{}",
                meta.namespace.as_deref().unwrap_or_default(),
                meta.name.as_deref().unwrap_or_default()
            ),
            controller_ref: new_controller_ref(owner, gvk),
            selector,
            can_adopt,
            can_adopt_result: tokio::sync::OnceCell::new(),
            finalizers: &[],
        }
    }

    /// Adds `finalizers` to every dependent it adopts and removes them from every dependent it
    /// releases (upstream's `NewPodControllerRefManager(..., finalizers...)`): the Job
    /// controller's tracking finalizer, so an adopted pod is counted before it can vanish.
    pub fn with_finalizers(mut self, finalizers: &'static [&'static str]) -> Self {
        self.finalizers = finalizers;
        self
    }

    /// Claims the dependents matching the selector (upstream `ClaimPods`, `ClaimReplicaSets`,
    /// `ClaimControllerRevisions`): adopts matching orphans, releases owned non-matching ones.
    pub async fn claim<D: Claimable>(&self, dependents: &[Arc<D>]) -> ClaimResult<D> {
        self.claim_with_filter(dependents, |_| true).await
    }

    /// [`claim`](Self::claim) of the dependents matching the selector and `filter` (the
    /// StatefulSet controller passes "name and ordinal belong to this set"). The filter runs
    /// only on selector matches.
    pub async fn claim_with_filter<D: Claimable>(
        &self,
        dependents: &[Arc<D>],
        filter: impl Fn(&D) -> bool,
    ) -> ClaimResult<D> {
        self.claim_all(dependents, |dependent| {
            self.selects(dependent) && filter(dependent)
        })
        .await
    }

    fn selects<D: Labeled>(&self, dependent: &D) -> bool {
        self.selector.selects(dependent)
    }

    async fn claim_all<D>(
        &self,
        dependents: &[Arc<D>],
        matches: impl Fn(&D) -> bool,
    ) -> ClaimResult<D>
    where
        D: Claimable,
    {
        let mut result = ClaimResult {
            claimed: Vec::new(),
            errors: Vec::new(),
        };
        for dependent in dependents {
            match self.claim_one(dependent.as_ref(), matches(dependent)).await {
                Ok(true) => result.claimed.push(Arc::clone(dependent)),
                Ok(false) => {}
                Err(err) => result.errors.push(err),
            }
        }
        result
    }

    async fn claim_one<D>(&self, dependent: &D, matches: bool) -> Result<bool, ControllerRefError>
    where
        D: Claimable,
    {
        match claim_decision(&self.owner, dependent.meta(), matches) {
            ClaimDecision::Ignore | ClaimDecision::Skip => Ok(false),
            ClaimDecision::Claimed => Ok(true),
            ClaimDecision::Release => self.release(dependent).await.map(|()| false),
            ClaimDecision::Adopt => match self.adopt(dependent).await {
                Ok(()) => Ok(true),
                Err(err) if err.is_not_found() => Ok(false),
                Err(err) => Err(err),
            },
        }
    }

    /// Adds this owner's controller ref to `dependent`, after the (cached) pre-adoption check.
    /// The server rejects the patch if another controller ref exists.
    pub async fn adopt<D>(&self, dependent: &D) -> Result<(), ControllerRefError>
    where
        D: Claimable,
    {
        let (namespace, name, uid) = identity(dependent.meta());
        if let Err(reason) = self.can_adopt().await {
            return Err(ControllerRefError::CannotAdopt {
                kind: D::kind(&()).into_owned(),
                namespace,
                name,
                uid,
                reason,
            });
        }
        tracing::info!(
            owner = %self.owner_key,
            dependent = %format!("{namespace}/{name}"),
            kind = %D::kind(&()),
            "adopting orphan"
        );
        self.patch::<D>(
            &namespace,
            &name,
            adopt_patch(&self.controller_ref, &uid, self.finalizers),
            "adopt",
        )
        .await
    }

    /// Removes this owner's controller ref from `dependent`. NotFound and Invalid (no such
    /// owner ref, or the object was recreated) count as success, as upstream.
    pub async fn release<D>(&self, dependent: &D) -> Result<(), ControllerRefError>
    where
        D: Claimable,
    {
        let (namespace, name, uid) = identity(dependent.meta());
        tracing::info!(
            owner = %self.owner_key,
            dependent = %format!("{namespace}/{name}"),
            kind = %D::kind(&()),
            "releasing dependent that no longer matches"
        );
        match self
            .patch::<D>(
                &namespace,
                &name,
                release_patch(&self.owner.uid, &uid, self.finalizers),
                "release",
            )
            .await
        {
            Err(ControllerRefError::Patch { source, .. }) if release_failure_is_moot(&source) => {
                Ok(())
            }
            other => other,
        }
    }

    async fn can_adopt(&self) -> Result<(), String> {
        self.can_adopt_result
            .get_or_init(|| (self.can_adopt)())
            .await
            .clone()
    }

    async fn patch<D>(
        &self,
        namespace: &str,
        name: &str,
        body: Value,
        reason: &'static str,
    ) -> Result<(), ControllerRefError>
    where
        D: Claimable,
    {
        self.writer
            .strategic_patch::<D>(namespace, name, body, reason)
            .await
            .map(drop)
            .map_err(|source| ControllerRefError::Patch {
                dependent: format!("{namespace}/{name}"),
                source,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    const OWNER_UID: &str = "owner-uid";

    fn owner(namespace: Option<&str>, being_deleted: bool) -> ClaimOwner {
        ClaimOwner {
            uid: OWNER_UID.to_owned(),
            namespace: namespace.map(str::to_owned),
            being_deleted,
        }
    }

    fn owner_ref(uid: &str, controller: Option<bool>) -> OwnerReference {
        OwnerReference {
            api_version: "apps/v1".to_owned(),
            kind: "ReplicaSet".to_owned(),
            name: "rs".to_owned(),
            uid: uid.to_owned(),
            controller,
            block_owner_deletion: Some(true),
        }
    }

    fn dependent(namespace: &str, refs: Vec<OwnerReference>, deleting: bool) -> ObjectMeta {
        ObjectMeta {
            namespace: Some(namespace.to_owned()),
            name: Some("dep".to_owned()),
            uid: Some("dep-uid".to_owned()),
            owner_references: Some(refs),
            deletion_timestamp: deleting
                .then(|| Time(Timestamp::from_second(1_700_000_000).expect("valid timestamp"))),
            ..ObjectMeta::default()
        }
    }

    /// The controller reference a dependent in the decision table carries.
    #[derive(Clone, Copy)]
    enum Refs {
        /// Controlled by the owner.
        Ours,
        /// Controlled by another owner.
        Theirs,
        /// A non-controller reference to the owner (an orphan).
        PlainOurs,
        /// No reference (an orphan).
        None,
    }

    #[test]
    fn decision_table() {
        use ClaimDecision::*;
        use Refs::{Ours, PlainOurs, Theirs};
        // (case, owner namespace, owner dying, dependent namespace, refs, dependent dying,
        // selector matches, decision)
        type Row = (
            &'static str,
            Option<&'static str>,
            bool,
            &'static str,
            Refs,
            bool,
            bool,
            ClaimDecision,
        );
        #[rustfmt::skip]
        let cases: [Row; 15] = [
            ("other controller", Some("ns"), false, "ns", Theirs, false, true, Ignore),
            ("other controller, owner dying", Some("ns"), true, "ns", Theirs, false, false, Ignore),
            ("ours and matching", Some("ns"), false, "ns", Ours, false, true, Claimed),
            ("ours, matching, owner dying", Some("ns"), true, "ns", Ours, false, true, Claimed),
            ("ours, matching, dependent dying", Some("ns"), false, "ns", Ours, true, true, Claimed),
            ("ours, no match", Some("ns"), false, "ns", Ours, false, false, Release),
            ("ours, no match, owner dying", Some("ns"), true, "ns", Ours, false, false, Skip),
            ("orphan matching", Some("ns"), false, "ns", Refs::None, false, true, Adopt),
            ("orphan with a plain ref of ours", Some("ns"), false, "ns", PlainOurs, false, true, Adopt),
            ("orphan, owner dying", Some("ns"), true, "ns", Refs::None, false, true, Skip),
            ("orphan, no match", Some("ns"), false, "ns", Refs::None, false, false, Skip),
            ("orphan dying", Some("ns"), false, "ns", Refs::None, true, true, Skip),
            ("orphan in other namespace", Some("ns"), false, "other", Refs::None, false, true, Skip),
            ("cluster-scoped owner adopts anywhere", None, false, "other", Refs::None, false, true, Adopt),
            ("empty owner namespace is cluster-scoped", Some(""), false, "other", Refs::None, false, true, Adopt),
        ];
        for (case, owner_ns, owner_dying, dependent_ns, refs, dependent_dying, matches, want) in
            cases
        {
            let refs = match refs {
                Ours => vec![owner_ref(OWNER_UID, Some(true))],
                Theirs => vec![owner_ref("other", Some(true))],
                PlainOurs => vec![owner_ref(OWNER_UID, Some(false))],
                Refs::None => vec![],
            };
            let owner = owner(owner_ns, owner_dying);
            let dependent = dependent(dependent_ns, refs, dependent_dying);
            assert_eq!(claim_decision(&owner, &dependent, matches), want, "{case}");
        }
    }

    #[test]
    fn adopt_patch_bytes_match_upstream() {
        let body = adopt_patch(&owner_ref("o-uid", Some(true)), "d-uid", &[]);
        assert_eq!(
            serde_json::to_string(&body).expect("serializes"),
            r#"{"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"o-uid","controller":true,"blockOwnerDeletion":true}],"uid":"d-uid"}}"#
        );
        let body = adopt_patch(&owner_ref("o-uid", Some(true)), "d-uid", &["f/x"]);
        assert_eq!(
            serde_json::to_string(&body).expect("serializes"),
            r#"{"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"o-uid","controller":true,"blockOwnerDeletion":true}],"uid":"d-uid","finalizers":["f/x"]}}"#,
            "upstream's ownerRefControllerPatch with finalizers"
        );
    }

    #[test]
    fn release_patch_bytes_match_upstream() {
        assert_eq!(
            serde_json::to_string(&release_patch("o-uid", "d-uid", &[])).expect("serializes"),
            r#"{"metadata":{"uid":"d-uid","ownerReferences":[{"$patch":"delete","uid":"o-uid"}]}}"#
        );
        assert_eq!(
            serde_json::to_string(&release_patch("o-uid", "d-uid", &["f/x"])).expect("serializes"),
            r#"{"metadata":{"uid":"d-uid","ownerReferences":[{"$patch":"delete","uid":"o-uid"}],"$deleteFromPrimitiveList/finalizers":["f/x"]}}"#,
            "upstream's GenerateDeleteOwnerRefStrategicMergeBytes with finalizers"
        );
    }

    #[test]
    fn new_controller_ref_uses_gvk_and_owner_identity() {
        let rs = k8s_openapi::api::apps::v1::ReplicaSet {
            metadata: ObjectMeta {
                name: Some("web-1".to_owned()),
                namespace: Some("default".to_owned()),
                uid: Some("u-1".to_owned()),
                ..ObjectMeta::default()
            },
            ..Default::default()
        };
        let r = new_controller_ref(&rs, &GroupVersionKind::gvk("apps", "v1", "ReplicaSet"));
        assert_eq!(r, owner_ref_named("web-1", "u-1"));
    }

    fn owner_ref_named(name: &str, uid: &str) -> OwnerReference {
        OwnerReference {
            name: name.to_owned(),
            ..owner_ref(uid, Some(true))
        }
    }

    #[test]
    fn controller_of_ignores_non_controller_refs() {
        let meta = dependent(
            "ns",
            vec![
                owner_ref("a", None),
                owner_ref("b", Some(false)),
                owner_ref("c", Some(true)),
            ],
            false,
        );
        assert_eq!(controller_of(&meta).map(|r| r.uid.as_str()), Some("c"));
        assert!(
            controller_of(&dependent("ns", vec![owner_ref("a", Some(false))], false)).is_none()
        );
    }

    #[test]
    fn release_ignores_only_not_found_and_invalid() {
        let status = |reason: &str, code: u16| {
            kube::Error::Api(Box::new(
                kube::core::Status::failure("m", reason).with_code(code),
            ))
        };
        let cases = [
            (status("NotFound", 404), true),
            (status("Invalid", 422), true),
            (status("", 422), true),
            (status("Conflict", 409), false),
            (status("InternalError", 500), false),
            (status("Forbidden", 403), false),
        ];
        for (err, moot) in cases {
            assert_eq!(release_failure_is_moot(&err), moot, "{err}");
        }
    }

    #[test]
    fn go_time_string_matches_go_formatting() {
        let whole = Timestamp::from_second(1_795_332_634).expect("valid");
        assert_eq!(go_time_string(whole), "2026-11-22 07:30:34 +0000 UTC");
        let fractional = Timestamp::new(1_795_332_634, 120_000_000).expect("valid");
        assert_eq!(
            go_time_string(fractional),
            "2026-11-22 07:30:34.12 +0000 UTC"
        );
    }

    #[test]
    fn aggregate_error_formats_like_upstream() {
        let err = |name: &str| ControllerRefError::CannotAdopt {
            kind: "Pod".to_owned(),
            namespace: "ns".to_owned(),
            name: name.to_owned(),
            uid: "u".to_owned(),
            reason: "no".to_owned(),
        };
        assert_eq!(
            ClaimErrors(vec![err("a")]).to_string(),
            "can't adopt Pod ns/a (u): no"
        );
        assert_eq!(
            ClaimErrors(vec![err("a"), err("b")]).to_string(),
            "[can't adopt Pod ns/a (u): no, can't adopt Pod ns/b (u): no]"
        );
    }
}
