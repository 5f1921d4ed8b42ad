//! batch/v1 Jobs as a v1.36 API server serves them: the generated selector and template
//! labels, upstream's defaults, status cleared on create and written only through `/status`
//! (with upstream's status rules), spec validation and immutability, `kubectl apply` (client-
//! and server-side), `get` (upstream's printer columns), `describe` and `delete`, and the
//! garbage collection of a Job's pods: background, foreground, orphan (the default of a
//! batch/v1 delete that names no policy, with upstream's warning), and a pod held by the
//! `batch.kubernetes.io/job-tracking` finalizer, which the kubelet stops and which waits,
//! terminal, until the finalizer is removed.

mod common;

use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use sim::testing::Kubectl;
use sim::{KubeletConfig, SimCluster};

const CONTROLLER_UID: &str = "batch.kubernetes.io/controller-uid";
const JOB_NAME: &str = "batch.kubernetes.io/job-name";
const TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";

/// A Job running `script` in busybox, with `extra` merged into its `spec`.
fn job(name: &str, script: &str, extra: Value) -> Job {
    let mut value = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name},
        "spec": {"template": {"metadata": {"labels": {"app": name}},
            "spec": {"restartPolicy": "Never",
                "containers": [{"name": "main", "image": "busybox:1.36", "command": ["sh", "-c", script]}]}}}
    });
    json_patch::merge(&mut value, &json!({"spec": extra}));
    serde_json::from_value(value).expect("valid Job")
}

/// A pod of `job` as the Job controller would create it: the template's labels, a controlling
/// ownerReference, and `finalizers`.
fn pod_of(job: &Job, name: &str, finalizers: &[&str]) -> Pod {
    let template = job
        .spec
        .as_ref()
        .and_then(|s| s.template.metadata.clone())
        .unwrap_or_default();
    let spec = job
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.clone())
        .expect("a template spec");
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": template.labels, "finalizers": finalizers,
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job",
                "name": job.metadata.name, "uid": job.metadata.uid,
                "controller": true, "blockOwnerDeletion": true}]},
        "spec": spec,
    }))
    .expect("valid pod")
}

