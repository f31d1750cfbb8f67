#!/usr/bin/env bash
# The client under test, as the conformance suite runs it: `client.sh URL`, the scenario's name in
# MCP_CONFORMANCE_SCENARIO. Each scenario gets the plain `mcpstorm` command that does what it expects; nothing here
# is conformance-only. MCPSTORM is the binary (run.sh sets it).
set -euo pipefail
url="${1:?usage: client.sh URL}"
mcpstorm="${MCPSTORM:?set MCPSTORM to the mcpstorm binary}"
case "${MCP_CONFORMANCE_SCENARIO:-}" in
    # The handshake, then the listing.
    initialize) exec "$mcpstorm" tools --http "$url" ;;
    # The add_numbers tool its server lists.
    tools_call) exec "$mcpstorm" call --http "$url" add_numbers '{"a": 2, "b": 3}' ;;
    # A call whose SSE stream the server cuts after a priming event with `retry:`; the answer comes on resumption.
    sse-retry) exec "$mcpstorm" call --http "$url" test_reconnection ;;
    # A tool whose server asks the client to elicit input.
    elicitation-sep1034-client-defaults) exec "$mcpstorm" call --http "$url" test_client_elicitation_defaults ;;
    # The auth scenarios, and any the suite adds: connect and list tools, as a user would first.
    *) exec "$mcpstorm" tools --http "$url" ;;
esac
