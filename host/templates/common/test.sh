#!/usr/bin/env bash
# Build, sign with a throwaway key, load into a throwaway verbgate home and
# call the example verb. Set VERBGATE to use another verbgate binary.
set -euo pipefail
cd "$(dirname "$0")"
vg=${VERBGATE:-verbgate}
./build.sh
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
"$vg" --home "$home" keygen >/dev/null
"$vg" --home "$home" trust add "$home/keys/default.pk.pem" >/dev/null
mkdir -p "$home/plugins"
"$vg" --home "$home" sign build/__NAME__.wasm --out "$home/plugins/__NAME__.wasm" >/dev/null
"$vg" --home "$home" check "$home/plugins/__NAME__.wasm" >/dev/null || { "$vg" --home "$home" check "$home/plugins/__NAME__.wasm"; exit 1; }
out=$("$vg" --home "$home" request '{"ops":[{"op":"__NAME__.hello","args":{"name":"world"}}]}')
case "$out" in
  *'"greeting":"hello, world"'*) echo "ok: __NAME__.hello answered: $out" ;;
  *) echo "FAIL: unexpected answer: $out" >&2; exit 1 ;;
esac