fn labels(job: &Job) -> std::collections::BTreeMap<String, String> {
    job.spec
        .as_ref()
        .and_then(|s| s.template.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_created_job_gets_its_selector_labels_and_defaults_and_no_status() {
    let (_cluster, jobs) = common::quiet_api::<Job>().await;
    let mut sent = job("pi", "exit 0", json!({}));
    sent.status = Some(serde_json::from_value(json!({"succeeded": 5, "active": 2})).unwrap());
    let created = common::create(&jobs, &sent).await;

    let uid = created.metadata.uid.clone().expect("a uid");
    assert_eq!(created.metadata.generation, Some(1));
    let spec = created.spec.clone().expect("spec");
    let selector = serde_json::to_value(&spec.selector).unwrap();
    assert_eq!(selector, json!({"matchLabels": {CONTROLLER_UID: uid}}));
    let expected: std::collections::BTreeMap<String, String> = [
        ("app", "pi"),
        (CONTROLLER_UID, &uid),
        (JOB_NAME, "pi"),
        ("controller-uid", &uid),
        ("job-name", "pi"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    assert_eq!(labels(&created), expected);
    assert_eq!(
        created.metadata.labels,
        Some(expected),
        "a Job without labels takes its template's"
    );

    assert_eq!(spec.parallelism, Some(1));
    assert_eq!(spec.completions, Some(1));
    assert_eq!(spec.backoff_limit, Some(6));
    assert_eq!(spec.completion_mode.as_deref(), Some("NonIndexed"));
    assert_eq!(spec.suspend, Some(false));
    assert_eq!(
        spec.pod_replacement_policy.as_deref(),
        Some("TerminatingOrFailed")
    );
    assert_eq!(spec.manual_selector, None);
    let pod_spec = spec.template.spec.expect("template spec");
    assert_eq!(pod_spec.dns_policy.as_deref(), Some("ClusterFirst"));
    assert_eq!(pod_spec.termination_grace_period_seconds, Some(30));
    assert_eq!(
        pod_spec.containers[0].image_pull_policy.as_deref(),
        Some("IfNotPresent")
    );
    let status = serde_json::to_value(&created.status).unwrap();
    assert_eq!(status, json!({}), "status is cleared on create");

    // parallelism alone leaves completions unset; backoffLimitPerIndex lifts backoffLimit;
    // a pod failure policy makes Failed the replacement policy.
    let parallel = common::create(&jobs, &job("many", "exit 0", json!({"parallelism": 3}))).await;
    assert_eq!(parallel.spec.as_ref().unwrap().completions, None);
    let indexed = common::create(
        &jobs,
        &job(
            "per-index",
            "exit 0",
            json!({"completionMode": "Indexed", "completions": 3, "backoffLimitPerIndex": 1,
                "podFailurePolicy": {"rules": [{"action": "Ignore",
                    "onPodConditions": [{"type": "DisruptionTarget"}]}]}}),
        ),
    )
    .await;
    let spec = serde_json::to_value(indexed.spec.as_ref().unwrap()).unwrap();
    assert_eq!(spec["backoffLimit"], 2147483647);
    assert_eq!(spec["podReplacementPolicy"], "Failed");
    assert_eq!(
        spec["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"],
        "True"
    );

    // A manual selector is kept as given, and the template's labels too.
    let manual = common::create(
        &jobs,
        &job(
            "manual",
            "exit 0",
            json!({"manualSelector": true, "selector": {"matchLabels": {"app": "manual"}}}),
        ),
    )
    .await;
    assert_eq!(
        labels(&manual),
        [("app".to_string(), "manual".to_string())].into()
    );
    assert_eq!(manual.spec.unwrap().manual_selector, Some(true));

    let by_field = jobs
        .list(&ListParams::default().fields("status.successful=0"))
        .await
        .unwrap();
    assert_eq!(by_field.items.len(), 4);
}

#[tokio::test]
async fn the_status_is_written_only_through_the_status_subresource() {
    let (_cluster, jobs) = common::quiet_api::<Job>().await;
    let created = common::create(&jobs, &job("pi", "exit 0", json!({}))).await;

    // The main resource ignores status; a spec change bumps the generation.
    let patched = common::patch(
        &jobs,
        "pi",
        Patch::Merge(json!({"spec": {"parallelism": 0}, "status": {"active": 3}})),
    )
    .await;
    assert_eq!(patched.metadata.generation, Some(2));
    assert_eq!(serde_json::to_value(&patched.status).unwrap(), json!({}));

    // The status subresource writes status only: the spec sent with it is not kept.
    let mut body = patched.clone();
    body.spec.as_mut().unwrap().parallelism = Some(7);
    body.status = Some(
        serde_json::from_value(
            json!({"active": 1, "ready": 1, "startTime": "2024-01-01T00:00:00Z"}),
        )
        .unwrap(),
    );
    let written = jobs
        .replace_status("pi", &PostParams::default(), &body)
        .await
        .unwrap();
    assert_eq!(written.status.as_ref().unwrap().active, Some(1));
    assert_eq!(written.spec.as_ref().unwrap().parallelism, Some(0));
    assert_eq!(written.metadata.generation, Some(2));
    assert_ne!(
        written.metadata.resource_version,
        created.metadata.resource_version
    );

    // Upstream's status rules: a Complete Job needs SuccessCriteriaMet and a completionTime,
    // and no active pod.
    let err = jobs
        .patch_status(
            "pi",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"conditions": [
                {"type": "Complete", "status": "True"}]}})),
        )
        .await
        .expect_err("refused");
    let status = common::api_error(err);
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "Job.batch \"pi\" is invalid: [status.completionTime: Required value: completionTime is required for Complete jobs, \
         status.conditions: Invalid value: cannot set Complete=True condition without the SuccessCriteriaMet=true condition, \
         status.active: Invalid value: 1: active>0 is invalid for finished job]"
    );
    let done = jobs
        .patch_status(
            "pi",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"active": 0, "ready": 0, "succeeded": 1,
                "completionTime": "2024-01-01T00:00:05Z",
                "conditions": [{"type": "SuccessCriteriaMet", "status": "True"},
                    {"type": "Complete", "status": "True"}]}})),
        )
        .await
        .expect("a complete status");
    assert_eq!(done.status.unwrap().succeeded, Some(1));
    let err = jobs
        .patch_status(
            "pi",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"conditions": []}})),
        )
        .await
        .expect_err("a finished Job stays finished");
    assert!(
        common::api_error(err)
            .message
            .contains("cannot disable the terminal Complete=True condition")
    );
}

