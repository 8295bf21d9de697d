"""What verbgate shows a person, through the official Python MCP SDK.

Run by the end-to-end tests `display::*`. Prints one JSON object; the Rust
test asserts on it.
Usage: mcp_display.py VERBGATE_BIN VERBGATE_HOME ROOT PLUGINS_DIR MODE
MODE `consent`: one op that asks, with a value carrying a bidi override, a
zero-width space and 20 kB of padding; the elicitation callback records the
question and declines.
MODE `client`: a session whose clientInfo name is 3 MB of terminal escapes
and padding, running one request of eight ops.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

# What a hostile value looks like: "exe.png" shown reversed by U+202E,
# a zero-width space, then enough padding to push what follows out of view.
HIDDEN_WORD = "\u202egnp.exe\u200b" + "y" * 20000 + "\u2066end"
HUGE_CLIENT = "\x1b[2J\x1b[1;1H" + "n" * (3 * 1024 * 1024)


async def main() -> None:
    binary, home, root, plugins, mode = sys.argv[1:6]
    params = StdioServerParameters(
        command=binary,
        args=["--root", root, "--plugins", plugins, "serve"],
        env={"VERBGATE_HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
    )
    out = {}
    if mode == "consent":
        asked = []

        async def elicit(context, p):
            asked.append(p.message)
            return types.ElicitResult(action="decline")

        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, elicitation_callback=elicit) as session:
                await session.initialize()
                op = {"op": "echo.argv", "args": {"word": HIDDEN_WORD}}
                out["result"] = (await session.call_tool("request", {"ops": [op]})).structured_content
        out["asked"] = asked
    elif mode == "client":
        info = types.Implementation(name=HUGE_CLIENT, version="1\u202e0")
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, client_info=info) as session:
                await session.initialize()
                ops = [{"op": "job.list", "args": {}} for _ in range(8)]
                out["result"] = (await session.call_tool("request", {"ops": ops})).structured_content
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    print(json.dumps(out))


asyncio.run(main())
