"""The official Python `mcp` SDK's client over Streamable HTTP, for tests/tests/interop/http_fake.rs.

Usage: py_http_client.py URL MODE, MODE being "auto" (probe `server/discover`, fall back to `initialize`) or
"legacy" (the `initialize` handshake). Connects, lists the tools, calls `echo` and `slow_progress` (counting its
progress notifications), and prints one JSON object with what it saw. Any failure exits non-zero with the error.
"""

import asyncio
import json
import sys

from mcp import Client


async def main(url: str, mode: str) -> None:
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with Client(url, mode=mode) as client:
        tools = await client.list_tools()
        echo = await client.call_tool("echo", {"message": "hello over http"})
        slow = await client.call_tool("slow_progress", {"steps": 3, "step_ms": 20}, progress_callback=on_progress)
        print(
            json.dumps(
                {
                    "protocol_version": client.protocol_version,
                    "server": client.server_info.name if client.server_info else None,
                    "tools": sorted(t.name for t in tools.tools),
                    "echo": echo.content[0].text,
                    "echo_error": echo.is_error,
                    "slow": slow.content[0].text,
                    "progress": progress,
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
