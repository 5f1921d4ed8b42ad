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
# Jobs (none by default): `--indexed-job-completions N` runs one Indexed Job of N completions
# (`--job-parallelism P`, 1000 by default) to Complete and all its pods' tracking finalizers
# gone, reads the manager's RSS `--job-after-finish-seconds` (10) later, checks the counts and
# deletes it; `--jobs N` runs N one-pod Jobs created at once, then deletes them; every pod runs
# `sh -c 'sleep S; exit 0'` (`--job-pod-seconds S`, 1 by default). The sim's one node takes any
# number of pods (capacity is not counted), so 1000 run at once without `--nodes`. E.g.
# `hack/bench.sh --deployments 0 --statefulsets 0 --replicasets 0 --indexed-job-completions 10000
# --job-parallelism 1000 --qps 100 --burst 150 --out e2e-job-10000-qps100` (and without the
# `--qps`/`--burst`: the default 2000/4000) and
# `hack/bench.sh --deployments 0 --statefulsets 0 --replicasets 0 --jobs 5000 --out e2e-jobs-5000`.
# Results: bench-results/<out>.md and .json (`--out` defaults to e2e), and <out>.heartbeat.json
# for a heartbeat window.
set -euo pipefail
cd "$(dirname "$0")/.."
# Both binaries in the dist profile (fat LTO, one codegen unit, jemalloc: what ships and what
# the README's numbers were measured with). They land in target/dist, where the driver finds
# kube-sim beside the manager it was built with.
cargo build --profile dist -p kube-sim
cargo bench --profile dist -p kube-controller-manager --bench e2e -- "$@"
