"""An OAuth-protected MCP server on the official Python `mcp` SDK (issue 43): a resource server that validates its
own tokens, for the gateway's upstream OAuth tests.

Usage: python tests/peers/py_oauth_server.py --port N --issuer URL [--audience URL] [--required-scopes S1,S2]
                                            [--jwks-cooldown S]
  --port N             port on 127.0.0.1 (0: a free one, the one printed)
  --issuer URL         the identity provider's issuer (tests/peers/idp/idp.mjs prints it); its JWKS is found through
                       URL/.well-known/openid-configuration (jwks_uri), fetched on the first token and again when a
                       token names an unknown kid (PyJWT's PyJWKClient; key rotation works without a restart)
  --audience URL       the only `aud` accepted, compared exactly (default: this server's own URL, the printed one)
  --required-scopes    scopes every request must carry, comma-separated (the SDK's RequireAuthMiddleware: 403
                       insufficient_scope); default none
  --jwks-cooldown S    a token with an unknown kid refetches the JWKS at most once per S seconds (default 1)

Prints `listening http://127.0.0.1:PORT/mcp` once it accepts connections, then nothing else on stdout; its log is on
stderr, one line per refused request (`py_oauth_server: refused N: 401 <reason>`). Exits on SIGTERM/SIGINT, and
when its stdin is a pipe, when that closes.

A token is accepted when it is a JWT signed by a key of the issuer's JWKS (RS256/ES256/PS256 only, never `none` or
HMAC), with iss == --issuer, aud == --audience (exactly; a list must contain it), an unexpired exp (and nbf, iat
not in the future), no leeway. Anything else, or no token, is 401 with the SDK's WWW-Authenticate:
`Bearer error="invalid_token", error_description="Authentication required",
resource_metadata="http://127.0.0.1:PORT/.well-known/oauth-protected-resource/mcp"` (RFC 9728 metadata is served
there).

Tools: echo(message) → message; add(a, b) → a + b; whoami() → {"sub", "aud", "client_id", "scope", "act"} of the
token that made the call; stats() → the counters below.
GET /__test/stats (no token needed) → {"refused": N, "refused_401": N, "refused_403": N, "verified": N,
"rejected_tokens": {reason: N}}: refused counts every 401/403 this server answered.
"""

import argparse
import asyncio
import json
import os
import socket
import stat
import sys
import threading
import urllib.request
from collections import Counter
from typing import Any

import jwt
import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

ALGORITHMS = ["RS256", "ES256", "PS256"]
LEEWAY = 0  # the SDK refuses a token past its exp anyway (BearerAuthBackend), so none here either

stats: dict[str, Any] = {"refused": 0, "refused_401": 0, "refused_403": 0, "verified": 0}
rejected: Counter[str] = Counter()


def log(line: str) -> None:
    print(f"py_oauth_server: {line}", file=sys.stderr, flush=True)


class JwksVerifier:
    """The SDK's TokenVerifier: a JWT checked against the issuer's JWKS, iss, aud and exp."""

    def __init__(self, issuer: str, audience: str, cooldown: float):
        self.issuer = issuer
        self.cooldown = cooldown
        self.audience = audience
        self._jwks: jwt.PyJWKClient | None = None
        self._lock = threading.Lock()

    def _client(self) -> jwt.PyJWKClient:
        with self._lock:
            if self._jwks is None:
                url = self.issuer.rstrip("/") + "/.well-known/openid-configuration"
                with urllib.request.urlopen(url, timeout=10) as r:
                    meta = json.load(r)
                if meta.get("issuer") != self.issuer:
                    raise ValueError(f"metadata names issuer {meta.get('issuer')!r}, not {self.issuer!r}")
                # PyJWKClient refetches the JWKS when a token's kid is not in its cached set, at most once per
                # cooldown (its default, 30 s, would make a key rotation test wait).
                self._jwks = jwt.PyJWKClient(
                    meta["jwks_uri"], cache_keys=False, lifespan=300, timeout=10, cooldown_duration=self.cooldown
                )
            return self._jwks

    def _verify(self, token: str) -> dict[str, Any]:
        header = jwt.get_unverified_header(token)
        if header.get("alg") not in ALGORITHMS:
            raise jwt.InvalidAlgorithmError(f"alg {header.get('alg')!r} is not allowed")
        key = self._client().get_signing_key_from_jwt(token)
        return jwt.decode(
            token,
            key.key,
            algorithms=ALGORITHMS,
            issuer=self.issuer,
            audience=self.audience,
            leeway=LEEWAY,
            options={"require": ["exp", "iss", "aud"], "strict_aud": False},
        )

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            claims = await asyncio.to_thread(self._verify, token)
        except Exception as e:  # every refusal reason: bad signature, audience, expiry, unknown kid, garbage
            reason = type(e).__name__
            rejected[reason] += 1
            log(f"token rejected: {reason}: {e}")
            return None
        stats["verified"] += 1
        scope = claims.get("scope", "")
        return AccessToken(
            token=token,
            client_id=str(claims.get("client_id", claims.get("azp", ""))),
            scopes=scope.split() if isinstance(scope, str) else list(scope),
            expires_at=int(claims["exp"]),
            resource=self.audience,
            subject=claims.get("sub"),
            claims=claims,
        )


