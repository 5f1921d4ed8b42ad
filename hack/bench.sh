#!/usr/bin/env bash
# End-to-end benchmark: the optimized kube-sim and kube-controller-manager binaries as two
# processes, driven through create, rolling update, scale and delete phases. Arguments go to the
# driver, e.g. `hack/bench.sh --deployments 200 --qps 20 --burst 30 --out e2e-200x5`.
# Results: bench-results/<out>.md and .json (`--out` defaults to e2e).
set -euo pipefail
cd "$(dirname "$0")/.."
# Both binaries in the dist profile (fat LTO, one codegen unit, jemalloc: what ships and what
# the README's numbers were measured with). They land in target/dist, where the driver finds
# kube-sim beside the manager it was built with.
cargo build --profile dist -p kube-sim
cargo bench --profile dist -p kube-controller-manager --bench e2e -- "$@"
