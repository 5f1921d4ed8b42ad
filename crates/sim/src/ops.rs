//! The API semantics of writes: create, update (main resource and status subresource) and
//! delete with graceful deletion, finalizers, preconditions, and the garbage collector's
//! ownerReference cascade (background, foreground, orphan).
//!
//! Every operation runs under the one state lock, so the cascade is applied at once and is
//! observable through watches exactly as upstream's collector's writes would be.

use std::collections::HashMap;

use bytes::Bytes;
use rand::Rng;
use serde_json::Value;

use crate::object::{
    canonicalize, finalizers_of, meta, meta_mut, meta_str, now_timestamp, set_finalizers,
    timestamp_in,
};
use crate::resources::{DAEMONSETS, JOBS, NAMESPACES, PODS, RESOURCES, ResourceInfo};
use crate::status::{ApiError, Cause};
use crate::store::{KubeletEvent, ObjectKey, ObjectRef, State, Stored};
use crate::{defaults, jobs, validation};

/// The alphabet upstream draws generated-name suffixes from (no vowels, no look-alikes).
const NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
/// The finalizer that makes an owner wait for its blocking dependents.
pub(crate) const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// How deleting an owner treats its dependents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Propagation {
    /// Owner goes first; the collector deletes dependents afterwards (apps/v1 default).
    Background,
    /// Dependents with `blockOwnerDeletion` go first; the owner waits with a finalizer.
    Foreground,
    /// Dependents stay, with the ownerReference removed.
    Orphan,
}

impl Propagation {
    /// Parses `propagationPolicy`.
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        match s {
            "Background" => Ok(Propagation::Background),
            "Foreground" => Ok(Propagation::Foreground),
            "Orphan" => Ok(Propagation::Orphan),
            other => Err(ApiError::bad_request(format!(
                "unsupported propagationPolicy {other:?}"
            ))),
        }
    }
}

/// `DeleteOptions` as far as the sim honours them.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct DeleteOptions {
    pub grace_period_seconds: Option<i64>,
    pub propagation: Option<Propagation>,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
}

impl DeleteOptions {
    /// The options of a request: a `DeleteOptions` body (`Null` when none was sent) and the
    /// query; a field set in the body wins over the same query parameter.
    pub fn from_request(body: &Value, query: &HashMap<String, String>) -> Result<Self, ApiError> {
        let mut opts = DeleteOptions::default();
        let grace = query
            .get("gracePeriodSeconds")
            .map(|g| {
                g.parse::<i64>()
                    .map_err(|_| ApiError::bad_request(format!("invalid gracePeriodSeconds {g:?}")))
            })
            .transpose()?;
        opts.grace_period_seconds = body
            .get("gracePeriodSeconds")
            .and_then(Value::as_i64)
            .or(grace);
        let policy = body
            .get("propagationPolicy")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| query.get("propagationPolicy").cloned());
        opts.propagation = policy.map(|p| Propagation::parse(&p)).transpose()?;
        let orphan = body
            .get("orphanDependents")
            .and_then(Value::as_bool)
            .or_else(|| query.get("orphanDependents").map(|v| v == "true"));
        // `orphanDependents` given either way overrides a resource's default (upstream's
        // `shouldOrphanDependents`).
        if opts.propagation.is_none() {
            opts.propagation = orphan.map(|orphan| {
                if orphan {
                    Propagation::Orphan
                } else {
                    Propagation::Background
                }
            });
        }
        opts.precondition_uid = body
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(str::to_string);
        opts.precondition_rv = body
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string);
        Ok(opts)
    }

    /// 409 Conflict, worded as upstream's, unless the preconditions hold for `stored`.
    pub fn check_preconditions(
        &self,
        info: &ResourceInfo,
        name: &str,
        stored: &Stored,
    ) -> Result<(), ApiError> {
        if let Some(uid) = &self.precondition_uid
            && uid.as_str() != &*stored.uid
        {
            return Err(ApiError::conflict_because(
                info,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    stored.uid
                ),
            ));
        }
        if let Some(rv) = &self.precondition_rv
            && *rv != stored.rv.to_string()
        {
            return Err(ApiError::conflict_because(
                info,
                name,
                &format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                    stored.rv
                ),
            ));
        }
        Ok(())
    }
}

