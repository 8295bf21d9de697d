#!/usr/bin/env bash
# Build the Python and JavaScript fixture components into target/components
# (py-echo.wasm, js-echo.wasm), skipping any that is newer than its source.
# Needs scripts/guest-tools.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
tools=target/guest-tools
wit=verbs-wit/0.1.0
out=target/components
mkdir -p "$out"
py="$tools/py/bin/componentize-py"
js="$tools/node/node_modules/.bin/componentize-js"
[ -x "$py" ] && [ -x "$js" ] || { echo "guest toolchains missing: run scripts/guest-tools.sh" >&2; exit 1; }

src=plugins/fixtures/py-echo/app.py
if [ ! "$out/py-echo.wasm" -nt "$src" ]; then
    "$py" -d "$wit" -w verb-plugin componentize -p plugins/fixtures/py-echo app -o "$out/py-echo.wasm" >/dev/null
    echo "built $out/py-echo.wasm"
fi
src=plugins/fixtures/js-echo/guest.js
if [ ! "$out/js-echo.wasm" -nt "$src" ]; then
    # -d http -d fetch-event: no wasi:http imports, which verbgate refuses.
    "$js" "$src" -w "$wit" -n verb-plugin -d http -d fetch-event -o "$out/js-echo.wasm" >/dev/null
    echo "built $out/js-echo.wasm"
fi
