# kcm-rs: common entry points. `make run` and `make test` are the two a newcomer needs.
CARGO ?= cargo
KUBECONFIG_OUT ?= $(CURDIR)/target/kube-sim.kubeconfig

.PHONY: build run test bench lint fmt image

## build: release binaries kube-controller-manager and kube-sim
build:
	$(CARGO) build --release --workspace --bins

## run: start the sim cluster and the manager with every controller (Ctrl-C stops both)
run:
	KUBECONFIG_OUT=$(KUBECONFIG_OUT) hack/run.sh

## test: every unit, integration and doc test
test:
	$(CARGO) test --workspace --all-targets
	$(CARGO) test --workspace --doc

## bench: criterion benches of the hot paths, then the end-to-end bench (hack/bench.sh) at the
## issue's defaults, then 200 Deployments x 5 at upstream's default client QPS (20/30)
bench:
	$(CARGO) bench --workspace --exclude kube-controller-manager
	hack/bench.sh
	hack/bench.sh --deployments 200 --statefulsets 0 --replicasets 0 --qps 20 --burst 30 --out e2e-200x5-default-qps

## lint: formatting and clippy, warnings are errors
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

## image: container image for deploy/ (needs a Docker engine; not run in CI)
image:
	docker build -t kcm-rs:dev .
