"""mcpstorm test peer: an MCP server (Python SDK, stdio) with a known latency and a fixed number of workers.

`lookup` takes LATENCY_MS (default 40) and at most WORKERS (default 4) calls run at once; the rest wait their turn,
first come first served, as a server with a worker pool does. `mcpstorm profile` must measure exactly that (its
test: sim/tests/cli/profile.rs). Usage: python3 tests/peers/py_workers_server.py [LATENCY_MS [WORKERS]]
"""

import sys

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

LATENCY_MS = float(sys.argv[1]) if len(sys.argv) > 1 else 40.0
WORKERS = int(sys.argv[2]) if len(sys.argv) > 2 else 4

mcp = MCPServer("mcpstorm-py-workers")
workers = None  # an anyio semaphore, made inside the server's event loop


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def lookup(key: str) -> str:
    """Look `key` up: LATENCY_MS of work on one of WORKERS workers."""
    global workers
    if workers is None:
        workers = anyio.Semaphore(WORKERS)
    async with workers:
        await anyio.sleep(LATENCY_MS / 1000)
    return f"found {key}"


if __name__ == "__main__":
    mcp.run("stdio")
