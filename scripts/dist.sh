#!/usr/bin/env bash
# Release binaries for Linux (static, musl) and macOS into target/dist/, with
# SHA-256 sums. The bundled components are the committed ones (host/bundled/),
# which a test keeps equal to a fresh build of plugins/.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl aarch64-apple-darwin x86_64-apple-darwin)
[ $# -gt 0 ] && targets=("$@")
./scripts/zig-tools.sh "${targets[@]}"
export PATH="$PWD/target/zig/bin:$PATH"
unset VERBGATE_COMPONENTS_DIR
version=$(cargo metadata --format-version=1 --no-deps | python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"]=="verbgate"))')
mkdir -p target/dist
for t in "${targets[@]}"; do
    echo "== $t" >&2
    cargo zigbuild --release --locked --target "$t" -p verbgate --bin verbgate
    out="target/dist/verbgate-$version-$t"
    cp "target/$t/release/verbgate" "$out"
done
cd target/dist
sha256sum verbgate-"$version"-* > SHA256SUMS
ls -l verbgate-"$version"-* >&2
cat SHA256SUMS
