#!/usr/bin/env bash
# Release binaries for Linux (static, musl) and macOS into target/dist/, with
# SHA-256 sums. The bundled components are the committed ones (host/bundled/),
# which a test keeps equal to a fresh build of plugins/.
#
# target/dist/ always holds exactly one run: every binary is built into a
# fresh staging directory and SHA256SUMS is written there; only when every
# target has built does the staging directory replace target/dist/. A run
# that fails part-way leaves the previous target/dist/ as it was, and a run
# for fewer targets does not leave older binaries beside its sums.
set -euo pipefail
cd "$(dirname "$0")/.."
# Physical path: cargo reports physical paths, so a remap of a symlinked
# checkout's logical path would match nothing.
cd "$(pwd -P)"
targets=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl aarch64-apple-darwin x86_64-apple-darwin)
[ $# -gt 0 ] && targets=("$@")
./scripts/zig-tools.sh "${targets[@]}"
export PATH="$PWD/target/zig/bin:$PATH"
unset VERBGATE_COMPONENTS_DIR
metadata=$(cargo metadata --format-version=1 --no-deps)
version=$(python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"]=="verbgate"))' <<<"$metadata")
# Where cargo really builds (CARGO_TARGET_DIR or build.target-dir may move it).
target_dir=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])' <<<"$metadata")
# Paths of this checkout, the registry sources and the target directory
# (code generated into OUT_DIR) would otherwise be embedded (panic
# locations), making the bytes depend on who built them and where. The
# last matching prefix wins, so the target directory, often inside the
# checkout, comes last. The encoded form keeps paths with spaces whole and
# outranks RUSTFLAGS (a RUSTFLAGS of the caller's is not used here).
sep=$'\x1f'
export CARGO_ENCODED_RUSTFLAGS="--remap-path-prefix=$PWD=/verbgate$sep--remap-path-prefix=${CARGO_HOME:-$HOME/.cargo}=/cargo$sep--remap-path-prefix=$target_dir=/target"
mkdir -p "$target_dir"
# Runs killed outright (no EXIT trap) leave these behind; a stranded old
# copy goes back in place when no target/dist survived.
for stale in "$target_dir"/dist.old.*/dist; do
    [ -d "$stale" ] && [ ! -e "$target_dir/dist" ] && mv "$stale" "$target_dir/dist"
done
rm -rf "$target_dir"/dist.partial.* "$target_dir"/dist.old.*
staging=$(mktemp -d "$target_dir/dist.partial.XXXXXX")
old=""
# On any exit: drop the staging copy, and if the swap below was cut short,
# put the previous target/dist back.
cleanup() {
    rm -rf "$staging"
    if [ -n "$old" ] && [ -d "$old/dist" ] && [ ! -e "$target_dir/dist" ]; then mv "$old/dist" "$target_dir/dist"; fi
    [ -z "$old" ] || rm -rf "$old"
}
trap cleanup EXIT
for t in "${targets[@]}"; do
    echo "== $t" >&2
    built="$target_dir/$t/release/verbgate"
    rm -f "$built"
    cargo zigbuild --release --locked --target "$t" -p verbgate --bin verbgate
    [ -f "$built" ] || { echo "error: cargo built no $built for $t" >&2; exit 1; }
    cp "$built" "$staging/verbgate-$version-$t"
done
# The binary for this machine, if one was built, must run and name itself.
host=$(rustc -vV | sed -n 's/^host: //p')
native="$staging/verbgate-$version-${host/-gnu/-musl}"
if [ -x "$native" ]; then
    "$native" --version | grep -qx "verbgate $version" || { echo "error: $native --version does not print 'verbgate $version'" >&2; exit 1; }
fi
(
    cd "$staging"
    if command -v sha256sum >/dev/null; then sha256sum verbgate-"$version"-*; else shasum -a 256 verbgate-"$version"-*; fi > SHA256SUMS
    ls -l verbgate-"$version"-* >&2
    cat SHA256SUMS
)
# Swap in the new directory: the old one is renamed aside first, so there
# is always a complete target/dist (old or new) except for one rename.
chmod 755 "$staging"
if [ -e "$target_dir/dist" ]; then
    old=$(mktemp -d "$target_dir/dist.old.XXXXXX")
    mv "$target_dir/dist" "$old/dist"
fi
mv "$staging" "$target_dir/dist"
echo "release binaries and SHA256SUMS in $target_dir/dist" >&2
