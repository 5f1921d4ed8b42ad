#!/usr/bin/env bash
# Handover timing: the optimized kube-sim and two kube-controller-manager processes on 10,000
# Deployments x 5 (`--handover-deployments N` for another size), cold standbys (upstream's
# way: caches built after winning the Lease) and warm ones (`--leader-elect-warm-standby`),
# each after a SIGTERM and a kill -9 of the leader: the time from the signal to the successor's
# first write, and what a standby costs before it. Other arguments go to the chaos driver
# (`--handover-start cold|warm`, `--handover-signal TERM|KILL`, `--handover-repeat N`,
# `--manager PATH`, `--sim PATH`, `--out NAME`). Results: bench-results/<out>-handover.md and
# .json (`chaos-handover` by default).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --profile dist -p kube-sim
KCM_CHAOS_ONLY=handover cargo bench --profile dist -p kube-controller-manager --bench chaos -- "$@"
