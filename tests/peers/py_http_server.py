"""mcpstorm test peer over Streamable HTTP: the tools of py_server.py, served at http://127.0.0.1:PORT/mcp.

Usage: python tests/peers/py_http_server.py PORT [--stateless] [--json]
  --stateless  no Mcp-Session-Id (FastMCP/MCPServer `stateless_http`)
  --json       answer requests with one JSON body instead of an SSE stream (`json_response`)
Works with mcp 2.x (MCPServer) and 1.x (FastMCP), like py_server.py.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from py_server import NAME, mcp  # noqa: E402

if __name__ == "__main__":
    port = int(sys.argv[1])
    stateless = "--stateless" in sys.argv
    json_response = "--json" in sys.argv
    if NAME == "mcpstorm-py1-peer":  # mcp 1.x: FastMCP reads its settings
        mcp.settings.port = port
        mcp.settings.stateless_http = stateless
        mcp.settings.json_response = json_response
        mcp.run("streamable-http")
    else:
        mcp.run("streamable-http", port=port, stateless_http=stateless, json_response=json_response)
