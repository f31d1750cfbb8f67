#!/usr/bin/env bash
# The client under test, as the conformance suite runs it: `client.sh URL`, the scenario's name in
# MCP_CONFORMANCE_SCENARIO. Each scenario gets the plain `mcpstorm` command that does what it expects; nothing here
# is conformance-only. MCPSTORM is the binary (run.sh sets it).
set -euo pipefail
url="${1:?usage: client.sh URL}"
mcpstorm="${MCPSTORM:?set MCPSTORM to the mcpstorm binary}"
cimd="https://conformance-test.local/client-metadata.json"
case "${MCP_CONFORMANCE_SCENARIO:-}" in
    # The handshake, then the listing.
    initialize) exec "$mcpstorm" tools --http "$url" ;;
    # The add_numbers tool its server lists.
    tools_call) exec "$mcpstorm" call --http "$url" add_numbers '{"a": 2, "b": 3}' ;;
    # A call whose SSE stream the server cuts after a priming event with `retry:`; the answer comes on resumption.
    sse-retry) exec "$mcpstorm" call --http "$url" test_reconnection ;;
    # A tool whose server asks the client to fill a form whose fields all have defaults: accepted with them.
    elicitation-sep1034-client-defaults)
        exec "$mcpstorm" call --http "$url" --elicit accept-defaults test_client_elicitation_defaults ;;
    # A server whose tools/call needs more scopes than tools/list (step-up): list, then call its tool.
    auth/scope-step-up) exec "$mcpstorm" call --http "$url" --oauth-client-metadata-url "$cimd" test-tool ;;
    # A client registered beforehand: its id and secret, which the suite hands over in MCP_CONFORMANCE_CONTEXT.
    auth/pre-registration)
        id="$(node -p 'JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT).client_id')"
        MCPSTORM_CLIENT_SECRET="$(node -p 'JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT).client_secret')" \
            exec "$mcpstorm" tools --http "$url" --oauth-client-id "$id" --oauth-client-secret-env MCPSTORM_CLIENT_SECRET ;;
    # The auth scenarios, and any the suite adds: connect and list tools, as a user would first. The client metadata
    # document's URL is the suite's (mcpstorm publishes none of its own); where the authorization server does not
    # support such documents, mcpstorm registers itself.
    *) exec "$mcpstorm" tools --http "$url" --oauth-client-metadata-url "$cimd" ;;
esac
