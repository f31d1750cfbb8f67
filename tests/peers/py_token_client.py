"""An agent on the official Python `mcp` SDK holding a bearer token (issue 43), over Streamable HTTP.

Usage: python tests/peers/py_token_client.py URL [--token T] [--call NAME --args JSON] [--mode auto|legacy]
  --token T     sends `Authorization: Bearer T` on every request (none: no Authorization header)
  --call NAME   calls that tool after listing the tools, with --args (a JSON object, default {})
  --mode M      the SDK Client's mode: auto (default: probe server/discover, fall back to initialize) or legacy

Prints ONE JSON line on stdout:
  success (exit 0):        {"tools": [sorted names], "result": <the call's text content, or null>, "is_error": bool}
  an HTTP 401/403 (exit 3): {"http_status": N, "www_authenticate": "<the header, or null>"}
  anything else: exit 1, the error on stderr.
The status is seen by an httpx event hook on the client handed to the SDK's transport (the SDK turns an HTTP error
into an MCPError or an exception group that does not keep the response).
"""

import argparse
import asyncio
import json
import sys
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("url")
    p.add_argument("--token")
    p.add_argument("--call")
    p.add_argument("--args", default="{}")
    p.add_argument("--mode", default="auto")
    a = p.parse_args()
    call_args = json.loads(a.args)

    refused: dict[str, Any] = {}
    done = False  # the session's DELETE on close, after the work, does not count

    async def on_response(response: httpx2.Response) -> None:
        if response.status_code in (401, 403) and not refused and not done:
            refused["http_status"] = response.status_code
            refused["www_authenticate"] = response.headers.get("www-authenticate")

    headers = {"Authorization": f"Bearer {a.token}"} if a.token else None
    http = create_mcp_http_client(headers=headers)
    http.event_hooks["response"].append(on_response)

    try:
        async with http:
            async with Client(streamable_http_client(a.url, http_client=http), mode=a.mode) as client:
                tools = await client.list_tools()
                result = None
                is_error = False
                if a.call:
                    r = await client.call_tool(a.call, call_args)
                    texts = [c.text for c in r.content if getattr(c, "type", None) == "text"]
                    result = "\n".join(texts) if texts else None
                    is_error = bool(r.is_error)
                out = {"tools": sorted(t.name for t in tools.tools), "result": result, "is_error": is_error}
                done = True
    except BaseException as e:  # noqa: BLE001 - an ExceptionGroup from the transport's task group included
        if refused:
            print(json.dumps(refused), flush=True)
            return 3
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        print(f"py_token_client: {type(e).__name__}: {e!r}", file=sys.stderr, flush=True)
        return 1
    if refused:  # a refusal the SDK did not surface as an error
        print(json.dumps(refused), flush=True)
        return 3
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
