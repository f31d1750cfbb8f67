"""mcpstorm test peer: a Python SDK server that reads the trace context of each request's `_meta`, for
tests/tests/interop/traces.rs (the gateway's traces reach a server that traces).

Usage: python tests/peers/py_trace_server.py PORT (Streamable HTTP at http://127.0.0.1:PORT/mcp).

Tool `whoami` (read-only, so a gateway may send it again on another replica): returns, as JSON text, the
`traceparent`, `tracestate` and `baggage` its request's `params._meta` carried (null when absent) and the port it
serves on, which names the replica that answered.
"""

import json
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

PORT = int(sys.argv[1])
mcp = MCPServer("mcpstorm-py-trace-peer")


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def whoami(ctx: Context) -> str:
    """The trace context this request carried, and this replica's port."""
    meta = ctx.request_context.meta or {}
    seen = {key: meta.get(key) for key in ("traceparent", "tracestate", "baggage")}
    seen["port"] = PORT
    return json.dumps(seen)


if __name__ == "__main__":
    mcp.run("streamable-http", port=PORT)
