"""An OAuth 2.1 session with `verbgate serve --http` through the official Python
MCP SDK: its ClientCredentialsOAuthProvider meets the server's 401, reads the
protected-resource metadata it names, discovers the authorization server, gets
an access token for the server's resource (RFC 8707) and retries, as a real
client does. Run by tests/e2e/oauth.rs.

Usage: mcp_oauth.py MODE URL ISSUER CLIENT_ID SCOPE
MODE: "auto" (protocol 2026-07-28, no session) or "legacy" (the 2025-11-25 handshake).
Prints one JSON object: the tools, the catalog help, a batch and concurrent calls.
"""

import asyncio
import json
import sys

from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


class Memory:
    def __init__(self):
        self.tokens = None
        self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info


async def call(c, request):
    r = await c.call_tool("request", request)
    return {"is_error": bool(r.is_error), "body": r.structured_content}


async def main(mode, url, issuer, client_id, scope):
    storage = Memory()
    auth = ClientCredentialsOAuthProvider(
        server_url=url,
        storage=storage,
        client_id=client_id,
        client_secret="not-checked-by-the-mock",
        scope=scope,
        issuer=issuer,
    )
    http = create_mcp_http_client(auth=auth)
    async with Client(streamable_http_client(url, http_client=http), mode=mode) as c:
        tools = await c.list_tools()
        catalog = await call(c, {"help": True})
        # One batch: an op the token's scope reaches, one it does not, one a
        # policy rule naming its subject denies.
        batch = await call(c, {"ops": [
            {"op": "echo.argv", "args": {"word": "via-oauth"}},
            {"op": "echo.sleep", "args": {"ms": 1}},
            {"op": "job.list"},
        ]})
        # Concurrent calls on the same client: each is the same caller.
        together = await asyncio.gather(*[
            call(c, {"ops": [{"op": "echo.argv", "args": {"word": f"c{i}"}}, {"op": "echo.sleep", "args": {"ms": 1}}]})
            for i in range(4)
        ])
        protocol = c.protocol_version
    print(json.dumps({
        "protocol": str(protocol),
        "tools": [t.name for t in tools.tools],
        "catalog": catalog["body"],
        "batch": batch,
        "together": together,
        "access_token_obtained": storage.tokens is not None,
    }))


asyncio.run(main(*sys.argv[1:6]))
