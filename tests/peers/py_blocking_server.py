"""mcpstorm test peer: an MCP server (the Python `mcp` SDK 2.x, over stdio) whose one tool blocks the server's event
loop while it runs, as a server that handles one request at a time does (a synchronous handler, a CPU-bound tool).
Nothing else, pings included, is answered until the tool returns.

Tools: `block_ms` (blocks the whole server for `ms` milliseconds).
"""

import time

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("mcpstorm-py-blocking-peer")


@mcp.tool()
async def block_ms(ms: int) -> str:
    """Block the whole server for `ms` milliseconds, then return."""
    time.sleep(ms / 1000)
    return f"blocked {ms}ms"


if __name__ == "__main__":
    mcp.run("stdio")
