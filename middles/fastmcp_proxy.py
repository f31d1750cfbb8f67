"""FastMCP's proxy in the middle of a live run (`mcpstorm live --middle fastmcp`, `--middle fastmcp_shared`).

Reads the JSON config mcpstorm renders from fastmcp.json.tmpl: where to listen, the mode, and each server's replica
URLs. Serves each server at /<server>/mcp, one `FastMCPProxy` each, as FastMCP ships it, with two choices of ours
that FastMCP leaves to its user:

- replicas: FastMCP proxies one backend, so each new upstream client goes to the server's replicas in turn (round
  robin), the balancing nginx does by default;
- mode `per_call`: a fresh upstream client (and session) for every request the proxy handles, FastMCP's default for a
  URL target; mode `shared`: one upstream client per replica, connected at startup and shared by every request
  (FastMCP's "connected client" strategy).

Host and Origin checks are off: the agents reach the proxy through mcpstorm's relay under the node's name.
"""

import contextlib
import itertools
import json
import sys

import uvicorn
from fastmcp.server.providers.proxy import FastMCPProxy, ProxyClient
from starlette.applications import Starlette
from starlette.routing import Mount


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        config = json.load(f)
    shared = config["mode"] == "shared"
    stack = contextlib.AsyncExitStack()
    apps = []
    mounts = []
    for server in config["servers"]:
        urls = server["urls"]
        if shared:
            clients = [ProxyClient(url) for url in urls]
            turn = itertools.cycle(clients)
        else:
            turn = itertools.cycle(urls)
        proxy = FastMCPProxy(
            client_factory=(lambda t=turn: next(t)) if shared else (lambda t=turn: ProxyClient(next(t))),
            name=server["name"],
        )
        app = proxy.http_app(path="/mcp", host_origin_protection=False)
        apps.append((app, clients if shared else []))
        mounts.append(Mount("/" + server["name"], app=app))

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        async with stack:
            for app, clients in apps:
                await stack.enter_async_context(app.router.lifespan_context(app))
                for client in clients:
                    await stack.enter_async_context(client)
            yield

    root = Starlette(routes=mounts, lifespan=lifespan)
    uvicorn.run(root, host=config["host"], port=config["port"], log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
