#!/usr/bin/env python3
"""Compare verbgate binaries built differently (glibc vs static musl, one
allocator vs another) on the same machine, interleaved so drift hits all alike.

    python3 scripts/compare-binaries.py target/release/verbgate target/dist/verbgate-0.1.0-x86_64-unknown-linux-musl

Run from a git checkout (the ops read its history). Two shapes of use:
- one-shot: `verbgate request` as a new process each time (a CI step, a script);
- server: ops over one `verbgate serve` stdio session (an MCP host), the first
  10 of each session left out as warm-up.
Each binary gets its own home, its compile cache filled before timing.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

OPS = {"git.log": {"op": "git.log", "args": {"limit": 5}}, "job.list": {"op": "job.list", "args": {}}}


def environment(home):
    env = {**os.environ, "VERBGATE_HOME": home}
    env.pop("VERBGATE_LOG", None)
    return env


def run(binary, home, *args):
    return subprocess.run([binary, "--root", ".", *args], env=environment(home), capture_output=True, check=True)


def one_shot(binary, home, op):
    start = time.perf_counter()
    out = run(binary, home, "request", json.dumps({"ops": [op]})).stdout
    took = time.perf_counter() - start
    if json.loads(out)["results"][0]["ok"] is not True:
        sys.exit(f"{binary}: {out[:300]!r}")
    return took


def session(binary, home, op, calls):
    server = subprocess.Popen([binary, "--root", ".", "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=environment(home))

    def send(message):
        server.stdin.write((json.dumps(message) + "\n").encode())
        server.stdin.flush()

    def answer(id_):
        while True:
            message = json.loads(server.stdout.readline())
            if message.get("id") == id_:
                return message

    send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "compare", "version": "0"}}})
    answer(0)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    times = []
    for i in range(1, calls + 1):
        start = time.perf_counter()
        send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "request", "arguments": {"ops": [op]}}})
        reply = answer(i)
        times.append(time.perf_counter() - start)
        if reply["result"]["structuredContent"]["results"][0]["ok"] is not True:
            sys.exit(f"{binary}: {json.dumps(reply)[:300]}")
    server.stdin.close()
    server.wait()
    return times[10:]


def main():
    binaries = sys.argv[1:]
    if not binaries:
        sys.exit(__doc__)
    homes = {b: tempfile.mkdtemp(prefix="vg-compare-") for b in binaries}
    try:
        measure(binaries, homes)
    finally:
        for home in homes.values():
            shutil.rmtree(home, ignore_errors=True)


def measure(binaries, homes):
    for b in binaries:
        run(b, homes[b], "request", '{"help":true}')  # fills the compile cache
    for name, op in OPS.items():
        shots = {b: [] for b in binaries}
        served = {b: [] for b in binaries}
        for _ in range(40):
            for b in binaries:
                shots[b].append(one_shot(b, homes[b], op))
        for _ in range(3):
            for b in binaries:
                served[b] += session(b, homes[b], op, 100)
        for b in binaries:
            print(f"{name:9} {os.path.basename(b):45} one-shot median {statistics.median(shots[b]) * 1000:6.1f} ms   server median {statistics.median(served[b]) * 1000:5.2f} ms")


if __name__ == "__main__":
    main()
