//! Fault injection (500, 429 with Retry-After, 409, latency; watch disconnects are covered
//! in watch.rs), request accounting and the `/metrics` endpoint.

mod common;

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;
use sim::{FaultConfig, SimCluster};

/// A client that does not retry, so injected 429s are visible.
fn raw_client(cluster: &SimCluster, agent: &str) -> kube::Client {
    let mut config = kube::Config::new(cluster.url().parse().unwrap());
    config.default_retry = false;
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_str(agent).unwrap(),
    ));
    kube::Client::try_from(config).unwrap()
}

async fn create_codes(pods: &Api<Pod>, n: usize) -> Vec<u16> {
    let mut codes = Vec::new();
    for i in 0..n {
        let code = match pods
            .create(
                &PostParams::default(),
                &common::pod(&format!("p{i}"), json!({})),
            )
            .await
        {
            Ok(_) => 201,
            Err(e) => common::api_error(e).code,
        };
        codes.push(code);
    }
    codes
}

#[tokio::test]
async fn each_write_fault_kind_is_injected() {
    for (faults, code, reason) in [
        (
            FaultConfig {
                write_500: 1.0,
                ..FaultConfig::default()
            },
            500,
            "InternalError",
        ),
        (
            FaultConfig {
                write_429: 1.0,
                ..FaultConfig::default()
            },
            429,
            "TooManyRequests",
        ),
        (
            FaultConfig {
                write_409: 1.0,
                ..FaultConfig::default()
            },
            409,
            "Conflict",
        ),
    ] {
        let cluster = common::cluster_without_kubelet().await;
        cluster.set_faults(faults);
        let pods: Api<Pod> = Api::namespaced(raw_client(&cluster, "chaos"), "default");
        let status = common::create_error(&pods, &common::pod("p", json!({}))).await;
        assert_eq!((status.code, status.reason.as_str()), (code, reason));
        assert!(
            pods.list(&ListParams::default()).await.is_ok(),
            "reads are never faulted"
        );
        assert_eq!(
            cluster
                .accounting()
                .count_for_agent("chaos", "create", "pods"),
            1
        );
    }
}

#[tokio::test]
async fn too_many_requests_carries_retry_after() {
    let cluster = common::cluster_without_kubelet().await;
    cluster.set_faults(FaultConfig {
        write_429: 1.0,
        ..FaultConfig::default()
    });
    let client = raw_client(&cluster, "chaos");
    let req = http::Request::post("/api/v1/namespaces/default/pods")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&common::pod("p", json!({}))).unwrap())
        .unwrap();
    let resp = client
        .send(req.map(kube::client::Body::from))
        .await
        .unwrap();
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers().get("retry-after").unwrap(), "1");
}

#[tokio::test]
async fn faults_are_seeded_and_reproducible() {
    let faults = FaultConfig {
        seed: 42,
        write_500: 0.3,
        write_409: 0.2,
        ..FaultConfig::default()
    };
    let mut runs = Vec::new();
    for _ in 0..2 {
        let cluster = common::cluster_without_kubelet().await;
        cluster.set_faults(faults.clone());
        let pods: Api<Pod> = Api::namespaced(raw_client(&cluster, "chaos"), "default");
        runs.push(create_codes(&pods, 30).await);
    }
    assert_eq!(runs[0], runs[1]);
    assert!(
        runs[0].contains(&500) && runs[0].contains(&409) && runs[0].contains(&201),
        "{:?}",
        runs[0]
    );
}

#[tokio::test]
async fn latency_is_added() {
    let cluster = common::cluster_without_kubelet().await;
    cluster.set_faults(FaultConfig {
        latency: Duration::from_millis(150),
        ..FaultConfig::default()
    });
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let start = Instant::now();
    pods.list(&ListParams::default()).await.unwrap();
    assert!(start.elapsed() >= Duration::from_millis(150));
    cluster.set_faults(FaultConfig::default());
}

#[tokio::test]
async fn accounting_by_verb_resource_and_agent_and_metrics() {
    let cluster = common::cluster_without_kubelet().await;
    let a: Api<Pod> = Api::namespaced(cluster.client_with_user_agent("kcm/replicaset"), "default");
    let b: Api<Pod> = Api::namespaced(cluster.client_with_user_agent("kubectl/v1.32"), "default");
    common::create(&a, &common::pod("x", json!({}))).await;
    a.get("x").await.unwrap();
    a.list(&ListParams::default()).await.unwrap();
    b.list(&ListParams::default()).await.unwrap();
    b.get_status("x").await.unwrap();
    let _ = a.get("missing").await.unwrap_err();
    let acc = cluster.accounting();
    assert_eq!(acc.count("list", "pods"), 2);
    assert_eq!(acc.count("get", "pods"), 2);
    assert_eq!(acc.count("get", "pods/status"), 1);
    assert_eq!(acc.count_for_agent("kcm/", "create", "pods"), 1);
    assert_eq!(acc.total_for_agent("kcm/replicaset"), 4);
    assert_eq!(acc.total_for_agent("kubectl"), 2);
    assert!(acc.entries().contains(&(
        (
            "list".to_string(),
            "pods".to_string(),
            "kubectl/v1.32".to_string()
        ),
        1
    )));

    let req = http::Request::get("/metrics").body(Vec::new()).unwrap();
    let text = cluster.client().request_text(req).await.unwrap();
    assert!(text.contains("# TYPE sim_requests_total counter"), "{text}");
    assert!(text.contains("sim_requests_total{verb=\"get\",resource=\"pods\",user_agent=\"kcm/replicaset\",code=\"404\"} 1"), "{text}");
    assert!(text.contains("sim_requests_total{verb=\"create\",resource=\"pods\",user_agent=\"kcm/replicaset\",code=\"201\"} 1"), "{text}");
}