def build(args: argparse.Namespace, port: int) -> MCPServer:
    required = [s for s in (args.required_scopes or "").split(",") if s]
    mcp = MCPServer(
        "mcpstorm-py-oauth-peer",
        token_verifier=JwksVerifier(args.issuer, args.audience, args.jwks_cooldown),
        auth=AuthSettings(
            issuer_url=args.issuer,
            resource_server_url=f"http://127.0.0.1:{port}/mcp",
            required_scopes=required or None,
            validate_token_resource=False,  # the verifier checks aud == --audience itself
        ),
    )

    @mcp.tool()
    def echo(message: str) -> str:
        """Returns the message."""
        return message

    @mcp.tool()
    def add(a: float, b: float) -> float:
        """Returns a + b."""
        return a + b

    @mcp.tool()
    def whoami() -> str:
        """The sub, aud, client_id, scope and act of the token that made this call, as JSON."""
        tok = get_access_token()
        claims = (tok.claims or {}) if tok else {}
        return json.dumps({k: claims.get(k) for k in ("sub", "aud", "client_id", "scope", "act")})

    @mcp.tool(name="stats")
    def stats_tool() -> str:
        """How many requests this server refused (401/403) and how many tokens it verified, as JSON."""
        return json.dumps(snapshot())
    return mcp


def snapshot() -> dict[str, Any]:
    return {**stats, "rejected_tokens": dict(rejected)}


class Counting:
    """ASGI wrapper: counts and logs 401/403 answers, and serves GET /__test/stats without a token."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/__test/stats":
            body = json.dumps(snapshot()).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return

        async def counted(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and message["status"] in (401, 403):
                status = message["status"]
                stats["refused"] += 1
                stats[f"refused_{status}"] += 1
                www = dict(message.get("headers") or []).get(b"www-authenticate", b"").decode()
                log(f"refused {stats['refused']}: {status} {scope.get('method')} {scope['path']} {www}")
            await send(message)

        await self.app(scope, receive, counted)


def watch_stdin(server: uvicorn.Server) -> None:
    try:
        mode = os.fstat(0).st_mode
    except OSError:
        return
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return

    def wait() -> None:
        while os.read(0, 4096):
            pass
        log("stdin closed, exiting")
        server.should_exit = True

    threading.Thread(target=wait, daemon=True).start()


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--issuer", required=True)
    p.add_argument("--audience")
    p.add_argument("--required-scopes", default="")
    p.add_argument("--jwks-cooldown", type=float, default=1.0)
    args = p.parse_args()

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    port = sock.getsockname()[1]

    if not args.audience:
        args.audience = f"http://127.0.0.1:{port}/mcp"
    mcp = build(args, port)

    app = Counting(mcp.streamable_http_app(host="127.0.0.1"))
    # uvicorn handles SIGTERM/SIGINT itself; open streams get 1 s to finish.
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    watch_stdin(server)

    async def announce() -> None:
        while not server.started:
            if server.should_exit:
                return
            await asyncio.sleep(0.01)
        print(f"listening http://127.0.0.1:{port}/mcp", flush=True)
        log(f"issuer {args.issuer}, audience {args.audience}")

    task = asyncio.create_task(announce())
    await server.serve(sockets=[sock])
    task.cancel()


if __name__ == "__main__":
    asyncio.run(main())
