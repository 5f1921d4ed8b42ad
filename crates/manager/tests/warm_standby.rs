//! Warm standby (`--leader-elect-warm-standby`) end to end on the sim, with two managers run
//! from real flags in this process. A standby keeps its caches synced and writes nothing while
//! it campaigns, and takes over at once when the leader gives the Lease up. When the old
//! leader's last writes (pod creates, a scale, a ReplicaSet create) reach the standby's
//! watches late (the sim's `WatchLag` fault), the read barrier keeps the new leader from acting
//! on the state before them; without the barrier it creates pods again, sends a ReplicaSet
//! create that already happened and scales from an old version.

mod support;

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use futures::StreamExt;
use k8s_openapi::api::{
    apps::v1::{Deployment, ReplicaSet},
    coordination::v1::Lease,
    core::v1::Pod,
};
use kube::{
    Api,
    api::{ListParams, PostParams},
    runtime::{WatchStreamExt, watcher},
};
use manager::leader_election::{
    Campaign, HANDOVER_ANNOTATION, LeaderElectionConfig, LeaderElectionMetrics, LeaderElector,
    parse_handover,
};
use serde_json::{Value, json};
use sim::{
    FaultConfig, SimConfig,
    testing::{eventually, is_active, workload},
};
use support::{Cluster, RunningManager, plain_get, start_adjusted_manager};
use tokio_util::sync::CancellationToken;

const LEASE: &str = "kcm-rs";
/// Every request of a manager carries this in its user agent, then ` (<identity>)`.
const MANAGER_AGENT: &str = "kcm-rs/";
const WRITE_VERBS: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];

/// A manager with short leases and `--leader-elect-warm-standby`, its read barrier on or off.
async fn start(cluster: &Cluster, read_barrier: bool) -> RunningManager {
    let flags: Vec<String> = [
        "--plain-http",
        "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
        "--kube-api-qps=1000",
        "--kube-api-burst=2000",
        "--leader-elect=true",
        "--leader-elect-lease-duration=3s",
        "--leader-elect-renew-deadline=2s",
        "--leader-elect-retry-period=500ms",
        "--leader-elect-warm-standby",
    ]
    .map(str::to_owned)
    .to_vec();
    start_adjusted_manager(
        &cluster.kubeconfig,
        manager::default_registry().expect("registry"),
        &flags,
        |options| options.leader_elect_read_barrier = read_barrier,
    )
    .await
}

