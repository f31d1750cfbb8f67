"""mcpstorm test peer: an MCP server over stdio (the Python `mcp` SDK) that reports where it was started.

Tool `surroundings`: its working directory and the variables MCPSTORM_PEER_PLAIN and MCPSTORM_PEER_TOKEN, as JSON
text, so a test can see the `env` and `cwd` a gateway's stdio replica was given.
"""

import json
import os

try:
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server

mcp = Server("mcpstorm-py-env-peer")


@mcp.tool()
async def surroundings() -> str:
    """This process's working directory and two variables of its environment."""
    return json.dumps(
        {
            "cwd": os.getcwd(),
            "plain": os.environ.get("MCPSTORM_PEER_PLAIN"),
            "token": os.environ.get("MCPSTORM_PEER_TOKEN"),
        }
    )


if __name__ == "__main__":
    mcp.run("stdio")
