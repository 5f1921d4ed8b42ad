//! Informers against the in-process sim API server over real HTTP: handler order, relist after
//! a lost watch, resync, sharing one watch between controllers, indexes and the transform.

mod support;

use std::time::Duration;

use informer::{
    BarrierReport, CachedPod, CatchUp, FactoryConfig, HandedOver, LabelMatcher,
    POD_CONTROLLER_UID_INDEX, SharedInformerFactory, orphan_pod_index_key, pod_controller_index,
    wait_for_cache_sync,
};
use k8s_openapi::api::{
    apps::v1::{Deployment, ReplicaSet},
    core::v1::Pod,
};
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use sim::{
    SimCluster,
    testing::{quiet_config, workload},
};
use support::{
    RecordedPods, eventually, pod,
    proxy::Proxy,
    recorder::{Call, Recorder},
};
use tokio_util::sync::CancellationToken;

type TestResult = anyhow::Result<()>;

fn rv(obj: &impl kube::Resource) -> String {
    obj.meta().resource_version.clone().unwrap_or_default()
}

fn immediately() -> DeleteParams {
    DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::default()
    }
}

/// A quiet sim (no kubelet, so pods change only when the test changes them) and the pods of
/// its `default` namespace.
async fn start_sim() -> anyhow::Result<(SimCluster, Api<Pod>)> {
    let sim = SimCluster::start(quiet_config()).await?;
    let api = Api::namespaced(sim.client(), "default");
    Ok((sim, api))
}

/// Creates [`pod`]`(name, labels)` through `api` and returns it as stored.
async fn create_pod(api: &Api<Pod>, name: &str, labels: &[(&str, &str)]) -> kube::Result<Pod> {
    api.create(&PostParams::default(), &pod(name, labels)).await
}

/// Stops the test's informers, then the sim.
async fn stop(sim: SimCluster, informers: CancellationToken) -> TestResult {
    informers.cancel();
    sim.shutdown().await;
    Ok(())
}

