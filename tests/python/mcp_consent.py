"""Consent through MCP elicitation, with the official Python MCP SDK.

Run by the end-to-end test `policy::python_sdk_*`. One session whose
elicitation callback answers from a script (allow once, allow for the
session, deny), then a session whose client declares no elicitation
capability. Prints one JSON object; the Rust test asserts on it.
Usage: mcp_consent.py VERBGATE_BIN VERBGATE_HOME ROOT PLUGINS_DIR [slow]
With `slow`, one session whose person never answers in time.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client


def argv_op(word):
    return {"ops": [{"op": "echo.argv", "args": {"word": word}}]}


async def main() -> None:
    binary, home, root, plugins = sys.argv[1:5]
    slow = sys.argv[5:6] == ["slow"]
    params = StdioServerParameters(
        command=binary,
        args=["--root", root, "--plugins", plugins, "serve"],
        env={"VERBGATE_HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
    )
    # The fifth question (git.commit) is dismissed: the elicitation's `cancel`.
    answers = ["allow_once", "allow_session", "deny", "deny", "dismiss"]
    asked = []

    async def elicit(context, p):
        asked.append({"message": p.message, "schema": p.requested_schema if isinstance(p.requested_schema, dict) else p.requested_schema.model_dump(mode="json", exclude_none=True)})
        answer = answers[len(asked) - 1] if len(asked) <= len(answers) else "deny"
        if len(asked) == 4:
            # Held for a while: ops of the same batch that need no consent
            # must not wait for this answer.
            await asyncio.sleep(1.5)
        if answer == "deny":
            return types.ElicitResult(action="decline")
        if answer == "dismiss":
            return types.ElicitResult(action="cancel")
        return types.ElicitResult(action="accept", content={"decision": answer})

    out = {}
    if slow:
        cancelled = []

        async def late(context, p):
            try:
                await asyncio.sleep(5)
            except asyncio.CancelledError:
                # verbgate gave up on the question and told the client so.
                cancelled.append(True)
                raise
            return types.ElicitResult(action="accept", content={"decision": "allow_once"})

        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, elicitation_callback=late) as session:
                await session.initialize()
                out["late"] = (await session.call_tool("request", argv_op("late"))).structured_content
                await asyncio.sleep(0.5)
                out["late_cancelled"] = bool(cancelled)
        print(json.dumps(out))
        return
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=elicit) as session:
            await session.initialize()
            # 1: asked, allowed once. 2: asked again, allowed for the session.
            # 3: not asked (session grant). 4: another verb, asked, declined.
            # 5: a batch where one op asks (declined) and one does not.
            # 6: git.commit, asked (declined).
            out["once"] = (await session.call_tool("request", argv_op("one"))).structured_content
            out["session"] = (await session.call_tool("request", argv_op("two"))).structured_content
            out["granted"] = (await session.call_tool("request", argv_op("three"))).structured_content
            out["asked_after_grant"] = len(asked)
            declined = await session.call_tool("request", {"ops": [{"op": "echo.fail", "args": {"code": 3}}]})
            out["declined"] = declined.structured_content
            out["declined_is_error"] = bool(declined.is_error)
            batch = await session.call_tool("request", {"ops": [{"op": "echo.sleep", "args": {"ms": 1}}, {"op": "git.status"}]})
            out["batch"] = batch.structured_content
            out["batch_is_error"] = bool(batch.is_error)
            # 6: a write with a read-back: the question shows both commands.
            out["commit"] = (await session.call_tool("request", {"ops": [{"op": "git.commit", "args": {"message": "asked", "allow_empty": True}}]})).structured_content
            out["asked"] = asked
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            out["no_capability"] = (await session.call_tool("request", argv_op("four"))).structured_content
    print(json.dumps(out))


asyncio.run(main())
