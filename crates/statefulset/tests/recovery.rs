//! kcm-rs only, opt-in: recovering from a broken OrderedReady rolling update without a manual
//! pod delete (kubernetes#67250). A template the sim's kubelet never makes Ready
//! (`sim.kcm-rs.io/never-ready`) leaves `web-2` stuck; once the template is reverted, an
//! opted-in set replaces it after the grace period, and every other set keeps upstream's
//! behavior (it waits for a human).

mod support;

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};
use sim::{NEVER_READY, SimConfig, testing::eventually};
use statefulset::BrokenRolloutRecovery;
use support::{Harness, counter, label, new_update_revision, stateful_set, wait_for_settled};

const REVISION: &str = "controller-revision-hash";
const ANNOTATION: &str = "kcm-rs.io/recover-broken-rollout";
const RECOVERIES: &str = "statefulset_controller_broken_rollout_recoveries_total";
/// Short, so the tests wait seconds, not the default 30s.
const GRACE: Duration = Duration::from_secs(2);
/// Longer than the grace (plus a sync or two): what upstream's behavior is asserted over.
const WINDOW: Duration = Duration::from_secs(4);

fn recovery(all_sets: bool) -> BrokenRolloutRecovery {
    BrokenRolloutRecovery {
        all_sets,
        grace: GRACE,
    }
}

/// `web`, 3 replicas, OrderedReady; `opt_in` sets the recovery annotation; `extra_spec` as in
/// [`stateful_set`].
fn web(opt_in: bool, template_annotations: Value, extra_spec: Value) -> Value {
    let mut set = stateful_set("web", 3, template_annotations, extra_spec);
    if opt_in {
        set["metadata"]["annotations"] = json!({ANNOTATION: "true"});
    }
    set
}

fn uid(pod: &Pod) -> String {
    pod.metadata.uid.clone().unwrap_or_default()
}

/// The live pod `name` at `revision` (not terminating), once it exists.
async fn pod_at(harness: &Harness, name: &str, revision: &str) -> Pod {
    let what = format!("{name} at {revision}");
    harness
        .wait_for(name, &what, Duration::from_secs(15), |pod: Pod| {
            let live = pod.metadata.deletion_timestamp.is_none();
            (live && label(&pod, REVISION).as_deref() == Some(revision)).then_some(pod)
        })
        .await
}

/// Starts the controller with the recovery flag at `all_sets`, creates `web` (with the
/// annotation if `opt_in`) and breaks its rollout ([`break_rollout`]): how most tests begin.
async fn broken_web(all_sets: bool, opt_in: bool) -> (Harness, (String, String, Pod)) {
    let harness = Harness::start_with_recovery(SimConfig::default(), recovery(all_sets)).await;
    harness.create_set(web(opt_in, json!({}), json!({}))).await;
    let revisions_and_stuck = break_rollout(&harness).await;
    (harness, revisions_and_stuck)
}

/// [`broken_web`], then the template reverted at once (before the stuck pod's grace elapses).
async fn reverted_web(all_sets: bool, opt_in: bool) -> (Harness, (String, String, Pod)) {
    let (harness, revisions_and_stuck) = broken_web(all_sets, opt_in).await;
    revert(&harness, json!({})).await;
    (harness, revisions_and_stuck)
}

/// Settles `web`, then updates it to a template that never turns Ready: `web-2` is replaced
/// first and gets stuck at the broken revision. Returns the good and broken revisions and the
/// stuck pod.
async fn break_rollout(harness: &Harness) -> (String, String, Pod) {
    let good = wait_for_settled(harness, "web", 3)
        .await
        .status
        .and_then(|status| status.update_revision)
        .unwrap_or_default();
    harness
        .patch_set(
            "web",
            json!({"spec": {"template": {"metadata": {"annotations": {NEVER_READY: "true"}}}}}),
        )
        .await;
    let broken = new_update_revision(harness, "web", &good).await;
    let stuck = pod_at(harness, "web-2", &broken).await;
    (good, broken, stuck)
}

/// Reverts the template to the good one, merging `extra_spec` into the same patch.
async fn revert(harness: &Harness, extra_spec: Value) {
    let mut patch =
        json!({"spec": {"template": {"metadata": {"annotations": {NEVER_READY: null}}}}});
    if let (Some(spec), Some(extra)) = (patch["spec"].as_object_mut(), extra_spec.as_object()) {
        for (key, value) in extra {
            spec.insert(key.clone(), value.clone());
        }
    }
    harness.patch_set("web", patch).await;
}

