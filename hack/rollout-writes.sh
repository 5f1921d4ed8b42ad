#!/usr/bin/env bash
# Writes per Deployment rollout as a user triggers one: starts kube-sim and the manager (dist
# profile), creates N Deployments of R replicas with kubectl, rolls them all with
# `kubectl set env deploy --all`, waits for `kubectl rollout status` of each and for the writes
# to stop, and prints the writes the sim counted from every client but kubectl (leases left
# out), by verb and resource, per rollout, with the manager's CPU seconds and the wall time.
# The manager runs at hack/bench.sh's client rate (--kube-api-qps=2000 --kube-api-burst=4000,
# as upstream was measured) unless flags after -- set them; flags after -- are added.
#
#   hack/rollout-writes.sh [N] [R] [-- MANAGER_FLAGS...]
#   hack/rollout-writes.sh 100 5 -- --replicaset-status-hold=0s   # upstream's status writes
set -euo pipefail
cd "$(dirname "$0")/.."

N=${1:-100}
R=${2:-5}
shift $(($# < 2 ? $# : 2))
[[ ${1:-} == -- ]] && shift
MANAGER_FLAGS=("$@")
[[ " $* " == *" --kube-api-qps"* ]] || MANAGER_FLAGS+=(--kube-api-qps=2000)
[[ " $* " == *" --kube-api-burst"* ]] || MANAGER_FLAGS+=(--kube-api-burst=4000)

TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
# One package per build, as hack/bench.sh builds them, so both share its artifacts.
cargo build --profile dist -p kube-sim
cargo build --profile dist -p kube-controller-manager
bin=$TARGET_DIR/dist
work=$(mktemp -d)
export KUBECONFIG=$work/kubeconfig

sim_pid=
manager_pid=
cleanup() {
  for pid in $manager_pid $sim_pid; do
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

"$bin/kube-sim" --port 0 --kubeconfig-out "$KUBECONFIG" >"$work/sim.log" 2>&1 &
sim_pid=$!
for _ in $(seq 1 100); do [[ -s $KUBECONFIG ]] && break; sleep 0.1; done
"$bin/kube-controller-manager" --kubeconfig "$KUBECONFIG" --leader-elect=false --secure-port=0 \
  "${MANAGER_FLAGS[@]}" >"$work/manager.log" 2>&1 &
manager_pid=$!

# The sim's counts of writes from every client but kubectl, as "verb resource count" lines.
writes() {
  kubectl get --raw /metrics | awk '
    /^sim_requests_total\{/ {
      match($0, /verb="[^"]*"/); verb = substr($0, RSTART + 6, RLENGTH - 7)
      match($0, /resource="[^"]*"/); res = substr($0, RSTART + 10, RLENGTH - 11)
      match($0, /user_agent="[^"]*"/); agent = substr($0, RSTART + 12, RLENGTH - 13)
      if (verb !~ /^(create|update|patch|delete|deletecollection)$/) next
      if (res == "leases" || agent ~ /^kubectl\//) next
      count[verb " " res] += $NF
    }
    END { for (k in count) print k, count[k] }' | sort
}
total() { awk '{ sum += $3 } END { print sum + 0 }'; }
# The manager's CPU seconds (user + system) from /proc.
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f\n", ($14 + $15) / hz }' "/proc/$manager_pid/stat"; }
# Waits until every Deployment's rollout is complete.
rolled_out() {
  local name
  for name in $(kubectl get deploy -o name); do
    kubectl rollout status "$name" --timeout=600s >/dev/null
  done
}
# Waits until the writes have not changed for 3 s (trailing status writes and events).
settled() {
  local last now
  last=$(writes | total)
  while sleep 3; do
    now=$(writes | total)
    [[ $now == "$last" ]] && return
    last=$now
  done
}

echo "creating $N Deployments x $R"
for i in $(seq 1 "$N"); do
  kubectl create deployment "web-$i" --image=nginx:1.25 --replicas="$R" -o name
done >/dev/null
rolled_out
settled
writes >"$work/before"
cpu_before=$(cpu)
start=$(date +%s.%N)

echo "rolling them with kubectl set env deploy --all"
kubectl set env deploy --all ROLLOUT=2 >/dev/null
rolled_out
wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
settled
writes >"$work/after"
cpu_after=$(cpu)

echo "writes per rollout (every client but kubectl; leases left out), manager flags: ${MANAGER_FLAGS[*]:-none}"
join -a 2 -e 0 -o 0,1.2,2.2 <(awk '{ print $1 "_" $2, $3 }' "$work/before") \
  <(awk '{ print $1 "_" $2, $3 }' "$work/after") |
  awk -v n="$N" '{ d = $3 - $2; if (d > 0) { sum += d; printf "  %-40s %8.2f\n", $1, d / n } }
    END { printf "  %-40s %8.2f\n", "total", sum / n }'
echo "rolled out (kubectl rollout status) in $wall s; manager CPU $(awk -v a="$cpu_before" -v b="$cpu_after" 'BEGIN { printf "%.2f", b - a }') s"
