//! batch/v1 CronJobs as a v1.36 API server serves them, through `kube::Client` and kubectl:
//! upstream's defaults, status cleared on create and written only through `/status`, the
//! generation following the spec, upstream's validation answered as 422 Invalid (but no cron
//! parsing: an unparseable schedule is stored, for the controller to report), discovery with
//! the short name `cj`, `kubectl apply`, `get` (upstream's printer columns) and `describe`,
//! and the garbage collection of a CronJob's Jobs (and their pods): background by default,
//! foreground waiting for them, orphan.

mod common;

use std::time::Duration;

use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use sim::KubeletConfig;
use sim::testing::Kubectl;

const FOREGROUND: &str = "foregroundDeletion";

/// A CronJob running `exit 0` in busybox every five minutes, with `extra` merged into its
/// `spec`.
fn cronjob(name: &str, extra: Value) -> CronJob {
    let mut value = json!({
        "apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {"schedule": "*/5 * * * *",
            "jobTemplate": {"metadata": {"labels": {"app": name}},
                "spec": {"template": {"metadata": {"labels": {"app": name}},
                    "spec": {"restartPolicy": "OnFailure",
                        "containers": [{"name": "hello", "image": "busybox:1.36",
                            "command": ["sh", "-c", "sleep 600"]}]}}}}}
    });
    json_patch::merge(&mut value, &json!({ "spec": extra }));
    serde_json::from_value(value).expect("valid CronJob")
}

/// The Job a CronJob controller creates from `cronjob`'s template: a controlling, blocking
/// ownerReference to the CronJob.
fn job_of(cronjob: &CronJob, name: &str) -> Job {
    let template = cronjob.spec.job_template.clone();
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": template.metadata.and_then(|m| m.labels),
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob",
                "name": cronjob.metadata.name, "uid": cronjob.metadata.uid,
                "controller": true, "blockOwnerDeletion": true}]},
        "spec": template.spec,
    }))
    .expect("valid Job")
}

/// A pod of `job` as the Job controller creates it.
fn pod_of(job: &Job, name: &str) -> Pod {
    let spec = job.spec.as_ref().expect("a spec");
    serde_json::from_value(json!({
        "metadata": {"name": name,
            "labels": spec.template.metadata.as_ref().and_then(|m| m.labels.clone()),
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job",
                "name": job.metadata.name, "uid": job.metadata.uid,
                "controller": true, "blockOwnerDeletion": true}]},
        "spec": spec.template.spec,
    }))
    .expect("valid pod")
}

#[tokio::test]
async fn a_created_cronjob_gets_upstreams_defaults_a_generation_and_no_status() {
    let (_cluster, cronjobs) = common::quiet_api::<CronJob>().await;
    let mut sent = cronjob("hello", json!({}));
    sent.status =
        Some(serde_json::from_value(json!({"lastScheduleTime": "2024-01-01T00:00:00Z"})).unwrap());
    let created = common::create(&cronjobs, &sent).await;

    assert_eq!(created.metadata.generation, Some(1));
    let spec = serde_json::to_value(&created.spec).unwrap();
    assert_eq!(spec["concurrencyPolicy"], "Allow");
    assert_eq!(spec["suspend"], false);
    assert_eq!(spec["successfulJobsHistoryLimit"], 3);
    assert_eq!(spec["failedJobsHistoryLimit"], 1);
    assert!(spec.get("timeZone").is_none());
    assert!(spec.get("startingDeadlineSeconds").is_none());
    // The job template's pods get the pod defaults; the Job defaults wait for the Job.
    let job_spec = &spec["jobTemplate"]["spec"];
    assert!(job_spec.get("backoffLimit").is_none());
    assert!(job_spec.get("selector").is_none());
    let pod_spec = &job_spec["template"]["spec"];
    assert_eq!(pod_spec["dnsPolicy"], "ClusterFirst");
    assert_eq!(pod_spec["containers"][0]["imagePullPolicy"], "IfNotPresent");
    assert_eq!(
        serde_json::to_value(&created.status).unwrap(),
        json!({}),
        "status is cleared on create"
    );

    // Given values are kept.
    let given = common::create(
        &cronjobs,
        &cronjob(
            "given",
            json!({"concurrencyPolicy": "Forbid", "suspend": true, "timeZone": "Europe/Rome",
                "startingDeadlineSeconds": 30, "successfulJobsHistoryLimit": 0,
                "failedJobsHistoryLimit": 0}),
        ),
    )
    .await;
    let spec = given.spec;
    assert_eq!(spec.concurrency_policy.as_deref(), Some("Forbid"));
    assert_eq!(spec.suspend, Some(true));
    assert_eq!(spec.time_zone.as_deref(), Some("Europe/Rome"));
    assert_eq!(spec.starting_deadline_seconds, Some(30));
    assert_eq!(spec.successful_jobs_history_limit, Some(0));

    // A schedule the sim cannot parse is the controller's to report, not a 422.
    let unparseable = common::create(
        &cronjobs,
        &cronjob("unparseable", json!({"schedule": "obvious error schedule"})),
    )
    .await;
    assert_eq!(unparseable.spec.schedule, "obvious error schedule");
}

