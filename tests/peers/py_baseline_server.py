"""mcpstorm test peer for the baseline against a plain proxy (tests/tests/interop/baseline.rs): a Python `mcp` SDK 2.x
server over stateless Streamable HTTP at http://127.0.0.1:PORT/mcp, with the faults the baseline's workloads need.

Usage: python tests/peers/py_baseline_server.py PORT [--delay-ms MS] [--json]
  --delay-ms MS  every tool answers MS ms later than it would (the "one replica 1 s slower" workload)
  --json         answer a request with one JSON body when it is done, instead of an SSE stream opened at once: a
                 slow tool then sends nothing at all until it answers (the "20 s tool, no progress" workload)

Stateless, so that a plain round-robin proxy in front of two replicas can send a session's requests to either one.
None of the tools carries annotations, as most real tools carry none: a middle may not assume any is idempotent.

Tools: `sleep_ms(ms)`, `echo(message)` and `deposit(account, amount)`, which adds to a balance (a side effect).

Control endpoint (not MCP): `POST /control/unavailable?seconds=S` makes `/mcp` answer HTTP 503 with no body for S
seconds, as a replica behind a load balancer does while it restarts or drains.
"""

import argparse
import time
from urllib.parse import parse_qs

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("mcpstorm-baseline-peer", log_level="WARNING")
delay_s = 0.0
balances: dict[str, int] = {}


@mcp.tool()
async def sleep_ms(ms: int) -> str:
    """Sleep for `ms` milliseconds, then return."""
    await anyio.sleep(ms / 1000 + delay_s)
    return f"slept {ms}ms"


@mcp.tool()
async def echo(message: str) -> str:
    """Return `message` unchanged."""
    if delay_s:
        await anyio.sleep(delay_s)
    return message


@mcp.tool()
async def deposit(account: str, amount: int) -> str:
    """Add `amount` to `account`'s balance and return the new balance."""
    # A write takes a little time: calls overlap, and some are in flight when the process dies.
    await anyio.sleep(0.02 + delay_s)
    balances[account] = balances.get(account, 0) + amount
    return str(balances[account])


class Unavailable:
    """ASGI middleware: 503 with an empty body on every request while a window set by the control endpoint lasts."""

    def __init__(self, app):
        self.app = app
        self.until = 0.0

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            if scope["path"] == "/control/unavailable":
                seconds = float(parse_qs(scope["query_string"].decode())["seconds"][0])
                self.until = time.monotonic() + seconds
                return await self.empty(send, 204)
            if time.monotonic() < self.until:
                return await self.empty(send, 503)
        await self.app(scope, receive, send)

    @staticmethod
    async def empty(send, status):
        await send({"type": "http.response.start", "status": status, "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--delay-ms", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    delay_s = args.delay_ms / 1000
    app = Unavailable(mcp.streamable_http_app(stateless_http=True, json_response=args.json))
    # A deep accept queue, as the gateway's own listeners and nginx's (backlog=4096) have: a burst of connects is
    # queued, not dropped into a 1 s SYN retransmission.
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", backlog=4096)