/// The value of the sample of `/metrics` whose name and labels are `series`.
async fn metric(manager: &RunningManager, series: &str) -> Option<f64> {
    let (_, page) = plain_get(manager.addr, "/metrics").await.ok()?;
    page.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// Waits until `manager` says it leads.
async fn leading(manager: &RunningManager) {
    eventually("leading", Duration::from_secs(30), || async {
        let status = metric(manager, "leader_election_master_status{name=\"kcm-rs\"}").await;
        (status == Some(1.0)).then_some(())
    })
    .await;
}

/// Waits until `manager`, a warm standby, has synced its caches.
async fn standing_by_warm(manager: &RunningManager) {
    eventually("a warm standby", Duration::from_secs(30), || async {
        let synced = metric(
            manager,
            "leader_election_standby_cache_synced{name=\"kcm-rs\"}",
        )
        .await;
        let leads = metric(manager, "leader_election_master_status{name=\"kcm-rs\"}").await;
        (synced == Some(1.0) && leads == Some(0.0)).then_some(())
    })
    .await;
}

async fn lease_holder(cluster: &Cluster) -> Option<String> {
    let leases: Api<Lease> = Api::namespaced(cluster.test.client.clone(), "kube-system");
    leases
        .get_opt(LEASE)
        .await
        .ok()??
        .spec?
        .holder_identity
        .filter(|holder| !holder.is_empty())
}

/// The leader-election identity a manager's user agent ends with.
fn identity_of(agent: &str) -> Option<&str> {
    agent
        .contains(MANAGER_AGENT)
        .then(|| agent.rsplit_once(" (")?.1.strip_suffix(')'))
        .flatten()
}

/// The identities of the managers that sent requests so far.
fn identities(cluster: &Cluster) -> BTreeSet<String> {
    cluster
        .test
        .sim
        .accounting()
        .entries()
        .into_iter()
        .filter_map(|((_, _, agent), _)| identity_of(&agent).map(str::to_owned))
        .collect()
}

/// The writes of the manager `identity` so far, by "verb resource".
fn writes_of(cluster: &Cluster, identity: &str) -> BTreeMap<String, u64> {
    let mut writes = BTreeMap::new();
    for ((verb, resource, agent), count) in cluster.test.sim.accounting().entries() {
        if identity_of(&agent) == Some(identity) && WRITE_VERBS.contains(&verb.as_str()) {
            *writes.entry(format!("{verb} {resource}")).or_default() += count;
        }
    }
    writes
}

/// The requests of the manager `identity` the sim answered with `code`, by "verb resource"
/// (from the sim's `/metrics`, which counts by status code).
async fn answered(cluster: &Cluster, identity: &str, code: u16) -> BTreeMap<String, u64> {
    let request = http::Request::get("/metrics")
        .body(Vec::new())
        .expect("request");
    let text = cluster
        .test
        .client
        .request_text(request)
        .await
        .expect("sim metrics");
    let mut answered = BTreeMap::new();
    for line in text.lines() {
        let Some((labels, count)) = line
            .strip_prefix("sim_requests_total{")
            .and_then(|rest| rest.rsplit_once("} "))
        else {
            continue;
        };
        let label = |name: &str| {
            labels
                .split_once(&format!("{name}=\""))
                .and_then(|(_, rest)| rest.split_once('"'))
                .map(|(value, _)| value.to_owned())
                .unwrap_or_default()
        };
        if identity_of(&label("user_agent")) == Some(identity) && label("code") == code.to_string()
        {
            *answered
                .entry(format!("{} {}", label("verb"), label("resource")))
                .or_default() += count.trim().parse::<u64>().unwrap_or(0);
        }
    }
    answered
}

/// `workload(kind, name, replicas)` whose pods (and, for a Deployment, ReplicaSets, which copy
/// the template's labels) carry the label key `lag`; the workload itself does not.
fn lagging_workload(kind: &str, name: &str, replicas: i32) -> Value {
    let mut object = workload(kind, name, replicas);
    object["spec"]["template"]["metadata"]["labels"]["lag"] = json!("yes");
    object
}

fn typed<K: serde::de::DeserializeOwned>(object: Value) -> K {
    serde_json::from_value(object).expect("valid object")
}

/// Waits until the Deployment `name` has rolled out `replicas` replicas of its current spec.
async fn deployment_complete(cluster: &Cluster, name: &str, replicas: i32) {
    let api: Api<Deployment> = cluster.test.api();
    eventually(
        &format!("Deployment {name} complete at {replicas}"),
        Duration::from_secs(60),
        || async {
            let deployment = api.get(name).await.ok()?;
            let status = deployment.status.as_ref()?;
            let counts = [
                status.replicas,
                status.updated_replicas,
                status.available_replicas,
            ];
            (status.observed_generation == deployment.metadata.generation
                && counts == [Some(replicas); 3])
                .then_some(())
        },
    )
    .await;
}

/// The live (not terminating) pods labelled `app=<app>`.
/// Starts a rollout of Deployment `name`: its one container's image becomes `nginx:1.26`.
async fn roll_to_nginx_1_26(cluster: &Cluster, name: &str) {
    let image = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.26"}]}}}});
    cluster.test.merge_patch::<Deployment>(name, image).await;
}

async fn live_pods(cluster: &Cluster, app: &str) -> usize {
    cluster
        .test
        .pods_labelled(app)
        .await
        .iter()
        .filter(|pod| is_active(pod))
        .count()
}

/// The most live pods labelled `app=<app>` seen at once, from a watch of the test's own
/// (started before any fault, so on time) until the returned handle is dropped.
fn peak_live_pods(cluster: &Cluster, app: &str) -> (Arc<AtomicUsize>, tokio::task::JoinHandle<()>) {
    let peak = Arc::new(AtomicUsize::new(0));
    let api: Api<Pod> = cluster.test.api();
    let config = watcher::Config::default().labels(&format!("app={app}"));
    let seen = peak.clone();
    let task = tokio::spawn(async move {
        let mut live = BTreeMap::new();
        let mut events = watcher(api, config).default_backoff().boxed();
        while let Some(event) = events.next().await {
            match event {
                Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod)) => {
                    let name = pod.metadata.name.clone().unwrap_or_default();
                    live.insert(name, is_active(&pod));
                }
                Ok(watcher::Event::Delete(pod)) => {
                    live.remove(&pod.metadata.name.clone().unwrap_or_default());
                }
                _ => continue,
            }
            let now = live.values().filter(|active| **active).count();
            seen.fetch_max(now, Ordering::SeqCst);
        }
    });
    (peak, task)
}

