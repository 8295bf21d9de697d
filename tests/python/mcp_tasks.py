"""Spawn verbs as SEP-2663 tasks, with the official Python SDK 2.3 (protocol 2026-07-28).

Run by the end-to-end tests in tests/e2e/tasks.rs. The SDK has no tasks client of its
own, so this is one: a `ClientExtension` for `io.modelcontextprotocol/tasks` that claims
`resultType: "task"` and resolves it by polling `tasks/get`.

Usage: mcp_tasks.py CONFIG_JSON
CONFIG_JSON: {"stdio": [BIN, HOME, ROOT, PLUGINS]} or {"url": URL, "token": T, "token2": T2}
Prints one JSON object; the Rust test asserts on it.
"""

import asyncio
import json
import os
import sys
from typing import Any, ClassVar, Literal

import mcp_types as types
from mcp import StdioServerParameters
from mcp.client.client import Client
from mcp.client.extension import ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

TASKS = "io.modelcontextprotocol/tasks"


class TaskHandle(types.Result):
    """A `CreateTaskResult`."""

    result_type: Literal["task"]
    task_id: str
    status: str
    poll_interval_ms: int | None = None
    ttl_ms: int | None = None
    created_at: str | None = None
    last_updated_at: str | None = None
    status_message: str | None = None


class TasksGet(types.Request[Any, Any]):
    """`tasks/get`; over HTTP its `Mcp-Name` header carries the task id (SEP-2243)."""

    name_param: ClassVar[str | None] = "taskId"


def tasks_get(session, task_id):
    request = TasksGet(method="tasks/get", params={"taskId": task_id})
    return session.send_request(request, TypeAdapter(dict))


class Tasks(ClientExtension):
    """Claims task results and polls them to their end, recording what it saw."""

    identifier = TASKS

    def __init__(self):
        self.seen = []

    def claims(self):
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=self.resolve)]

    async def resolve(self, handle, ctx):
        self.seen.append({"created": handle.model_dump(mode="json", by_alias=True, exclude_none=True)})
        while True:
            got = await tasks_get(ctx.session, handle.task_id)
            self.seen.append({"status": got["status"], "message": got.get("statusMessage")})
            if got["status"] == "completed":
                return types.CallToolResult.model_validate(got["result"])
            if got["status"] in ("failed", "cancelled"):
                return types.CallToolResult(content=[], structured_content={"task": got}, is_error=True)
            await asyncio.sleep((handle.poll_interval_ms or 1000) / 1000)


def server(cfg, token_key="token"):
    if "stdio" in cfg:
        binary, home, root, plugins = cfg["stdio"]
        return StdioServerParameters(
            command=binary,
            args=["--root", root, "--plugins", plugins, "serve"],
            env={"VERBGATE_HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        )
    headers = {"Authorization": f"Bearer {cfg[token_key]}"}
    return streamable_http_client(cfg["url"], http_client=create_mcp_http_client(headers=headers))


async def main():
    cfg = json.loads(sys.argv[1])
    out = {}
    tasks = Tasks()
    async with Client(server(cfg), extensions=[tasks]) as c:
        out["protocol"] = c.protocol_version
        out["server_declares_tasks"] = TASKS in ((c.server_capabilities.extensions or {}) if c.server_capabilities else {})
        fp = (await c.call_tool("request", {"help": "echo.job"})).structured_content["help"]["schema_fingerprint"]
        job = lambda args: {"op": "echo.job", "args": args, "schema_fingerprint": fp}
        # A job that runs a while and one that fails, beside an op that starts none.
        r = await c.call_tool("request", {"ops": [job({"sleep_ms": 1500}), {"op": "job.list", "args": {"limit": 1}}, job({"exit_code": 3})]})
        out["tasked"] = {"is_error": bool(r.is_error), "body": r.structured_content}
        out["seen"] = tasks.seen
        # Progress on 2026-07-28: a call still running after a second reports it.
        progress = []

        async def on_progress(done, total, message):
            progress.append({"progress": done, "total": total, "message": message})

        await c.call_tool("request", {"ops": [{"op": "echo.sleep", "args": {"ms": 4000}}]}, progress_callback=on_progress)
        out["progress"] = progress
        # A call that starts no job is answered as always.
        r = await c.call_tool("request", {"ops": [{"op": "job.list", "args": {"limit": 1}}]})
        out["no_job"] = r.structured_content
        task_id = tasks.seen[0]["created"]["taskId"]
        out["task_id"] = task_id
        if "token2" in cfg:
            async with Client(server(cfg, "token2"), extensions=[Tasks()]) as other:
                try:
                    await tasks_get(other.session, task_id)
                    out["other_token"] = "answered"
                except MCPError as e:
                    out["other_token"] = {"code": e.error.code, "message": e.error.message}
        try:
            await tasks_get(c.session, "task-" + "0" * 32)
            out["unknown"] = "answered"
        except MCPError as e:
            out["unknown"] = {"code": e.error.code, "message": e.error.message}
    # Without the extension: today's job ids.
    async with Client(server(cfg)) as plain:
        r = await plain.call_tool("request", {"ops": [job({"word": "plain"})]})
        out["plain"] = r.structured_content
    print(json.dumps(out))


asyncio.run(main())
