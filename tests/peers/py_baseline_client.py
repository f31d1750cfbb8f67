"""The official Python `mcp` SDK's client as closed-loop agents, for tests/tests/interop/baseline.rs.

Usage: py_baseline_client.py URL TOOL ARGUMENTS_JSON SESSIONS CALLS
Opens SESSIONS clients (`mcp.Client`, mode "auto"), each its own session, prints the line `ready` once all are
connected, then each makes CALLS calls of TOOL one after another (a closed loop, no think time). A client that fails
as a whole (its connection task died) costs the call it was making, and the agent connects again. Prints one JSON
object: {"ok": [[start_ms, end_ms], ...], "errors": [[start_ms, end_ms, message], ...]}, times in ms since `ready`
was printed (the test places a fault on the same time line). A call is an error when it raises or its result has
`isError`; the loop goes on after an error, as an agent would.
"""

import asyncio
import json
import sys
import time

from mcp import Client


class Timeline:
    """Milliseconds since the loop began (set once every session is connected)."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()

    def ms(self) -> float:
        return (time.monotonic() - self.t0) * 1000


async def session(
    url: str, tool: str, arguments: dict, calls: int, connected, go: asyncio.Event, clock: Timeline, ok, errors
) -> None:
    made, waiting = 0, True
    while made < calls:
        begun = None
        try:
            async with Client(url, mode="auto") as client:
                if waiting:
                    waiting = False
                    connected()
                    await go.wait()
                while made < calls:
                    begun = clock.ms()
                    try:
                        result = await client.call_tool(tool, arguments)
                        if result.is_error:
                            text = result.content[0].text if result.content else ""
                            errors.append([begun, clock.ms(), f"tool error: {text}"])
                        else:
                            ok.append([begun, clock.ms()])
                    except Exception as e:  # noqa: BLE001 -- every failure an agent sees counts, whatever its type
                        errors.append([begun, clock.ms(), f"{type(e).__name__}: {e}"])
                    made += 1
                    begun = None
        except Exception as e:  # noqa: BLE001
            # The client itself failed (the SDK ends a client whose connection task dies, e.g. on a response cut
            # short): the call it was making is lost, and the agent connects again and goes on.
            if waiting:
                waiting = False
                connected()
                await go.wait()
            if begun is None and made >= calls:
                break  # the client failed to close after its last call: no call lost
            now = clock.ms()
            errors.append([now if begun is None else begun, now, f"client failed: {type(e).__name__}: {e}"])
            made += 1


async def main(url: str, tool: str, arguments: dict, sessions: int, calls: int) -> None:
    ok: list[list[float]] = []
    errors: list[list] = []
    go, all_connected = asyncio.Event(), asyncio.Event()
    pending = [sessions]
    clock = Timeline()

    def connected() -> None:
        pending[0] -= 1
        if pending[0] == 0:
            all_connected.set()

    tasks = [
        asyncio.create_task(session(url, tool, arguments, calls, connected, go, clock, ok, errors))
        for _ in range(sessions)
    ]
    await all_connected.wait()
    print("ready", flush=True)
    clock.t0 = time.monotonic()
    go.set()
    await asyncio.gather(*tasks)
    print(json.dumps({"ok": ok, "errors": errors}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])))
