#!/usr/bin/env bash
# Build the component into build/__NAME__.wasm with componentize-py
# (`pip install componentize-py==0.25.1`; set COMPONENTIZE_PY to use another).
set -euo pipefail
cd "$(dirname "$0")"
tool=${COMPONENTIZE_PY:-componentize-py}
command -v "$tool" >/dev/null || { echo "componentize-py not found: pip install componentize-py==0.25.1 (or set COMPONENTIZE_PY)" >&2; exit 1; }
mkdir -p build
"$tool" -d wit -w verb-plugin componentize app -o build/__NAME__.wasm >/dev/null
echo "built build/__NAME__.wasm"
