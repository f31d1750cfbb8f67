"""The official Python `mcp` SDK's client as a traced agent, for tests/tests/interop/traces.rs.

Usage: py_trace_client.py URL CALLS. Calls `whoami` CALLS times through the gateway at URL, each call as the
child of a span of its own: a fresh W3C `traceparent` (random trace and span ids, sampled), with a `tracestate` and
a `baggage`, in the request's `params._meta`, as the MCP semantic conventions carry them. Prints one JSON list:
per call, the `traceparent` sent and what the server said it received. Any failure exits non-zero with the error.
"""

import asyncio
import json
import secrets
import sys

from mcp import Client


async def main(url: str, calls: int) -> None:
    out = []
    async with Client(url) as client:
        for _ in range(calls):
            traceparent = f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01"
            meta = {"traceparent": traceparent, "tracestate": "agent=1", "baggage": "user=test"}
            result = await client.call_tool("whoami", {}, meta=meta)
            if result.is_error:
                raise SystemExit(f"whoami failed: {result.content}")
            out.append({"sent": traceparent, "seen": json.loads(result.content[0].text)})
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
