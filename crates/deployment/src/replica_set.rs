//! Reading counts off ReplicaSets and Deployments, and upstream's orderings of ReplicaSets.
//!
//! Upstream dereferences `spec.replicas` pointers that the API server always defaults (to 1);
//! here a missing value reads as that default so that nothing panics on odd data. Go's
//! non-pointer status counters read as 0 when absent. Counts the API server validates as
//! non-negative read as 0 when a cache holds a negative one, and sums saturate instead of
//! wrapping like Go's int32, so no planner can derive a negative or wrapped size from them.

use std::cmp::Ordering;

use controller_toolkit::pod_predicates::is_pod_active;
use informer::{
    CachedDeployment, CachedPod, CachedReplicaSet, Lister, POD_CONTROLLER_UID_INDEX,
    owner_index_key,
};

/// Default of `spec.replicas` applied by the API server.
const DEFAULT_REPLICAS: i32 = 1;

/// `metadata.name` of a ReplicaSet ("" when absent).
pub fn rs_name(rs: &CachedReplicaSet) -> &str {
    rs.metadata.name.as_deref().unwrap_or_default()
}

/// `*rs.spec.replicas`.
pub fn rs_spec_replicas(rs: &CachedReplicaSet) -> i32 {
    rs.spec
        .as_ref()
        .and_then(|spec| spec.replicas)
        .unwrap_or(DEFAULT_REPLICAS)
        .max(0)
}

/// `rs.status.replicas` (pods that exist).
pub fn rs_status_replicas(rs: &CachedReplicaSet) -> i32 {
    rs.status
        .as_ref()
        .map_or(0, |status| status.replicas)
        .max(0)
}

/// kcm-rs only: the active pods `pods` (the pod cache) holds for `rs`, which the rolling
/// planner counts where they exceed `rs.status.replicas` (a status written before they ran).
pub fn rs_active_cached_pods(pods: &Lister<CachedPod>, rs: &CachedReplicaSet) -> i32 {
    let active = pods
        .by_index(POD_CONTROLLER_UID_INDEX, &owner_index_key(rs))
        .iter()
        .filter(|pod| is_pod_active(pod))
        .count();
    i32::try_from(active).unwrap_or(i32::MAX)
}

/// `rs.status.availableReplicas`.
pub fn rs_available_replicas(rs: &CachedReplicaSet) -> i32 {
    rs.status
        .as_ref()
        .and_then(|status| status.available_replicas)
        .unwrap_or(0)
        .max(0)
}

/// `rs.status.readyReplicas`.
pub fn rs_ready_replicas(rs: &CachedReplicaSet) -> i32 {
    rs.status
        .as_ref()
        .and_then(|status| status.ready_replicas)
        .unwrap_or(0)
        .max(0)
}

/// `*d.spec.replicas`.
pub fn deployment_replicas(d: &CachedDeployment) -> i32 {
    d.spec
        .as_ref()
        .and_then(|spec| spec.replicas)
        .unwrap_or(DEFAULT_REPLICAS)
        .max(0)
}

/// `spec.paused` (false when absent).
pub fn deployment_paused(d: &CachedDeployment) -> bool {
    d.spec
        .as_ref()
        .and_then(|spec| spec.paused)
        .unwrap_or(false)
}

/// `metadata.name` of a Deployment ("" when absent).
pub fn deployment_name(d: &CachedDeployment) -> &str {
    d.metadata.name.as_deref().unwrap_or_default()
}

/// Whether two references denote the same ReplicaSet (upstream compares UIDs; the name
/// disambiguates objects built without a UID).
pub fn same_replica_set(a: &CachedReplicaSet, b: &CachedReplicaSet) -> bool {
    a.metadata.uid == b.metadata.uid && a.metadata.name == b.metadata.name
}

/// The saturating sum of one count over ReplicaSets.
fn sum<'a>(
    rss: impl IntoIterator<Item = &'a CachedReplicaSet>,
    count: fn(&CachedReplicaSet) -> i32,
) -> i32 {
    rss.into_iter()
        .fold(0i32, |sum, rs| sum.saturating_add(count(rs)))
}

/// GetReplicaCountForReplicaSets: sum of `spec.replicas`.
pub fn sum_spec_replicas<'a>(rss: impl IntoIterator<Item = &'a CachedReplicaSet>) -> i32 {
    sum(rss, rs_spec_replicas)
}

