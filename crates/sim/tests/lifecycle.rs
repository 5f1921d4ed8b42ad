//! Starting and stopping: the kubeconfig works for `kube::Config`, `start_on` binds the
//! asked address, and shutdown ends open watches and closes the port.

mod common;

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, ListParams, WatchParams};
use sim::{SimCluster, SimConfig};

#[tokio::test]
async fn kubeconfig_drives_kube_config() {
    let cluster = common::cluster().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    cluster.write_kubeconfig(&path).unwrap();
    let kubeconfig = kube::config::Kubeconfig::read_from(&path).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    assert_eq!(
        config.cluster_url.to_string().trim_end_matches('/'),
        cluster.url()
    );
    assert_eq!(config.default_namespace, "default");
    let client = kube::Client::try_from(config).unwrap();
    let namespaces: Api<Namespace> = Api::all(client);
    assert_eq!(
        namespaces
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        3
    );
    assert!(cluster.url().starts_with("http://127.0.0.1:"));
    assert_eq!(cluster.addr().ip().to_string(), "127.0.0.1");
}

#[tokio::test]
async fn start_on_a_given_address_and_shutdown() {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = probe.local_addr().unwrap();
    drop(probe);
    let cluster = SimCluster::start_on(addr, SimConfig::default())
        .await
        .unwrap();
    assert_eq!(cluster.addr(), addr);
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let mut watch = pods
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    cluster.shutdown().await;
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        while let Ok(Some(_)) = watch.try_next().await {}
    })
    .await;
    assert!(ended.is_ok(), "open watches end at shutdown");
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "port closed"
    );
}

#[tokio::test]
async fn binding_a_busy_port_fails() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let err = SimCluster::start_on(busy.local_addr().unwrap(), SimConfig::default())
        .await
        .unwrap_err();
    assert!(matches!(err, sim::SimError::Bind { .. }), "{err}");
}
