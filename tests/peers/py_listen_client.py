"""The Python `mcp` SDK 2.x client as a 2026-07-28 agent that listens (`subscriptions/listen`), for the gateway's
relay of resource subscriptions in that era (tests/tests/interop/subscriptions.rs).

Usage: py_listen_client.py URL URI
Opens a subscription to URI (and to tool list changes), turns server-everything's updates on with its
`toggle-subscriber-updates` tool, waits (at most 60 s) for the first update, and prints one JSON object with the
protocol version, what the server honoured and the event. Any failure exits non-zero with the error.
"""

import asyncio
import json
import sys

import anyio
from mcp import Client


async def main(url: str, uri: str) -> None:
    async with Client(url, mode="auto") as client:
        async with client.listen(resource_subscriptions=[uri], tools_list_changed=True) as sub:
            honored = sub.honored.model_dump(by_alias=True, exclude_none=True)
            toggled = await client.call_tool("toggle-subscriber-updates", {})
            with anyio.fail_after(60):
                event = await sub.__anext__()
        print(
            json.dumps(
                {
                    "protocol_version": client.protocol_version,
                    "honored": honored,
                    "toggled": toggled.content[0].text,
                    "event": type(event).__name__,
                    "uri": getattr(event, "uri", None),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
