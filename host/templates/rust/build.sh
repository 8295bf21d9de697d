#!/usr/bin/env bash
# Build the component into build/__NAME__.wasm.
set -euo pipefail
cd "$(dirname "$0")"
rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
cargo build --release --target wasm32-wasip2 --quiet
mkdir -p build
cp "${CARGO_TARGET_DIR:-target}/wasm32-wasip2/release/__CRATE__.wasm" build/__NAME__.wasm
echo "built build/__NAME__.wasm"
