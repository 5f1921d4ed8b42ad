#!/usr/bin/env bash
# Chaos run (issue 20): the optimized kube-sim and kube-controller-manager binaries as
# processes, through failover (kill -9 and SIGSTOP of the leader mid-rollout), 20 crashes
# mid-rollout, and API faults at scale, with invariants sampled on every watch event.
# Prints one table; results go to bench-results/chaos.md and .json. Arguments go to the driver
# (`--manager PATH`, `--sim PATH`, `--out NAME`). Not part of `make test`, which runs the small
# variant (one failover, one crash, faults on 50 Deployments).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --profile dist -p kube-sim
cargo bench --profile dist -p kube-controller-manager --bench chaos -- "$@"
