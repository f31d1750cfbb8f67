"""mcpstorm test peer: a Python `mcp` SDK 2.x server whose tools ask their client mid-call, as real servers do with the
SDK's own calls (`ctx.elicit`, sampling, roots), served over Streamable HTTP at http://127.0.0.1:PORT/mcp.

Usage: python tests/peers/py_ask_server.py PORT

Tools:
- `delete_file(path)`: asks the user to confirm (`ctx.elicit`, a form with one boolean) and says what it did.
- `summarize(text)`: asks the client's model (`sampling/createMessage`) and returns its answer.
- `client_roots()`: asks the client for its roots (`roots/list`) and returns their URIs.
- `archive_file(path)`: asks to confirm through the SDK's resolver (`Resolve(Elicit(...))`), which works in both eras:
  over the back-channel in 2025-11-25, as an input-required result (and the client's retry) in 2026-07-28.
- `protocol_version()`: the protocol version the call reached the server in (a gateway in front may choose it).
"""

import sys
from typing import Annotated

from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
from mcp_types import SamplingMessage, TextContent
from pydantic import BaseModel

mcp = MCPServer("mcpstorm-py-ask-peer")


class Confirm(BaseModel):
    confirm: bool


@mcp.tool()
async def delete_file(path: str, ctx: Context) -> str:
    """Deletes `path` once the user confirms."""
    answer = await ctx.elicit(f"Delete {path}?", schema=Confirm)
    if answer.action == "accept" and answer.data.confirm:
        return f"deleted {path}"
    return f"kept {path} ({answer.action})"


@mcp.tool()
async def summarize(text: str, ctx: Context) -> str:
    """Has the client's model summarize `text`."""
    result = await ctx.session.create_message(
        [SamplingMessage(role="user", content=TextContent(type="text", text=f"Summarize: {text}"))],
        max_tokens=50,
        related_request_id=ctx.request_id,
    )
    return f"model said: {result.content.text}"


@mcp.tool()
async def client_roots(ctx: Context) -> str:
    """Lists the client's roots."""
    roots = await ctx.session.list_roots()
    return " ".join(str(r.uri) for r in roots.roots)


async def ask_archive(path: str) -> Elicit[Confirm]:
    return Elicit(f"Archive {path}?", Confirm)


@mcp.tool()
async def archive_file(path: str, confirm: Annotated[Confirm, Resolve(ask_archive)]) -> str:
    """Archives `path` once the user confirms."""
    return f"archived {path}" if confirm.confirm else f"kept {path}"


@mcp.tool()
async def protocol_version(ctx: Context) -> str:
    """The protocol version this call was made in."""
    return str(ctx.protocol_version)


if __name__ == "__main__":
    mcp.run("streamable-http", port=int(sys.argv[1]))