#[tokio::test]
async fn invalid_jobs_and_updates_are_refused_as_upstream_refuses_them() {
    let (_cluster, jobs) = common::quiet_api::<Job>().await;
    let mut always = job("always", "exit 0", json!({}));
    always
        .spec
        .as_mut()
        .unwrap()
        .template
        .spec
        .as_mut()
        .unwrap()
        .restart_policy = Some("Always".into());
    let status = common::create_error(&jobs, &always).await;
    assert_eq!(status.code, 422);
    assert_eq!(status.reason, "Invalid");
    assert_eq!(
        status.message,
        "Job.batch \"always\" is invalid: spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""
    );
    let details = status.details.expect("details");
    assert_eq!(
        (details.kind.as_str(), details.group.as_str()),
        ("Job", "batch")
    );
    assert_eq!(details.causes[0].field, "spec.template.spec.restartPolicy");
    let mut unset = always.clone();
    unset.metadata.name = Some("unset".into());
    unset
        .spec
        .as_mut()
        .unwrap()
        .template
        .spec
        .as_mut()
        .unwrap()
        .restart_policy = None;
    let status = common::create_error(&jobs, &unset).await;
    assert!(
        status
            .message
            .ends_with("valid values: \"OnFailure\", \"Never\""),
        "defaulted to Always: {}",
        status.message
    );

    let cases = [
        (
            json!({"completionMode": "Indexed", "parallelism": 2}),
            "spec.completions: Required value: when completion mode is Indexed",
        ),
        (
            json!({"parallelism": -1}),
            "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            json!({"manualSelector": true, "selector": {"matchLabels": {"app": "other"}}}),
            "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"bad\"}: `selector` does not match template `labels`",
        ),
        (
            json!({"manualSelector": true}),
            "spec.selector: Required value",
        ),
    ];
    for (extra, message) in cases {
        let status = common::create_error(&jobs, &job("bad", "exit 0", extra.clone())).await;
        assert_eq!(
            status.message,
            format!("Job.batch \"bad\" is invalid: {message}"),
            "{extra}"
        );
    }

    // Updates: the selector, the completion mode and the template are immutable; a
    // suspended Job that never started may still move its pods (scheduling directives).
    common::create(&jobs, &job("pi", "exit 0", json!({"suspend": true}))).await;
    let refused = [
        json!({"spec": {"selector": {"matchLabels": {"app": "pi"}}}}),
        json!({"spec": {"completionMode": "Indexed"}}),
        json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "busybox:1.37"}]}}}}),
        json!({"spec": {"completions": 2}}),
    ];
    for patch in refused {
        let err = jobs
            .patch(
                "pi",
                &PatchParams::default(),
                &Patch::Strategic(patch.clone()),
            )
            .await
            .expect_err("immutable");
        let status = common::api_error(err);
        assert_eq!(status.code, 422, "{patch}");
        assert!(
            status.message.contains("field is immutable"),
            "{patch}: {}",
            status.message
        );
    }
    let moved = common::patch(
        &jobs,
        "pi",
        Patch::Merge(json!({"spec": {"template": {"spec": {"nodeSelector": {"zone": "a"}}}}})),
    )
    .await;
    assert_eq!(moved.metadata.generation, Some(2));
    common::patch(
        &jobs,
        "pi",
        Patch::Merge(json!({"spec": {"parallelism": 4}})),
    )
    .await;
}

const MANIFEST: &str = "apiVersion: batch/v1
kind: Job
metadata:
  name: pi