#[tokio::test]
async fn the_status_is_written_only_through_the_status_subresource() {
    let (_cluster, cronjobs) = common::quiet_api::<CronJob>().await;
    let created = common::create(&cronjobs, &cronjob("hello", json!({}))).await;

    // The main resource ignores status; a spec change bumps the generation, a label does not.
    let patched = common::patch(
        &cronjobs,
        "hello",
        Patch::Merge(json!({"spec": {"suspend": true},
            "status": {"lastScheduleTime": "2024-01-01T00:00:00Z"}})),
    )
    .await;
    assert_eq!(patched.metadata.generation, Some(2));
    assert_eq!(serde_json::to_value(&patched.status).unwrap(), json!({}));
    let labelled = common::patch(
        &cronjobs,
        "hello",
        Patch::Merge(json!({"metadata": {"labels": {"team": "a"}}})),
    )
    .await;
    assert_eq!(labelled.metadata.generation, Some(2));

    // The status subresource writes status only (PUT, as the controller's UpdateStatus): the
    // spec sent with it is not kept, and nothing in the status is validated.
    let mut body = labelled.clone();
    body.spec.schedule = "@hourly".into();
    body.status = Some(
        serde_json::from_value(json!({
            "active": [{"apiVersion": "batch/v1", "kind": "Job", "name": "hello-28000000",
                "namespace": "default", "uid": "1234", "resourceVersion": "7"}],
            "lastScheduleTime": "2024-01-01T00:00:00Z",
            "lastSuccessfulTime": "2023-12-31T23:55:10Z"}))
        .unwrap(),
    );
    let written = cronjobs
        .replace_status("hello", &PostParams::default(), &body)
        .await
        .unwrap();
    let status = written.status.as_ref().unwrap();
    assert_eq!(status.active.as_ref().map(Vec::len), Some(1));
    assert!(status.last_schedule_time.is_some());
    assert_eq!(written.spec.schedule, "*/5 * * * *");
    assert_eq!(written.metadata.generation, Some(2));
    assert_ne!(
        written.metadata.resource_version,
        created.metadata.resource_version
    );

    // A stale resourceVersion is a conflict, as the controller's UpdateStatus expects.
    let err = cronjobs
        .replace_status("hello", &PostParams::default(), &body)
        .await
        .expect_err("stale");
    assert_eq!(common::api_error(err).code, 409);

    // PATCH of the status subresource, as kubectl's `--subresource=status`.
    let emptied = cronjobs
        .patch_status(
            "hello",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"suspend": false}, "status": {"active": null}})),
        )
        .await
        .unwrap();
    assert_eq!(emptied.status.unwrap().active, None);
    assert_eq!(emptied.spec.suspend, Some(true));
}

