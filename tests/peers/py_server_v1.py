"""mcpstorm test peer on the Python `mcp` SDK 1.x: the same tools as py_server.py, served by FastMCP 1.x, which
speaks only the handshake-era protocol (initialize). Used by the era matrix in tests/tests/interop_eras.rs.

Run with the mcp 1.x interpreter: target/peers/mcp1/bin/python tests/peers/py_server_v1.py
"""

import anyio
from mcp.server.fastmcp import Context, FastMCP

mcp = FastMCP("mcpstorm-py1-peer")


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