spec:
  backoffLimit: 4
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: pi
        image: perl:5.34.0
        command: [\"sh\", \"-c\", \"exit 0\"]
";

/// The header and the row of `name` in `kubectl get` output, split on runs of spaces.
fn table_row(out: &str, name: &str) -> (Vec<String>, Vec<String>) {
    let split = |line: &str| -> Vec<String> {
        line.split("  ")
            .map(str::trim)
            .filter(|cell| !cell.is_empty())
            .map(str::to_string)
            .collect()
    };
    let mut lines = out.lines();
    let header = split(lines.next().unwrap_or(""));
    let row = lines
        .find(|line| line.starts_with(&format!("{name} ")))
        .map(split)
        .unwrap_or_else(|| panic!("no row {name}: {out}"));
    (header, row)
}

#[tokio::test]
async fn kubectl_applies_gets_describes_and_deletes_a_job() {
    let cluster = common::cluster().await;
    let dir = tempfile::tempdir().unwrap();
    let kubectl = Kubectl::for_cluster(&cluster, dir.path());
    let manifest = dir.path().join("pi.yaml");
    std::fs::write(&manifest, MANIFEST).unwrap();
    let jobs: Api<Job> = Api::namespaced(cluster.client(), "default");
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");

    let out = kubectl.run(&["api-resources", "--api-group=batch"]).await;
    assert!(
        out.lines()
            .any(|l| l.starts_with("jobs ") && l.contains("batch/v1") && l.ends_with("Job")),
        "{out}"
    );

    let out = kubectl
        .run(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    assert!(out.contains("job.batch/pi created"), "{out}");
    let created = jobs.get("pi").await.unwrap();
    let uid = created.metadata.uid.clone().unwrap();
    assert!(
        created
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key("kubectl.kubernetes.io/last-applied-configuration"))
    );

    let (header, row) = table_row(&kubectl.run(&["get", "jobs"]).await, "pi");
    assert_eq!(header, ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]);
    assert_eq!(row[..3], ["pi", "Running", "0/1"]);
    let (header, row) = table_row(&kubectl.run(&["get", "jobs", "-o", "wide"]).await, "pi");
    assert_eq!(
        header,
        [
            "NAME",
            "STATUS",
            "COMPLETIONS",
            "DURATION",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR"
        ]
    );
    assert_eq!(
        row[row.len() - 3..],
        [
            "pi".to_string(),
            "perl:5.34.0".to_string(),
            format!("{CONTROLLER_UID}={uid}")
        ]
    );

    // The pod a Job controller would create, and its status once it completed.
    common::create(&pods, &pod_of(&created, "pi-abcde", &[])).await;
    jobs.patch_status(
        "pi",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"status": {"succeeded": 1, "startTime": "2024-01-01T00:00:00Z",
            "completionTime": "2024-01-01T00:00:42Z",
            "conditions": [{"type": "SuccessCriteriaMet", "status": "True"},
                {"type": "Complete", "status": "True"}]}}),
        ),
    )
    .await
    .unwrap();
    let (_, row) = table_row(&kubectl.run(&["get", "job", "pi"]).await, "pi");
    assert_eq!(row[..4], ["pi", "Complete", "1/1", "42s"]);

    let out = kubectl.run(&["describe", "job", "pi"]).await;
    for wanted in [
        "Name:",
        "pi",
        &format!("Selector:         {CONTROLLER_UID}={uid}"),
        "Parallelism:      1",
        "Completions:      1",
        "Completion Mode:  NonIndexed",
        "Duration:         42s",
        "1 Succeeded / 0 Failed",
        "Pod Template:",
        "perl:5.34.0",
    ] {
        assert!(out.contains(wanted), "{wanted:?} missing from:\n{out}");
    }

    // Applying a changed manifest patches the Job (client-side, then server-side).
    std::fs::write(
        &manifest,
        MANIFEST.replace("backoffLimit: 4", "backoffLimit: 2"),
    )
    .unwrap();
    let out = kubectl
        .run(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    assert!(out.contains("job.batch/pi configured"), "{out}");
    std::fs::write(
        &manifest,
        MANIFEST.replace("backoffLimit: 4", "backoffLimit: 3"),
    )
    .unwrap();
    let out = kubectl
        .run(&[
            "apply",
            "--server-side",
            "--force-conflicts",
            "-f",
            manifest.to_str().unwrap(),
        ])
        .await;
    assert!(out.contains("job.batch/pi serverside-applied"), "{out}");
    let applied = jobs.get("pi").await.unwrap();
    assert_eq!(applied.spec.as_ref().unwrap().backoff_limit, Some(3));
    assert_eq!(applied.metadata.generation, Some(3));
    assert_eq!(
        applied.spec.unwrap().selector,
        created.spec.unwrap().selector,
        "the generated selector stays"
    );

    // kubectl deletes in the background: the pod goes with its Job.
    let out = kubectl.run(&["delete", "job", "pi"]).await;
    assert!(out.contains("job.batch \"pi\" deleted"), "{out}");
    assert!(!common::exists(&jobs, "pi").await);
    common::eventually("the Job's pod collected", || async {
        (!common::exists(&pods, "pi-abcde").await).then_some(())
    })
    .await;

    // Server-side apply creates one too.
    std::fs::write(&manifest, MANIFEST.replace("name: pi\n", "name: ssa\n")).unwrap();
    let out = kubectl
        .run(&["apply", "--server-side", "-f", manifest.to_str().unwrap()])
        .await;
    assert!(out.contains("job.batch/ssa serverside-applied"), "{out}");
    let ssa = jobs.get("ssa").await.unwrap();
    assert_eq!(labels(&ssa)[JOB_NAME], "ssa");

    // `kubectl create job` builds its own Job (restartPolicy Never).
    let out = kubectl
        .run(&[
            "create",
            "job",
            "hello",
            "--image=busybox:1.36",
            "--",
            "sh",
            "-c",
            "exit 0",
        ])
        .await;
    assert!(out.contains("job.batch/hello created"), "{out}");
    let out = kubectl
        .run(&[
            "get",
            "job",
            "hello",
            "-o",
            "jsonpath={.spec.selector.matchLabels}",
        ])
        .await;
    assert!(out.contains(CONTROLLER_UID), "{out}");
}

