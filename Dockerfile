# kcm-rs image: a static-ish release build on a distroless, non-root base.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p kube-controller-manager

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/kube-controller-manager /usr/local/bin/kube-controller-manager
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/kube-controller-manager"]
