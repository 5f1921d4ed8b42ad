//! The Deployment controller against the sim with the ReplicaSet controller running: Recreate,
//! pause and resume, scaling while paused, rollback (by template and by the legacy
//! annotation), revisionHistoryLimit, the progress deadline and proportional scaling.

mod support;

use std::{
    collections::HashMap,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use kube::{Api, runtime::watcher};
use serde_json::json;
use sim::{KubeletConfig, SimConfig, testing::eventually};
use support::{
    Harness, assert_deployment_annotations, condition, deployment, image_of, revision_of,
    spec_replicas, template_image,
};

const WAIT: Duration = Duration::from_secs(30);

fn pod_image(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.as_deref())
        .unwrap_or_default()
}

/// Asks for a rollback of `name` to `revision` through the legacy annotation, and waits for the
/// event (reason, message) that answers it.
async fn roll_back_by_annotation(
    harness: &Harness,
    name: &str,
    revision: &str,
    (reason, message): (&str, &str),
) {
    let request = json!({"deprecated.deployment.rollback.to": revision});
    harness
        .patch(name, json!({"metadata": {"annotations": request}}))
        .await;
    harness.wait_for_event(name, reason, message).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recreate_starts_no_new_pod_before_every_old_pod_is_gone() {
    // Old pods linger while terminating, so an early scale-up would be seen.
    let harness = Harness::start_with(SimConfig {
        kubelet: KubeletConfig {
            deletion_delay: Duration::from_millis(300),
            ..KubeletConfig::default()
        },
        ..SimConfig::default()
    })
    .await;
    let mut d = deployment("re", 3, "nginx:1.25", 0);
    d.spec.as_mut().expect("spec").strategy =
        Some(serde_json::from_value(json!({"type": "Recreate"})).expect("strategy"));
    harness.create(&d).await;
    harness.wait_complete("re").await;

    // Watch every pod event: a new-template pod must never coexist with an old one.
    let overlap = Arc::new(AtomicBool::new(false));
    let seen_new = Arc::new(AtomicBool::new(false));
    let watch = {
        let (overlap, seen_new) = (overlap.clone(), seen_new.clone());
        let api: Api<Pod> = harness.pods();
        tokio::spawn(async move {
            let mut pods: HashMap<String, String> = HashMap::new();
            let mut stream = watcher(api, watcher::Config::default()).boxed();
            while let Some(event) = stream.next().await {
                match event {
                    Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod)) => {
                        pods.insert(
                            pod.metadata.name.clone().unwrap_or_default(),
                            pod_image(&pod).to_owned(),
                        );
                    }
                    Ok(watcher::Event::Delete(pod)) => {
                        pods.remove(pod.metadata.name.as_deref().unwrap_or_default());
                    }
                    _ => {}
                }
                let new = pods.values().any(|image| image == "nginx:1.27");
                let old = pods.values().any(|image| image == "nginx:1.25");
                if new {
                    seen_new.store(true, Ordering::SeqCst);
                }
                if new && old {
                    overlap.store(true, Ordering::SeqCst);
                }
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    harness.set_image("re", "nginx:1.27").await;
    let d = harness.wait_complete("re").await;
    watch.abort();
    assert!(
        seen_new.load(Ordering::SeqCst),
        "the watch saw the new pods"
    );
    assert!(
        !overlap.load(Ordering::SeqCst),
        "a new pod existed while an old pod was still there"
    );
    let old = harness.replica_set_with_image("re", "nginx:1.25").await;
    let new = harness.replica_set_with_image("re", "nginx:1.27").await;
    assert_eq!((spec_replicas(&old), spec_replicas(&new)), (0, 3));
    // Recreate has no surge: max-replicas equals desired-replicas.
    assert_deployment_annotations(&new, &[("max-replicas", "3")]);
    assert_eq!(d.status.and_then(|s| s.updated_replicas), Some(3));
    let old_name = old.metadata.name.expect("name");
    harness
        .wait_for_event(
            "re",
            "ScalingReplicaSet",
            &format!("Scaled down replica set {old_name} from 3 to 0"),
        )
        .await;
    harness
        .wait_for_event(
            "re",
            "ScalingReplicaSet",
            &format!(
                "Scaled up replica set {} to 3",
                new.metadata.name.expect("name")
            ),
        )
        .await;
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_deployment_scales_but_does_not_roll_until_resumed() {
    let harness = Harness::with_complete(&deployment("p", 4, "nginx:1.25", 0)).await;

    harness.patch("p", json!({"spec": {"paused": true}})).await;
    let what = "Progressing=Unknown DeploymentPaused";
    let paused = harness
        .wait_for("p", what, WAIT, |d: Deployment| {
            let c = condition(&d, "Progressing")?;
            (c.status == "Unknown" && c.reason.as_deref() == Some("DeploymentPaused"))
                .then(|| c.message.clone())
        })
        .await;
    assert_eq!(paused.as_deref(), Some("Deployment is paused"));

    // A template change while paused creates no ReplicaSet; a resize scales the current one.
    harness.set_image("p", "nginx:1.27").await;
    harness.patch("p", json!({"spec": {"replicas": 6}})).await;
    let d = harness
        .wait_for("p", "scaled to 6 while paused", WAIT, |d: Deployment| {
            let status = d.status.as_ref()?;
            (status.available_replicas == Some(6)
                && status.observed_generation == d.metadata.generation)
                .then_some(d)
        })
        .await;
    let sets = harness.replica_sets_of("p").await;
    assert_eq!(sets.len(), 1, "no new ReplicaSet while paused");
    assert_eq!(spec_replicas(&sets[0]), 6);
    assert_eq!(image_of(&sets[0]), "nginx:1.25");
    assert_deployment_annotations(&sets[0], &[("desired-replicas", "6")]);
    // Paused: the template is not rolled out, so nothing is updated.
    assert_eq!(d.status.as_ref().and_then(|s| s.updated_replicas), None);

    harness.patch("p", json!({"spec": {"paused": false}})).await;
    let d = harness.wait_complete("p").await;
    let new = harness.replica_set_with_image("p", "nginx:1.27").await;
    assert_eq!(spec_replicas(&new), 6);
    assert_eq!(revision_of(&new), 2);
    assert_eq!(d.status.and_then(|s| s.updated_replicas), Some(6));
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_reuses_the_old_replica_set_and_moves_its_revision_forward() {
    let harness = Harness::with_complete(&deployment("rb", 2, "nginx:1.25", 0)).await;
    let first = harness.replica_set_with_image("rb", "nginx:1.25").await;
    harness.set_image("rb", "nginx:1.27").await;
    harness.wait_complete("rb").await;

    // Roll back to revision 1 by restoring its template.
    harness.set_image("rb", "nginx:1.25").await;
    harness.wait_complete("rb").await;
    let sets = harness.replica_sets_of("rb").await;
    assert_eq!(sets.len(), 2, "the old ReplicaSet is reused");
    let reused = harness.replica_set_with_image("rb", "nginx:1.25").await;
    assert_eq!(reused.metadata.uid, first.metadata.uid);
    assert_eq!(spec_replicas(&reused), 2);
    assert_deployment_annotations(&reused, &[("revision", "3"), ("revision-history", "1")]);
    let second = harness.replica_set_with_image("rb", "nginx:1.27").await;
    assert_eq!((spec_replicas(&second), revision_of(&second)), (0, 2));

    // The legacy annotation: roll back to the previous revision (2, nginx:1.27).
    let rolled_back = "Rolled back deployment \"rb\" to revision 2";
    roll_back_by_annotation(&harness, "rb", "0", ("DeploymentRollback", rolled_back)).await;
    let d = harness.wait_complete("rb").await;
    assert_eq!(template_image(&d), Some("nginx:1.27"));
    assert!(
        !d.metadata
            .annotations
            .unwrap_or_default()
            .contains_key("deprecated.deployment.rollback.to")
    );
    let again = harness.replica_set_with_image("rb", "nginx:1.27").await;
    assert_eq!(again.metadata.uid, second.metadata.uid);
    assert_eq!(
        (spec_replicas(&again), revision_of(&again)),
        (2, 4),
        "revision moved forward again"
    );

    // A rollback to a revision that does not exist only clears the request.
    let not_found = (
        "DeploymentRollbackRevisionNotFound",
        "Unable to find the revision to rollback to.",
    );
    roll_back_by_annotation(&harness, "rb", "42", not_found).await;
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revision_history_limit_1_keeps_one_old_replica_set() {
    let mut d = deployment("hist", 2, "nginx:1.0", 0);
    d.spec.as_mut().expect("spec").revision_history_limit = Some(1);
    let harness = Harness::with_complete(&d).await;
    for image in ["nginx:1.1", "nginx:1.2", "nginx:1.3"] {
        harness.set_image("hist", image).await;
        harness.wait_complete("hist").await;
    }
    let sets = eventually("history trimmed to one old ReplicaSet", WAIT, || async {
        let sets = harness.replica_sets_of("hist").await;
        (sets.len() == 2).then_some(sets)
    })
    .await;
    let images: Vec<(&str, i64, i32)> = sets
        .iter()
        .map(|rs| (image_of(rs), revision_of(rs), spec_replicas(rs)))
        .collect();
    assert_eq!(images, vec![("nginx:1.2", 3, 0), ("nginx:1.3", 4, 2)]);
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_deadline_exceeded_when_new_pods_never_turn_ready() {
    let mut d = deployment("stuck", 2, "nginx:1.25", 0);
    d.spec.as_mut().expect("spec").progress_deadline_seconds = Some(2);
    let harness = Harness::with_complete(&d).await;

    harness.roll_out_never_ready("stuck", "nginx:1.27").await;
    let d = harness
        .wait_for(
            "stuck",
            "ProgressDeadlineExceeded",
            WAIT,
            |d: Deployment| {
                let c = condition(&d, "Progressing")?;
                (c.reason.as_deref() == Some("ProgressDeadlineExceeded")).then_some(d)
            },
        )
        .await;
    let new = harness.replica_set_with_image("stuck", "nginx:1.27").await;
    let progressing = condition(&d, "Progressing").expect("Progressing");
    assert_eq!(progressing.status, "False");
    assert_eq!(
        progressing.message.as_deref(),
        Some(format!(
            "ReplicaSet \"{}\" has timed out progressing.",
            new.metadata.name.clone().expect("name")
        ))
        .as_deref()
    );
    // 2 replicas, 25%/25%: surge 1, unavailable 0: the old pods all stay available.
    let available = condition(&d, "Available").expect("Available");
    assert_eq!(available.status, "True");
    let old = harness.replica_set_with_image("stuck", "nginx:1.25").await;
    assert_eq!((spec_replicas(&old), spec_replicas(&new)), (2, 1));
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proportional_scaling_10_to_20_during_a_stuck_rollout() {
    let harness = Harness::with_complete(&deployment("prop", 10, "nginx:1.25", 0)).await;

    // New pods never turn ready: the rollout sticks at old 8, new 5 (25%/25% of 10: 3/2).
    harness.roll_out_never_ready("prop", "nginx:1.27").await;
    let sizes = || async {
        let sets = harness.replica_sets_of("prop").await;
        let old = sets.iter().find(|rs| image_of(rs) == "nginx:1.25")?.clone();
        let new = sets.iter().find(|rs| image_of(rs) == "nginx:1.27")?.clone();
        Some((old, new))
    };
    eventually("stuck at 8 + 5", WAIT, || async {
        let (old, new) = sizes().await?;
        (spec_replicas(&old) == 8 && spec_replicas(&new) == 5).then_some(())
    })
    .await;
    // The Deployment status is computed from the controller's cache: once it reports the
    // 13 pods, the controller has seen both ReplicaSets at their stuck sizes.
    harness
        .wait_for(
            "prop",
            "status of the stuck rollout",
            WAIT,
            |d: Deployment| {
                let status = d.status?;
                (status.replicas == Some(13) && status.updated_replicas == Some(5)).then_some(())
            },
        )
        .await;

    // 20 replicas: allowed 20 + 5 = 25, 12 to add; old gets round(8*25/13)-8 = 7, new the
    // remaining 5 (upstream's numbers).
    harness
        .patch("prop", json!({"spec": {"replicas": 20}}))
        .await;
    let (old, new) = eventually("proportionally scaled", WAIT, || async {
        let (old, new) = sizes().await?;
        (spec_replicas(&old) == 15 && spec_replicas(&new) == 10).then_some((old, new))
    })
    .await;
    for rs in [&old, &new] {
        assert_deployment_annotations(rs, &[("desired-replicas", "20"), ("max-replicas", "25")]);
    }
    let old_name = old.metadata.name.expect("name");
    let new_name = new.metadata.name.expect("name");
    harness
        .wait_for_event(
            "prop",
            "ScalingReplicaSet",
            &format!("Scaled up replica set {old_name} from 8 to 15"),
        )
        .await;
    harness
        .wait_for_event(
            "prop",
            "ScalingReplicaSet",
            &format!("Scaled up replica set {new_name} from 5 to 10"),
        )
        .await;
    // And the rollout stays put: nothing more can be scaled down safely.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (old, new) = sizes().await.expect("both ReplicaSets");
    assert_eq!((spec_replicas(&old), spec_replicas(&new)), (15, 10));
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hash_collision_bumps_collision_count_and_renames_the_new_replica_set() {
    let harness = Harness::start().await;
    // Paused, so no ReplicaSet is created before the name is taken.
    let mut d = deployment("col", 2, "nginx:1.25", 0);
    d.spec.as_mut().expect("spec").paused = Some(true);
    let created = harness.create(&d).await;
    let template = created.spec.clone().expect("spec").template;
    let first_name = format!(
        "col-{}",
        deployment::template::pod_template_hash(&template, None)
    );

    // Someone else's ReplicaSet squats the name (labels the Deployment does not select).
    let squatter: ReplicaSet = serde_json::from_value(json!({
        "metadata": {"name": first_name, "namespace": "default", "labels": {"squatter": "yes"}},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"squatter": "yes"}},
            "template": {"metadata": {"labels": {"squatter": "yes"}},
                         "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
        }
    }))
    .expect("squatter");
    harness
        .replica_sets()
        .create(&Default::default(), &squatter)
        .await
        .expect("create squatter");

    harness
        .patch("col", json!({"spec": {"paused": false}}))
        .await;
    let d = harness.wait_complete("col").await;
    assert_eq!(d.status.as_ref().and_then(|s| s.collision_count), Some(1));
    let new = harness.replica_set_with_image("col", "nginx:1.25").await;
    assert_eq!(
        new.metadata.name,
        Some(format!(
            "col-{}",
            deployment::template::pod_template_hash(&template, Some(1))
        ))
    );
    let squatter = harness
        .replica_sets()
        .get(&first_name)
        .await
        .expect("squatter");
    assert_eq!(squatter.metadata.owner_references, None, "not adopted");
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adopts_a_matching_orphan_replica_set_as_its_new_one() {
    let harness = Harness::start().await;
    let orphan: ReplicaSet = serde_json::from_value(json!({
        "metadata": {"name": "adopt-orphan", "namespace": "default", "labels": {"app": "adopt"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "adopt"}},
            "template": {
                "metadata": {"labels": {"app": "adopt"},
                             "annotations": {"sim.kcm-rs.io/ready-after-ms": "0"}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}
            }
        }
    }))
    .expect("orphan");
    let orphan = harness
        .replica_sets()
        .create(&Default::default(), &orphan)
        .await
        .expect("create orphan");
    // Let the orphan settle first, so the controller's ReplicaSet cache has it when the
    // Deployment appears (two watch streams, no ordering between them).
    harness
        .wait_for(
            "adopt-orphan",
            "the orphan's pods available",
            WAIT,
            |rs: ReplicaSet| (rs.status?.available_replicas == Some(2)).then_some(()),
        )
        .await;
    let d = harness
        .create(&deployment("adopt", 2, "nginx:1.25", 0))
        .await;
    harness.wait_complete("adopt").await;

    let sets = harness.replica_sets_of("adopt").await;
    assert_eq!(sets.len(), 1, "the orphan is reused, nothing created");
    let adopted = &sets[0];
    assert_eq!(adopted.metadata.uid, orphan.metadata.uid);
    let owner = &adopted.metadata.owner_references.as_ref().expect("owner")[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
        (
            "Deployment",
            d.metadata.uid.as_deref().expect("uid"),
            Some(true)
        )
    );
    assert_deployment_annotations(adopted, &[("revision", "1")]);
    assert_eq!(
        harness.requests_by(support::DEPLOYMENT_AGENT, "create", "replicasets"),
        0
    );
    harness.stop().await;
}
