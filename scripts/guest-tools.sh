#!/usr/bin/env bash
# Install the Python and JavaScript guest toolchains into target/guest-tools
# (idempotent; quiet when already there):
#   target/guest-tools/py    venv with componentize-py
#   target/guest-tools/node  npm prefix with @bytecodealliance/componentize-js
set -euo pipefail
cd "$(dirname "$0")/.."
PY_VERSION=0.25.1
JS_VERSION=0.23.0
root=target/guest-tools
if [ ! -x "$root/py/bin/componentize-py" ]; then
    python3 -m venv "$root/py"
    "$root/py/bin/pip" install --quiet --disable-pip-version-check "componentize-py==$PY_VERSION"
fi
if [ ! -x "$root/node/node_modules/.bin/componentize-js" ]; then
    mkdir -p "$root/node"
    npm install --prefix "$root/node" --no-audit --no-fund --silent "@bytecodealliance/componentize-js@$JS_VERSION"
fi
