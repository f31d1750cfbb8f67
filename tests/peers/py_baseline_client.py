"""The official Python `mcp` SDK's client as closed-loop agents, for tests/tests/interop/baseline.rs.

Usage: py_baseline_client.py URL TOOL ARGUMENTS_JSON SESSIONS CALLS
Opens SESSIONS clients (`mcp.Client`, mode "auto"), each its own session, prints the line `ready` once all are
connected, then each makes CALLS calls of TOOL one after another (a closed loop, no think time). Prints one JSON
object: {"ok": [[start_ms, end_ms], ...], "errors": [[start_ms, end_ms, message], ...]}, times in ms since `ready`
was printed (the test places a fault on the same time line). A call is an error when it raises or its result has
`isError`; the loop goes on after an error, as an agent would.
"""

import asyncio
import json
import sys
import time
from contextlib import AsyncExitStack

from mcp import Client


async def session(client: Client, tool: str, arguments: dict, calls: int, t0: float, ok: list, errors: list) -> None:
    def ms() -> float:
        return (time.monotonic() - t0) * 1000

    for _ in range(calls):
        started = ms()
        try:
            result = await client.call_tool(tool, arguments)
            if result.is_error:
                errors.append([started, ms(), f"tool error: {result.content[0].text if result.content else ''}"])
            else:
                ok.append([started, ms()])
        except Exception as e:  # noqa: BLE001 -- every failure an agent sees counts, whatever its type
            errors.append([started, ms(), f"{type(e).__name__}: {e}"])


async def main(url: str, tool: str, arguments: dict, sessions: int, calls: int) -> None:
    ok: list[list[float]] = []
    errors: list[list] = []
    async with AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(Client(url, mode="auto")) for _ in range(sessions)]
        print("ready", flush=True)
        t0 = time.monotonic()
        await asyncio.gather(*(session(c, tool, arguments, calls, t0, ok, errors) for c in clients))
        # Before the clients close: a failure to close one is not a failed call, and must not lose the counts.
        print(json.dumps({"ok": ok, "errors": errors}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])))
