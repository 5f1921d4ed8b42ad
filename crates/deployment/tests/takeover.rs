//! Takeover of objects written by upstream (v1.28 fixtures captured from a real API server):
//! running every decision of one sync over them must plan no write at all, because the
//! Deployment is mid-rollout exactly as upstream left it.

use deployment::new_replica_set::{ExistingNewReplicaSet, sync_existing_new_replica_set};
use deployment::progress::{Requeue, check_paused_conditions, sync_rollout_status};
use deployment::rolling::{RollingStep, plan_rolling_update};
use deployment::rollout_path::{RolloutPath, choose_rollout_path, selecting_all};
use deployment::status::FeatureGates;
use deployment::template::split_replica_sets;
use informer::{CachedDeployment, CachedReplicaSet};
use k8s_openapi::jiff::Timestamp;
use kube::core::ObjectList;

/// The fixtures decoded as the informers cache them.
fn fixtures() -> (CachedDeployment, Vec<CachedReplicaSet>) {
    let d: CachedDeployment =
        serde_json::from_str(include_str!("../fixtures/deployment.json")).expect("deployment");
    let list: ObjectList<CachedReplicaSet> =
        serde_json::from_str(include_str!("../fixtures/replicaset-list.json")).expect("list");
    (d, list.items)
}

#[test]
fn upstream_objects_need_no_write() {
    let (d, rss) = fixtures();
    let refs: Vec<&CachedReplicaSet> = rss.iter().collect();
    // Progressing lastUpdateTime is 07:30:35 with a 600 s deadline.
    let now: Timestamp = "2026-11-22T07:31:00Z".parse().expect("time");

    assert_eq!(selecting_all(&d), None);
    assert_eq!(check_paused_conditions(&d, now), None);
    let split = split_replica_sets(&d, &refs);
    let new_rs = split
        .new
        .expect("upstream's ReplicaSet is recognized as new");
    assert_eq!(
        sync_existing_new_replica_set(&d, new_rs, &split.old, now),
        ExistingNewReplicaSet::Unchanged
    );
    assert_eq!(
        choose_rollout_path(&d, split.new, &split.old),
        Ok(RolloutPath::RollingUpdate)
    );
    let plan = plan_rolling_update(&d, new_rs, &split.old).expect("plan");
    assert_eq!(plan.step, RollingStep::Settled);
    assert!(!plan.cleanup);

    let decision = sync_rollout_status(&refs, split.new, &d, FeatureGates::default(), now);
    assert_eq!(decision.update, None, "stored status is current");
    // Looked at again one second after the deadline: 07:40:35 + 1 s - 07:31:00 = 576 s.
    assert_eq!(
        decision.requeue,
        Requeue::After(std::time::Duration::from_secs(576))
    );
}

#[test]
fn upstream_rollout_times_out_after_the_deadline() {
    let (d, rss) = fixtures();
    let refs: Vec<&CachedReplicaSet> = rss.iter().collect();
    let split = split_replica_sets(&d, &refs);
    let later: Timestamp = "2026-11-22T07:41:00Z".parse().expect("time");
    let decision = sync_rollout_status(&refs, split.new, &d, FeatureGates::default(), later);
    let status = decision.update.expect("condition changes");
    let progressing = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Progressing")
        .expect("present");
    assert_eq!(progressing.status, "False");
    assert_eq!(
        progressing.reason.as_deref(),
        Some("ProgressDeadlineExceeded")
    );
    assert_eq!(
        progressing.message.as_deref(),
        Some("ReplicaSet \"web-896bb5df7\" has timed out progressing.")
    );
}
