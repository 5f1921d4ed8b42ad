//! Watch semantics: `kube::runtime::watcher` listing (paged) and watching unchanged,
//! resumption from a resourceVersion, 410 on an expired version (raw and through the
//! watcher, which must re-list), bookmarks, timeoutSeconds and forced disconnects.

mod common;

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, WatchEvent, WatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use sim::{FaultConfig, SimCluster, SimConfig};

fn name_of(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

async fn next_event<S>(stream: &mut S) -> watcher::Event<Pod>
where
    S: futures::Stream<Item = Result<watcher::Event<Pod>, watcher::Error>> + Unpin,
{
    loop {
        let item = tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .expect("watcher event in time");
        match item {
            Some(Ok(event)) => return event,
            Some(Err(_)) => continue,
            None => panic!("watcher ended"),
        }
    }
}

/// Reads watcher events until an `Apply` of `name` arrives; returns the number of `Init`s seen.
async fn until_applied<S>(stream: &mut S, name: &str) -> usize
where
    S: futures::Stream<Item = Result<watcher::Event<Pod>, watcher::Error>> + Unpin,
{
    let mut inits = 0;
    loop {
        match next_event(stream).await {
            watcher::Event::Init => inits += 1,
            watcher::Event::Apply(p) | watcher::Event::InitApply(p) if name_of(&p) == name => {
                return inits;
            }
            _ => {}
        }
    }
}

/// A cluster that ends every watch after `period`.
async fn cluster_disconnecting_watches_every(period: Duration) -> SimCluster {
    let faults = FaultConfig {
        watch_disconnect_every: Some(period),
        ..FaultConfig::default()
    };
    common::cluster_with(SimConfig {
        faults,
        ..SimConfig::default()
    })
    .await
}

#[tokio::test]
async fn watcher_lists_in_pages_and_watches() {
    let (cluster, pods) = common::quiet_api::<Pod>().await;
    for i in 0..5 {
        common::create(&pods, &common::pod(&format!("p{i}"), json!({"app": "web"}))).await;
    }
    let config = watcher::Config::default().page_size(2);
    let mut stream = watcher(pods.clone(), config).boxed();
    assert!(matches!(
        next_event(&mut stream).await,
        watcher::Event::Init
    ));
    let mut listed = Vec::new();
    loop {
        match next_event(&mut stream).await {
            watcher::Event::InitApply(p) => listed.push(name_of(&p)),
            watcher::Event::InitDone => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(listed, vec!["p0", "p1", "p2", "p3", "p4"]);
    assert!(
        cluster.accounting().count("list", "pods") >= 3,
        "paged list"
    );
    common::create(&pods, &common::pod("late", json!({}))).await;
    match next_event(&mut stream).await {
        watcher::Event::Apply(p) => assert_eq!(name_of(&p), "late"),
        other => panic!("unexpected {other:?}"),
    }
    common::delete(&pods, "late", &Default::default()).await;
    match next_event(&mut stream).await {
        watcher::Event::Delete(p) => assert_eq!(name_of(&p), "late"),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn watch_resumes_from_a_resource_version() {
    let (_cluster, pods) = common::quiet_api::<Pod>().await;
    let a = common::create(&pods, &common::pod("a", json!({}))).await;
    let rv_a = a.metadata.resource_version.unwrap();
    common::create(&pods, &common::pod("b", json!({}))).await;
    common::create(&pods, &common::pod("c", json!({}))).await;
    let mut stream = pods
        .watch(&WatchParams::default().timeout(2), &rv_a)
        .await
        .unwrap()
        .boxed();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        match stream.try_next().await.unwrap() {
            Some(WatchEvent::Added(p)) => seen.push(name_of(&p)),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(
        seen,
        vec!["b", "c"],
        "only events newer than the version are replayed"
    );
}

#[tokio::test]
async fn watch_from_an_expired_version_gets_410() {
    let (cluster, pods) = common::quiet_api::<Pod>().await;
    let a = common::create(&pods, &common::pod("a", json!({}))).await;
    common::create(&pods, &common::pod("b", json!({}))).await;
    cluster.compact();
    let rv = a.metadata.resource_version.unwrap();
    let mut stream = pods
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    match stream.try_next().await.unwrap() {
        Some(WatchEvent::Error(status)) => {
            assert_eq!(status.code, 410);
            assert_eq!(status.reason, "Expired");
            assert!(
                status
                    .message
                    .starts_with(&format!("too old resource version: {rv} (")),
                "{}",
                status.message
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(
        stream.try_next().await.unwrap().is_none(),
        "stream closes after the error"
    );
}

#[tokio::test]
async fn a_small_watch_window_expires_old_versions() {
    let config = SimConfig {
        watch_window: 2,
        ..SimConfig::default()
    };
    let cluster = common::cluster_with(config).await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let first = common::create(&pods, &common::pod("a", json!({}))).await;
    for name in ["b", "c", "d"] {
        common::create(&pods, &common::pod(name, json!({}))).await;
    }
    let mut stream = pods
        .watch(
            &WatchParams::default(),
            &first.metadata.resource_version.unwrap(),
        )
        .await
        .unwrap()
        .boxed();
    assert!(
        matches!(stream.try_next().await.unwrap(), Some(WatchEvent::Error(s)) if s.code == 410)
    );
}

#[tokio::test]
async fn bookmarks_carry_progress_and_end_on_timeout() {
    let (cluster, pods) = common::quiet_api::<Pod>().await;
    let rv = common::list_resource_version(&pods).await;
    let started = std::time::Instant::now();
    let mut stream = pods
        .watch(&WatchParams::default().timeout(2), &rv)
        .await
        .unwrap()
        .boxed();
    // A write to another resource moves the global version; the bookmark reports it.
    let deployments: Api<Deployment> = Api::namespaced(cluster.client(), "default");
    let d = common::create(&deployments, &common::deployment("web", 1)).await;
    let d_rv: u64 = d.metadata.resource_version.unwrap().parse().unwrap();
    let mut bookmarks = Vec::new();
    while let Some(event) = stream.try_next().await.unwrap() {
        match event {
            WatchEvent::Bookmark(b) => {
                bookmarks.push(b.metadata.resource_version.parse::<u64>().unwrap())
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(!bookmarks.is_empty(), "at least one bookmark");
    assert!(
        bookmarks.iter().all(|b| *b >= d_rv),
        "{bookmarks:?} >= {d_rv}"
    );
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(1900),
        "timeoutSeconds honoured: {elapsed:?}"
    );
    // Without allowWatchBookmarks no bookmark is sent.
    let mut stream = pods
        .watch(&WatchParams::default().disable_bookmarks().timeout(1), &rv)
        .await
        .unwrap()
        .boxed();
    assert!(stream.try_next().await.unwrap().is_none());
}

#[tokio::test]
async fn watcher_survives_forced_disconnects() {
    let cluster = cluster_disconnecting_watches_every(Duration::from_millis(150)).await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let mut stream = watcher(pods.clone(), watcher::Config::default())
        .default_backoff()
        .boxed();
    common::create(&pods, &common::pod("first", json!({}))).await;
    until_applied(&mut stream, "first").await;
    for i in 0..3 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let name = format!("after-{i}");
        common::create(&pods, &common::pod(&name, json!({}))).await;
        until_applied(&mut stream, &name).await;
    }
    assert!(
        cluster.accounting().count("watch", "pods") >= 3,
        "re-watched after disconnects"
    );
}

#[tokio::test]
async fn watcher_relists_after_410() {
    let cluster = cluster_disconnecting_watches_every(Duration::from_millis(200)).await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    common::create(&pods, &common::pod("first", json!({}))).await;
    let mut stream = watcher(pods.clone(), watcher::Config::default())
        .default_backoff()
        .boxed();
    assert_eq!(until_applied(&mut stream, "first").await, 1);
    // Move the global version past the watcher's and forget the window: its next
    // re-watch is too old, gets 410, and it must list again.
    let deployments: Api<Deployment> = Api::namespaced(cluster.client(), "default");
    common::create(&deployments, &common::deployment("web", 1)).await;
    cluster.compact();
    common::create(&pods, &common::pod("second", json!({}))).await;
    let reinits = until_applied(&mut stream, "second").await;
    assert!(reinits >= 1, "the watcher restarted with Init after 410");
    assert!(
        cluster.accounting().count("list", "pods") >= 2,
        "listed again"
    );
}

#[tokio::test]
async fn watcher_with_streaming_lists() {
    let (cluster, pods) = common::quiet_api::<Pod>().await;
    for name in ["a", "b"] {
        common::create(&pods, &common::pod(name, json!({}))).await;
    }
    let mut stream = watcher(pods.clone(), watcher::Config::default().streaming_lists()).boxed();
    let mut listed = Vec::new();
    loop {
        match next_event(&mut stream).await {
            watcher::Event::Init => {}
            watcher::Event::InitApply(p) => listed.push(name_of(&p)),
            watcher::Event::InitDone => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(listed, vec!["a", "b"]);
    assert_eq!(
        cluster.accounting().count("list", "pods"),
        0,
        "no list with streaming lists"
    );
    common::create(&pods, &common::pod("c", json!({}))).await;
    assert!(
        matches!(next_event(&mut stream).await, watcher::Event::Apply(p) if name_of(&p) == "c")
    );
}

#[tokio::test]
async fn raw_watch_frames_have_upstream_shapes() {
    let (cluster, pods) = common::quiet_api::<Pod>().await;
    let a = common::create(&pods, &common::pod("a", json!({"app": "web"}))).await;
    let rv = a.metadata.resource_version.unwrap();
    common::create(&pods, &common::pod("b", json!({"app": "web"}))).await;
    let client = cluster.client();
    let get = |path: String| http::Request::get(path).body(Vec::new()).unwrap();

    // Replay + bookmark at timeout, one JSON object per line.
    let text = client
        .request_text(get(format!(
            "/api/v1/namespaces/default/pods?watch=true&allowWatchBookmarks=true&timeoutSeconds=1&resourceVersion={rv}"
        )))
        .await
        .unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "ADDED");
    assert_eq!(lines[0]["object"]["metadata"]["name"], "b");
    assert_eq!(lines[0]["object"]["kind"], "Pod");
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "BOOKMARK");
    assert_eq!(last["object"]["kind"], "Pod");
    assert_eq!(last["object"]["apiVersion"], "v1");
    assert!(
        last["object"]["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .is_ok()
    );

    // 410: exactly the event the README of the fixtures shows, then the stream closes.
    cluster.compact();
    let current = common::list_resource_version(&pods).await;
    let text = client
        .request_text(get(format!(
            "/api/v1/namespaces/default/pods?watch=true&resourceVersion={rv}"
        )))
        .await
        .unwrap();
    assert_eq!(
        text,
        format!(
            "{{\"type\":\"ERROR\",\"object\":{{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{{}},\"status\":\"Failure\",\"message\":\"too old resource version: {rv} ({current})\",\"reason\":\"Expired\",\"code\":410}}}}\n"
        )
    );
}
