"""An OAuth 2.1 session with `verbgate serve --http` through the official Python
MCP SDK: its ClientCredentialsOAuthProvider meets the server's 401, reads the
protected-resource metadata it names, discovers the authorization server, gets
an access token for the server's resource (RFC 8707) and retries, as a real
client does. Run by tests/e2e/oauth.rs.

Usage: mcp_oauth.py URL ISSUER CLIENT_ID SCOPE
Prints one JSON object: the tools, the catalog help and one op's envelope.
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
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


async def main(url, issuer, client_id, scope):
    storage = Memory()
    auth = ClientCredentialsOAuthProvider(
        server_url=url,
        storage=storage,
        client_id=client_id,
        client_secret="not-checked-by-the-mock",
        scope=scope,
        issuer=issuer,
    )
    async with create_mcp_http_client(auth=auth) as client:
        async with streamable_http_client(url, http_client=client) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = await session.list_tools()
                catalog = await session.call_tool("request", {"help": True})
                op = await session.call_tool("request", {"ops": [{"op": "echo.argv", "args": {"word": "via-oauth"}}]})
                hidden = await session.call_tool("request", {"ops": [{"op": "echo.sleep", "args": {"ms": 1}}]})
                jobs = await session.call_tool("request", {"ops": [{"op": "job.list"}]})
    print(json.dumps({
        "tools": [t.name for t in tools.tools],
        "catalog": catalog.structured_content,
        "op": op.structured_content,
        "op_is_error": bool(op.is_error),
        "hidden": hidden.structured_content,
        "jobs": jobs.structured_content,
        "access_token_obtained": storage.tokens is not None,
    }))


asyncio.run(main(*sys.argv[1:5]))
