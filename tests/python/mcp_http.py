"""Sessions with `verbgate serve --http` through the official Python MCP SDK's
Streamable HTTP client.

Run by the end-to-end tests in tests/e2e/http.rs (the venv comes from `just python-env`).
Prints one JSON object describing what the client saw; the Rust test asserts on it.

Usage:
  mcp_http.py session URL TOKEN       help, a batch, a spawn + job.wait, progress
  mcp_http.py probe URL TOKEN         the catalog and two ops (allow-list checks)
  mcp_http.py load URL TOKEN N M      N concurrent clients x M requests each
  mcp_http.py request URL TOKEN JSON  one request; prints its envelope
(TOKEN may be "-" for none.)
"""

import asyncio
import json
import sys
import time

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def http_client(token):
    headers = {} if token == "-" else {"Authorization": f"Bearer {token}"}
    return create_mcp_http_client(headers=headers)


async def call(session, request, **kw):
    result = await session.call_tool("request", request, **kw)
    return result.structured_content, bool(result.is_error)


async def session_mode(url, token):
    progress = []

    async def on_progress(done, total, message):
        progress.append({"progress": done, "total": total, "message": message})

    async with http_client(token) as client:
        async with streamable_http_client(url, http_client=client) as (read, write, *_):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                tools = await session.list_tools()
                catalog, _ = await call(session, {"help": True})
                fp_help, _ = await call(session, {"help": "echo.job"})
                fp = fp_help["help"]["schema_fingerprint"]
                batch, batch_err = await call(session, {"ops": [
                    {"op": "echo.argv", "args": {"word": "one"}},
                    {"op": "echo.argv", "args": {"word": "two"}},
                    {"op": "echo.argv", "args": {"wrd": "x"}},
                ]})
                # A request that runs past the progress interval reports progress.
                slow, _ = await call(session, {"ops": [{"op": "echo.sleep", "args": {"ms": 2500}}]},
                                     progress_callback=on_progress)
                spawned, _ = await call(session, {"ops": [
                    {"op": "echo.job", "args": {"word": "over-http"}, "schema_fingerprint": fp}]})
                job_id = spawned["results"][0]["result"]["job"]["id"]
                waited, _ = await call(session, {"ops": [{"op": "job.wait", "args": {
                    "ids": [job_id], "max_wait_seconds": 30, "poll_interval_seconds": 0.2}}]})
                result, _ = await call(session, {"ops": [{"op": "job.result", "args": {"id": job_id}}]})
                print(json.dumps({
                    "protocol": init.protocol_version,
                    "tools": [t.name for t in tools.tools],
                    "catalog_verbs": [s for g in catalog["help"]["verbs"].values() for s in g],
                    "batch": batch,
                    "batch_is_error": batch_err,
                    "slow": slow,
                    "progress": progress,
                    "job_id": job_id,
                    "waited": waited,
                    "result": result,
                }))


async def probe_mode(url, token):
    async with http_client(token) as client:
        async with streamable_http_client(url, http_client=client) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                catalog, _ = await call(session, {"help": True})
                help_echo, help_echo_err = await call(session, {"help": "echo.argv"})
                ops, _ = await call(session, {"ops": [
                    {"op": "echo.argv", "args": {"word": "hi"}},
                    {"op": "echo.args", "args": {"word": "alias"}},
                    {"op": "job.list", "args": {}},
                ]})
                print(json.dumps({
                    "catalog_verbs": [s for g in catalog["help"]["verbs"].values() for s in g],
                    "help_echo": help_echo,
                    "help_echo_is_error": help_echo_err,
                    "ops": ops,
                }))


async def load_mode(url, token, clients, requests):
    errors = []
    latencies = []
    seen_by_others = []
    fp_box = {}

    # One client spawns a job; every other client must see it in the
    # shared store.
    async with http_client(token) as client:
        async with streamable_http_client(url, http_client=client) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                h, _ = await call(session, {"help": "echo.job"})
                fp = h["help"]["schema_fingerprint"]
                body, _ = await call(session, {"ops": [{"op": "echo.job", "args": {"word": "shared"},
                                                        "schema_fingerprint": fp}]})
                fp_box["job"] = body["results"][0]["result"]["job"]["id"]

    async def one_client(n):
        async with http_client(token) as client:
            async with streamable_http_client(url, http_client=client) as (read, write, *_):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    for i in range(requests):
                        started = time.monotonic()
                        if i == requests - 1:
                            body, is_err = await call(session, {"ops": [{"op": "job.status", "args": {"id": fp_box["job"]}}]})
                            if body.get("status") == "success" and body["results"][0]["result"]["id"] == fp_box["job"]:
                                seen_by_others.append(n)
                        else:
                            body, is_err = await call(session, {"ops": [{"op": "echo.argv", "args": {"word": f"c{n}r{i}"}}]})
                            if body.get("status") == "success" and body["results"][0]["result"]["argv"] != [f"c{n}r{i}"]:
                                errors.append(f"client {n} request {i}: wrong answer {body}")
                        latencies.append(time.monotonic() - started)
                        if is_err or body.get("status") != "success":
                            errors.append(f"client {n} request {i}: {body}")

    started = time.monotonic()
    results = await asyncio.gather(*(one_client(n) for n in range(clients)), return_exceptions=True)
    elapsed = time.monotonic() - started
    for n, r in enumerate(results):
        if isinstance(r, BaseException):
            errors.append(f"client {n}: {type(r).__name__}: {r}")
    latencies.sort()
    pct = lambda p: latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000 if latencies else None
    print(json.dumps({
        "requests": len(latencies),
        "errors": errors[:20],
        "error_count": len(errors),
        "seconds": elapsed,
        "requests_per_second": len(latencies) / elapsed,
        "p50_ms": pct(0.50),
        "p99_ms": pct(0.99),
        "job": fp_box.get("job"),
        "seen_by_others": len(seen_by_others),
    }))


async def request_mode(url, token, request):
    async with streamable_http_client(url, http_client=http_client(token)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            body, _ = await call(session, json.loads(request))
            print(json.dumps(body))


def main():
    mode, url, token = sys.argv[1:4]
    if mode == "request":
        asyncio.run(request_mode(url, token, sys.argv[4]))
        return
    if mode == "session":
        asyncio.run(session_mode(url, token))
    elif mode == "probe":
        asyncio.run(probe_mode(url, token))
    elif mode == "load":
        asyncio.run(load_mode(url, token, int(sys.argv[4]), int(sys.argv[5])))
    else:
        raise SystemExit(f"unknown mode {mode}")


main()
