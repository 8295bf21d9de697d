#!/usr/bin/env bash
# Build the component into build/__NAME__.wasm with componentize-js
# (`npm install @bytecodealliance/componentize-js`; set COMPONENTIZE_JS to use
# another). `-d http -d fetch-event` drops the wasi:http imports verbgate refuses.
set -euo pipefail
cd "$(dirname "$0")"
tool=${COMPONENTIZE_JS:-componentize-js}
command -v "$tool" >/dev/null || { echo "componentize-js not found: npm install @bytecodealliance/componentize-js (or set COMPONENTIZE_JS)" >&2; exit 1; }
mkdir -p build
"$tool" guest.js -w wit -n verb-plugin -d http -d fetch-event -o build/__NAME__.wasm >/dev/null
echo "built build/__NAME__.wasm"
