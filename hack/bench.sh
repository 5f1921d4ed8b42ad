#!/usr/bin/env bash
# End-to-end benchmark: the optimized kube-controller-manager binary against an in-process sim
# cluster. Arguments go to the driver, e.g. `hack/bench.sh --replicasets 500 --replicas 4`.
# Results: bench-results/e2e.md and bench-results/e2e.json.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench -p kube-controller-manager --bench e2e -- "$@"