/// The Deployment `web` of 3 rolled out by a leader, then a second manager standing by warm:
/// the leader, the standby and the standby's identity.
async fn leader_and_warm_standby(cluster: &Cluster) -> (RunningManager, RunningManager, String) {
    cluster
        .test
        .create::<Deployment>(&typed(workload("Deployment", "web", 3)))
        .await;
    let first = start(cluster, true).await;
    leading(&first).await;
    let leader = lease_holder(cluster).await.expect("a holder");
    deployment_complete(cluster, "web", 3).await;
    let second = start(cluster, true).await;
    standing_by_warm(&second).await;
    let standby = identities(cluster)
        .into_iter()
        .find(|identity| *identity != leader)
        .expect("the standby's requests");
    (first, second, standby)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_standby_keeps_its_caches_synced_writes_nothing_and_takes_over_at_once() {
    let cluster = Cluster::start(SimConfig::default()).await;
    let (first, second, standby) = leader_and_warm_standby(&cluster).await;

    // Standing by: its informers listed and watch, it wrote nothing (not even the Lease).
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(writes_of(&cluster, &standby), BTreeMap::new());
    let accounting = cluster.test.sim.accounting();
    let agent = format!("{MANAGER_AGENT}shared-informers ({standby})");
    for resource in ["pods", "replicasets", "deployments"] {
        assert!(
            accounting.entries().iter().any(|((verb, listed, by), _)| {
                verb == "watch" && listed == resource && by.ends_with(&agent)
            }),
            "the standby watches {resource}"
        );
    }

    // A rollout, and the leader gives the Lease up at once: the standby writes within moments.
    roll_to_nginx_1_26(&cluster, "web").await;
    let handed_over = Instant::now();
    drop(first);
    eventually(
        "the standby's first write",
        Duration::from_secs(10),
        || async {
            let writes: u64 = writes_of(&cluster, &standby)
                .iter()
                .filter(|(key, _)| !key.ends_with(" leases") && !key.ends_with(" events"))
                .map(|(_, count)| count)
                .sum();
            (writes > 0).then_some(())
        },
    )
    .await;
    let first_write = handed_over.elapsed();
    assert!(
        first_write < Duration::from_secs(3),
        "first write {first_write:?} after the handover"
    );
    assert_eq!(lease_holder(&cluster).await, Some(standby.clone()));
    deployment_complete(&cluster, "web", 3).await;
    for series in [
        "leader_election_read_barrier_duration_seconds_count{name=\"kcm-rs\"}",
        "leader_election_acquire_to_first_sync_seconds_count{name=\"kcm-rs\",start=\"warm\"}",
    ] {
        assert_eq!(metric(&second, series).await, Some(1.0), "{series}");
    }
    drop(second);
    cluster.test.stop().await;
}

/// Every `list` the standby `identity`'s informers sent so far, by resource.
fn informer_lists(cluster: &Cluster, identity: &str) -> BTreeMap<String, u64> {
    let agent = format!("{MANAGER_AGENT}shared-informers ({identity})");
    let mut lists = BTreeMap::new();
    for ((verb, resource, by), count) in cluster.test.sim.accounting().entries() {
        if verb == "list" && by.ends_with(&agent) {
            *lists.entry(resource).or_default() += count;
        }
    }
    lists
}

/// The handover a Lease carries (`kcm-rs.io/handover-resource-versions`), if any.
fn handover_of(lease: &Lease) -> Option<BTreeMap<String, u64>> {
    let text = lease
        .metadata
        .annotations
        .as_ref()?
        .get(HANDOVER_ANNOTATION)?;
    Some(parse_handover(text))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_giving_the_lease_up_hands_over_what_its_successor_must_have_seen() {
    let cluster = Cluster::start(SimConfig::default()).await;
    let leases: Api<Lease> = Api::namespaced(cluster.test.client.clone(), "kube-system");
    let released = Arc::new(parking_lot::Mutex::new(Vec::<Lease>::new()));
    let seen = released.clone();
    let watching_lease = tokio::spawn(async move {
        let mut events = watcher(leases, watcher::Config::default())
            .default_backoff()
            .boxed();
        while let Some(event) = events.next().await {
            if let Ok(watcher::Event::Apply(lease) | watcher::Event::InitApply(lease)) = event {
                let holder = lease
                    .spec
                    .as_ref()
                    .and_then(|spec| spec.holder_identity.clone());
                if holder.is_none_or(|holder| holder.is_empty()) {
                    seen.lock().push(lease);
                }
            }
        }
    });
    let (first, second, standby) = leader_and_warm_standby(&cluster).await;
    let pods: Api<Pod> = cluster.test.api();
    let newest_pod = pods
        .list(&ListParams::default())
        .await
        .expect("pods")
        .items
        .iter()
        .filter_map(|pod| {
            pod.metadata
                .resource_version
                .as_deref()?
                .parse::<u64>()
                .ok()
        })
        .max()
        .expect("the leader's pods");
    let lists_standing_by = informer_lists(&cluster, &standby);

    drop(first);
    eventually("the standby leads", Duration::from_secs(10), || async {
        (lease_holder(&cluster).await.as_deref() == Some(standby.as_str())).then_some(())
    })
    .await;
    cluster
        .test
        .merge_patch::<Deployment>("web", json!({"spec": {"replicas": 4}}))
        .await;
    deployment_complete(&cluster, "web", 4).await;

    // The release named, per cached resource, a version at least the leader's last change.
    let handover = released
        .lock()
        .iter()
        .find_map(handover_of)
        .expect("the released Lease carries a handover");
    for resource in ["pods", "replicasets", "deployments"] {
        assert!(handover.contains_key(resource), "{resource}: {handover:?}");
    }
    assert!(
        handover["pods"] >= newest_pod,
        "{handover:?} vs pod {newest_pod}"
    );
    // The successor took it: no consistent read and no relist before it acted, and the
    // handover is gone from the Lease it holds.
    assert_eq!(informer_lists(&cluster, &standby), lists_standing_by);
    let leases: Api<Lease> = Api::namespaced(cluster.test.client.clone(), "kube-system");
    let held = leases.get(LEASE).await.expect("the Lease");
    assert_eq!(handover_of(&held), None);
    watching_lease.abort();
    drop(second);
    cluster.test.stop().await;
}

/// A Lease `kcm-rs` as another manager left it: held by `holder` (none: given up) for 1 s,
/// renewed long ago, with a handover of pods at 42.
fn leftover_lease(holder: Option<&str>) -> Lease {
    typed(json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": LEASE,
            "namespace": "kube-system",
            "annotations": {(HANDOVER_ANNOTATION): r#"{"pods":"42"}"#},
        },
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": 1,
            "renewTime": "2026-01-01T00:00:00.000000Z",
        },
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handover_is_taken_only_from_a_released_lease_and_removed_when_taken() {
    // (the holder the Lease names, what the elector that takes it is handed over)
    let cases = [
        (None, BTreeMap::from([("pods".to_string(), 42)])),
        (Some("crashed-manager"), BTreeMap::new()),
    ];
    for (holder, want) in cases {
        let cluster = Cluster::start(SimConfig::default()).await;
        let leases: Api<Lease> = Api::namespaced(cluster.test.client.clone(), "kube-system");
        leases
            .create(&PostParams::default(), &leftover_lease(holder))
            .await
            .expect("the Lease");
        let metrics =
            LeaderElectionMetrics::register(&prometheus::Registry::new()).expect("metrics");
        let mut elector = LeaderElector::new(
            cluster.test.client.clone(),
            LeaderElectionConfig {
                namespace: "kube-system".into(),
                name: LEASE.into(),
                identity: "successor".into(),
                lease_duration: Duration::from_secs(3),
                renew_deadline: Duration::from_secs(2),
                retry_period: Duration::from_millis(100),
                record_events: false,
            },
            metrics,
        );
        let campaign = elector.acquire(&CancellationToken::new()).await;
        assert_eq!(campaign, Campaign::Leading, "{holder:?}");
        assert_eq!(elector.take_handed_over(), want, "{holder:?}");
        let held = leases.get(LEASE).await.expect("the Lease");
        let spec = held.spec.as_ref().expect("a spec");
        assert_eq!(spec.holder_identity.as_deref(), Some("successor"));
        assert_eq!(
            handover_of(&held),
            None,
            "{holder:?}: the handover is removed"
        );
        cluster.test.stop().await;
    }
}

/// What the new leader did on the state the old one left: the most live pods the lone
/// ReplicaSet had at once (it has 6 replicas), and the new leader's ReplicaSet creates (the
/// old leader made the one needed) and scales answered 409 (sent from an old version).
#[derive(Debug, PartialEq, Eq)]
struct Takeover {
    peak_solo_pods: usize,
    replica_set_creates: u64,
    stale_scales: u64,
}

/// The old leader's last writes reach the standby's watches 4 s late; it takes over at once.
async fn takeover_with_late_watches(read_barrier: bool) -> Takeover {
    let cluster = Cluster::start(SimConfig::default()).await;
    let solo: ReplicaSet = typed(lagging_workload("ReplicaSet", "solo", 3));
    cluster.test.create(&solo).await;
    for name in ["scaled", "rolled"] {
        cluster
            .test
            .create::<Deployment>(&typed(lagging_workload("Deployment", name, 2)))
            .await;
    }
    let old = start(&cluster, true).await;
    leading(&old).await;
    let old_identity = lease_holder(&cluster).await.expect("a holder");
    deployment_complete(&cluster, "scaled", 2).await;
    deployment_complete(&cluster, "rolled", 2).await;
    eventually("solo's 3 pods", Duration::from_secs(30), || async {
        (live_pods(&cluster, "solo").await == 3).then_some(())
    })
    .await;
    let (peak, watching) = peak_live_pods(&cluster, "solo");

    cluster
        .test
        .sim
        .set_faults(FaultConfig::watch_lag("lag", Duration::from_secs(4)));
    let new = start(&cluster, read_barrier).await;
    standing_by_warm(&new).await;
    let new_identity = identities(&cluster)
        .into_iter()
        .find(|identity| *identity != old_identity)
        .expect("the standby's requests");

    // The old leader's last writes: 3 pods for solo, a scale of scaled's ReplicaSet, a new
    // ReplicaSet for rolled.
    cluster
        .test
        .merge_patch::<ReplicaSet>("solo", json!({"spec": {"replicas": 6}}))
        .await;
    cluster
        .test
        .merge_patch::<Deployment>("scaled", json!({"spec": {"replicas": 4}}))
        .await;
    roll_to_nginx_1_26(&cluster, "rolled").await;
    let replica_sets: Api<ReplicaSet> = cluster.test.api();
    eventually(
        "the old leader's writes",
        Duration::from_secs(3),
        || async {
            let solo_pods = live_pods(&cluster, "solo").await;
            let scaled = replica_sets
                .list(&ListParams::default().labels("app=scaled"))
                .await
                .ok()?;
            let rolled = replica_sets
                .list(&ListParams::default().labels("app=rolled"))
                .await
                .ok()?;
            let scaled_to_4 = scaled
                .items
                .iter()
                .any(|rs| rs.spec.as_ref().and_then(|spec| spec.replicas) == Some(4));
            (solo_pods == 6 && scaled_to_4 && rolled.items.len() == 2).then_some(())
        },
    )
    .await;
    drop(old);
    eventually("the new leader leads", Duration::from_secs(10), || async {
        (lease_holder(&cluster).await.as_deref() == Some(new_identity.as_str())).then_some(())
    })
    .await;
    // Past the lag: whatever the new leader did on old state has happened.
    tokio::time::sleep(Duration::from_secs(6)).await;

    let writes = writes_of(&cluster, &new_identity);
    let conflicts = answered(&cluster, &new_identity, 409).await;
    let takeover = Takeover {
        peak_solo_pods: peak.load(Ordering::SeqCst),
        replica_set_creates: writes.get("create replicasets").copied().unwrap_or(0),
        stale_scales: conflicts.get("update replicasets").copied().unwrap_or(0),
    };
    watching.abort();
    drop(new);
    cluster.test.stop().await;
    takeover
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_read_barrier_keeps_a_new_leader_from_acting_on_writes_its_watches_have_not_shown() {
    let takeover = takeover_with_late_watches(true).await;
    assert_eq!(
        takeover,
        Takeover {
            peak_solo_pods: 6,
            replica_set_creates: 0,
            stale_scales: 0,
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_read_barrier_a_new_leader_acts_on_the_state_before_the_old_leaders_last_writes()
 {
    let takeover = takeover_with_late_watches(false).await;
    // Seen: 9 pods for 6 replicas, 10 creates of the ReplicaSet that exists, 10 scales refused.
    assert!(
        takeover.peak_solo_pods > 6
            && takeover.replica_set_creates > 0
            && takeover.stale_scales > 0,
        "{takeover:?}"
    );
}
