# kcm-rs image: the dist profile (fat LTO, one codegen unit, jemalloc: the build the README's
# numbers were measured with) on a distroless, non-root base.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --profile dist --locked -p kube-controller-manager

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/dist/kube-controller-manager /usr/local/bin/kube-controller-manager
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/kube-controller-manager"]
