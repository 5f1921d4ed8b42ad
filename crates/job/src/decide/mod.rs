//! The pure heart of the Job controller: given a Job, its claimed pods, the uncounted and
//! expected-removal UID sets and an explicit `now`, which condition finishes the Job, which
//! pods to delete or create (with which indexes), which finished pods to record and whose
//! tracking finalizer to remove, and the status that results. Nothing here does I/O; every
//! function takes plain data (k8s-openapi `batch/v1` Jobs, pods as the shared pod informer
//! caches them, `informer::CachedPod`, slices, small value types) and returns plain data, so
//! the controller built on top only carries the plans out, and every rule is table-tested
//! against upstream's own test tables (their pods built as `core/v1` pods, then cached).
//!
//! Pods come in as `&[&CachedPod]` (the controller holds the lister's `Arc<CachedPod>`s and
//! lends them), and the pods a function picks go out as `&CachedPod`s borrowed from its input
//! (`Vec<&'p CachedPod>`, `BTreeMap<i64, &'p CachedPod>`): no pod is copied, and no full `Pod`
//! is ever needed.
//!
//! The modules follow upstream's files and functions, one job each:
//! * [`indexes`] (`indexed_job_utils.go`): the interval strings of `completedIndexes` and
//!   `failedIndexes`, the succeeded and failed indexes, pending and duplicated indexes, the
//!   completion index and failure-count annotations, the generated name and hostname.
//! * [`failure_policy`] (`pod_failure_policy.go`): `matchPodFailurePolicy`.
//! * [`success_policy`] (`success_policy.go`): `matchSuccessPolicy`.
//! * [`backoff`] (`backoff_utils.go`): the backoff record and store, pod finish times, the
//!   global and per-index delays, the delayed-deletion pod of each index.
//! * [`end_state`] (`syncJob`'s evaluation): the condition that finishes the Job, in
//!   upstream's order, and the `Suspended` condition.
//! * [`manage`] (`manageJob`): what to delete or create.
//! * [`tracking`] (`trackJobStatusAndRemoveFinalizers`): the uncounted UIDs, the finalizers to
//!   remove, the counters, the terminal condition.
//!
//! Under them, so that no module imports one that imports it: [`spec`] (the Job's fields with
//! upstream's defaults and the `batch/v1` names), [`pods`] (the pod predicates: the Job's own,
//! and those every workload controller shares, re-exported from
//! `controller_toolkit::pod_predicates`) and [`types`] (the values several modules share:
//! [`types::FinishedCondition`], the uncounted UID sets, [`types::PolicyAction`],
//! `ensureJobConditionStatus`). The import order is `spec` ← `types`, `pods` ←
//! `failure_policy` ← `indexes` ← `success_policy`, `backoff` ← `end_state`, `manage`,
//! `tracking`. Upstream's `ActivePods` order and the stable sort every module sorts with are
//! `controller_toolkit::ranking`'s (`sort_active_pods`, `stable_sort_by_less`), shared with
//! the ReplicaSet's deletion ranking.
//!
//! v1.36 behaviour throughout: every feature gate the Job controller checks is GA and on
//! (pod failure policy, `backoffLimitPerIndex`, success policy, pod replacement policy,
//! `managedBy`, `PodIndexLabel`), so finishing goes through `FailureTarget` and
//! `SuccessCriteriaMet` and `status.terminating` is always tracked. Go's `int32` counters wrap
//! rather than panic here too; upstream's unstable sorts are stable ones (equal elements keep
//! their input order, one of the orders upstream may produce).

pub mod backoff;
pub mod end_state;
pub mod failure_policy;
pub mod indexes;
pub mod manage;
pub mod pods;
pub mod spec;
pub mod success_policy;
pub mod tracking;
pub mod types;

#[cfg(test)]
mod tests;