#[tokio::test]
async fn invalid_cronjobs_are_refused_as_upstream_refuses_them() {
    let (_cluster, cronjobs) = common::quiet_api::<CronJob>().await;
    let long = "a".repeat(53);
    let cases = [
        (
            long.as_str(),
            json!({}),
            format!(
                "metadata.name: Invalid value: \"{long}\": must be no more than 52 characters"
            ),
        ),
        (
            "tz",
            json!({"schedule": "TZ=UTC 0 * * * *"}),
            "spec.schedule: Invalid value: \"TZ=UTC 0 * * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead".into(),
        ),
        (
            "zone",
            json!({"timeZone": "Mars/Olympus_Mons"}),
            "spec.timeZone: Invalid value: \"Mars/Olympus_Mons\": unknown time zone Mars/Olympus_Mons".into(),
        ),
        (
            "empty-zone",
            json!({"timeZone": ""}),
            "spec.timeZone: Invalid value: \"\": timeZone must be nil or non-empty string".into(),
        ),
        (
            "local",
            json!({"timeZone": "Local"}),
            "spec.timeZone: Invalid value: \"Local\": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones".into(),
        ),
        (
            "policy",
            json!({"concurrencyPolicy": "Sometimes"}),
            "spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\"".into(),
        ),
        (
            "deadline",
            json!({"startingDeadlineSeconds": -1}),
            "spec.startingDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0"
                .into(),
        ),
        (
            "always",
            json!({"jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Always"}}}}}),
            "spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"".into(),
        ),
        (
            "selector",
            json!({"jobTemplate": {"spec": {"selector": {"matchLabels": {"app": "selector"}}}}}),
            "spec.jobTemplate.spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"selector\"}}: `selector` will be auto-generated".into(),
        ),
    ];
    for (name, extra, message) in cases {
        let status = common::create_error(&cronjobs, &cronjob(name, extra.clone())).await;
        assert_eq!(status.code, 422, "{extra}");
        assert_eq!(status.reason, "Invalid");
        assert_eq!(
            status.message,
            format!("CronJob.batch \"{name}\" is invalid: {message}"),
            "{extra}"
        );
        let details = status.details.expect("details");
        assert_eq!(
            (details.kind.as_str(), details.group.as_str()),
            ("CronJob", "batch")
        );
    }

    // Several causes are listed together, each with its field.
    let mut bare = cronjob(
        "bare",
        json!({"schedule": "", "failedJobsHistoryLimit": -1}),
    );
    bare.spec.job_template = Default::default();
    let status = common::create_error(&cronjobs, &bare).await;
    let fields: Vec<String> = status
        .details
        .expect("details")
        .causes
        .into_iter()
        .map(|c| c.field)
        .collect();
    assert_eq!(
        fields,
        [
            "spec.schedule",
            "spec.jobTemplate.spec.template.spec.containers",
            "spec.jobTemplate.spec.template.spec.restartPolicy",
            "spec.failedJobsHistoryLimit"
        ]
    );

    // Updates: a TZ may not be added, the name limit is for creates only, and an unchanged
    // time zone is not checked again.
    common::create(&cronjobs, &cronjob("hello", json!({"timeZone": "UTC"}))).await;
    let err = cronjobs
        .patch(
            "hello",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"schedule": "CRON_TZ=UTC 0 * * * *"}})),
        )
        .await
        .expect_err("no TZ in schedule");
    assert!(
        common::api_error(err)
            .message
            .contains("cannot use TZ or CRON_TZ in schedule"),
    );
    let err = cronjobs
        .patch(
            "hello",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"timeZone": "Nowhere/Land"}})),
        )
        .await
        .expect_err("unknown zone");
    assert_eq!(common::api_error(err).code, 422);
    common::patch(
        &cronjobs,
        "hello",
        Patch::Merge(json!({"spec": {"timeZone": "America/New_York"}})),
    )
    .await;
}

/// A cluster whose kubelet lingers 300 ms over each graceful pod deletion.
async fn lingering_cluster() -> sim::SimCluster {
    common::cluster_with_kubelet(KubeletConfig {
        deletion_delay: Duration::from_millis(300),
        ..KubeletConfig::default()
    })
    .await
}