/// A cluster whose kubelet lingers `delay` over each graceful pod deletion.
async fn cluster_with_deletion_delay(delay: Duration) -> SimCluster {
    common::cluster_with_kubelet(KubeletConfig {
        deletion_delay: delay,
        ..KubeletConfig::default()
    })
    .await
}

/// Waits until the pod `name` runs on a node.
async fn running(pods: &Api<Pod>, name: &str) {
    common::eventually("pod running", || async {
        pods.get(name)
            .await
            .ok()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
    })
    .await;
}

#[tokio::test]
async fn deleting_a_job_collects_its_pods_and_a_tracked_pod_waits_for_its_finalizer() {
    let cluster = cluster_with_deletion_delay(Duration::from_millis(200)).await;
    let jobs: Api<Job> = Api::namespaced(cluster.client(), "default");
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let created = common::create(&jobs, &job("work", "sleep 600", json!({"parallelism": 2}))).await;
    common::create(&pods, &pod_of(&created, "work-plain", &[])).await;
    common::create(
        &pods,
        &pod_of(&created, "work-tracked", &[TRACKING_FINALIZER]),
    )
    .await;
    running(&pods, "work-plain").await;
    running(&pods, "work-tracked").await;

    common::delete(&jobs, "work", &DeleteParams::background()).await;
    assert!(!common::exists(&jobs, "work").await);
    common::eventually("the untracked pod gone", || async {
        (!common::exists(&pods, "work-plain").await).then_some(())
    })
    .await;
    // The tracked pod is stopped by the kubelet at the end of its grace period, and stays,
    // terminal, while the finalizer holds it.
    let held = common::eventually("the tracked pod stopped", || async {
        pods.get("work-tracked")
            .await
            .ok()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Failed"))
    })
    .await;
    assert!(held.metadata.deletion_timestamp.is_some());
    assert_eq!(held.metadata.deletion_grace_period_seconds, Some(0));
    let container = &held
        .status
        .as_ref()
        .unwrap()
        .container_statuses
        .as_ref()
        .unwrap()[0];
    let terminated = container
        .state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .expect("terminated");
    assert_eq!(
        (terminated.exit_code, terminated.reason.as_deref()),
        (137, Some("Error"))
    );
    assert!(!container.ready);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(common::exists(&pods, "work-tracked").await, "held");

    // Removing the finalizer, as the Job controller does, lets it go.
    common::patch(
        &pods,
        "work-tracked",
        Patch::Json(
            serde_json::from_value(json!([{"op": "remove", "path": "/metadata/finalizers/0"}]))
                .unwrap(),
        ),
    )
    .await;
    assert!(!common::exists(&pods, "work-tracked").await);
}

