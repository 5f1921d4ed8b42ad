# kcm-rs: common entry points. `make run` and `make test` are the two a newcomer needs.
# Profiles (Cargo.toml): `run` and `test` build the fast-compiling dev profile and share its
# artifacts; `build` is optimized (release); `dist`, `image` and `bench` use the shipped and
# measured dist profile (fat LTO, one codegen unit, jemalloc).
CARGO ?= cargo
KUBECONFIG_OUT ?= $(CURDIR)/target/kube-sim.kubeconfig

.PHONY: build dist dist-profiling run test bench chaos soak lint fmt rbac image

## build: optimized binaries kube-controller-manager and kube-sim (release profile)
build:
	$(CARGO) build --release --workspace --bins

## dist: the binaries as shipped and measured (dist profile, ~20 min on 2 cores), in target/dist
dist:
	$(CARGO) build --profile dist --workspace --bins

## dist-profiling: dist with line tables kept (perf, heaptrack), in target/profiling
dist-profiling:
	$(CARGO) build --profile profiling --workspace --bins

## run: start the sim cluster and the manager with every controller (Ctrl-C stops both)
run:
	KUBECONFIG_OUT=$(KUBECONFIG_OUT) hack/run.sh

## test: every unit, integration and doc test (what CI runs, with lint)
test:
	$(CARGO) test --workspace --all-targets
	$(CARGO) test --workspace --doc

## bench: criterion benches of the hot paths, then the end-to-end bench (hack/bench.sh) at the
## issue's defaults, then 200 Deployments x 5 at upstream's default client QPS (20/30), then the
## DaemonSets of issue 32: 10 on 1,000 nodes (create, both rolling updates, node churn) and 5 on
## 5,000 nodes with a 60 s window of heartbeats alone; then the Jobs: a 10,000-pod Indexed Job
## at QPS 100 and at QPS 2000, and 5,000 one-pod Jobs; all in the dist profile the README's
## numbers were measured with
bench:
	$(CARGO) bench --profile dist --workspace --exclude kube-controller-manager
	hack/bench.sh
	hack/bench.sh --deployments 200 --statefulsets 0 --replicasets 0 --qps 20 --burst 30 --out e2e-200x5-default-qps
	hack/bench.sh --deployments 0 --statefulsets 0 --replicasets 0 --daemonsets 10 --nodes 1000 --out e2e-ds-1000x10
	hack/bench.sh --deployments 0 --statefulsets 0 --replicasets 0 --daemonsets 5 --nodes 5000 --heartbeat-window 60 --out e2e-ds-5000x5
	hack/bench.sh --deployments 0 --statefulsets 0 --replicasets 0 --indexed-job-completions 10000 --job-parallelism 1000 --qps 100 --burst 150 --out e2e-job-10000-qps100
	hack/bench.sh --deployments 0 --statefulsets 0 --replicasets 0 --indexed-job-completions 10000 --job-parallelism 1000 --out e2e-job-10000
	hack/bench.sh --deployments 0 --statefulsets 0 --replicasets 0 --jobs 5000 --out e2e-jobs-5000

## chaos: failover, crashes mid-rollout and API faults at the issue's sizes (hack/chaos.sh; long,
## not part of `make test`, which runs its small variant)
chaos:
	hack/chaos.sh

## soak: the race hunt (hack/soak.sh): every integration test binary of the controllers, the
## manager and the informer, ROUNDS times with COPIES copies at once beside HOGS busy loops
## (defaults 5, 2 and the core count: about 20 min on 2 cores); prints each failing test with
## its failed runs and fails on any. Not part of `make test`.
ROUNDS ?= 5
COPIES ?= 2
HOGS ?= $(shell nproc)
soak:
	hack/soak.sh --rounds $(ROUNDS) --copies $(COPIES) --hogs $(HOGS)

## lint: formatting and clippy, warnings are errors
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

## rbac: regenerate deploy/base/rbac.yaml from the controllers' descriptors (a test of
## `make test` fails when the file and the descriptors disagree)
rbac:
	KCM_RS_WRITE_RBAC=1 $(CARGO) test -p manager --lib rbac::tests::deploy_manifest_matches_the_descriptors

## image: container image for deploy/ in the dist profile (needs a Docker engine; not run in CI)
image:
	docker build -t kcm-rs:dev .
