//! The real kubectl (/usr/bin/kubectl) against the sim's kubeconfig: create -f, get -o json,
//! scale, patch --type=merge, patch --type=json, get --watch and delete all succeed with the
//! default client-side settings (no `--validate=false`); a Pod applied with `sh -c 'exit 0'`
//! runs to Succeeded; `kubectl drain` evicts through the `pods/eviction` subresource.

mod common;

use std::process::Stdio;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch};
use serde_json::{Value, json};
use sim::testing::Kubectl;
use tokio::io::{AsyncBufReadExt, BufReader};

const MANIFEST: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
";

#[tokio::test]
async fn kubectl_drives_a_deployment() {
    let cluster = common::cluster().await;
    let dir = tempfile::tempdir().unwrap();
    let kubectl = Kubectl::for_cluster(&cluster, dir.path());
    std::fs::write(dir.path().join("web.yaml"), MANIFEST).unwrap();
    let deployments: Api<Deployment> = Api::namespaced(cluster.client(), "default");
    let manifest = dir.path().join("web.yaml");

    let out = kubectl
        .run(&["create", "-f", manifest.to_str().unwrap()])
        .await;
    assert!(out.contains("deployment.apps/web created"), "{out}");

    let out = kubectl
        .run(&["get", "deployment", "web", "-o", "json"])
        .await;
    let got: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(got["spec"]["replicas"], 2);
    assert_eq!(got["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
    assert_eq!(got["metadata"]["generation"], 1);

    // Human output is a server-side Table with upstream's columns.
    let out = kubectl.run(&["get", "deployments"]).await;
    let header: Vec<&str> = out
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        vec!["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
        "{out}"
    );
    assert!(
        out.lines().nth(1).is_some_and(|l| l.starts_with("web ")),
        "{out}"
    );

    kubectl
        .run(&["scale", "deployment", "web", "--replicas=3"])
        .await;
    assert_eq!(
        deployments.get("web").await.unwrap().spec.unwrap().replicas,
        Some(3)
    );

    kubectl
        .run(&[
            "patch",
            "deployment",
            "web",
            "--type=merge",
            "-p",
            r#"{"metadata":{"labels":{"team":"a"}}}"#,
        ])
        .await;
    assert_eq!(
        deployments
            .get("web")
            .await
            .unwrap()
            .metadata
            .labels
            .unwrap()["team"],
        "a"
    );

    kubectl
        .run(&[
            "patch",
            "deployment",
            "web",
            "--type=json",
            "-p",
            r#"[{"op":"replace","path":"/spec/replicas","value":1}]"#,
        ])
        .await;
    assert_eq!(
        deployments.get("web").await.unwrap().spec.unwrap().replicas,
        Some(1)
    );

    // get --watch: the current state first, then each change.
    let mut watch = kubectl
        .command()
        .args([
            "get",
            "deployment",
            "web",
            "--watch",
            "-o",
            "jsonpath={.spec.replicas}{\"\\n\"}",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    let mut next_line = async || {
        tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
    };
    assert_eq!(next_line().await, "1");
    // kubectl prints the object it GETs, then watches from resourceVersion 0 and skips the
    // watch's first (initial) event: a change made before the watch is open would come as
    // that initial event and never be printed. Change it only once kubectl is watching.
    let watching = || {
        cluster
            .accounting()
            .count_for_agent("kubectl", "watch", "deployments")
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while watching() == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "kubectl never opened its watch"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for replicas in [4, 5] {
        common::patch(
            &deployments,
            "web",
            Patch::Merge(json!({"spec": {"replicas": replicas}})),
        )
        .await;
        assert_eq!(next_line().await, replicas.to_string());
    }
    watch.kill().await.unwrap();

    let out = kubectl.run(&["delete", "deployment", "web"]).await;
    assert!(out.contains("deployment.apps \"web\" deleted"), "{out}");
    assert!(!common::exists(&deployments, "web").await);
    let agents = cluster.accounting();
    assert!(
        agents.total_for_agent("kubectl") >= 7,
        "{:?}",
        agents.entries()
    );
}

const BATCH_POD: &str = "apiVersion: v1
kind: Pod
metadata:
  name: once
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox:1.36
    command: [\"sh\", \"-c\", \"exit 0\"]
";

/// Polls `kubectl get pod name -o jsonpath=...` until it prints `wanted`.
async fn kubectl_waits_for(kubectl: &Kubectl, name: &str, jsonpath: &str, wanted: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut last = String::new();
    while last != wanted {
        assert!(
            tokio::time::Instant::now() < deadline,
            "pod {name}: {jsonpath} still {last:?}, not {wanted:?}"
        );
        last = kubectl
            .run(&["get", "pod", name, "-o", &format!("jsonpath={jsonpath}")])
            .await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn kubectl_applies_a_pod_that_runs_to_completion() {
    let cluster = common::cluster().await;
    let dir = tempfile::tempdir().unwrap();
    let kubectl = Kubectl::for_cluster(&cluster, dir.path());
    let manifest = dir.path().join("once.yaml");
    std::fs::write(&manifest, BATCH_POD).unwrap();

    let out = kubectl
        .run(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    assert!(out.contains("pod/once created"), "{out}");
    kubectl_waits_for(&kubectl, "once", "{.status.phase}", "Succeeded").await;
    let exit = kubectl
        .run(&[
            "get",
            "pod",
            "once",
            "-o",
            "jsonpath={.status.containerStatuses[0].state.terminated.exitCode} {.status.containerStatuses[0].state.terminated.reason}",
        ])
        .await;
    assert_eq!(exit, "0 Completed");
}

#[tokio::test]
async fn kubectl_drain_evicts_through_the_eviction_subresource() {
    let cluster = common::cluster().await;
    let dir = tempfile::tempdir().unwrap();
    let kubectl = Kubectl::for_cluster(&cluster, dir.path());
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(cluster.client(), "default");
    common::create(&pods, &common::pod("lonely", json!({}))).await;
    common::eventually("lonely scheduled", || async {
        pods.get("lonely")
            .await
            .ok()
            .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some())
    })
    .await;

    let out = kubectl
        .run(&[
            "drain",
            "sim-node",
            "--force",
            "--ignore-daemonsets",
            "--timeout=30s",
        ])
        .await;
    assert!(out.contains("pod/lonely evicted"), "{out}");
    assert!(!common::exists(&pods, "lonely").await);
    assert_eq!(
        cluster
            .accounting()
            .count_for_agent("kubectl", "create", "pods/eviction"),
        1,
        "evicted, not deleted: {:?}",
        cluster.accounting().entries()
    );
}