/// A CronJob named `name`, one Job of it and that Job's running pod.
async fn cronjob_with_a_job(
    cronjobs: &Api<CronJob>,
    jobs: &Api<Job>,
    pods: &Api<Pod>,
    name: &str,
) -> (CronJob, Job) {
    let owner = common::create(cronjobs, &cronjob(name, json!({}))).await;
    let job = common::create(jobs, &job_of(&owner, &format!("{name}-28000000"))).await;
    let pod_name = format!("{name}-28000000-abcde");
    common::create(pods, &pod_of(&job, &pod_name)).await;
    common::eventually("the pod running", || async {
        pods.get(&pod_name)
            .await
            .ok()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
    })
    .await;
    (owner, job)
}

#[tokio::test]
async fn deleting_a_cronjob_collects_its_jobs_and_their_pods() {
    let cluster = lingering_cluster().await;
    let cronjobs: Api<CronJob> = Api::namespaced(cluster.client(), "default");
    let jobs: Api<Job> = Api::namespaced(cluster.client(), "default");
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");

    // A delete naming no policy collects in the background (only batch/v1beta1 orphaned),
    // with no warning.
    cronjob_with_a_job(&cronjobs, &jobs, &pods, "plain").await;
    let req = http::Request::delete("/apis/batch/v1/namespaces/default/cronjobs/plain")
        .body(Vec::new())
        .unwrap();
    let resp = cluster
        .client()
        .send(req.map(kube::client::Body::from))
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp.headers().get("warning").is_none());
    assert!(!common::exists(&cronjobs, "plain").await);
    common::eventually("the Job collected", || async {
        (!common::exists(&jobs, "plain-28000000").await).then_some(())
    })
    .await;
    common::eventually("the Job's pod collected", || async {
        (!common::exists(&pods, "plain-28000000-abcde").await).then_some(())
    })
    .await;

    // Foreground: the CronJob waits, with the finalizer, until its Job (which waits for its
    // pod's graceful end) is gone.
    cronjob_with_a_job(&cronjobs, &jobs, &pods, "fore").await;
    common::delete(&cronjobs, "fore", &DeleteParams::foreground()).await;
    let waiting = cronjobs.get("fore").await.expect("still there");
    assert!(waiting.metadata.deletion_timestamp.is_some());
    assert_eq!(
        waiting.metadata.finalizers.as_deref(),
        Some(&[FOREGROUND.to_string()][..])
    );
    let job = jobs.get("fore-28000000").await.expect("the Job waits too");
    assert!(job.metadata.deletion_timestamp.is_some());
    common::eventually("the CronJob gone after its Job", || async {
        (!common::exists(&cronjobs, "fore").await).then_some(())
    })
    .await;
    assert!(!common::exists(&jobs, "fore-28000000").await);
    assert!(!common::exists(&pods, "fore-28000000-abcde").await);

    // Orphan: the Job stays, without its ownerReference.
    cronjob_with_a_job(&cronjobs, &jobs, &pods, "orphan").await;
    common::delete(&cronjobs, "orphan", &DeleteParams::orphan()).await;
    assert!(!common::exists(&cronjobs, "orphan").await);
    let orphan = jobs.get("orphan-28000000").await.expect("kept");
    assert_eq!(orphan.metadata.owner_references, None);
    assert!(common::exists(&pods, "orphan-28000000-abcde").await);
}

const MANIFEST: &str = "apiVersion: batch/v1
kind: CronJob
metadata:
  name: hello
