//! Runs the real `kube-sim` binary: it prints its URL and kubeconfig path, serves the API
//! with the kubelet timings and faults from its flags, and exits on SIGTERM.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

#[tokio::test]
async fn prints_where_it_serves_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kube-sim"))
        .args(["--port", "0", "--kubeconfig-out"])
        .arg(&kubeconfig)
        .args(["--no-kubelet", "--fault-write-409", "1.0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let url = first
        .strip_prefix("kube-sim serving at ")
        .expect("URL line")
        .to_string();
    let second = lines.next_line().await.unwrap().unwrap();
    assert_eq!(
        second,
        format!("kubeconfig written to {}", kubeconfig.display())
    );

    let yaml = std::fs::read_to_string(&kubeconfig).unwrap();
    assert!(yaml.contains(&format!("server: {url}")), "{yaml}");
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::from_yaml(&yaml).unwrap(),
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let version = client.apiserver_version().await.unwrap();
    assert_eq!(version.major, "1");
    let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(client);
    let ns: k8s_openapi::api::core::v1::Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "x"}})).unwrap();
    let err = namespaces
        .create(&Default::default(), &ns)
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(s) if s.code == 409),
        "--fault-write-409 applied"
    );

    let pid = child.id().expect("running") as i32;
    let status = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .await
        .unwrap();
    assert!(status.success());
    let exit = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(exit.success(), "clean exit on SIGTERM: {exit:?}");
}
