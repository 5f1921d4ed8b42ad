#!/usr/bin/env bash
# End-to-end benchmark: the optimized kube-sim and kube-controller-manager binaries as two
# processes, driven through create, rolling update, scale and delete phases. Arguments go to the
# driver, e.g. `hack/bench.sh --deployments 200 --qps 20 --burst 30 --out e2e-200x5`.
# DaemonSets (none by default): `--daemonsets N --nodes M` (the sim's nodes) runs create, two
# rolling updates (maxUnavailable 10%, then maxSurge 10%) and node churn (`--node-churn K`
# nodes added, tainted NoExecute, deleted; 100 by default); `--heartbeat-window S` measures S
# seconds of node heartbeats alone after the create (`--node-heartbeat-ms`, 10000 by default),
# e.g. `hack/bench.sh --deployments 0 --statefulsets 0 --replicasets 0 --daemonsets 5
# --nodes 5000 --heartbeat-window 60 --out e2e-ds-5000x5`.
# Results: bench-results/<out>.md and .json (`--out` defaults to e2e), and <out>.heartbeat.json
# for a heartbeat window.
set -euo pipefail
cd "$(dirname "$0")/.."
# Both binaries in the dist profile (fat LTO, one codegen unit, jemalloc: what ships and what
# the README's numbers were measured with). They land in target/dist, where the driver finds
# kube-sim beside the manager it was built with.
cargo build --profile dist -p kube-sim
cargo bench --profile dist -p kube-controller-manager --bench e2e -- "$@"
