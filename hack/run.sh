#!/usr/bin/env bash
# Starts the sim cluster and the manager with every controller, prints how to use kubectl
# against it, and stops both on Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."

KUBECONFIG_OUT=${KUBECONFIG_OUT:-$PWD/target/kube-sim.kubeconfig}
mkdir -p "$(dirname "$KUBECONFIG_OUT")"
rm -f "$KUBECONFIG_OUT"

cargo build --release -p kube-sim -p kube-controller-manager

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

# The sim also answers the manager's TokenReviews and SubjectAccessReviews: the token
# "demo-scraper" is user "scraper", which may GET /metrics.
target/release/kube-sim --port 0 --kubeconfig-out "$KUBECONFIG_OUT" --ready-delay-ms 500 --gc-delay-ms 100 \
  --token demo-scraper=scraper:monitoring --allow scraper:get:/metrics &
pids+=($!)
for _ in $(seq 1 100); do
  [ -s "$KUBECONFIG_OUT" ] && break
  sleep 0.1
done
if [ ! -s "$KUBECONFIG_OUT" ]; then
  echo "kube-sim did not write $KUBECONFIG_OUT" >&2
  exit 1
fi

target/release/kube-controller-manager \
  --kubeconfig "$KUBECONFIG_OUT" \
  --secure-port 10257 --bind-address 127.0.0.1 --plain-http \
  --authentication-kubeconfig "$KUBECONFIG_OUT" --authorization-kubeconfig "$KUBECONFIG_OUT" \
  --leader-elect=true &
pids+=($!)

cat <<MSG

kcm-rs is running against the sim cluster.
  export KUBECONFIG=$KUBECONFIG_OUT
  kubectl create deployment web --image=nginx:1.25 --replicas=3
  kubectl get deployments,replicasets,pods
  kubectl set image deployment/web nginx=nginx:1.26 && kubectl rollout status deployment/web
  curl -s -H 'Authorization: Bearer demo-scraper' http://127.0.0.1:10257/metrics | grep workqueue_depth
Press Ctrl-C to stop.
MSG
wait -n "${pids[@]}"