/// Which part of an object an update may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UpdateMode {
    /// The main resource: everything but status (for resources with a status subresource).
    Main,
    /// The status subresource: only status.
    Status,
}

/// `base` + 5 random characters, with `base` cut to 58 so the name fits 63.
pub(crate) fn generate_name(base: &str) -> String {
    let mut rng = rand::rng();
    let cut: String = base.chars().take(58).collect();
    let suffix: String = (0..5)
        .map(|_| NAME_ALPHABET[rng.random_range(0..NAME_ALPHABET.len())] as char)
        .collect();
    format!("{cut}{suffix}")
}

fn bytes_of(state: &State, res: usize, key: &ObjectKey) -> Option<Bytes> {
    state.get(res, key).map(|s| s.object.clone())
}

impl State {
    /// Whether namespace `ns` exists.
    pub fn namespace_exists(&self, ns: &str) -> bool {
        self.get(NAMESPACES, &(String::new(), ns.to_string()))
            .is_some()
    }

    /// Creates an object of `res` in `namespace` ("" for cluster-scoped).
    pub fn create(&mut self, res: usize, namespace: &str, obj: Value) -> Result<Bytes, ApiError> {
        let info = &RESOURCES[res];
        if !obj.is_object() {
            return Err(ApiError::bad_request(
                "the body of the request must be a JSON object",
            ));
        }
        check_type(&obj, res)?;
        let mut obj = obj;
        let body_ns = meta_str(&obj, "namespace").to_string();
        if info.namespaced {
            if !body_ns.is_empty() && body_ns != namespace {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            if !self.namespace_exists(namespace) {
                return Err(ApiError::not_found(&RESOURCES[NAMESPACES], namespace));
            }
            meta_mut(&mut obj).insert("namespace".into(), Value::from(namespace));
        } else {
            meta_mut(&mut obj).remove("namespace");
        }
        let mut name = meta_str(&obj, "name").to_string();
        if name.is_empty() {
            let base = meta_str(&obj, "generateName").to_string();
            if base.is_empty() {
                let cause = Cause {
                    reason: "FieldValueRequired",
                    message: "Required value: name or generateName is required".into(),
                    field: "metadata.name".into(),
                };
                return Err(ApiError::invalid(info, "", vec![cause]));
            }
            name = generate_name(&base);
            for _ in 0..8 {
                if self
                    .get(res, &(namespace.to_string(), name.clone()))
                    .is_none()
                {
                    break;
                }
                name = generate_name(&base);
            }
            meta_mut(&mut obj).insert("name".into(), Value::from(name.clone()));
        }
        let key = (
            if info.namespaced {
                namespace.to_string()
            } else {
                String::new()
            },
            name.clone(),
        );
        let mut causes = validation::name(info.plural, &name);
        {
            let meta = meta_mut(&mut obj);
            for field in [
                "resourceVersion",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "selfLink",
            ] {
                meta.remove(field);
            }
            meta.insert("uid".into(), Value::from(uuid::Uuid::new_v4().to_string()));
            // Placeholder so the field sits in upstream's place; `put` sets the value.
            meta.insert("resourceVersion".into(), Value::from(""));
            meta.insert("creationTimestamp".into(), Value::from(now_timestamp()));
            if info.generation {
                meta.insert("generation".into(), Value::from(1));
            } else {
                meta.remove("generation");
            }
        }
        if res == JOBS {
            // The Job strategy's PrepareForCreate, before the defaults so that a Job without
            // labels takes the generated ones from its template (see `jobs::default_labels`).
            jobs::generate_selector(&mut obj);
        }
        defaults::apply(info.plural, &mut obj);
        if res == DAEMONSETS {
            defaults::daemon_set_template_generation(&mut obj, None);
        }
        if res == NAMESPACES
            && let Some(map) = obj.as_object_mut()
        {
            map.insert(
                "spec".into(),
                serde_json::json!({"finalizers": ["kubernetes"]}),
            );
        }
        if let Some(status) = defaults::initial_status(info.plural, &obj)
            && let Some(map) = obj.as_object_mut()
        {
            map.insert("status".into(), status);
        }
        causes.extend(validation::validate(info.plural, &obj, None));
        if !causes.is_empty() {
            return Err(ApiError::invalid(info, &name, causes));
        }
        if self.get(res, &key).is_some() {
            return Err(ApiError::already_exists(info, &name));
        }
        if res == PODS {
            self.admit_pod(namespace, &name)?;
        }
        let obj = canonicalize(obj, info.kind, &info.api_version());
        let uid = meta_str(&obj, "uid").to_string();
        let bytes = self.put(res, key.clone(), obj);
        if res == PODS {
            self.tell_kubelet(KubeletEvent::Created {
                key: key.clone(),
                uid,
            });
        }
        self.collect_if_dangling(res, &key);
        Ok(bytes)
    }

    /// Replaces an object (PUT), honouring optimistic concurrency on resourceVersion.
    pub fn update(
        &mut self,
        res: usize,
        key: &ObjectKey,
        obj: Value,
        mode: UpdateMode,
    ) -> Result<Bytes, ApiError> {
        let info = &RESOURCES[res];
        let stored = self
            .get(res, key)
            .ok_or_else(|| ApiError::not_found(info, &key.1))?;
        let (old_rv, old_uid) = (stored.rv, stored.uid.to_string());
        let old = stored.value();
        if !obj.is_object() {
            return Err(ApiError::bad_request(
                "the body of the request must be a JSON object",
            ));
        }
        check_type(&obj, res)?;
        let body_name = meta_str(&obj, "name");
        if !body_name.is_empty() && body_name != key.1 {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({})",
                key.1
            )));
        }
        let body_rv = meta_str(&obj, "resourceVersion");
        if !body_rv.is_empty() && body_rv != old_rv.to_string() {
            return Err(ApiError::conflict(info, &key.1));
        }
        let body_uid = meta_str(&obj, "uid");
        if !body_uid.is_empty() && body_uid != old_uid {
            // As upstream's ValidateObjectMetaUpdate: a uid in the body (e.g. the uid
            // precondition of adopt/release patches) must be the object's.
            let cause = Cause::invalid(
                "metadata.uid",
                &format!("{body_uid:?}"),
                "field is immutable",
            );
            return Err(ApiError::invalid(info, &key.1, vec![cause]));
        }
        let mut new = match mode {
            UpdateMode::Status => {
                let mut new = old.clone();
                if let Some(map) = new.as_object_mut() {
                    match obj.get("status") {
                        Some(status) => map.insert("status".into(), status.clone()),
                        None => map.remove("status"),
                    };
                }
                // Upstream's deployment status strategy resets only spec and labels, so the
                // Deployment controller persists its revision annotation through /status.
                if info.plural == "deployments" {
                    let annotations = meta(&obj).and_then(|m| m.get("annotations")).cloned();
                    let meta = meta_mut(&mut new);
                    match annotations {
                        Some(annotations) => meta.insert("annotations".into(), annotations),
                        None => meta.remove("annotations"),
                    };
                }
                let causes = validation::validate_status(info.plural, &new, &old);
                if !causes.is_empty() {
                    return Err(ApiError::invalid(info, &key.1, causes));
                }
                new
            }
            UpdateMode::Main => self.prepare_main_update(res, key, obj, &old)?,
        };
        meta_mut(&mut new).insert("resourceVersion".into(), Value::from(old_rv.to_string()));
        let new = canonicalize(new, info.kind, &info.api_version());
        if new == old {
            return Ok(bytes_of(self, res, key).unwrap_or_default());
        }
        // Upstream's `ShouldDeleteDuringUpdate`: the last finalizer gone removes an object
        // being deleted, unless it is a pod still in its grace period (the kubelet's final
        // delete removes that one).
        if meta(&new).is_some_and(|m| m.contains_key("deletionTimestamp"))
            && finalizers_of(&new).is_empty()
            && deletion_grace(&new) == 0
        {
            self.put(res, key.clone(), new);
            return self.finish(res, key);
        }
        Ok(self.put(res, key.clone(), new))
    }

    /// The main-resource half of an update: immutable metadata kept, status kept,
    /// defaults applied, validation run, generation bumped on spec changes.
    fn prepare_main_update(
        &self,
        res: usize,
        key: &ObjectKey,
        mut new: Value,
        old: &Value,
    ) -> Result<Value, ApiError> {
        let info = &RESOURCES[res];
        if info.status
            && let Some(map) = new.as_object_mut()
        {
            match old.get("status") {
                Some(status) => map.insert("status".into(), status.clone()),
                None => map.remove("status"),
            };
        }
        let old_meta = meta(old).cloned().unwrap_or_default();
        {
            let meta = meta_mut(&mut new);
            meta.insert("name".into(), Value::from(key.1.clone()));
            if info.namespaced {
                meta.insert("namespace".into(), Value::from(key.0.clone()));
            }
            for field in [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
            ] {
                match old_meta.get(field) {
                    Some(v) => meta.insert(field.into(), v.clone()),
                    None => meta.remove(field),
                };
            }
        }
        defaults::apply(info.plural, &mut new);
        if res == DAEMONSETS {
            defaults::daemon_set_template_generation(&mut new, Some(old));
        }
        let causes = validation::validate(info.plural, &new, Some(old));
        if !causes.is_empty() {
            return Err(ApiError::invalid(info, &key.1, causes));
        }
        if info.generation && new.get("spec") != old.get("spec") {
            let generation = old_meta
                .get("generation")
                .and_then(Value::as_i64)
                .unwrap_or(0)
                + 1;
            meta_mut(&mut new).insert("generation".into(), Value::from(generation));
        }
        Ok(new)
    }

    /// Deletes an object: at once, or by setting deletionTimestamp when a grace period or
    /// finalizers hold it. Returns the object as it stands after the call.
    pub fn delete(
        &mut self,
        res: usize,
        key: &ObjectKey,
        opts: &DeleteOptions,
    ) -> Result<Bytes, ApiError> {
        let info = &RESOURCES[res];
        let stored = self
            .get(res, key)
            .ok_or_else(|| ApiError::not_found(info, &key.1))?;
        opts.check_preconditions(info, &key.1, stored)?;
        let uid = stored.uid.to_string();
        let mut value = stored.value();
        if res == NAMESPACES {
            return self.delete_namespace(key, value);
        }
        let mut finalizers = finalizers_of(&value);
        if meta(&value).is_some_and(|m| m.contains_key("deletionTimestamp")) {
            return self.delete_again(res, key, value, opts);
        }
        let policy = opts.propagation.unwrap_or(Propagation::Background);
        if policy == Propagation::Orphan {
            self.orphan_dependents(&uid);
        }
        let grace = if res == PODS {
            pod_grace(&value, opts)
        } else {
            0
        };
        if policy == Propagation::Foreground
            && !finalizers.iter().any(|f| f == FOREGROUND_FINALIZER)
        {
            finalizers.push(FOREGROUND_FINALIZER.to_string());
        }
        if grace == 0 && finalizers.is_empty() {
            return self.finish(res, key);
        }
        {
            let meta = meta_mut(&mut value);
            let when = if grace > 0 {
                timestamp_in(grace)
            } else {
                now_timestamp()
            };
            meta.insert("deletionTimestamp".into(), Value::from(when));
            meta.insert("deletionGracePeriodSeconds".into(), Value::from(grace));
            if let Some(generation) = meta.get("generation").and_then(Value::as_i64) {
                meta.insert("generation".into(), Value::from(generation + 1));
            }
        }
        set_finalizers(&mut value, finalizers.clone());
        let value = canonicalize(value, info.kind, &info.api_version());
        let terminating = self.put(res, key.clone(), value);
        if res == PODS && grace > 0 {
            self.tell_kubelet(KubeletEvent::Terminating {
                key: key.clone(),
                uid: uid.clone(),
            });
        }
        if policy == Propagation::Foreground {
            self.delete_dependents(&uid, Propagation::Foreground);
            self.release_foreground_owner(&uid);
        }
        Ok(bytes_of(self, res, key).unwrap_or(terminating))
    }

    /// A delete of an object already being deleted (upstream's `BeforeDelete` on a pending
    /// graceful deletion): a pod's grace period may only be shortened, which moves its
    /// deletionTimestamp back by the difference (a grace of 0 sets it to when the first
    /// delete was asked for); once the grace is 0 the object goes, unless finalizers hold it.
    fn delete_again(
        &mut self,
        res: usize,
        key: &ObjectKey,
        mut value: Value,
        opts: &DeleteOptions,
    ) -> Result<Bytes, ApiError> {
        let info = &RESOURCES[res];
        let current = deletion_grace(&value);
        let shorter = opts
            .grace_period_seconds
            .map(|g| g.max(0))
            .filter(|g| res == PODS && *g < current);
        let grace = shorter.unwrap_or(current);
        let held = !finalizers_of(&value).is_empty();
        if grace == 0 && !held {
            return self.finish(res, key);
        }
        if let Some(grace) = shorter {
            let meta = meta_mut(&mut value);
            let moved = meta
                .get("deletionTimestamp")
                .and_then(Value::as_str)
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                .map(|t| {
                    (t.with_timezone(&chrono::Utc) - chrono::Duration::seconds(current - grace))
                        .format("%Y-%m-%dT%H:%M:%SZ")
                        .to_string()
                });
            if let Some(moved) = moved {
                meta.insert("deletionTimestamp".into(), Value::from(moved));
            }
            meta.insert("deletionGracePeriodSeconds".into(), Value::from(grace));
            let value = canonicalize(value, info.kind, &info.api_version());
            return Ok(self.put(res, key.clone(), value));
        }
        bytes_of(self, res, key).ok_or_else(|| ApiError::not_found(info, &key.1))
    }

    /// Removes the object now and lets the garbage collector react.
    fn finish(&mut self, res: usize, key: &ObjectKey) -> Result<Bytes, ApiError> {
        let info = &RESOURCES[res];
        let stored = self
            .get(res, key)
            .ok_or_else(|| ApiError::not_found(info, &key.1))?;
        let uid = stored.uid.to_string();
        let owners: Vec<String> = stored.owners.iter().map(|o| o.uid.to_string()).collect();
        let (bytes, _) = self
            .remove(res, key)
            .ok_or_else(|| ApiError::not_found(info, &key.1))?;
        let has_dependents = self
            .dependents
            .get(uid.as_str())
            .is_some_and(|d| !d.is_empty());
        if has_dependents && !self.tell_collector(&uid) {
            self.collect_dependents(&uid);
        }
        for owner in owners {
            self.release_foreground_owner(&owner);
        }
        Ok(bytes)
    }

    /// A dependent created after all of its owners were deleted (a controller acting on a
    /// stale cache) is deleted at once, as upstream's garbage collector deletes dependents
    /// whose owners are all absent. Owners that never existed do not count as deleted.
    fn collect_if_dangling(&mut self, res: usize, key: &ObjectKey) {
        let Some(stored) = self.get(res, key) else {
            return;
        };
        let dangling = !stored.owners.is_empty()
            && stored.owners.iter().all(|owner| {
                self.removed_uids.contains(&owner.uid) && !self.uids.contains_key(&owner.uid)
            });
        if dangling {
            tracing::debug!(resource = RESOURCES[res].plural, namespace = %key.0, name = %key.1, "garbage collecting a dependent of deleted owners");
            let _ = self.delete(res, key, &DeleteOptions::default());
        }
    }

    /// Background collection after `owner_uid` is gone: dependents with another live
    /// owner lose the dangling reference; the others are deleted.
    pub(crate) fn collect_dependents(&mut self, owner_uid: &str) {
        let dependents = self.dependents_of(owner_uid);
        for (res, key) in dependents {
            let Some(stored) = self.get(res, &key) else {
                continue;
            };
            let other_owner_alive = stored
                .owners
                .iter()
                .any(|o| &*o.uid != owner_uid && self.uids.contains_key(&o.uid));
            if other_owner_alive {
                self.drop_owner_reference(res, &key, owner_uid);
            } else {
                tracing::debug!(resource = RESOURCES[res].plural, namespace = %key.0, name = %key.1, "garbage collecting dependent");
                let _ = self.delete(res, &key, &DeleteOptions::default());
            }
        }
    }

    /// A snapshot of the objects whose ownerReferences name `owner_uid`.
    fn dependents_of(&self, owner_uid: &str) -> Vec<ObjectRef> {
        self.dependents
            .get(owner_uid)
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Orphan propagation: remove the ownerReference to `owner_uid` from every dependent.
    fn orphan_dependents(&mut self, owner_uid: &str) {
        let dependents = self.dependents_of(owner_uid);
        for (res, key) in dependents {
            self.drop_owner_reference(res, &key, owner_uid);
        }
    }

    fn drop_owner_reference(&mut self, res: usize, key: &ObjectKey, owner_uid: &str) {
        let Some(stored) = self.get(res, key) else {
            return;
        };
        let mut value = stored.value();
        let meta = meta_mut(&mut value);
        if let Some(Value::Array(refs)) = meta.get_mut("ownerReferences") {
            refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(owner_uid));
            if refs.is_empty() {
                meta.remove("ownerReferences");
            }
        }
        self.put(res, key.clone(), value);
    }

    /// Deletes every dependent of `owner_uid` with `policy`.
    fn delete_dependents(&mut self, owner_uid: &str, policy: Propagation) {
        let dependents = self.dependents_of(owner_uid);
        let opts = DeleteOptions {
            propagation: Some(policy),
            ..DeleteOptions::default()
        };
        for (res, key) in dependents {
            let _ = self.delete(res, &key, &opts);
        }
    }

    /// If `owner_uid` waits in foreground deletion and no blocking dependent remains,
    /// drop its `foregroundDeletion` finalizer (removing it when no finalizer is left).
    fn release_foreground_owner(&mut self, owner_uid: &str) {
        let Some((res, key)) = self.uids.get(owner_uid).cloned() else {
            return;
        };
        let Some(stored) = self.get(res, &key) else {
            return;
        };
        let value = stored.value();
        let finalizers = finalizers_of(&value);
        if !finalizers.iter().any(|f| f == FOREGROUND_FINALIZER) {
            return;
        }
        let blocked = self.dependents.get(owner_uid).is_some_and(|deps| {
            deps.iter().any(|(dres, dkey)| {
                self.get(*dres, dkey)
                    .is_some_and(|d| d.owners.iter().any(|o| &*o.uid == owner_uid && o.block))
            })
        });
        if blocked {
            return;
        }
        let mut value = value;
        let remaining: Vec<String> = finalizers
            .into_iter()
            .filter(|f| f != FOREGROUND_FINALIZER)
            .collect();
        // A pod in its grace period is finished by the kubelet, not here.
        let grace = value
            .pointer("/metadata/deletionGracePeriodSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let done = remaining.is_empty() && grace == 0;
        set_finalizers(&mut value, remaining);
        self.put(res, key.clone(), value);
        if done {
            let _ = self.finish(res, &key);
        }
    }

    /// Deletes a namespace with everything in it (the namespace controller's job upstream).
    fn delete_namespace(&mut self, key: &ObjectKey, mut value: Value) -> Result<Bytes, ApiError> {
        let ns = key.1.clone();
        {
            let meta = meta_mut(&mut value);
            meta.insert("deletionTimestamp".into(), Value::from(now_timestamp()));
        }
        if let Some(map) = value.as_object_mut() {
            map.insert("status".into(), serde_json::json!({"phase": "Terminating"}));
        }
        let bytes = self.put(NAMESPACES, key.clone(), value);
        for (res, info) in RESOURCES.iter().enumerate() {
            if !info.namespaced {
                continue;
            }
            let keys: Vec<ObjectKey> = self.tables[res]
                .objects
                .range((ns.clone(), String::new())..)
                .take_while(|(k, _)| k.0 == ns)
                .map(|(k, _)| k.clone())
                .collect();
            for k in keys {
                if self.get(res, &k).is_some() {
                    let _ = self.finish(res, &k);
                }
            }
        }
        self.remove(NAMESPACES, key);
        Ok(bytes)
    }
}

