//! Revision building and hashing for a realistic StatefulSet: the StatefulSet controller does
//! this on every sync (it builds the proposed revision from the set's raw template and compares
//! it with the stored history), so its cost is paid per set per sync.
//!
//! * `new_statefulset_revision`: `newRevision` — revision data from the raw template, Go JSON
//!   encoding, FNV hash, name, labels and owner reference.
//! * `hash_controller_revision`: re-encoding a revision's data and hashing it.
//! * `hash_revision_data`: the FNV-1 hash alone over already-encoded data bytes.
//! * `equal_revision`: `EqualRevision` of two equal revisions (the full byte comparison path).
//! * `semantic_current`: `latest_revision_is_semantically_current` — apply the latest revision
//!   to the set, rebuild and compare (the v1.35 semantic comparison).
//!
//! Run with `cargo bench -p history --bench hash`.

use std::{hint::black_box, time::Duration};

use criterion::{Criterion, criterion_group, criterion_main};
use history::{
    equal_revision, hash_controller_revision, hash_revision_data,
    latest_revision_is_semantically_current, new_statefulset_revision, revision_data_bytes,
};
use serde_json::{Value, json};

/// A StatefulSet as the API server returns it, with a typical database pod template.
fn statefulset() -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {
            "name": "db",
            "namespace": "prod",
            "uid": "0b7c4f0e-2a55-4d0c-8f3e-5a8d6a1c9e21",
            "resourceVersion": "482913",
            "generation": 7,
            "annotations": {"team": "storage"},
            "labels": {"app": "db"}
        },
        "spec": {
            "replicas": 100,
            "serviceName": "db",
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": "db"}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
            "template": {
                "metadata": {
                    "labels": {"app": "db", "tier": "storage"},
                    "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9187"}
                },
                "spec": {
                    "terminationGracePeriodSeconds": 60,
                    "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                        "labelSelector": {"matchLabels": {"app": "db"}},
                        "topologyKey": "kubernetes.io/hostname"
                    }]}},
                    "initContainers": [{
                        "name": "init-perms",
                        "image": "busybox:1.36",
                        "command": ["sh", "-c", "chown -R 999:999 /var/lib/postgresql/data"],
                        "volumeMounts": [{"name": "data", "mountPath": "/var/lib/postgresql/data"}]
                    }],
                    "containers": [{
                        "name": "postgres",
                        "image": "postgres:16.4",
                        "args": ["-c", "max_connections=200", "-c", "shared_buffers=1GB"],
                        "ports": [{"name": "pg", "containerPort": 5432, "protocol": "TCP"}],
                        "env": [
                            {"name": "PGDATA", "value": "/var/lib/postgresql/data/pgdata"},
                            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                            {"name": "POSTGRES_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db-secret", "key": "password"}}}
                        ],
                        "resources": {"requests": {"cpu": "500m", "memory": "2Gi"}, "limits": {"memory": "4Gi"}},
                        "readinessProbe": {"exec": {"command": ["pg_isready", "-U", "postgres"]},
                            "periodSeconds": 10, "timeoutSeconds": 5, "failureThreshold": 3, "successThreshold": 1},
                        "livenessProbe": {"tcpSocket": {"port": 5432}, "initialDelaySeconds": 30,
                            "periodSeconds": 10, "timeoutSeconds": 1, "failureThreshold": 6, "successThreshold": 1},
                        "volumeMounts": [{"name": "data", "mountPath": "/var/lib/postgresql/data"},
                            {"name": "config", "mountPath": "/etc/postgresql"}],
                        "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File",
                        "imagePullPolicy": "IfNotPresent"
                    }, {
                        "name": "exporter",
                        "image": "quay.io/prometheuscommunity/postgres-exporter:v0.15.0",
                        "ports": [{"name": "metrics", "containerPort": 9187, "protocol": "TCP"}],
                        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
                        "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File",
                        "imagePullPolicy": "IfNotPresent"
                    }],
                    "volumes": [{"name": "config", "configMap": {"name": "db-config", "defaultMode": 420}}],
                    "restartPolicy": "Always",
                    "dnsPolicy": "ClusterFirst",
                    "schedulerName": "default-scheduler",
                    "securityContext": {"fsGroup": 999}
                }
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "100Gi"}}}
            }]
        },
        "status": {"replicas": 100, "readyReplicas": 100, "currentRevision": "db-5d8f7c9b4", "collisionCount": 0}
    })
}

fn hash_benches(c: &mut Criterion) {
    let set = statefulset();
    let revision = new_statefulset_revision(&set, 3, 0).expect("valid set");
    let same = new_statefulset_revision(&set, 4, 0).expect("valid set");
    let bytes = revision_data_bytes(&revision).expect("encodable");
    assert!(equal_revision(&revision, &same));
    assert!(latest_revision_is_semantically_current(
        &set, &revision, &same
    ));

    let mut group = c.benchmark_group("history");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(2));
    group.bench_function("new_statefulset_revision", |b| {
        b.iter(|| new_statefulset_revision(black_box(&set), 3, 0))
    });
    group.bench_function("hash_controller_revision", |b| {
        b.iter(|| hash_controller_revision(black_box(&revision), Some(0)))
    });
    group.bench_function(format!("hash_revision_data_{}_bytes", bytes.len()), |b| {
        b.iter(|| hash_revision_data(black_box(&bytes), Some(0)))
    });
    group.bench_function("equal_revision", |b| {
        b.iter(|| equal_revision(black_box(&revision), black_box(&same)))
    });
    group.bench_function("semantic_current", |b| {
        b.iter(|| latest_revision_is_semantically_current(black_box(&set), &revision, &same))
    });
    group.finish();
}

criterion_group!(benches, hash_benches);
criterion_main!(benches);