/// The pod informer listed once and watched once: nothing since needed the server again.
fn assert_one_list_and_one_watch(sim: &SimCluster) {
    let accounting = sim.accounting();
    assert_eq!(accounting.count("list", "pods"), 1);
    assert_eq!(accounting.count("watch", "pods"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handlers_see_add_update_delete_in_order() -> TestResult {
    let (sim, api) = start_sim().await?;
    let existing = create_pod(&api, "old-0", &[]).await?;

    let RecordedPods {
        pods,
        recorder,
        shutdown,
    } = RecordedPods::start(sim.client(), FactoryConfig::default()).await;
    assert_eq!(
        recorder.calls(),
        [Call::Add {
            key: "default/old-0".into(),
            rv: rv(&existing),
            initial: true
        }]
    );

    let created = create_pod(&api, "web-0", &[("app", "web")]).await?;
    let patch = serde_json::json!({ "metadata": { "labels": { "tier": "fe" } } });
    let patched = api
        .patch("web-0", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    api.delete("web-0", &immediately()).await?;
    eventually("the delete notification", || {
        matches!(
            recorder.calls_for("default/web-0").last(),
            Some(Call::Delete { .. })
        )
    })
    .await;

    let calls = recorder.calls_for("default/web-0");
    assert_eq!(
        calls[0],
        Call::Add {
            key: "default/web-0".into(),
            rv: rv(&created),
            initial: false
        }
    );
    assert_eq!(
        calls[1],
        Call::Update {
            key: "default/web-0".into(),
            old_rv: rv(&created),
            new_rv: rv(&patched),
            same_object: false
        }
    );
    // Any further updates (e.g. a deletionTimestamp) must chain on the previous state.
    let mut last_rv = rv(&patched);
    for call in &calls[2..calls.len() - 1] {
        let Call::Update { old_rv, new_rv, .. } = call else {
            panic!("only updates between patch and delete, got {call:?}");
        };
        assert_eq!(*old_rv, last_rv, "updates arrive in order");
        last_rv = new_rv.clone();
    }
    assert!(
        matches!(
            calls.last(),
            Some(Call::Delete {
                final_state: true,
                ..
            })
        ),
        "{calls:?}"
    );
    assert!(pods.lister().get("default", "web-0").is_none());
    assert!(pods.lister().get("default", "old-0").is_some());

    stop(sim, shutdown).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relist_after_lost_watch_delivers_missed_deletes_as_unknown() -> TestResult {
    let (sim, api) = start_sim().await?;
    let a = create_pod(&api, "a", &[]).await?;
    let b = create_pod(&api, "b", &[]).await?;
    create_pod(&api, "unchanged", &[]).await?;

    let proxy = Proxy::start(sim.addr()).await?;
    let RecordedPods {
        pods,
        recorder,
        shutdown,
    } = RecordedPods::start(proxy.client(), FactoryConfig::default()).await;
    assert_eq!(recorder.calls().len(), 3);
    recorder.clear();

    // While the informer is cut off: delete b, change a, create c; then forget the history.
    proxy.pause();
    api.delete("b", &immediately()).await?;
    let patch = serde_json::json!({ "metadata": { "labels": { "changed": "yes" } } });
    let a2 = api
        .patch("a", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    let c = create_pod(&api, "c", &[]).await?;
    sim.compact();
    proxy.resume();

    eventually("the relist notifications", || recorder.calls().len() >= 3).await;
    let calls = recorder.calls();
    assert_eq!(
        calls[0],
        Call::Delete {
            key: "default/b".into(),
            rv: rv(&b),
            final_state: false
        },
        "vanished objects come first, as DeletedFinalStateUnknown: {calls:?}"
    );
    assert!(calls.contains(&Call::Update {
        key: "default/a".into(),
        old_rv: rv(&a),
        new_rv: rv(&a2),
        same_object: false
    }));
    assert!(calls.contains(&Call::Add {
        key: "default/c".into(),
        rv: rv(&c),
        initial: false
    }));
    assert_eq!(
        calls.len(),
        3,
        "an unchanged object is not re-delivered: {calls:?}"
    );
    let names: Vec<String> = pods
        .lister()
        .list(&LabelMatcher::default())
        .iter()
        .map(|p| p.name_any())
        .collect();
    assert_eq!(names, ["a", "c", "unchanged"]);
    assert!(
        sim.accounting().count("list", "pods") >= 2,
        "the informer relisted"
    );

    stop(sim, shutdown).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resync_redelivers_cached_objects_without_contacting_the_server() -> TestResult {
    let (sim, api) = start_sim().await?;
    let a = create_pod(&api, "a", &[]).await?;

    let config = FactoryConfig {
        default_resync: Duration::from_millis(200),
        ..FactoryConfig::default()
    };
    let RecordedPods {
        recorder, shutdown, ..
    } = RecordedPods::start(sim.client(), config).await;

    let resync = Call::Update {
        key: "default/a".into(),
        old_rv: rv(&a),
        new_rv: rv(&a),
        same_object: true,
    };
    eventually("two resyncs", || {
        recorder.calls().iter().filter(|c| **c == resync).count() >= 2
    })
    .await;
    assert_one_list_and_one_watch(&sim);

    stop(sim, shutdown).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_controllers_share_one_list_and_watch() -> TestResult {
    let (sim, api) = start_sim().await?;
    let factory = SharedInformerFactory::new(sim.client(), FactoryConfig::default());
    // Two controllers each ask for the pod informer and register their handler.
    let first = Recorder::default();
    let second = Recorder::default();
    let first_registration = factory.informer::<Pod>().add_event_handler(first.clone());
    let second_registration = factory.informer::<Pod>().add_event_handler(second.clone());
    let replicasets = factory.informer::<ReplicaSet>();
    let shutdown = CancellationToken::new();
    factory.start(shutdown.clone());
    factory.start(shutdown.clone());
    assert_eq!(factory.started_count(), 2);
    assert!(
        wait_for_cache_sync(
            &shutdown,
            &[&first_registration, &second_registration, &replicasets]
        )
        .await
    );

    create_pod(&api, "web-0", &[]).await?;
    eventually("both handlers", || {
        first.calls().len() == 1 && second.calls().len() == 1
    })
    .await;
    assert_eq!(first.calls(), second.calls());

    assert_one_list_and_one_watch(&sim);
    assert_eq!(sim.accounting().count("list", "replicasets"), 1);

    // An informer requested after start waits for the next start.
    let deployments = factory.informer::<Deployment>();
    assert_eq!(factory.started_count(), 2);
    factory.start(shutdown.clone());
    assert_eq!(factory.started_count(), 3);
    assert!(wait_for_cache_sync(&shutdown, &[&deployments]).await);
    assert_eq!(sim.accounting().count("list", "pods"), 1);

    stop(sim, shutdown).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_controller_uid_index_added_after_start_finds_owned_and_orphan_pods() -> TestResult {
    let (sim, api) = start_sim().await?;
    let rs: ReplicaSet = serde_json::from_value(workload("ReplicaSet", "web", 0))?;
    let rs = Api::<ReplicaSet>::namespaced(sim.client(), "default")
        .create(&PostParams::default(), &rs)
        .await?;
    let uid = rs.uid().unwrap_or_default();
    let owner_key = informer::controller_index_key("default", "ReplicaSet", "web", &uid);
    let mut owned = pod("owned", &[("app", "web")]);
    owned.metadata.owner_references = Some(vec![
        k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: "web".into(),
            uid: uid.clone(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        },
    ]);
    api.create(&PostParams::default(), &owned).await?;
    create_pod(&api, "orphan", &[("app", "web")]).await?;

    let factory = SharedInformerFactory::new(sim.client(), FactoryConfig::default());
    let pods = factory.informer::<CachedPod>();
    let shutdown = CancellationToken::new();
    factory.start(shutdown.clone());
    assert!(wait_for_cache_sync(&shutdown, &[&pods]).await);
    pods.add_indexer(POD_CONTROLLER_UID_INDEX, pod_controller_index)?;
    pods.add_indexer(POD_CONTROLLER_UID_INDEX, pod_controller_index)?;

    let lister = pods.lister();
    let names = |pods: Vec<std::sync::Arc<CachedPod>>| {
        pods.iter().map(|p| p.name_any()).collect::<Vec<_>>()
    };
    assert_eq!(
        names(lister.by_index(POD_CONTROLLER_UID_INDEX, &owner_key)),
        ["owned"]
    );
    assert_eq!(
        names(lister.by_index(POD_CONTROLLER_UID_INDEX, &orphan_pod_index_key("default"))),
        ["orphan"]
    );

    // Later pods are indexed as they arrive.
    let mut second = owned.clone();
    second.metadata.name = Some("owned-2".into());
    api.create(&PostParams::default(), &second).await?;
    eventually("the new pod in the index", || {
        lister.by_index(POD_CONTROLLER_UID_INDEX, &owner_key).len() == 2
    })
    .await;

    stop(sim, shutdown).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transform_drops_managed_fields_before_caching() -> TestResult {
    let (sim, api) = start_sim().await?;
    let mut with_fields = pod("web-0", &[]);
    with_fields.metadata.managed_fields = Some(vec![
        k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry {
            manager: Some("kubectl".into()),
            operation: Some("Update".into()),
            api_version: Some("v1".into()),
            ..Default::default()
        },
    ]);
    let created = api.create(&PostParams::default(), &with_fields).await?;
    assert!(
        created.metadata.managed_fields.is_some(),
        "precondition: the server returns managedFields"
    );

    let shutdown = CancellationToken::new();
    let mut cached = Vec::new();
    for drop_managed_fields in [true, false] {
        let config = FactoryConfig {
            drop_managed_fields,
            ..FactoryConfig::default()
        };
        let factory = SharedInformerFactory::new(sim.client(), config);
        let pods = factory.informer::<Pod>();
        factory.start(shutdown.clone());
        assert!(wait_for_cache_sync(&shutdown, &[&pods]).await);
        cached.push(pods.lister().get("default", "web-0"));
    }
    let [Some(dropped), Some(kept)] = cached.as_slice() else {
        panic!("both informers must cache the pod: {cached:?}");
    };
    assert!(dropped.metadata.managed_fields.is_none());
    assert_eq!(
        kept.metadata.managed_fields,
        created.metadata.managed_fields
    );

    stop(sim, shutdown).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_disconnects_resume_without_relist_or_duplicates() -> TestResult {
    let (sim, api) = start_sim().await?;
    sim.set_faults(sim::FaultConfig {
        watch_disconnect_every: Some(Duration::from_millis(150)),
        ..sim::FaultConfig::default()
    });
    let RecordedPods {
        recorder, shutdown, ..
    } = RecordedPods::start(sim.client(), FactoryConfig::default()).await;

    let mut created = Vec::new();
    for i in 0..5 {
        created.push(create_pod(&api, &format!("p{i}"), &[]).await?);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eventually("every add", || recorder.calls().len() == created.len()).await;
    let want: Vec<Call> = created
        .iter()
        .map(|p| Call::Add {
            key: format!("default/{}", p.name_any()),
            rv: rv(p),
            initial: false,
        })
        .collect();
    assert_eq!(recorder.calls(), want);
    let accounting = sim.accounting();
    assert!(
        accounting.count("watch", "pods") > 1,
        "the watch was cut and resumed"
    );
    assert_eq!(
        accounting.count("list", "pods"),
        1,
        "resuming needs no relist"
    );

    stop(sim, shutdown).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initial_list_is_paged_and_applied_as_one_list() -> TestResult {
    let (sim, api) = start_sim().await?;
    let count = informer::LIST_PAGE_SIZE as usize + 20;
    for i in 0..count {
        create_pod(&api, &format!("p{i:04}"), &[]).await?;
    }
    let RecordedPods {
        pods,
        recorder,
        shutdown,
    } = RecordedPods::start(sim.client(), FactoryConfig::default()).await;

    let calls = recorder.calls();
    assert_eq!(calls.len(), count);
    assert!(
        calls
            .iter()
            .all(|call| matches!(call, Call::Add { initial: true, .. }))
    );
    assert_eq!(pods.lister().len(), count);
    assert_eq!(
        sim.accounting().count("list", "pods"),
        2,
        "two pages of 500"
    );

    stop(sim, shutdown).await
}

/// A started pod informer of its own factory, synced.
async fn synced_pods(sim: &SimCluster) -> (SharedInformerFactory, CancellationToken) {
    let factory = SharedInformerFactory::new(sim.client(), FactoryConfig::default());
    let pods = factory.informer::<Pod>();
    let shutdown = CancellationToken::new();
    factory.start(shutdown.clone());
    assert!(wait_for_cache_sync(&shutdown, &[&pods]).await);
    (factory, shutdown)
}

/// A read barrier's scene: the sim, a synced pod informer (its factory and shutdown), then the
/// pod `late` created, whose events reach watchers `lag` late (the sim's lag fault, label key
/// `lag`), not yet in the cache.
async fn late_pod(
    lag: Duration,
) -> anyhow::Result<(SimCluster, SharedInformerFactory, CancellationToken, Pod)> {
    let (sim, api) = start_sim().await?;
    sim.set_faults(sim::FaultConfig::watch_lag("lag", lag));
    let (factory, shutdown) = synced_pods(&sim).await;
    let late = create_pod(&api, "late", &[("lag", "yes")]).await?;
    let cached = factory.informer::<Pod>().lister().get("default", "late");
    assert!(cached.is_none(), "the event lags");
    Ok((sim, factory, shutdown, late))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_read_barrier_of_an_idle_resource_passes_on_a_bookmark() -> TestResult {
    let (sim, _) = start_sim().await?;
    let (factory, shutdown) = synced_pods(&sim).await;
    // Writes to another resource move the cluster's version past the pods' last one.
    let deployments: Api<Deployment> = Api::namespaced(sim.client(), "default");
    let deployment: Deployment = serde_json::from_value(workload("Deployment", "web", 1))?;
    deployments
        .create(&PostParams::default(), &deployment)
        .await?;

    let report = barrier(&factory, CatchUp::after(Duration::from_secs(30)), &shutdown).await;
    let pods = &report.resources[0];
    assert_eq!(pods.resource, "pods");
    assert!(!pods.relisted, "a bookmark, not a relist: {report:?}");
    let target = pods.target.expect("an integer version");
    let seen = factory.informer::<Pod>().last_sync_resource_version();
    assert!(seen >= Some(target), "seen {seen:?}, target {target}");
    assert!(report.waited < Duration::from_secs(3), "{report:?}");
    let accounting = sim.accounting();
    assert_eq!(
        accounting.count("list", "pods"),
        2,
        "the first list and the barrier's consistent read"
    );
    assert_eq!(accounting.count("watch", "pods"), 1);

    stop(sim, shutdown).await
}

/// The read barrier with the targets a previous leader handed over, 30 s to catch up.
async fn barrier_handed(
    factory: &SharedInformerFactory,
    handed_over: &HandedOver,
    shutdown: &CancellationToken,
) -> BarrierReport {
    let catch_up = CatchUp::after(Duration::from_secs(30));
    let report = factory.read_barrier(catch_up, handed_over, shutdown).await;
    report.expect("not shut down")
}

/// The read barrier of a leader that was handed nothing over.
async fn barrier(
    factory: &SharedInformerFactory,
    catch_up: CatchUp,
    shutdown: &CancellationToken,
) -> BarrierReport {
    let report = factory
        .read_barrier(catch_up, &HandedOver::new(), shutdown)
        .await;
    report.expect("not shut down")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handed_over_version_the_cache_holds_passes_without_a_read_or_a_bookmark() -> TestResult {
    let (sim, api) = start_sim().await?;
    let (factory, shutdown) = synced_pods(&sim).await;
    let last = create_pod(&api, "last", &[]).await?;
    let pods = factory.informer::<Pod>().lister();
    eventually("the cache shows the pod", || {
        pods.get("default", "last").is_some()
    })
    .await;
    // The cluster's version moves past the pods' last change: a consistent read would return
    // a version the pods' watch reaches only with its next bookmark.
    let deployments: Api<Deployment> = Api::namespaced(sim.client(), "default");
    let deployment: Deployment = serde_json::from_value(workload("Deployment", "web", 1))?;
    deployments
        .create(&PostParams::default(), &deployment)
        .await?;
    let version: u64 = rv(&last).parse()?;
    let handed_over = HandedOver::from([("pods".to_string(), version)]);

    let report = barrier_handed(&factory, &handed_over, &shutdown).await;
    let part = &report.resources[0];
    assert_eq!(
        (
            part.resource.as_str(),
            part.target,
            part.handed_over,
            part.relisted
        ),
        ("pods", Some(version), true, false),
        "{report:?}"
    );
    let pod_lists = sim.accounting().count("list", "pods");
    assert_eq!(pod_lists, 1, "the first list only: no consistent read");

    stop(sim, shutdown).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handed_over_version_the_watch_has_not_delivered_yet_is_waited_for() -> TestResult {
    let (sim, factory, shutdown, late) = late_pod(Duration::from_secs(2)).await?;
    let pods = factory.informer::<Pod>().lister();
    let handed_over = HandedOver::from([("pods".to_string(), rv(&late).parse()?)]);

    let report = barrier_handed(&factory, &handed_over, &shutdown).await;
    assert!(
        pods.get("default", "late").is_some(),
        "past the barrier the cache holds the handed-over write: {report:?}"
    );
    assert!(
        report.resources[0].handed_over && !report.resources[0].relisted,
        "{report:?}"
    );
    assert_eq!(sim.accounting().count("list", "pods"), 1);

    stop(sim, shutdown).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_read_barrier_waits_for_a_lagging_watch_to_deliver_what_was_written() -> TestResult {
    let (sim, factory, shutdown, late) = late_pod(Duration::from_secs(2)).await?;
    let pods = factory.informer::<Pod>().lister();

    let report = barrier(&factory, CatchUp::after(Duration::from_secs(30)), &shutdown).await;
    assert!(
        pods.get("default", "late").is_some(),
        "past the barrier the cache holds every write before it: {report:?}"
    );
    assert!(!report.resources[0].relisted, "{report:?}");
    assert!(
        report.waited >= Duration::from_millis(1500),
        "the bookmarks wait behind the late event: {report:?}"
    );
    assert_eq!(
        pods.get("default", "late").map(|pod| rv(pod.as_ref())),
        Some(rv(&late))
    );

    stop(sim, shutdown).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_that_does_not_catch_up_in_time_relists_past_the_barrier() -> TestResult {
    let (sim, factory, shutdown, _) = late_pod(Duration::from_secs(60)).await?;

    let report = barrier(
        &factory,
        CatchUp::after(Duration::from_millis(300)),
        &shutdown,
    )
    .await;
    assert!(report.resources[0].relisted, "{report:?}");
    assert!(report.waited < Duration::from_secs(10), "{report:?}");
    let pods = factory.informer::<Pod>().lister();
    assert!(pods.get("default", "late").is_some(), "the relist shows it");
    assert_eq!(
        sim.accounting().count("list", "pods"),
        3,
        "the first list, the consistent read and the relist"
    );

    stop(sim, shutdown).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_cache_behind_its_barrier_relists_after_the_grace_not_the_bound() -> TestResult {
    let (sim, factory, shutdown, _) = late_pod(Duration::from_secs(60)).await?;

    let catch_up = CatchUp {
        bound: Duration::from_secs(30),
        ..CatchUp::DEFAULT
    };
    let report = barrier(&factory, catch_up, &shutdown).await;
    assert!(report.resources[0].relisted, "{report:?}");
    assert!(
        report.waited < Duration::from_secs(10),
        "one pod: re-listed after the grace, not the 30 s bound: {report:?}"
    );
    let pods = factory.informer::<Pod>().lister();
    assert!(pods.get("default", "late").is_some(), "the relist shows it");

    stop(sim, shutdown).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_barrier_ends_on_shutdown() -> TestResult {
    let (sim, factory, shutdown, _) = late_pod(Duration::from_secs(60)).await?;
    let stopping = shutdown.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        stopping.cancel();
    });
    assert_eq!(
        factory
            .read_barrier(
                CatchUp::after(Duration::from_secs(30)),
                &HandedOver::new(),
                &shutdown
            )
            .await,
        None
    );
    sim.shutdown().await;
    Ok(())
}