/// `metadata.deletionGracePeriodSeconds` of an object being deleted (0 when unset).
fn deletion_grace(obj: &Value) -> i64 {
    obj.pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// The grace period of a pod deletion: the request's, else the pod's own; zero for
/// pods that never ran on a node or already finished (upstream deletes those at once).
fn pod_grace(pod: &Value, opts: &DeleteOptions) -> i64 {
    let scheduled = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !scheduled || phase == "Succeeded" || phase == "Failed" {
        return 0;
    }
    opts.grace_period_seconds
        .or_else(|| {
            pod.pointer("/spec/terminationGracePeriodSeconds")
                .and_then(Value::as_i64)
        })
        .unwrap_or(30)
        .max(0)
}

/// A body's kind/apiVersion, when given, must be the resource's.
fn check_type(obj: &Value, res: usize) -> Result<(), ApiError> {
    let info = &RESOURCES[res];
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if (!kind.is_empty() && kind != info.kind)
        || (!api_version.is_empty() && api_version != info.api_version())
    {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({})",
            info.api_version()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_names_use_the_upstream_alphabet() {
        let name = generate_name("web-");
        assert_eq!(name.len(), 9);
        assert!(name.starts_with("web-"));
        assert!(
            name[4..].bytes().all(|b| NAME_ALPHABET.contains(&b)),
            "{name}"
        );
        let long = generate_name(&"a".repeat(70));
        assert_eq!(long.len(), 63);
    }

    #[test]
    fn pod_grace_rules() {
        let scheduled = serde_json::json!({"spec": {"nodeName": "n", "terminationGracePeriodSeconds": 5}, "status": {"phase": "Running"}});
        let unscheduled = serde_json::json!({"spec": {}, "status": {"phase": "Pending"}});
        let finished =
            serde_json::json!({"spec": {"nodeName": "n"}, "status": {"phase": "Succeeded"}});
        let zero = DeleteOptions {
            grace_period_seconds: Some(0),
            ..Default::default()
        };
        assert_eq!(pod_grace(&scheduled, &DeleteOptions::default()), 5);
        assert_eq!(pod_grace(&scheduled, &zero), 0);
        assert_eq!(pod_grace(&unscheduled, &DeleteOptions::default()), 0);
        assert_eq!(pod_grace(&finished, &DeleteOptions::default()), 0);
    }
}