spec:
  schedule: \"* * * * *\"
  timeZone: Europe/Rome
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: hello
            image: busybox:1.28
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
async fn kubectl_applies_gets_and_deletes_a_cronjob() {
    let cluster = common::cluster().await;
    let dir = tempfile::tempdir().unwrap();
    let kubectl = Kubectl::for_cluster(&cluster, dir.path());
    let manifest = dir.path().join("hello.yaml");
    std::fs::write(&manifest, MANIFEST).unwrap();
    let cronjobs: Api<CronJob> = Api::namespaced(cluster.client(), "default");

    let out = kubectl.run(&["api-resources", "--api-group=batch"]).await;
    let line = out
        .lines()
        .find(|l| l.starts_with("cronjobs "))
        .unwrap_or_else(|| panic!("no cronjobs in:\n{out}"));
    let columns: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(columns, ["cronjobs", "cj", "batch/v1", "true", "CronJob"]);

    let out = kubectl
        .run(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    assert!(out.contains("cronjob.batch/hello created"), "{out}");
    let created = cronjobs.get("hello").await.unwrap();
    assert_eq!(created.metadata.generation, Some(1));

    let (header, row) = table_row(&kubectl.run(&["get", "cronjobs"]).await, "hello");
    assert_eq!(
        header,
        [
            "NAME",
            "SCHEDULE",
            "TIMEZONE",
            "SUSPEND",
            "ACTIVE",
            "LAST SCHEDULE",
            "AGE"
        ]
    );
    assert_eq!(
        row[..6],
        ["hello", "* * * * *", "Europe/Rome", "False", "0", "<none>"]
    );
    let (header, row) = table_row(&kubectl.run(&["get", "cj", "-o", "wide"]).await, "hello");
    assert_eq!(
        header[7..],
        ["CONTAINERS", "IMAGES", "SELECTOR"],
        "{header:?}"
    );
    assert_eq!(row[row.len() - 3..], ["hello", "busybox:1.28", "<none>"]);

    let out = kubectl.run(&["describe", "cronjob", "hello"]).await;
    for wanted in [
        "Name:",
        "Schedule:",
        "* * * * *",
        "Concurrency Policy:",
        "Allow",
        "busybox:1.28",
    ] {
        assert!(out.contains(wanted), "{wanted:?} missing from:\n{out}");
    }

    // `kubectl get all` includes CronJobs (category `all`).
    let out = kubectl.run(&["get", "all"]).await;
    assert!(out.contains("cronjob.batch/hello"), "{out}");

    // What the controller writes shows in the columns.
    let ten_minutes_ago = (chrono::Utc::now() - chrono::Duration::seconds(630))
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    cronjobs
        .patch_status(
            "hello",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "active": [{"apiVersion": "batch/v1", "kind": "Job", "name": "hello-1",
                    "namespace": "default", "uid": "1"}],
                "lastScheduleTime": ten_minutes_ago}})),
        )
        .await
        .unwrap();
    let (_, row) = table_row(&kubectl.run(&["get", "cronjob", "hello"]).await, "hello");
    assert_eq!(row[4..6], ["1", "10m"]);

    // Applying a changed manifest patches the CronJob (client-side, then server-side).
    std::fs::write(&manifest, MANIFEST.replace("\"* * * * *\"", "\"@hourly\"")).unwrap();
    let out = kubectl
        .run(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    assert!(out.contains("cronjob.batch/hello configured"), "{out}");
    std::fs::write(&manifest, MANIFEST.replace("Europe/Rome", "Asia/Tokyo")).unwrap();
    let out = kubectl
        .run(&[
            "apply",
            "--server-side",
            "--force-conflicts",
            "-f",
            manifest.to_str().unwrap(),
        ])
        .await;
    assert!(
        out.contains("cronjob.batch/hello serverside-applied"),
        "{out}"
    );
    let applied = cronjobs.get("hello").await.unwrap();
    let spec = applied.spec;
    assert_eq!(spec.time_zone.as_deref(), Some("Asia/Tokyo"));
    assert_eq!(applied.metadata.generation, Some(3));

    // kubectl refuses what the API server refuses.
    std::fs::write(&manifest, MANIFEST.replace("Europe/Rome", "Nowhere/Land")).unwrap();
    let out = kubectl
        .output(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unknown time zone Nowhere/Land"),
        "{stderr}"
    );

    let out = kubectl.run(&["delete", "cronjob", "hello"]).await;
    assert!(out.contains("cronjob.batch \"hello\" deleted"), "{out}");
    assert!(!common::exists(&cronjobs, "hello").await);
}
