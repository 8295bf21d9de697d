"""A session with `verbgate serve` through the official Python MCP SDK.

Run by the end-to-end test `python_sdk` (the venv comes from `just python-env`).
Prints one JSON object describing what the client saw; the Rust test asserts on it.
Usage: mcp_session.py VERBGATE_BIN VERBGATE_HOME ROOT
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main() -> None:
    binary, home, root = sys.argv[1:4]
    params = StdioServerParameters(
        command=binary,
        args=["--root", root, "serve"],
        env={"VERBGATE_HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            catalog = await session.call_tool("request", {"help": True})
            ops = await session.call_tool("request", {"ops": [{"op": "git.log", "args": {"limit": 1}}, {"op": "git.log", "args": {"limt": 1}}]})
            bad = await session.call_tool("request", {"ops": []})
            print(json.dumps({
                "protocol": init.protocol_version,
                "tools": [t.model_dump(mode="json", exclude_none=True) for t in tools.tools],
                "catalog_verbs": [sig for group in catalog.structured_content["help"]["verbs"].values() for sig in group],
                "ops": ops.structured_content,
                "ops_is_error": bool(ops.is_error),
                "bad_is_error": bool(bad.is_error),
                "bad": bad.structured_content,
            }))


asyncio.run(main())