/// GetActualReplicaCountForReplicaSets: sum of `status.replicas`.
pub fn sum_status_replicas<'a>(rss: impl IntoIterator<Item = &'a CachedReplicaSet>) -> i32 {
    sum(rss, rs_status_replicas)
}

/// GetAvailableReplicaCountForReplicaSets: sum of `status.availableReplicas`.
pub fn sum_available_replicas<'a>(rss: impl IntoIterator<Item = &'a CachedReplicaSet>) -> i32 {
    sum(rss, rs_available_replicas)
}

/// GetReadyReplicaCountForReplicaSets: sum of `status.readyReplicas`.
pub fn sum_ready_replicas<'a>(rss: impl IntoIterator<Item = &'a CachedReplicaSet>) -> i32 {
    sum(rss, rs_ready_replicas)
}

/// FilterActiveReplicaSets: those with `spec.replicas > 0`, order kept.
pub fn active<'a>(
    rss: impl IntoIterator<Item = &'a CachedReplicaSet>,
) -> Vec<&'a CachedReplicaSet> {
    rss.into_iter()
        .filter(|rs| rs_spec_replicas(rs) > 0)
        .collect()
}

/// ReplicaSetsByCreationTimestamp: creation ascending, ties by name ascending (a missing
/// timestamp is Go's zero time, i.e. the oldest).
pub fn by_creation(a: &CachedReplicaSet, b: &CachedReplicaSet) -> Ordering {
    a.metadata
        .creation_timestamp
        .cmp(&b.metadata.creation_timestamp)
        .then_with(|| rs_name(a).cmp(rs_name(b)))
}

/// ReplicaSetsBySizeOlder: larger `spec.replicas` first, ties oldest first.
pub fn by_size_older(a: &CachedReplicaSet, b: &CachedReplicaSet) -> Ordering {
    rs_spec_replicas(b)
        .cmp(&rs_spec_replicas(a))
        .then_with(|| by_creation(a, b))
}

/// ReplicaSetsBySizeNewer: larger `spec.replicas` first, ties newest first.
pub fn by_size_newer(a: &CachedReplicaSet, b: &CachedReplicaSet) -> Ordering {
    rs_spec_replicas(b)
        .cmp(&rs_spec_replicas(a))
        .then_with(|| by_creation(b, a))
}

#[cfg(test)]
pub(crate) mod test_support {
    //! Builders shared by the unit tests of this crate.

    use std::collections::BTreeMap;

    use informer::{
        CachedDeployment, CachedDeploymentSpec, CachedReplicaSet, CachedReplicaSetSpec,
        CompactLabelSelector, CompactPodTemplate,
    };
    use k8s_openapi::api::apps::v1::{
        DeploymentStrategy, ReplicaSetStatus, RollingUpdateDeployment,
    };
    use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    use k8s_openapi::jiff::Timestamp;