#[tokio::test]
async fn a_finalizer_removed_during_the_grace_period_leaves_the_pod_to_the_kubelet() {
    let cluster = cluster_with_deletion_delay(Duration::from_millis(600)).await;
    let jobs: Api<Job> = Api::namespaced(cluster.client(), "default");
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let created = common::create(&jobs, &job("work", "sleep 600", json!({}))).await;
    common::create(&pods, &pod_of(&created, "work-0", &[TRACKING_FINALIZER])).await;
    running(&pods, "work-0").await;

    common::delete(&pods, "work-0", &DeleteParams::default()).await;
    let patched = common::patch(
        &pods,
        "work-0",
        Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await;
    assert!(patched.metadata.deletion_timestamp.is_some());
    assert_eq!(
        patched.status.and_then(|s| s.phase).as_deref(),
        Some("Running"),
        "still in its grace period"
    );
    assert!(common::exists(&pods, "work-0").await);
    common::eventually("the kubelet finished it", || async {
        (!common::exists(&pods, "work-0").await).then_some(())
    })
    .await;
}

#[tokio::test]
async fn foreground_and_orphan_deletion_of_a_job() {
    let cluster = common::cluster().await;
    let jobs: Api<Job> = Api::namespaced(cluster.client(), "default");
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");

    let first = common::create(&jobs, &job("first", "sleep 600", json!({}))).await;
    common::create(&pods, &pod_of(&first, "first-0", &[])).await;
    running(&pods, "first-0").await;
    common::delete(&jobs, "first", &DeleteParams::foreground()).await;
    common::eventually("the Job gone after its pod", || async {
        (!common::exists(&jobs, "first").await).then_some(())
    })
    .await;
    assert!(!common::exists(&pods, "first-0").await);

    let second = common::create(&jobs, &job("second", "sleep 600", json!({}))).await;
    common::create(&pods, &pod_of(&second, "second-0", &[])).await;
    common::delete(&jobs, "second", &DeleteParams::orphan()).await;
    assert!(!common::exists(&jobs, "second").await);
    let orphan = pods.get("second-0").await.unwrap();
    assert_eq!(orphan.metadata.owner_references, None);
}

/// A batch/v1 delete that names no propagation policy orphans the pods, as upstream keeps
/// batch/v1's old default, and says so in a warning.
#[tokio::test]
async fn a_delete_naming_no_policy_orphans_the_pods_with_a_warning() {
    let cluster = common::cluster().await;
    let jobs: Api<Job> = Api::namespaced(cluster.client(), "default");
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let created = common::create(&jobs, &job("legacy", "sleep 600", json!({}))).await;
    common::create(&pods, &pod_of(&created, "legacy-0", &[])).await;

    let req = http::Request::delete("/apis/batch/v1/namespaces/default/jobs/legacy")
        .body(Vec::new())
        .unwrap();
    let resp = cluster
        .client()
        .send(req.map(kube::client::Body::from))
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let warning = resp
        .headers()
        .get("warning")
        .and_then(|w| w.to_str().ok())
        .unwrap_or("")
        .to_string();
    assert_eq!(
        warning,
        "299 - \"child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning\""
    );
    assert!(!common::exists(&jobs, "legacy").await);
    let orphan = pods.get("legacy-0").await.unwrap();
    assert_eq!(orphan.metadata.owner_references, None, "orphaned");

    // Naming a policy: no warning.
    let created = common::create(&jobs, &job("modern", "sleep 600", json!({}))).await;
    common::create(&pods, &pod_of(&created, "modern-0", &[])).await;
    let req = http::Request::delete(
        "/apis/batch/v1/namespaces/default/jobs/modern?propagationPolicy=Background",
    )
    .body(Vec::new())
    .unwrap();
    let resp = cluster
        .client()
        .send(req.map(kube::client::Body::from))
        .await
        .unwrap();
    assert!(resp.headers().get("warning").is_none());
    common::eventually("the pod collected", || async {
        (!common::exists(&pods, "modern-0").await).then_some(())
    })
    .await;
}
