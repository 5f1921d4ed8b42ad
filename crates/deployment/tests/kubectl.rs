//! The real kubectl against the sim with both controllers running: `kubectl rollout status`
//! succeeds at the end of a rollout and `kubectl rollout undo` rolls back to the previous
//! template, reusing its ReplicaSet.

mod support;

use std::process::Output;

use sim::testing::Kubectl;

use support::{Harness, deployment, image_of, revision_of, spec_replicas, template_image};

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_rollout_status_and_undo() {
    let harness = Harness::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let kubectl = Kubectl::for_cluster(&harness.sim, dir.path());

    // kubectl's undo patch replaces /metadata/annotations, which must exist. Upstream's
    // Deployment always has the revision annotation (written through the status endpoint);
    // the sim drops metadata changes made through status, so give it one at creation.
    let mut d = deployment("kc", 3, "nginx:1.25", 50);
    d.metadata.annotations = Some([("team".to_owned(), "web".to_owned())].into());
    harness.create(&d).await;
    let status = kubectl
        .output(&["rollout", "status", "deployment/kc", "--timeout=60s"])
        .await;
    assert!(status.status.success(), "{}", text(&status));
    assert!(
        text(&status).contains("deployment \"kc\" successfully rolled out"),
        "{}",
        text(&status)
    );

    harness.set_image("kc", "nginx:1.27").await;
    let status = kubectl
        .output(&["rollout", "status", "deployment/kc", "--timeout=60s"])
        .await;
    assert!(status.status.success(), "{}", text(&status));
    let first = harness.replica_set_with_image("kc", "nginx:1.25").await;
    assert_eq!(spec_replicas(&first), 0);

    let undo = kubectl.output(&["rollout", "undo", "deployment/kc"]).await;
    assert!(undo.status.success(), "{}", text(&undo));
    assert!(text(&undo).contains("rolled back"), "{}", text(&undo));
    let status = kubectl
        .output(&["rollout", "status", "deployment/kc", "--timeout=60s"])
        .await;
    assert!(status.status.success(), "{}", text(&status));

    let d = harness.wait_complete("kc").await;
    assert_eq!(template_image(&d), Some("nginx:1.25"));
    let reused = harness.replica_set_with_image("kc", "nginx:1.25").await;
    assert_eq!(reused.metadata.uid, first.metadata.uid);
    assert_eq!((spec_replicas(&reused), revision_of(&reused)), (3, 3));
    let second = harness.replica_set_with_image("kc", "nginx:1.27").await;
    assert_eq!(
        (spec_replicas(&second), image_of(&second)),
        (0, "nginx:1.27")
    );
    harness.stop().await;
}
