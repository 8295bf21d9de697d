"""Consent in both MCP protocol eras, with the official Python SDK 2.3's `Client`.

Run by the end-to-end tests in tests/e2e/mrtr.rs (the venv comes from `just python-env`).
`mode` "auto" negotiates protocol 2026-07-28: a question comes back as an
InputRequiredResult and the SDK retries with inputResponses and the requestState.
`mode` "legacy" does the `initialize` handshake (2025-11-25): the server sends
`elicitation/create`. The same elicitation callback answers both.

Usage: mcp_eras.py SCENARIO CONFIG_JSON
CONFIG_JSON: {"mode": "auto"|"legacy",
              "stdio": [BIN, HOME, ROOT, PLUGINS]  or  "url": URL, "token": T, "token2": T2}
Scenarios:
  consent   allow once, allow for the session, declined, a batch, a mixed batch of
            writes, a second connection, a client without elicitation
  timeout   a person who answers after consent.timeout_ms
  state     (auto) rounds driven by hand: an altered, a foreign, a replayed requestState
  scope     (HTTP) which later calls an "allow for the session" covers
Prints one JSON object; the Rust test asserts on it.
"""

import asyncio
import json
import os
import sys

import mcp_types as types
from mcp import StdioServerParameters
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError


def server(cfg, token_key="token"):
    """A fresh transport (each Client enters its own)."""
    if "stdio" in cfg:
        binary, home, root, plugins = cfg["stdio"]
        return StdioServerParameters(
            command=binary,
            args=["--root", root, "--plugins", plugins, "serve"],
            env={"VERBGATE_HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        )
    headers = {"Authorization": f"Bearer {cfg[token_key]}"}
    return streamable_http_client(cfg["url"], http_client=create_mcp_http_client(headers=headers))


class Person:
    """Answers questions from a script: (answer, seconds to think) each."""

    def __init__(self, plan):
        self.plan = list(plan)
        self.asked = []

    async def __call__(self, context, params):
        schema = params.requested_schema
        if not isinstance(schema, dict):
            schema = schema.model_dump(mode="json", exclude_none=True)
        self.asked.append({"message": params.message, "schema": schema})
        answer, delay = self.plan.pop(0) if self.plan else ("deny", 0)
        if delay:
            await asyncio.sleep(delay)
        if answer == "deny":
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"decision": answer})


def client(cfg, person=None, name="eras-test", token_key="token", **kw):
    info = types.Implementation(name=name, version="1")
    return Client(server(cfg, token_key), mode=cfg["mode"], elicitation_callback=person, client_info=info, **kw)


async def call(c, request):
    r = await c.call_tool("request", request)
    return {"is_error": bool(r.is_error), "body": r.structured_content}


def argv(word):
    return {"ops": [{"op": "echo.argv", "args": {"word": word}}]}


async def consent(cfg):
    out = {}
    person = Person([
        ("allow_once", 0),     # once
        ("allow_session", 0),  # session
        ("deny", 0),           # declined (echo.fail)
        ("deny", 1.5),         # batch: held while git.status runs
        ("allow_once", 0),     # mixed: the first git.add
        ("allow_once", 0),     # mixed: the second git.add
    ])
    async with client(cfg, person) as c:
        out["protocol"] = c.protocol_version
        out["once"] = await call(c, argv("one"))
        out["session"] = await call(c, argv("two"))
        out["granted"] = await call(c, argv("three"))
        out["asked_after_grant"] = len(person.asked)
        out["declined"] = await call(c, {"ops": [{"op": "echo.fail", "args": {"code": 3}}]})
        out["batch"] = await call(c, {"ops": [{"op": "echo.sleep", "args": {"ms": 1}}, {"op": "git.status"}]})
        # A batch mixing a write allowed by the policy, a read, and two writes
        # that ask: the allowed commit must run exactly once across rounds.
        out["mixed"] = await call(c, {"ops": [
            {"op": "git.commit", "args": {"message": "mixed batch", "allow_empty": True}},
            {"op": "git.status"},
            {"op": "git.add", "args": {"paths": ["a.txt"]}},
            {"op": "git.add", "args": {"paths": ["b.txt"]}},
        ]})
        out["asked"] = person.asked
    # The same client again: a new stdio connection, a new legacy HTTP
    # session, or (2026-07-28 HTTP) the same token and client name.
    again = Person([("allow_once", 0)])
    async with client(cfg, again) as c:
        out["second"] = await call(c, argv("four"))
        out["asked_second"] = len(again.asked)
    async with client(cfg, None, name="eras-mute") as c:
        out["no_capability"] = await call(c, argv("five"))
    return out


