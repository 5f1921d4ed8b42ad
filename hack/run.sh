#!/usr/bin/env bash
# Starts the sim cluster and the manager with every controller, waits until the manager leads
# and serves, prints what to try, and stops both on Ctrl-C (or SIGTERM).
# Builds the dev profile: a few minutes from a clean checkout, shared with `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
KUBECONFIG_OUT=${KUBECONFIG_OUT:-$TARGET_DIR/kube-sim.kubeconfig}
PORT=${KCM_PORT:-10257}
METRICS_URL="http://127.0.0.1:$PORT/metrics"
TOKEN=demo-scraper
LOG_DIR=$TARGET_DIR/run

cargo build -p kube-sim -p kube-controller-manager
bin=$TARGET_DIR/debug

mkdir -p "$(dirname "$KUBECONFIG_OUT")" "$LOG_DIR"
rm -f "$KUBECONFIG_OUT"
SIM_LOG=$LOG_DIR/kube-sim.log
MANAGER_LOG=$LOG_DIR/kube-controller-manager.log

sim_pid=
manager_pid=
# Waits up to $2 tenths of a second for process $1 to exit.
wait_gone() {
  for _ in $(seq 1 "$2"); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.1
  done
  return 1
}
# Shows the end of a log after a failure.
show_log() {
  echo "--- last lines of $1:" >&2
  tail -n 20 "$1" >&2 || true
}
# Stops the manager first (it gives up its Lease and flushes events through the sim), then
# the sim; whatever does not exit within 10 s is killed.
cleanup() {
  trap - EXIT INT TERM
  local pid
  for pid in $manager_pid $sim_pid; do
    kill -TERM "$pid" 2>/dev/null || continue
    wait_gone "$pid" 100 || kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}
trap cleanup EXIT
trap 'echo; echo "stopping kube-controller-manager and kube-sim"; exit 130' INT
trap 'exit 143' TERM

# Each child runs in its own process group (job control on), so the terminal's Ctrl-C reaches
# only this script, which stops them in order, each with one SIGTERM.
set -m

# The sim also answers the manager's TokenReviews and SubjectAccessReviews: the token
# "demo-scraper" is user "scraper", which may GET /metrics.
"$bin/kube-sim" --port 0 --kubeconfig-out "$KUBECONFIG_OUT" --ready-delay-ms 500 --gc-delay-ms 100 \
  --token "$TOKEN=scraper:monitoring" --allow scraper:get:/metrics >"$SIM_LOG" 2>&1 &
sim_pid=$!
for _ in $(seq 1 100); do
  [ -s "$KUBECONFIG_OUT" ] && break
  kill -0 "$sim_pid" 2>/dev/null || break
  sleep 0.1
done
if [ ! -s "$KUBECONFIG_OUT" ]; then
  echo "kube-sim did not write $KUBECONFIG_OUT" >&2
  show_log "$SIM_LOG"
  exit 1
fi

"$bin/kube-controller-manager" \
  --kubeconfig "$KUBECONFIG_OUT" \
  --secure-port "$PORT" --bind-address 127.0.0.1 --plain-http \
  --authentication-kubeconfig "$KUBECONFIG_OUT" --authorization-kubeconfig "$KUBECONFIG_OUT" \
  --leader-elect=true >"$MANAGER_LOG" 2>&1 &
manager_pid=$!
set +m

# Serving: the manager holds the Lease (its controllers run) and /metrics answers the demo
# token, which also proves the TokenReview and SubjectAccessReview path through the sim.
leading() {
  local body
  body=$(curl -fsS --max-time 2 -H "Authorization: Bearer $TOKEN" "$METRICS_URL" 2>/dev/null) || return 1
  grep -q '^leader_election_master_status{name="kcm-rs"} 1$' <<<"$body"
}
deadline=$((SECONDS + 30))
while [ "$SECONDS" -lt "$deadline" ]; do
  leading && break
  if ! kill -0 "$manager_pid" 2>/dev/null; then
    echo "kube-controller-manager exited (is port $PORT taken? set KCM_PORT)" >&2
    show_log "$MANAGER_LOG"
    exit 1
  fi
  sleep 0.1
done
if ! leading; then
  echo "kube-controller-manager did not lead and serve $METRICS_URL within 30 s" >&2
  show_log "$MANAGER_LOG"
  exit 1
fi

cat <<MSG

kcm-rs is running against the sim cluster: kube-sim (pid $sim_pid) and
kube-controller-manager (pid $manager_pid, leading, endpoints on http://127.0.0.1:$PORT).
Try, in another terminal:
  export KUBECONFIG=$KUBECONFIG_OUT
  kubectl create deployment web --image=nginx:1.25 --replicas=3
  kubectl get deployments,replicasets,pods
  kubectl set image deployment/web nginx=nginx:1.26 && kubectl rollout status deployment/web
  kubectl rollout undo deployment/web
  kubectl create job pi --image=busybox -- sh -c 'sleep 2; exit 0' && kubectl wait --for=condition=Complete job/pi
  kubectl create cronjob tick --image=busybox --schedule='* * * * *' -- sh -c 'exit 0'
  kubectl get cronjobs,jobs --watch
  curl -s -H 'Authorization: Bearer $TOKEN' $METRICS_URL | grep workqueue_depth
  curl -s http://127.0.0.1:$PORT/healthz/deployment-controller
Logs: tail -f $MANAGER_LOG $SIM_LOG
Press Ctrl-C to stop both.
MSG
# Returns when either exits; the EXIT trap stops the other.
wait -n "$sim_pid" "$manager_pid" || true
echo "a process exited; stopping the other" >&2
show_log "$MANAGER_LOG"
show_log "$SIM_LOG"
exit 1
