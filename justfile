# mcpstorm tasks: thin wrappers over the cargo commands the README shows.

set shell := ["bash", "-euo", "pipefail", "-c"]

# List the recipes.
default:
    @just --list

# Run a scenario in the simulator, e.g. just sim scenarios/retry_storm.toml --seed 3
sim SCENARIO *ARGS:
    cargo run --quiet --release -p mcpstorm-sim --bin mcpstorm -- sim {{SCENARIO}} {{ARGS}}

# Paired comparison of variants over seeds, e.g. just compare scenarios/smoke.toml --vary load.sessions --values 20,80 --seeds 10
compare SCENARIO *ARGS:
    cargo run --quiet --release -p mcpstorm-sim --bin mcpstorm -- compare {{SCENARIO}} {{ARGS}}

# Check a scenario file without running it.
validate SCENARIO *ARGS:
    cargo run --quiet --release -p mcpstorm-sim --bin mcpstorm -- validate {{SCENARIO}} {{ARGS}}

# Run the gateway process (the binary the Dockerfile ships), e.g. just gateway --config examples/gateway.toml
gateway *ARGS:
    cargo run --quiet --release -p mcpstorm-gateway --bin mcpstorm-gateway -- {{ARGS}}

# Run the whole test suite (the README's test command).
test:
    cargo test --workspace

# Lints as CI runs them.
lint:
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets -- -D warnings
    python3 .ci/layout.py

# Every benchmark: the concurrent-client design's experiment live over loopback TCP, a routing decision, breaker overhead.
bench:
    cargo bench -p mcpstorm-sim --bench knee
    cargo bench -p mcpstorm-core --bench route
    cargo bench -p mcpstorm-core --bench breaker

# What the gateway adds to a call against what nginx adds, in alternating rounds of the same run, and the ratios.
bench-gateway:
    cargo bench -p mcpstorm-sim --bench gateway

# How fast a breaker state reaches the other gateway nodes through Redis: three gateways and redis-server, live.
bench-sync:
    cargo bench -p mcpstorm-sim --bench sync

# The simulator's cost against a raw turmoil program of the same topology: CPU and peak RSS, and their ratios.
bench-sim:
    cargo bench -p mcpstorm-sim --bench scale

# Regenerate the generated figures of README.md and docs/*.md (and docs/images/), e.g. just docs --check (compare only) or --only NAME.
docs *ARGS:
    python3 docs/generate.py {{ARGS}}

# List a server's tools, e.g. just tools --stdio "python3 tests/peers/py_server.py"
tools *ARGS:
    cargo run --quiet --release -p mcpstorm-sim --bin mcpstorm -- tools {{ARGS}}

# Call a tool, e.g. just call --stdio "python3 tests/peers/py_server.py" echo '{"message":"hi"}'
call *ARGS:
    cargo run --quiet --release -p mcpstorm-sim --bin mcpstorm -- call {{ARGS}}

# Run the built-in fake MCP server (or one from a config file): ndjson or --transport http, loopback unless --listen.
serve-fake *ARGS:
    cargo run --quiet --release -p mcpstorm-sim --bin mcpstorm -- serve-fake {{ARGS}}

# Install the real MCP servers the interop tests talk to (pinned versions).
peers:
    python3 -m pip install --quiet -r tests/peers/requirements.txt
    python3 -m venv target/peers/mcp1
    target/peers/mcp1/bin/pip install --quiet -r tests/peers/requirements-mcp1.txt
    npm ci --prefix tests/peers --no-audit --no-fund

# What CI runs: peers, lints, the tests with missing peers treated as failures, the smoke scenario, then docs --check.
ci: peers lint
    MCPSTORM_REQUIRE_PEERS=1 cargo test --workspace
    cargo run --quiet --release -p mcpstorm-sim --bin mcpstorm -- sim scenarios/smoke.toml
    MCPSTORM=target/release/mcpstorm python3 docs/generate.py --check
