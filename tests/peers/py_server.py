"""mcpstorm test peer: a tiny MCP server over stdio, used by mcpstorm's integration tests.

Tools: `sleep_ms` (async, so many concurrent calls overlap on one connection),
`echo`, and `slow_progress` (reports progress each step; used for progress and
cancellation tests).

The same file serves both SDK generations, so the era matrix compares one set of tools:
- mcp 2.x (MCPServer, both protocol eras): python3 tests/peers/py_server.py
- mcp 1.x (FastMCP, handshake era only): target/peers/mcp1/bin/python tests/peers/py_server.py
"""

import anyio
try:
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver import MCPServer as Server

    NAME = "mcpstorm-py-peer"
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context
    from mcp.server.fastmcp import FastMCP as Server

    NAME = "mcpstorm-py1-peer"

mcp = Server(NAME)


@mcp.tool()
async def sleep_ms(ms: int) -> str:
    """Sleep for `ms` milliseconds, then return."""
    await anyio.sleep(ms / 1000)
    return f"slept {ms}ms"


@mcp.tool()
async def echo(message: str) -> str:
    """Return `message` unchanged."""
    return message


@mcp.tool()
async def slow_progress(steps: int, step_ms: int, ctx: Context) -> str:
    """Run `steps` steps of `step_ms` ms each, reporting progress after each step."""
    for i in range(1, steps + 1):
        await anyio.sleep(step_ms / 1000)
        await ctx.report_progress(i, steps, f"step {i}/{steps}")
    return f"done {steps} steps"


if __name__ == "__main__":
    mcp.run("stdio")