    /// `base + seconds`.
    pub fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + seconds).expect("valid timestamp")
    }

    /// `template` as the caches keep it.
    pub fn compact(template: &PodTemplateSpec) -> CompactPodTemplate {
        CompactPodTemplate::encode(template).expect("test templates encode")
    }

    /// A template with `app=web` and one container of the given image.
    pub fn template(image: &str) -> PodTemplateSpec {
        PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(BTreeMap::from([("app".to_owned(), "web".to_owned())])),
                ..Default::default()
            }),
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "nginx".to_owned(),
                    image: Some(image.to_owned()),
                    ..Default::default()
                }],
                ..Default::default()
            }),
        }
    }

    /// A percentage (or any string) IntOrString.
    pub fn pct(value: &str) -> IntOrString {
        IntOrString::String(value.to_owned())
    }

    /// A rolling-update Deployment `web` with the given size and fenceposts.
    pub fn rolling(
        replicas: i32,
        surge: IntOrString,
        unavailable: IntOrString,
    ) -> CachedDeployment {
        CachedDeployment {
            metadata: ObjectMeta {
                name: Some("web".to_owned()),
                namespace: Some("default".to_owned()),
                uid: Some("d-uid".to_owned()),
                generation: Some(1),
                ..Default::default()
            }
            .into(),
            spec: Some(CachedDeploymentSpec {
                replicas: Some(replicas),
                selector: CompactLabelSelector::encode(&LabelSelector {
                    match_labels: Some(BTreeMap::from([("app".to_owned(), "web".to_owned())])),
                    ..Default::default()
                })
                .expect("a selector encodes"),
                strategy: Some(DeploymentStrategy {
                    type_: Some("RollingUpdate".to_owned()),
                    rolling_update: Some(RollingUpdateDeployment {
                        max_surge: Some(surge),
                        max_unavailable: Some(unavailable),
                    }),
                }),
                template: compact(&template("nginx:2")),
                progress_deadline_seconds: Some(600),
                revision_history_limit: Some(10),
                ..Default::default()
            }),
            status: None,
        }
    }

    /// A Recreate Deployment `web`.
    pub fn recreate(replicas: i32) -> CachedDeployment {
        let mut d = rolling(replicas, IntOrString::Int(0), IntOrString::Int(0));
        if let Some(spec) = d.spec.as_mut() {
            spec.strategy = Some(DeploymentStrategy {
                type_: Some("Recreate".to_owned()),
                rolling_update: None,
            });
        }
        d
    }

    /// A ReplicaSet created `created` seconds after the base time, with spec and available.
    pub fn rs(name: &str, created: i64, replicas: i32, available: i32) -> CachedReplicaSet {
        CachedReplicaSet {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some("default".to_owned()),
                uid: Some(format!("{name}-uid")),
                creation_timestamp: Some(Time(at(created))),
                ..Default::default()
            }
            .into(),
            spec: Some(CachedReplicaSetSpec {
                replicas: Some(replicas),
                template: Some(compact(&template(&format!("nginx:{name}")))),
                ..Default::default()
            }),
            status: Some(ReplicaSetStatus {
                replicas,
                available_replicas: Some(available),
                ready_replicas: Some(available),
                ..Default::default()
            }),
        }
    }

    /// ReplicaSets `old0`, `old1`, .. created 0, 1, .. seconds after the base time, with the
    /// given (spec, available) replicas.
    pub fn olds(sizes: &[(i32, i32)]) -> Vec<CachedReplicaSet> {
        let old = |(i, (spec, available)): (usize, &(i32, i32))| {
            rs(&format!("old{i}"), i as i64, *spec, *available)
        };
        sizes.iter().enumerate().map(old).collect()
    }

    /// Sets one annotation.
    pub fn annotate(mut rs: CachedReplicaSet, key: &str, value: &str) -> CachedReplicaSet {
        rs.metadata
            .annotations
            .edit(|annotations| annotations.insert(key.to_owned(), value.to_owned()));
        rs
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::rs;
    use super::*;

    #[test]
    fn orderings_follow_upstream_tie_breaks() {
        let a = rs("a", 10, 3, 0);
        let b = rs("b", 10, 3, 0);
        let c = rs("c", 5, 1, 0);
        let mut list = [&b, &a, &c];
        list.sort_by(|x, y| by_creation(x, y));
        assert_eq!(
            list.iter().map(|r| rs_name(r)).collect::<Vec<_>>(),
            ["c", "a", "b"]
        );
        list.sort_by(|x, y| by_size_older(x, y));
        assert_eq!(
            list.iter().map(|r| rs_name(r)).collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
        list.sort_by(|x, y| by_size_newer(x, y));
        assert_eq!(
            list.iter().map(|r| rs_name(r)).collect::<Vec<_>>(),
            ["b", "a", "c"]
        );
    }

    #[test]
    fn sums_and_active_filter() {
        let list = [rs("a", 0, 3, 2), rs("b", 1, 0, 0), rs("c", 2, 4, 4)];
        assert_eq!(sum_spec_replicas(&list), 7);
        assert_eq!(sum_available_replicas(&list), 6);
        assert_eq!(sum_status_replicas(&list), 7);
        assert_eq!(
            active(&list).iter().map(|r| rs_name(r)).collect::<Vec<_>>(),
            ["a", "c"]
        );
    }

    #[test]
    fn missing_spec_replicas_reads_as_api_default() {
        let mut r = rs("a", 0, 3, 0);
        r.spec = None;
        assert_eq!(rs_spec_replicas(&r), 1);
    }
}
