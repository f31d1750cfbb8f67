# The mcpstorm binary in a container: the image docs/deploy/k8s-gateway.yaml (gateway nodes) and
# docs/deploy/k8s-indexed-job.yaml (a sharded comparison) run.
#
#   docker build -t mcpstorm:latest .
#   docker tag mcpstorm:latest REGISTRY/mcpstorm:latest && docker push REGISTRY/mcpstorm:latest
#
# (then put REGISTRY/mcpstorm:latest in the manifests' `image:`). Not built in CI: the machines that develop and test
# mcpstorm have no Docker daemon, so this file is kept plain. .ci/deploy.py checks that it builds the `mcpstorm`
# binary and that its ENTRYPOINT runs it.

# Builder: the Rust release the workspace is built with today (its MSRV is 1.85), on the Debian release the runtime
# stage runs (the binary links that glibc). The slim image has the C compiler ring and mimalloc need.
FROM rust:1.95-slim-trixie AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p mcpstorm-sim --bin mcpstorm

# Runtime: the binary, CA certificates, and a user that is not root. (The gateway's own https upstreams are checked
# against the Mozilla roots built into it; the system's certificates serve what runs beside it.) The shipped
# scenarios sit in /mcpstorm/scenarios, the working directory, so `mcpstorm compare scenarios/NAME.toml` runs as it
# does in a checkout (the Indexed Job); the gateway needs only its config file, mounted by the manifest.
FROM debian:trixie-slim
# ca-certificates unpinned: it should follow Debian's updates.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin mcpstorm
COPY --from=build /src/target/release/mcpstorm /usr/local/bin/mcpstorm
COPY scenarios/ /mcpstorm/scenarios/
WORKDIR /mcpstorm
USER 10001
# The MCP endpoint and the admin listener (metrics, admin API), at the gateway's defaults.
EXPOSE 8848 8849
ENTRYPOINT ["mcpstorm"]