/// Asserts over [`WINDOW`] that the pod `name` stays the `stuck` one, then that nothing was
/// recovered: upstream's behavior.
async fn left_alone(harness: &Harness, name: &str, stuck: &Pod) {
    let deadline = tokio::time::Instant::now() + WINDOW;
    while tokio::time::Instant::now() < deadline {
        let pod = harness.pods().get(name).await.expect("pod exists");
        assert_eq!(uid(&pod), uid(stuck), "{name} was replaced");
        assert!(
            pod.metadata.deletion_timestamp.is_none(),
            "{name} is being deleted"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(counter(harness, RECOVERIES), 0.0);
}

async fn recovery_events(harness: &Harness) -> Vec<String> {
    harness
        .events_about("StatefulSet", "web")
        .await
        .into_iter()
        .filter(|event| event.reason.as_deref() == Some("RecoveringBrokenPod"))
        .map(|event| event.message.unwrap_or_default())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_opted_in_set_replaces_the_stuck_pod_after_the_grace_and_converges() {
    // Reverted right away: web-2's grace has not elapsed, so only the requeue for that
    // moment brings the recovery (no other event comes).
    let (harness, (good, broken, stuck)) = reverted_web(false, true).await;
    let good_again = new_update_revision(&harness, "web", &broken).await;
    let replaced = pod_at(&harness, "web-2", &good_again).await;
    assert_ne!(uid(&replaced), uid(&stuck), "web-2 recreated");
    let status = wait_for_settled(&harness, "web", 3).await.status.unwrap();
    assert_eq!(status.current_revision, status.update_revision);
    assert_eq!(status.ready_replicas, Some(3));
    assert_eq!(good_again, good, "the revert reuses the good revision");

    let messages = eventually("the recovery event", Duration::from_secs(10), || async {
        let messages = recovery_events(&harness).await;
        (!messages.is_empty()).then_some(messages)
    })
    .await;
    assert_eq!(messages.len(), 1, "{messages:?}");
    let prefix = format!("Deleting pod web-2 stuck at revision {broken} (not Ready for ");
    let suffix = format!("s); it will be recreated at update revision {good}");
    let message = &messages[0];
    assert!(
        message.starts_with(&prefix) && message.ends_with(&suffix),
        "{message}"
    );
    let seconds: u64 = message[prefix.len()..message.len() - suffix.len()]
        .parse()
        .unwrap();
    // Timestamps have whole seconds, so the pod may look up to a second older than it is.
    assert!(seconds + 1 >= GRACE.as_secs(), "{message}");
    assert_eq!(counter(&harness, RECOVERIES), 1.0);
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_flag_opts_every_set_in() {
    let (harness, (good, _, stuck)) = reverted_web(true, false).await;
    let replaced = pod_at(&harness, "web-2", &good).await;
    assert_ne!(uid(&replaced), uid(&stuck));
    wait_for_settled(&harness, "web", 3).await;
    assert_eq!(counter(&harness, RECOVERIES), 1.0);
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_annotation_or_the_flag_the_stuck_pod_stays_as_upstream() {
    let (harness, (_, broken, stuck)) = reverted_web(false, false).await;
    new_update_revision(&harness, "web", &broken).await;
    left_alone(&harness, "web-2", &stuck).await;
    assert!(recovery_events(&harness).await.is_empty());
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_stuck_at_the_update_revision_is_left_to_the_user() {
    let (harness, (_, _, stuck)) = broken_web(false, true).await;
    left_alone(&harness, "web-2", &stuck).await;
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_delete_sets_are_left_alone() {
    let harness = Harness::start_with_recovery(SimConfig::default(), recovery(true)).await;
    // Broken from the start: web-0 never turns Ready, so web-1 and web-2 never come.
    harness
        .create_set(web(
            true,
            json!({NEVER_READY: "true"}),
            json!({"updateStrategy": {"type": "OnDelete"}}),
        ))
        .await;
    let broken = new_update_revision(&harness, "web", "").await;
    let stuck = pod_at(&harness, "web-0", &broken).await;
    revert(&harness, json!({})).await;
    new_update_revision(&harness, "web", &broken).await;
    left_alone(&harness, "web-0", &stuck).await;
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_pod_below_the_partition_is_left_alone() {
    let (harness, (_, broken, stuck)) = broken_web(false, true).await;
    revert(
        &harness,
        json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 3}}}),
    )
    .await;
    new_update_revision(&harness, "web", &broken).await;
    left_alone(&harness, "web-2", &stuck).await;
    harness.stop().await;
}