async def timeout(cfg):
    person = Person([("allow_once", 2.0)])
    async with client(cfg, person) as c:
        late = await call(c, argv("late"))
    return {"late": late, "asked": len(person.asked)}


async def manual_call(c, request, responses=None, state=None):
    try:
        return await c.session.call_tool("request", request, input_responses=responses, request_state=state, allow_input_required=True)
    except MCPError as e:
        return e


def shape(r):
    if isinstance(r, MCPError):
        return {"jsonrpc_error": {"code": r.code, "message": r.message, "data": r.data}}
    if isinstance(r, types.InputRequiredResult):
        return {"input_required": True, "keys": sorted((r.input_requests or {}).keys()), "state": r.request_state}
    return {"is_error": bool(r.is_error), "body": r.structured_content}


async def state(cfg):
    out = {}
    allow = types.ElicitResult(action="accept", content={"decision": "allow_once"})
    async with client(cfg, Person([])) as c:
        first = await manual_call(c, argv("held"))
        out["first"] = shape(first)
        key = sorted(first.input_requests)[0]
        out["first_message"] = first.input_requests[key].params.message
        responses = {key: allow.model_dump(mode="json", by_alias=True, exclude_none=True)}
        s = first.request_state
        altered = s[:-3] + ("AAA" if not s.endswith("AAA") else "BBB")
        out["altered"] = shape(await manual_call(c, argv("held"), responses, altered))
        out["other_args"] = shape(await manual_call(c, argv("other"), responses, s))
        if "token2" in cfg:
            async with client(cfg, Person([]), token_key="token2") as other:
                out["other_token"] = shape(await manual_call(other, argv("held"), responses, s))
        async with client(cfg, Person([]), name="another-client") as other:
            out["other_client"] = shape(await manual_call(other, argv("held"), responses, s))
        out["answered"] = shape(await manual_call(c, argv("held"), responses, s))
        out["replayed"] = shape(await manual_call(c, argv("held"), responses, s))
    return out


async def again(cfg):
    """A retry whose answers are unusable is asked again, saying why."""
    out = {}
    allow = types.ElicitResult(action="accept", content={"decision": "allow_once"})
    async with client(cfg, Person([])) as c:
        first = await manual_call(c, argv("again"))
        key = sorted(first.input_requests)[0]
        wrong = {key: {"action": "accept", "content": {"decision": "yes"}}}
        r = await manual_call(c, argv("again"), wrong, first.request_state)
        out["wrong"] = shape(r)
        out["wrong_messages"] = [q.params.message for q in (getattr(r, "input_requests", None) or {}).values()]
        r2 = await manual_call(c, argv("again"), {}, r.request_state)
        out["missing"] = shape(r2)
        out["missing_messages"] = [q.params.message for q in (getattr(r2, "input_requests", None) or {}).values()]
        key = sorted(r2.input_requests)[0]
        responses = {key: allow.model_dump(mode="json", by_alias=True, exclude_none=True)}
        out["answered"] = shape(await manual_call(c, argv("again"), responses, r2.request_state))
    return out


async def scope(cfg):
    out = {}
    first = Person([("allow_session", 0)])
    async with client(cfg, first) as c:
        out["granted_by"] = await call(c, argv("one"))
    # Later calls: asked unless the grant covers them.
    for label, name, token_key in [
        ("same_client", "eras-test", "token"),
        ("other_client", "eras-other", "token"),
        ("other_token", "eras-test", "token2"),
    ]:
        p = Person([("allow_once", 0)])
        async with client(cfg, p, name=name, token_key=token_key) as c:
            out[label] = {"result": await call(c, argv(label)), "asked": len(p.asked)}
    return out


async def main():
    scenario, cfg = sys.argv[1], json.loads(sys.argv[2])
    run = {"consent": consent, "timeout": timeout, "state": state, "scope": scope, "again": again}[scenario]
    print(json.dumps(await run(cfg)))


asyncio.run(main())
