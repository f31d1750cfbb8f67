# Two images, each with one binary:
#
#   docker build -t mcpstorm-gateway:latest .      the gateway (the default: the last stage), which
#                                                 docs/deploy/k8s-gateway.yaml runs as its nodes
#   docker build --target sim -t mcpstorm:latest .  the simulator with the shipped scenarios, which
#                                                 docs/deploy/k8s-indexed-job.yaml runs (a sharded comparison)
#
# then `docker tag IMAGE REGISTRY/IMAGE && docker push REGISTRY/IMAGE`, and put REGISTRY/IMAGE in the manifests'
# `image:`. The gateway's image holds only `mcpstorm-gateway` (the mcpstorm-gateway crate: nothing of the simulator
# is linked into it) and no scenario. Not built in CI: the machines that develop and test mcpstorm have no Docker
# daemon, so this file is kept plain. .ci/deploy.py checks that each final stage copies the binary its build stage
# builds, runs it as its ENTRYPOINT, and that the manifests use the image that holds the binary they run.

# Builder: the Rust release the workspace is built with today (its MSRV is 1.85), on the Debian release the runtime
# stages run (the binaries link that glibc). The slim image has the C compiler ring and mimalloc need. The whole
# workspace is copied because cargo reads every member's manifest; each build stage compiles one package's tree.
FROM rust:1.95-slim-trixie AS source
WORKDIR /src
COPY . .

FROM source AS build-sim
RUN cargo build --release --locked -p mcpstorm-sim --bin mcpstorm

FROM source AS build-gateway
RUN cargo build --release --locked -p mcpstorm-gateway --bin mcpstorm-gateway

# Runtime: CA certificates and a user that is not root. (The gateway's own https upstreams are checked against the
# Mozilla roots built into it; the system's certificates serve what runs beside it.)
FROM debian:trixie-slim AS runtime
# ca-certificates unpinned: it should follow Debian's updates.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin mcpstorm

# The simulator: the shipped scenarios sit in /mcpstorm/scenarios, the working directory, so
# `mcpstorm compare scenarios/NAME.toml` runs as it does in a checkout (the Indexed Job).
FROM runtime AS sim
COPY --from=build-sim /src/target/release/mcpstorm /usr/local/bin/mcpstorm
COPY scenarios/ /mcpstorm/scenarios/
WORKDIR /mcpstorm
USER 10001
ENTRYPOINT ["mcpstorm"]

# The gateway: its binary alone; its config file is mounted by the manifest. Last, so a plain `docker build` gives it.
FROM runtime AS gateway
COPY --from=build-gateway /src/target/release/mcpstorm-gateway /usr/local/bin/mcpstorm-gateway
USER 10001
# The MCP endpoint and the admin listener (metrics, admin API), at the gateway's defaults.
EXPOSE 8848 8849
ENTRYPOINT ["mcpstorm-gateway"]
