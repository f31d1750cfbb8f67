"""The Python `mcp` SDK 2.x client as an agent that answers its servers' questions, for the gateway's relay of
server-to-client requests (sim/tests/cli/asks.rs).

Usage: py_ask_client.py URL MODE ROUNDS [--no-capabilities]
  MODE  "legacy" (2025-11-25, the `initialize` handshake) or "auto" (2026-07-28 first)
Calls `delete_file` ROUNDS times (the user confirms every other one), then `summarize`, `client_roots` and
`archive_file` (whose question the next answer, confirming or not, goes to), and `protocol_version` (the version the
call reached the server in, `server_saw`), and prints
one JSON object with what each returned. With --no-capabilities the client declares no elicitation, sampling or roots
(it registers no callbacks), so each call's server is refused. A call's JSON-RPC error is reported, not raised; any
other failure exits non-zero with the error.
"""

import asyncio
import json
import sys

from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import CreateMessageResult, ElicitResult, ListRootsResult, Root, TextContent

asked: list[str] = []


async def on_elicit(context, params) -> ElicitResult:
    asked.append(params.message)
    return ElicitResult(action="accept", content={"confirm": len(asked) % 2 == 1})


async def on_sample(context, params) -> CreateMessageResult:
    return CreateMessageResult(role="assistant", content=TextContent(type="text", text="short"), model="test-model")


async def on_roots(context) -> ListRootsResult:
    return ListRootsResult(roots=[Root(uri="file:///work/project", name="project")])


async def outcome(call) -> str:
    """The call's text; a tool error prefixed `ERROR: `, a JSON-RPC error as `MCPERROR code: message`."""
    try:
        result = await call
    except MCPError as e:
        return f"MCPERROR {e.error.code}: {e.error.message}"
    first = result.content[0] if result.content else None
    return ("ERROR: " if result.is_error else "") + (first.text if first is not None else "")


async def main(url: str, mode: str, rounds: int, capabilities: bool) -> None:
    callbacks = {}
    if capabilities:
        callbacks = {"elicitation_callback": on_elicit, "sampling_callback": on_sample, "list_roots_callback": on_roots}
    seen: dict = {"deleted": []}
    async with Client(url, mode=mode, **callbacks) as client:
        for i in range(rounds):
            seen["deleted"].append(await outcome(client.call_tool("delete_file", {"path": f"/tmp/f{i}"})))
        seen["summarize"] = await outcome(client.call_tool("summarize", {"text": "a long story"}))
        seen["roots"] = await outcome(client.call_tool("client_roots", {}))
        seen["archived"] = await outcome(client.call_tool("archive_file", {"path": "/tmp/a"}))
        seen["protocol_version"] = client.protocol_version
        seen["server_saw"] = await outcome(client.call_tool("protocol_version", {}))
    seen["asked"] = asked
    print(json.dumps(seen), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), "--no-capabilities" not in sys.argv))
