#!/usr/bin/env bash
# Install the cross-compilation toolchain into target/zig (idempotent):
# zig (the C toolchain and linker for every target) and cargo-zigbuild, from
# PyPI, plus the Rust std for the targets asked for (default: the release set).
set -euo pipefail
cd "$(dirname "$0")/.."
ZIG_VERSION=0.17.1
ZIGBUILD_VERSION=0.24.1
# The stamp names the versions installed, so changing a pin above reinstalls.
want="ziglang==$ZIG_VERSION cargo-zigbuild==$ZIGBUILD_VERSION"
if [ ! -x target/zig/bin/cargo-zigbuild ] || [ "$(cat target/zig/versions 2>/dev/null)" != "$want" ]; then
    python3 -m venv target/zig
    target/zig/bin/pip install --quiet --disable-pip-version-check "ziglang==$ZIG_VERSION" "cargo-zigbuild==$ZIGBUILD_VERSION"
    echo "$want" > target/zig/versions
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl aarch64-apple-darwin x86_64-apple-darwin)
installed=$(rustup target list --installed)
for t in "${targets[@]}"; do
    grep -qx "$t" <<<"$installed" || rustup target add "$t"
done
